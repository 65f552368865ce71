// Package console serves patchd's web console under /console: server-rendered
// pages (html/template, embedded with the stylesheet and a vendored copy of
// htmx), console sign-in with sessions and CSRF tokens, and a page for each
// part of a patch administrator's day. Reads come from the store; every
// write goes through the same code as the REST API (API.ServeAs, or the
// admin package for users and credentials), so it is validated, permitted
// and audited exactly alike, with the actor user:<e-mail>.
package console

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/endpointq"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/api"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/version"
)

//go:embed templates static
var assets embed.FS

// Config holds what the console needs.
type Config struct {
	Store *store.Store
	API   *api.API
	// CheckinInterval is the agents' check-in interval: an endpoint seen
	// within three of them is connected.
	CheckinInterval time.Duration
	// BaseURL is the server's public address (install commands).
	BaseURL string
	// Agents serves the agent's downloads and one-line installers (nil:
	// the enrollment page shows the token only).
	Agents *agentdist.Host
	// SecureCookies marks cookies Secure (the server runs TLS, or sits
	// behind a TLS proxy).
	SecureCookies bool
	// TrustedProxies are the peers whose X-Forwarded-For is believed, as
	// for the REST API (--trusted-proxies).
	TrustedProxies []netip.Prefix
	// SSOClient makes the requests to the organizations' OpenID providers
	// (nil: a client with a 15-second timeout).
	SSOClient *http.Client
	// Now is the console's clock (nil: time.Now).
	Now func() time.Time
	// IdleTimeout ends a session unused this long (0: DefaultIdleTimeout);
	// MaxAge ends every session this long after sign-in (0:
	// DefaultMaxAge).
	IdleTimeout, MaxAge time.Duration
}

// Console is the web console.
type Console struct {
	cfg   Config
	store *store.Store
	mux   *http.ServeMux
	// patterns are the routes registered on mux (Routes).
	patterns []string
	// needs is the permission of each route that checks one (Allows).
	needs map[string]perm.Permission
	pages map[string]*template.Template
	now   func() time.Time
	// throttle counts failed sign-ins (shared with every replica).
	throttle *auth.Throttle
	// sso holds the OpenID providers' discovery documents (sso.go).
	sso *ssoProviders
}

// New builds the console and its route table.
func New(cfg Config) (*Console, error) {
	if cfg.CheckinInterval <= 0 {
		cfg.CheckinInterval = time.Minute
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	c := &Console{cfg: cfg, store: cfg.Store, mux: http.NewServeMux(), now: time.Now, throttle: auth.NewThrottle(cfg.Store),
		sso: newSSOProviders(cfg.SSOClient)}
	if cfg.Now != nil {
		c.now = cfg.Now
	}
	if err := c.parseTemplates(); err != nil {
		return nil, err
	}
	c.routes()
	return c, nil
}

// ServeHTTP serves /console/.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	if problem := formText(r); problem != "" {
		c.renderError(w, r, nil, http.StatusBadRequest, problem)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// formText refuses a form whose fields hold the NUL character (%00), as the
// API's decoder refuses \u0000: patchd stores text without NUL on both
// engines. The parsed form stays on the request for the page that reads it.
// Uploads (multipart) are read by their pages. It answers what is wrong, or
// "".
func formText(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		return ""
	}
	if err := r.ParseForm(); err != nil {
		return "The form could not be read; reload the page and try again."
	}
	for _, vs := range r.PostForm {
		for _, v := range vs {
			if strings.IndexByte(v, 0) >= 0 {
				return "A field of the form holds the NUL character, which patchd does not store."
			}
		}
	}
	return ""
}

// routes is the console's route table: each page with the permission it
// needs (perm.All: administrators only).
func (c *Console) routes() {
	static, _ := fs.Sub(assets, "static")
	c.handle("GET /console/static/", http.StripPrefix("/console/static/", cacheStatic(http.FileServerFS(static))))
	c.handleFunc("GET /console/login", c.loginPage)
	c.handleFunc("POST /console/login", c.login)
	c.handleFunc("GET /console/setup", c.setupPage)
	c.handleFunc("POST /console/setup", c.setup)
	c.staged("POST /console/logout", "", c.logout)
	c.identityRoutes()
	c.invitationRoutes()
	c.passkeyRoutes()
	c.orgRoutes()

	c.page("GET /console/{$}", 0, mayLag(c.dashboard))
	c.page("GET /console/endpoints", perm.EndpointsView, mayLag(c.endpointList))
	c.page("GET /console/endpoints.csv", perm.EndpointsView, mayLag(c.endpointCSV))
	c.page("GET /console/endpoints/{id}", perm.EndpointsView, c.endpointDetail)
	c.page("POST /console/endpoints/{id}", perm.EndpointsManage, c.endpointPatch)
	c.page("POST /console/endpoints/{id}/delete", perm.EndpointsManage, c.endpointDelete)
	c.page("POST /console/endpoints/{id}/scan", perm.EndpointsManage, c.endpointScan)
	c.page("POST /console/actions", perm.AutomationsRun, c.actionRun)

	c.page("GET /console/software", perm.EndpointsView, mayLag(c.softwareList))
	c.page("GET /console/software/title", perm.EndpointsView, c.softwareTitle)
	c.page("GET /console/agents", perm.EndpointsView, c.agentsPage)
	c.page("POST /console/agents/policy", perm.EndpointsManage, c.agentPolicySet)
	c.page("GET /console/updates", perm.UpdatesView, mayLag(c.updateList))
	c.page("POST /console/updates/approvals", perm.UpdatesManage, c.updateApprove)
	c.page("POST /console/updates/deploy", perm.AutomationsRun, c.updateDeploy)
	c.page("GET /console/updates/{key...}", perm.UpdatesView, c.updateDetail)
	c.page("POST /console/updates/policy", perm.UpdatesManage, c.policySet)

	c.page("GET /console/groups", perm.EndpointsView, mayLag(c.groupList))
	c.page("GET /console/groups/new", perm.EndpointsManage, c.groupNew)
	c.page("GET /console/groups/preview", perm.EndpointsView, c.groupPreview)
	c.page("POST /console/groups", perm.EndpointsManage, c.groupCreate)
	c.page("GET /console/groups/{id}", perm.EndpointsView, c.groupDetail)
	c.page("POST /console/groups/{id}", perm.EndpointsManage, c.groupSave)
	c.page("POST /console/groups/{id}/delete", perm.EndpointsManage, c.groupDelete)

	c.page("GET /console/automations", perm.AutomationsView, mayLag(c.automationList))
	c.page("GET /console/automations/new", perm.AutomationsManage, c.automationNew)
	c.page("GET /console/automations/preview", perm.AutomationsView, c.automationPreview)
	c.page("POST /console/automations", perm.AutomationsManage, c.automationCreate)
	c.page("GET /console/automations/{id}", perm.AutomationsView, c.automationDetail)
	c.page("GET /console/automations/{id}/edit", perm.AutomationsManage, c.automationEditPage)
	c.page("POST /console/automations/{id}", perm.AutomationsManage, c.automationSave)
	c.page("POST /console/automations/{id}/enabled", perm.AutomationsManage, c.automationToggle)
	c.page("POST /console/automations/{id}/run", perm.AutomationsRun, c.automationRun)
	c.page("POST /console/automations/{id}/delete", perm.AutomationsManage, c.automationDelete)

	c.page("GET /console/runs", perm.AutomationsView, mayLag(c.runList))
	c.page("GET /console/runs/{id}", perm.AutomationsView, c.runDetail)
	c.page("GET /console/runs/{id}/progress", perm.AutomationsView, c.runProgress)
	c.page("POST /console/runs/{id}/stop", perm.AutomationsRun, c.runStop)
	c.page("POST /console/runs/{id}/retry", perm.AutomationsRun, c.runRetry)

	c.page("GET /console/scripts", perm.AutomationsView, c.scriptList)
	c.page("POST /console/scripts", perm.AutomationsManage, c.scriptCreate)
	c.page("POST /console/scripts/{id}/delete", perm.AutomationsManage, c.scriptDelete)

	c.page("GET /console/users", adminOnly, c.usersPage)
	c.page("POST /console/users", adminOnly, c.userCreate)
	c.page("POST /console/users/{id}/{op}", adminOnly, c.userChange)
	c.page("POST /console/roles", adminOnly, c.roleCreate)
	c.page("POST /console/roles/{id}/{op}", adminOnly, c.roleChange)
	c.page("POST /console/credentials", adminOnly, c.credentialCreate)
	c.page("POST /console/credentials/{id}/{op}", adminOnly, c.credentialChange)
	c.page("GET /console/enrollment", adminOnly, c.enrollmentPage)
	c.page("POST /console/enrollment", adminOnly, c.enrollTokenCreate)
	c.page("POST /console/enrollment/{id}/revoke", adminOnly, c.enrollTokenRevoke)
	c.page("GET /console/audit", perm.ReportsView, mayLag(c.auditPage))

	c.page("GET /console/reports", perm.ReportsView, mayLag(c.reportList))
	c.page("GET /console/reports/{file}", perm.ReportsView, mayLag(c.reportFile))

	c.page("GET /console/vulnerabilities", perm.VulnerabilitiesView, mayLag(c.vulnList))
	c.page("GET /console/vulnerabilities/{cve}", perm.VulnerabilitiesView, c.vulnDetail)
	c.page("POST /console/vulnerabilities/{cve}/exception", adminOnly, c.vulnAccept)
	c.page("POST /console/vulnerabilities/{cve}/revoke", adminOnly, c.vulnRevoke)
	c.page("POST /console/vulnerabilities/policy", adminOnly, c.vulnPolicySet)
	c.page("GET /console/compliance", perm.EndpointsView, c.compliancePage)
	c.page("POST /console/compliance/policy", adminOnly, c.compliancePolicySet)

	c.page("GET /console/alerts", perm.ReportsView, mayLag(c.alertList))
	c.page("POST /console/alerts", perm.ReportsManage, c.alertCreate)
	c.page("GET /console/alerts/{id}", perm.ReportsView, c.alertDetail)
	c.page("GET /console/alerts/{id}/events", perm.ReportsView, c.alertEventsPart)
	c.page("POST /console/alerts/{id}", perm.ReportsManage, c.alertSave)
	c.page("POST /console/alerts/{id}/enabled", perm.ReportsManage, c.alertToggle)
	c.page("POST /console/alerts/{id}/delete", perm.ReportsManage, c.alertDelete)
	c.page("POST /console/alerts/{id}/test", perm.ReportsManage, c.alertTest)
	c.page("POST /console/alerts/{id}/deliveries/{delivery}/resend", perm.ReportsManage, c.alertResend)

	c.page("GET /console/feeds", feedsView, c.feedsPage)
	c.upload("POST /console/feeds", operatorOnly, MaxFeedUpload, c.feedUpload)
	c.page("GET /console/instance/audit", operatorOnly, c.instanceAuditPage)
	c.instancePeopleRoutes()
	c.ssoRoutes()

	c.handle("/console/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A signed-in user keeps the navigation (and is not offered to sign in).
		s, err := c.session(w, r)
		if err != nil {
			slog.ErrorContext(r.Context(), "console session", "err", err)
			s = nil
		}
		c.renderError(w, r, s, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
	}))
}

// Console-only permissions, outside the spec's bits.
const (
	// adminOnly marks pages for users whose role holds every permission
	// (console users, API credentials and enrollment: the spec has no
	// permission of its own for them, so they belong to administrators).
	adminOnly = perm.Permission(1 << 15)
	// operatorOnly marks instance-level pages and writes (the vulnerability
	// feeds every organization shares, the instance's Audit Trail): for
	// instance operators only, whatever their role in their organization.
	operatorOnly = perm.Permission(1 << 14)
	// feedsView is the feeds' status: vulnerabilities.view, or an operator.
	feedsView = perm.Permission(1 << 13)
)

// can tells whether the session's user holds p.
func (s *session) can(p perm.Permission) bool {
	return permits(p, s.User.Permissions, s.User.InstanceOperator)
}

// permits tells whether a role's permissions (and being an instance
// operator) hold p (adminOnly: every permission; operatorOnly: an
// instance operator).
func permits(p perm.Permission, role perm.Set, operator bool) bool {
	switch p {
	case 0:
		return true
	case adminOnly:
		return role&perm.All == perm.All
	case operatorOnly:
		return operator
	case feedsView:
		return operator || role.Has(perm.VulnerabilitiesView)
	}
	return role.Has(p)
}

// Allows tells whether a person whose role in the session's organization
// holds role (and who is an instance operator, or not) passes the
// permission check of the route pattern, as Routes names it; checked is
// false for a route that checks none (sign-in steps, static files).
func (c *Console) Allows(pattern string, role perm.Set, operator bool) (allowed, checked bool) {
	p, checked := c.needs[pattern]
	return checked && permits(p, role, operator), checked
}

// denied is the message of a page the session's user may not open or use.
func (s *session) denied(p perm.Permission) string {
	if p == operatorOnly {
		return "Only an instance operator may do this: the vulnerability feeds, the instance's Audit Trail and people's memberships across organizations belong to every organization of this server, so no organization role reaches them. An operator grants it with patchd admin user operator grant."
	}
	return "Your role (" + s.User.RoleName + ") does not allow this."
}

// handler is a console page: it answers an error, which the console shows.
type handler func(w http.ResponseWriter, r *http.Request, s *session) error

// page routes a console page that needs a session and the permission p; a
// POST also needs the session's CSRF token.
// mayLag serves a page that tolerates a standby's lag (a list, a
// dashboard, a report): its store reads may go to a --db-read standby
// (store.MayLag).
func mayLag(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		return h(w, r.WithContext(store.MayLag(r.Context())), s)
	}
}

func (c *Console) page(pattern string, p perm.Permission, h handler) { c.pageLimit(pattern, p, 0, h) }

// handle and handleFunc register a route of the console's mux and keep its
// pattern for Routes.
func (c *Console) handle(pattern string, h http.Handler) {
	c.patterns = append(c.patterns, pattern)
	c.mux.Handle(pattern, h)
}

func (c *Console) handleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	c.handle(pattern, http.HandlerFunc(h))
}

// Routes are the console's route patterns ("POST /console/groups"), in
// the order they were registered.
func (c *Console) Routes() []string { return slices.Clone(c.patterns) }

// upload routes a page that takes a multipart upload of at most maxBody
// bytes, read (and refused when larger) before the CSRF check reads its
// token from it.
func (c *Console) upload(pattern string, p perm.Permission, maxBody int64, h handler) {
	c.pageLimit(pattern, p, maxBody, h)
}

func (c *Console) pageLimit(pattern string, p perm.Permission, maxBody int64, h handler) {
	if c.needs == nil {
		c.needs = map[string]perm.Permission{}
	}
	c.needs[pattern] = p
	c.handleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s, err := c.session(w, r)
		if err != nil {
			if dberr.IsUnavailable(err) {
				c.fail(w, r, nil, err)
				return
			}
			slog.ErrorContext(r.Context(), "console session", "err", err)
			c.renderError(w, r, nil, http.StatusInternalServerError, "The console could not read your session.")
			return
		}
		if s == nil {
			if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" {
				http.Redirect(w, r, "/console/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			c.renderError(w, r, nil, http.StatusUnauthorized, "Your session has ended. Sign in again.")
			return
		}
		if s.Stage != store.StageSignedIn {
			// Signed in with a password only: the step still to take
			// comes first.
			if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" {
				http.Redirect(w, r, stagePath(s.Stage), http.StatusSeeOther)
				return
			}
			c.renderError(w, r, nil, http.StatusUnauthorized, "Finish signing in first.")
			return
		}
		if maxBody > 0 {
			if !s.can(p) {
				c.renderError(w, r, s, http.StatusForbidden, s.denied(p))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
			if err := r.ParseMultipartForm(32 << 20); err != nil {
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					c.renderError(w, r, s, http.StatusRequestEntityTooLarge, fmt.Sprintf("The upload is larger than %d MB.", maxBody>>20))
					return
				}
				c.renderError(w, r, s, http.StatusBadRequest, "The upload could not be read; choose the files again.")
				return
			}
			defer r.MultipartForm.RemoveAll()
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if !c.checkCSRF(r, s) {
				c.renderError(w, r, s, http.StatusForbidden, "The form was stale or did not come from this console (CSRF check). Reload the page and try again.")
				return
			}
		}
		if !s.can(p) {
			c.renderError(w, r, s, http.StatusForbidden, s.denied(p))
			return
		}
		if err := h(w, r, s); err != nil {
			c.fail(w, r, s, err)
		}
	})
}

// pageError is an error a page shows as it is, with its status.
type pageError struct {
	status int
	msg    string
}

func (e *pageError) Error() string { return e.msg }

func notFound(what string) error {
	return &pageError{http.StatusNotFound, "No such " + what + " in your organization."}
}

func badRequest(msg string) error { return &pageError{http.StatusBadRequest, msg} }

// fail shows err: a page error or an API error as it is, the database
// being unavailable as 503 with Retry-After (nothing the user did wrong: the
// same form may be sent again), anything else as a generic 500 whose detail
// goes to the log only.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	var pe *pageError
	var ae *apiError
	switch {
	case httpx.ClientGone(r, err):
		// The browser left (a live preview replaced, a page closed): nobody
		// reads the answer, and it is not the server's failure.
		slog.DebugContext(r.Context(), "console client gone", "method", r.Method, "path", r.URL.Path, "err", err)
		w.WriteHeader(httpx.StatusClientClosedRequest)
	case errors.As(err, &pe):
		c.renderError(w, r, s, pe.status, pe.msg)
	case errors.As(err, &ae):
		if ae.Status == http.StatusServiceUnavailable && ae.retryAfter != "" {
			w.Header().Set("Retry-After", ae.retryAfter)
		}
		c.renderError(w, r, s, ae.Status, ae.Text())
	case errors.Is(err, dberr.ErrNotFound):
		c.renderError(w, r, s, http.StatusNotFound, "No such record in your organization.")
	case dberr.IsUnavailable(err):
		slog.WarnContext(r.Context(), "console page failed: database unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		retryAfter(w, httpx.RetryAfterUnavailable*time.Second)
		c.renderError(w, r, s, http.StatusServiceUnavailable, "The database is unavailable for now; nothing you did is wrong. Try again in a few seconds.")
	default:
		slog.ErrorContext(r.Context(), "console page failed", "method", r.Method, "path", r.URL.Path, "err", err)
		c.renderError(w, r, s, http.StatusInternalServerError, "The server could not complete this; its log has the detail.")
	}
}

// build is what the server was built as, short: the footer shows the
// first 12 digits of the commit.
var build = func() version.Info {
	i := version.Get()
	if len(i.Commit) > 12 {
		i.Commit = i.Commit[:12]
	}
	return i
}()

// view is what every page template receives.
type view struct {
	Title string
	Nav   string
	Path  string // the page's address, which the menu marks as current
	S     *session
	CSRF  string
	Flash *flash
	Now   time.Time
	Data  any
	// Build is what the server was built as (the footer of signed-in
	// pages; sign-in pages do not tell it).
	Build version.Info
	// Refresh sends the browser on to this same-origin address once the
	// page is shown (a meta refresh).
	Refresh string
	// Orgs are the organizations the signed-in person belongs to (the
	// header's switcher), OrgName the session's.
	Orgs    []store.Membership
	OrgName string
}

// refresher is page data that sends the browser on by itself.
type refresher interface{ refreshTo() string }

// Can tells a template whether the user may do something (by permission
// name, "admin", "operator" or "feeds").
func (v *view) Can(name string) bool {
	if v.S == nil {
		return false
	}
	switch name {
	case "admin":
		return v.S.can(adminOnly)
	case "operator":
		return v.S.can(operatorOnly)
	case "feeds":
		return v.S.can(feedsView)
	case "orgs":
		return len(v.Orgs) > 1 // a person of several organizations
	}
	p, ok := perm.Lookup(name)
	return ok && v.S.can(p)
}

func (c *Console) parseTemplates() error {
	c.pages = map[string]*template.Template{}
	entries, err := fs.ReadDir(assets, "templates")
	if err != nil {
		return err
	}
	var partials []string
	for _, e := range entries {
		if e.Name() == "parts.html" {
			partials = append(partials, "templates/"+e.Name())
		}
	}
	for _, e := range entries {
		name := e.Name()
		if name == "parts.html" || name == "layout.html" {
			continue
		}
		files := append([]string{"templates/layout.html", "templates/" + name}, partials...)
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, files...)
		if err != nil {
			return fmt.Errorf("console: template %s: %w", name, err)
		}
		c.pages[strings.TrimSuffix(name, ".html")] = t
	}
	return nil
}

// render writes a page (through the layout) or, with block, one named
// template of it (an htmx fragment).
func (c *Console) render(w http.ResponseWriter, r *http.Request, s *session, status int, page, block, title, nav string, data any) error {
	t, ok := c.pages[page]
	if !ok {
		return fmt.Errorf("console: no template %s", page)
	}
	v := &view{Title: title, Nav: nav, Path: r.URL.Path, S: s, Now: c.now().UTC(), Data: data, Build: build}
	if rf, ok := data.(refresher); ok {
		v.Refresh = rf.refreshTo()
	}
	if s != nil {
		v.CSRF = s.CSRFToken
	}
	if block == "" {
		if s != nil && s.Stage == store.StageSignedIn && c.store != nil {
			orgs, err := c.store.Memberships(r.Context(), s.User.ID)
			if err != nil {
				return err
			}
			v.Orgs = orgs
			for _, o := range orgs {
				if o.OrgID == s.User.OrgID {
					v.OrgName = o.OrgName
				}
			}
		}
		v.Flash = takeFlash(w, r)
		block = "layout"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, block, v); err != nil {
		return fmt.Errorf("console: render %s: %w", page, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
	return nil
}

func (c *Console) renderError(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	if r.Header.Get("HX-Request") != "" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<p class="error" role="alert">%s</p>`, template.HTMLEscapeString(msg))
		return
	}
	title := http.StatusText(status)
	if err := c.render(w, r, s, status, "error", "", title, "", msg); err != nil {
		slog.Error("console: render error page", "err", err)
		http.Error(w, msg, status)
	}
}

func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// principal is the session's user as the REST API sees a caller: the
// role's permissions (api.access added: a console user reaches the API's
// code in the process, not over the network) and the user's e-mail as actor.
func (s *session) principal() *auth.Principal {
	return &auth.Principal{OrgID: s.User.OrgID, RoleID: s.User.RoleID, Permissions: s.User.Permissions | perm.Set(perm.APIAccess),
		UserEmail: s.User.Email, CredentialName: s.User.Email, Address: s.addr}
}

// actor is the Audit Trail name of the session's user.
func (s *session) actor() string { return "user:" + s.User.Email }

// audit starts an Audit Trail entry of a write by the session's user.
func (s *session) audit(action, targetType, targetID string) *store.AuditEntry {
	return &store.AuditEntry{OrgID: s.User.OrgID, Actor: s.actor(), Action: action, TargetType: targetType, TargetID: targetID, Address: s.addr}
}

// connectedSince is the oldest last check-in of a connected endpoint.
func (c *Console) connectedSince() time.Time {
	return endpointq.ConnectedSince(c.now(), c.cfg.CheckinInterval)
}
