package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/identity"
	"github.com/patchd/patchd/internal/sso"
	"github.com/patchd/patchd/internal/store"
)

// OpenID Connect sign-in (docs/sso.md). A person reaches an organization's
// provider in one of two ways: the sign-in page's "single sign-on" link
// asks the e-mail address and offers the providers of the organizations
// whose allowed domains hold it (going straight to the provider when there
// is one), or the organization's own link /console/sso/{org} (its id or
// name) shows its "Sign in with <provider>" button. Nothing lists the
// organizations of the server to someone who does not name a domain or an
// organization.
//
// The flow is the Authorization Code flow with PKCE (S256), a state and a
// nonce: /console/sso/{org}/start stores them (sso_logins, hashed state),
// gives the browser a short-lived cookie whose hash the row holds, and
// sends it to the provider; the callback takes the row (single use, on any
// replica), checks the cookie, the expiry and the nonce, exchanges the code
// with the PKCE verifier, and validates the ID token with go-oidc
// (signature against the provider's published keys, issuer, audience,
// expiry).

// SSOLoginTTL is how long a sign-in may take from the redirect to the
// provider to the callback.
const SSOLoginTTL = 10 * time.Minute

const cookieSSO = "patchd_sso"

// MaxSSOStarts bounds the unfinished single sign-ons of one source address
// within SignInWindow: each start stores a row, so without a bound anyone
// could fill the table. A sign-in that succeeds gives its start back;
// abandoned and refused ones count until the window ends. Past the bound
// the address gets 429 with Retry-After; other addresses are not affected.
const MaxSSOStarts = 50

// ssoProviders caches the providers' discovery documents and keys, per
// issuer, for an hour.
type ssoProviders struct {
	mu     sync.Mutex
	byURL  map[string]cachedProvider
	client *http.Client
}

type cachedProvider struct {
	p  *oidc.Provider
	at time.Time
}

const providerCacheFor = time.Hour

func newSSOProviders(client *http.Client) *ssoProviders {
	if client == nil {
		client = &http.Client{Timeout: 15 * time.Second}
	}
	return &ssoProviders{byURL: map[string]cachedProvider{}, client: client}
}

// ctx carries the HTTP client go-oidc and oauth2 use.
func (sp *ssoProviders) ctx(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, sp.client)
}

func (sp *ssoProviders) get(ctx context.Context, issuer string) (*oidc.Provider, error) {
	sp.mu.Lock()
	cp, ok := sp.byURL[issuer]
	sp.mu.Unlock()
	if ok && time.Since(cp.at) < providerCacheFor {
		return cp.p, nil
	}
	// The provider keeps this context to fetch its keys later: no
	// request's cancellation, the client's own timeout.
	p, err := oidc.NewProvider(sp.ctx(context.WithoutCancel(ctx)), issuer)
	if err != nil {
		return nil, fmt.Errorf("discover the OpenID provider %s: %w", issuer, err)
	}
	sp.mu.Lock()
	sp.byURL[issuer] = cachedProvider{p: p, at: time.Now()}
	sp.mu.Unlock()
	return p, nil
}

func (c *Console) ssoRoutes() {
	c.handleFunc("GET /console/sso", c.ssoPage)
	c.handleFunc("POST /console/sso", c.ssoFind)
	c.handleFunc("GET /console/sso/callback", c.ssoCallback)
	c.handleFunc("GET /console/sso/{org}", c.ssoOrgPage)
	c.handleFunc("GET /console/sso/{org}/start", c.ssoStart)
	c.page("GET /console/account/sso-link", 0, c.ssoLinkStart)
	c.page("GET /console/settings/sso", adminOnly, c.ssoSettingsPage)
	c.page("POST /console/settings/sso", adminOnly, c.ssoSettingsSave)
	c.page("POST /console/settings/sso/delete", adminOnly, c.ssoSettingsDelete)
}

type ssoChoice struct {
	OrgName, ProviderName, StartURL string
}

type ssoPageData struct {
	Email, Next, Error, FormToken string
	Choices                       []ssoChoice
	// Go is where the page sends the browser on by itself ("": nowhere).
	Go string
}

func (d ssoPageData) refreshTo() string { return d.Go }

func (c *Console) renderSSO(w http.ResponseWriter, r *http.Request, status int, d ssoPageData) {
	if err := c.render(w, r, nil, status, "sso", "", "Single sign-on", "", d); err != nil {
		c.fail(w, r, nil, err)
	}
}

func startURL(orgID, email, next string) string {
	q := url.Values{}
	if email != "" {
		q.Set("login_hint", email)
	}
	if next != "/console/" {
		q.Set("next", next)
	}
	u := "/console/sso/" + url.PathEscape(orgID) + "/start"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// ssoPage asks the e-mail address.
func (c *Console) ssoPage(w http.ResponseWriter, r *http.Request) {
	c.renderSSO(w, r, http.StatusOK, ssoPageData{Next: safeNext(r.URL.Query().Get("next")), FormToken: c.formToken(w, r)})
}

// ssoFind offers the providers of the organizations whose allowed domains
// hold the e-mail address, or goes to the only one.
func (c *Console) ssoFind(w http.ResponseWriter, r *http.Request) {
	d := ssoPageData{Next: safeNext(r.PostFormValue("next")), FormToken: c.formToken(w, r)}
	if !checkFormToken(r) {
		d.Error = "The form was stale. Try again."
		c.renderSSO(w, r, http.StatusForbidden, d)
		return
	}
	email, err := admin.CheckEmail(r.PostFormValue("email"))
	if err != nil {
		d.Email, d.Error = r.PostFormValue("email"), "Give your e-mail address, for example you@example.com."
		c.renderSSO(w, r, http.StatusUnprocessableEntity, d)
		return
	}
	d.Email = email
	configs, err := c.store.ListSSOConfigs(r.Context())
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	for _, cfg := range configs {
		if !sso.DomainAllowed(email, cfg.AllowedDomains) {
			continue
		}
		o, err := c.store.FindOrg(r.Context(), cfg.OrgID)
		if err != nil {
			c.fail(w, r, nil, err)
			return
		}
		d.Choices = append(d.Choices, ssoChoice{OrgName: o.Name, ProviderName: cfg.ProviderName, StartURL: startURL(o.ID, email, d.Next)})
	}
	switch len(d.Choices) {
	case 0:
		d.Error = "No organization on this server signs in addresses of " + email[strings.LastIndexByte(email, '@')+1:] +
			" with single sign-on. Sign in with your password, or ask your administrator for your organization's sign-in link."
		c.renderSSO(w, r, http.StatusNotFound, d)
	case 1:
		// Not a redirect: the browser would follow it on to the provider
		// as part of this form's submission, which the console's
		// Content-Security-Policy (form-action 'self') forbids. The page
		// sends it on with a new navigation, to the start on this origin.
		d.Go = d.Choices[0].StartURL
		c.renderSSO(w, r, http.StatusOK, d)
	default:
		c.renderSSO(w, r, http.StatusOK, d)
	}
}

// ssoOrgConfig answers the enabled provider of the organization named in
// the path (id or name).
func (c *Console) ssoOrgConfig(ctx context.Context, ref string) (store.Org, store.SSOConfig, error) {
	o, err := c.store.FindOrg(ctx, ref)
	if err != nil {
		return o, store.SSOConfig{}, err
	}
	cfg, err := c.store.GetSSOConfig(ctx, o.ID)
	if err == nil && !cfg.Enabled {
		err = fmt.Errorf("console: single sign-on is off: %w", dberr.ErrNotFound)
	}
	return o, cfg, err
}

// ssoPathOrg answers the organization the path names and its single
// sign-on settings; when there is none, or it cannot be read, it has
// answered the request (the sign-in page d with the reason) and ok is
// false.
func (c *Console) ssoPathOrg(w http.ResponseWriter, r *http.Request, d ssoPageData) (o store.Org, cfg store.SSOConfig, ok bool) {
	o, cfg, err := c.ssoOrgConfig(r.Context(), r.PathValue("org"))
	if errors.Is(err, dberr.ErrNotFound) {
		d.Error = "There is no organization " + r.PathValue("org") + " with single sign-on on this server."
		c.renderSSO(w, r, http.StatusNotFound, d)
		return o, cfg, false
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return o, cfg, false
	}
	return o, cfg, true
}

// ssoOrgPage is an organization's own sign-in link.
func (c *Console) ssoOrgPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	d := ssoPageData{Next: next, FormToken: c.formToken(w, r)}
	o, cfg, ok := c.ssoPathOrg(w, r, d)
	if !ok {
		return
	}
	d.Choices = []ssoChoice{{OrgName: o.Name, ProviderName: cfg.ProviderName, StartURL: startURL(o.ID, r.URL.Query().Get("login_hint"), next)}}
	c.renderSSO(w, r, http.StatusOK, d)
}

// redirectURI is the callback address the provider sends the browser back
// to: under the server's public address, or the address the request came
// to when none is configured.
func (c *Console) redirectURI(r *http.Request) string {
	if c.cfg.BaseURL != "" {
		return strings.TrimRight(c.cfg.BaseURL, "/") + sso.CallbackPath
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + sso.CallbackPath
}

func (c *Console) oauth2Config(r *http.Request, p *oidc.Provider, cfg store.SSOConfig) *oauth2.Config {
	return &oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret(), Endpoint: p.Endpoint(),
		RedirectURL: c.redirectURI(r), Scopes: append(slices.Clone(sso.BaseScopes), cfg.Scopes...)}
}

// ssoStart sends the browser to the organization's provider.
func (c *Console) ssoStart(w http.ResponseWriter, r *http.Request) {
	d := ssoPageData{FormToken: c.formToken(w, r)}
	o, cfg, ok := c.ssoPathOrg(w, r, d)
	if !ok {
		return
	}
	c.beginSSO(w, r, o.ID, cfg, "", safeNext(r.URL.Query().Get("next")), r.URL.Query().Get("login_hint"), d)
}

// ssoLinkStart: a signed-in user (its password and second factor proved)
// links an account of its organization's provider to its own account: the
// callback links the provider account that signs in, in this browser,
// with this session.
func (c *Console) ssoLinkStart(w http.ResponseWriter, r *http.Request, s *session) error {
	cfg, err := c.store.GetSSOConfig(r.Context(), s.User.OrgID)
	if errors.Is(err, dberr.ErrNotFound) || err == nil && !cfg.Enabled {
		return &pageError{http.StatusNotFound, "Your organization has no single sign-on."}
	}
	if err != nil {
		return err
	}
	c.beginSSO(w, r, s.User.OrgID, cfg, s.User.ID, "/console/account", s.User.Email, ssoPageData{FormToken: c.formToken(w, r)})
	return nil
}

// beginSSO stores a sign-in under way (for linkUserID when a signed-in
// user links its account) and sends the browser to the provider.
func (c *Console) beginSSO(w http.ResponseWriter, r *http.Request, orgID string, cfg store.SSOConfig, linkUserID, next, hint string, d ssoPageData) {
	now := c.now()
	key := "console-sso-start-ip:" + c.clientIP(r)
	n, windowStart, err := c.store.ReserveAttempt(r.Context(), key, now, SignInWindow)
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	if n > MaxSSOStarts {
		c.store.ReleaseAttempt(context.WithoutCancel(r.Context()), key, windowStart)
		wait := max(windowStart.Add(SignInWindow).Sub(now), time.Second)
		retryAfter(w, wait)
		d.Error = "Too many unfinished single sign-ons from your address. Try again in " + waitText(wait) + "."
		c.renderSSO(w, r, http.StatusTooManyRequests, d)
		return
	}
	// A start the provider's discovery fails keeps its reservation, so
	// that the refusals it audits stay bounded per address.
	p, err := c.sso.get(r.Context(), cfg.Issuer)
	if err != nil {
		slog.WarnContext(r.Context(), "console: single sign-on", "org", orgID, "err", err)
		c.auditSSORefusal(r, orgID, cfg.ProviderName, "provider_unreachable: "+trimText(err.Error(), 300), store.SSOIdentity{})
		d.Error = "The sign-in service " + cfg.ProviderName + " could not be reached. Try again in a moment, or sign in with your password."
		c.renderSSO(w, r, http.StatusBadGateway, d)
		return
	}
	state, nonce, binding, verifier := randomToken(), randomToken(), randomToken(), oauth2.GenerateVerifier()
	l := store.SSOLogin{StateHash: auth.HashSecret(state), BindingHash: auth.HashSecret(binding), OrgID: orgID, Nonce: nonce,
		PKCEVerifier: verifier, Next: next, ExpiresAt: now.Add(SSOLoginTTL), ThrottleKey: key, ThrottleStart: windowStart, LinkUserID: linkUserID}
	if err := c.store.CreateSSOLogin(r.Context(), l, now); err != nil {
		c.store.ReleaseAttempt(context.WithoutCancel(r.Context()), key, windowStart)
		c.fail(w, r, nil, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieSSO, Value: binding, Path: "/console/sso", MaxAge: int(SSOLoginTTL.Seconds()),
		HttpOnly: true, Secure: c.cfg.SecureCookies, SameSite: http.SameSiteLaxMode})
	opts := []oauth2.AuthCodeOption{oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)}
	if hint, err := admin.CheckEmail(hint); err == nil {
		opts = append(opts, oauth2.SetAuthURLParam("login_hint", hint))
	}
	http.Redirect(w, r, c.oauth2Config(r, p, cfg).AuthCodeURL(state, opts...), http.StatusSeeOther)
}

// auditSSORefusal records a refused single sign-on in the organization's
// Audit Trail, with the provider account as far as the sign-in got.
func (c *Console) auditSSORefusal(r *http.Request, orgID, provider, reason string, ident store.SSOIdentity) {
	who := ident.Email
	if who == "" {
		who = ident.Subject
	}
	if who == "" {
		who = "unknown"
	}
	e := &store.AuditEntry{OrgID: orgID, Actor: "sso:" + who, Action: "sso.sign_in_failed", TargetType: "sso_config", TargetID: orgID,
		Summary: map[string]any{"reason": reason, "address": c.clientIP(r), "provider": provider, "email": ident.Email, "subject": ident.Subject}}
	if err := c.store.RecordAudit(context.WithoutCancel(r.Context()), e); err != nil {
		slog.ErrorContext(r.Context(), "console: audit a refused single sign-on", "err", err)
	}
	slog.InfoContext(r.Context(), "console: single sign-on refused", "org", orgID, "reason", reason, "email", ident.Email)
}

// ssoFailure is a refused sign-in: reason goes to the Audit Trail and the
// log, text to the browser.
type ssoFailure struct {
	status       int
	reason, text string
}

func (f *ssoFailure) Error() string { return f.reason }

func refuse(status int, reason, text string) *ssoFailure {
	return &ssoFailure{status: status, reason: reason, text: text}
}

// ssoCallback finishes a sign-in: the provider sends the browser here with
// the code and the state.
func (c *Console) ssoCallback(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieSSO, Value: "", Path: "/console/sso", MaxAge: -1, HttpOnly: true,
		Secure: c.cfg.SecureCookies, SameSite: http.SameSiteLaxMode})
	q := r.URL.Query()
	l, err := c.store.TakeSSOLogin(r.Context(), auth.HashSecret(q.Get("state")))
	if errors.Is(err, dberr.ErrNotFound) {
		slog.WarnContext(r.Context(), "console: single sign-on callback with an unknown, used or expired state", "address", c.clientIP(r))
		c.renderSSO(w, r, http.StatusBadRequest, ssoPageData{FormToken: c.formToken(w, r),
			Error: "This sign-in was finished already, has expired, or was not started here. Start again."})
		return
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	ident := store.SSOIdentity{OrgID: l.OrgID}
	var provider string
	u, err := c.ssoFinish(w, r, l, &ident, &provider)
	var f *ssoFailure
	if errors.As(err, &f) {
		c.auditSSORefusal(r, l.OrgID, provider, f.reason, ident)
		c.renderSSO(w, r, f.status, ssoPageData{FormToken: c.formToken(w, r), Error: f.text})
		return
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	if l.ThrottleKey != "" {
		if err := c.store.ReleaseAttempt(context.WithoutCancel(r.Context()), l.ThrottleKey, l.ThrottleStart); err != nil {
			slog.WarnContext(r.Context(), "console: give back a single sign-on start", "err", err)
		}
	}
	if l.LinkUserID != "" { // the user's own session goes on
		setFlash(w, c, "ok", "Single sign-on with "+provider+" is linked to your account: you may sign in with it.")
		http.Redirect(w, r, "/console/account", http.StatusSeeOther)
		return
	}
	e := &store.AuditEntry{OrgID: l.OrgID, Actor: "user:" + u.Email, Action: "sso.sign_in", TargetType: "user", TargetID: u.ID,
		Summary: map[string]any{"address": c.clientIP(r), "provider": provider, "issuer": ident.Issuer, "subject": ident.Subject, "role": u.RoleName}}
	if err := c.store.RecordAudit(r.Context(), e); err != nil {
		c.fail(w, r, nil, err)
		return
	}
	if _, err := c.startSession(w, r, u, store.StageSignedIn); err != nil {
		c.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, safeNext(l.Next), http.StatusSeeOther)
}

// ssoFinish checks the callback of the sign-in l and answers the user it
// signs in; an *ssoFailure when it is refused. It fills in ident and
// provider as far as it gets, for the Audit Trail.
func (c *Console) ssoFinish(w http.ResponseWriter, r *http.Request, l store.SSOLogin, ident *store.SSOIdentity, provider *string) (store.ConsoleUser, error) {
	ctx := r.Context()
	var none store.ConsoleUser
	again := "Start the sign-in again."
	ck, err := r.Cookie(cookieSSO)
	if err != nil || subtle.ConstantTimeCompare([]byte(auth.HashSecret(ck.Value)), []byte(l.BindingHash)) != 1 {
		return none, refuse(http.StatusBadRequest, "browser_mismatch", "This sign-in was started in another browser, or your browser refused its cookie. "+again)
	}
	if l.LinkUserID != "" {
		// A link finishes only in the session of the user that started it.
		s, err := c.session(w, r)
		if err != nil {
			return none, err
		}
		if s == nil || s.User.ID != l.LinkUserID || s.Stage != store.StageSignedIn {
			return none, refuse(http.StatusForbidden, "link_session_mismatch", "Linking single sign-on finishes only in the session that started it: sign in again and start it from your account page.")
		}
	}
	if !c.now().Before(l.ExpiresAt) {
		return none, refuse(http.StatusBadRequest, "state_expired", "The sign-in took longer than "+waitText(SSOLoginTTL)+". "+again)
	}
	cfg, err := c.store.GetSSOConfig(ctx, l.OrgID)
	if errors.Is(err, dberr.ErrNotFound) || err == nil && !cfg.Enabled {
		return none, refuse(http.StatusBadRequest, "sso_off", "Single sign-on was turned off for this organization meanwhile.")
	}
	if err != nil {
		return none, err
	}
	*provider, ident.Issuer = cfg.ProviderName, cfg.Issuer
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		desc := q.Get("error_description")
		if len(desc) > 300 {
			desc = desc[:300]
		}
		return none, refuse(http.StatusUnauthorized, "provider_error:"+trimText(e, 60),
			cfg.ProviderName+" did not sign you in ("+trimText(e, 60)+" "+desc+").")
	}
	code := q.Get("code")
	if code == "" {
		return none, refuse(http.StatusBadRequest, "no_code", cfg.ProviderName+" sent no authorization code. "+again)
	}
	p, err := c.sso.get(ctx, cfg.Issuer)
	if err != nil {
		slog.WarnContext(ctx, "console: single sign-on", "org", l.OrgID, "err", err)
		return none, refuse(http.StatusBadGateway, "provider_unreachable", "The sign-in service "+cfg.ProviderName+" could not be reached. "+again)
	}
	pctx := c.sso.ctx(ctx)
	tok, err := c.oauth2Config(r, p, cfg).Exchange(pctx, code, oauth2.VerifierOption(l.PKCEVerifier))
	if err != nil {
		slog.WarnContext(ctx, "console: single sign-on code exchange", "org", l.OrgID, "err", err)
		return none, refuse(http.StatusUnauthorized, "code_exchange_failed", cfg.ProviderName+" refused to complete the sign-in. "+again)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return none, refuse(http.StatusUnauthorized, "no_id_token", cfg.ProviderName+" sent no ID token: is the openid scope allowed for patchd's client?")
	}
	idt, err := p.VerifierContext(pctx, &oidc.Config{ClientID: cfg.ClientID, Now: c.now}).Verify(pctx, raw)
	var expired *oidc.TokenExpiredError
	switch {
	case errors.As(err, &expired):
		return none, refuse(http.StatusUnauthorized, "id_token_expired", "The ID token from "+cfg.ProviderName+" has expired (is this server's clock right?). "+again)
	case err != nil:
		slog.WarnContext(ctx, "console: single sign-on ID token refused", "org", l.OrgID, "err", err)
		return none, refuse(http.StatusUnauthorized, "id_token_invalid: "+trimText(err.Error(), 200), "The ID token from "+cfg.ProviderName+" is not valid for this server. "+again)
	}
	if err := checkAuthorizedParty(idt, cfg.ClientID); err != nil {
		slog.WarnContext(ctx, "console: single sign-on ID token refused", "org", l.OrgID, "err", err)
		return none, refuse(http.StatusUnauthorized, "id_token_invalid: "+trimText(err.Error(), 200), "The ID token from "+cfg.ProviderName+" is not valid for this server. "+again)
	}
	ident.Subject = idt.Subject
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(l.Nonce)) != 1 {
		return none, refuse(http.StatusUnauthorized, "nonce_mismatch", "The ID token from "+cfg.ProviderName+" belongs to another sign-in. "+again)
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return none, refuse(http.StatusUnauthorized, "id_token_claims", "The ID token's claims could not be read.")
	}
	// Providers put the e-mail address and groups in the ID token, or only
	// in the UserInfo answer (the OpenID Connect default for the code
	// flow): read it for what the ID token lacks.
	if _, hasEmail := claims["email"]; (!hasEmail || cfg.RoleClaim != "" && sso.ClaimValues(claims, cfg.RoleClaim) == nil) && p.UserInfoEndpoint() != "" {
		ui, err := p.UserInfo(pctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			slog.WarnContext(ctx, "console: single sign-on UserInfo", "org", l.OrgID, "err", err)
			return none, refuse(http.StatusBadGateway, "userinfo_failed", "Your profile could not be read from "+cfg.ProviderName+". "+again)
		}
		if ui.Subject != idt.Subject {
			return none, refuse(http.StatusUnauthorized, "userinfo_subject_mismatch", "The profile from "+cfg.ProviderName+" is not the signed-in account's.")
		}
		extra := map[string]any{}
		if err := ui.Claims(&extra); err == nil {
			for k, v := range extra {
				if _, ok := claims[k]; !ok {
					claims[k] = v
				}
			}
		}
	}
	u, email, err := identity.SignInSSO(ctx, c.store, identity.SSOSignIn{Config: cfg, Identity: *ident, Claims: claims,
		LinkFor: l.LinkUserID, Address: c.clientIP(r), Now: c.now()})
	ident.Email = email
	var rf *identity.Refusal
	if errors.As(err, &rf) {
		return none, c.ssoRefusal(rf.Reason, cfg, email)
	}
	if err != nil {
		return none, err
	}
	return u, nil
}

// checkAuthorizedParty applies OpenID Connect Core 3.1.3.7 beyond what
// go-oidc checks: an ID token for several audiences must name patchd's
// client as its authorized party (azp), and an azp, when present, must be
// patchd's client.
func checkAuthorizedParty(idt *oidc.IDToken, clientID string) error {
	var c struct {
		AZP *string `json:"azp"`
	}
	if err := idt.Claims(&c); err != nil {
		return fmt.Errorf("read the azp claim: %w", err)
	}
	switch {
	case c.AZP != nil && *c.AZP != clientID:
		return fmt.Errorf("the token's authorized party (azp) is %q, not this client %q", trimText(*c.AZP, 100), clientID)
	case c.AZP == nil && len(idt.Audience) > 1:
		return fmt.Errorf("the token is for %d audiences and names no authorized party (azp)", len(idt.Audience))
	}
	return nil
}

// ssoRefusal is a refusal of identity.SignInSSO as the browser reads it.
func (c *Console) ssoRefusal(reason string, cfg store.SSOConfig, email string) *ssoFailure {
	p := cfg.ProviderName
	switch reason {
	case identity.ReasonEmailUnverified:
		text := p + " has not verified the address " + email + "."
		if !cfg.ProviderVerifiesEmail {
			text += " (An ID token that does not say email_verified counts as unverified unless the organization's single sign-on settings say that " + p + " verifies every address.)"
		}
		return refuse(http.StatusUnauthorized, reason, text)
	case identity.ReasonDomainNotAllowed:
		return refuse(http.StatusForbidden, reason, "The address "+email+" is not in a domain this organization signs in with "+p+".")
	case identity.ReasonOperator:
		return refuse(http.StatusForbidden, reason, "The account "+email+" is an instance operator: it signs in with its password, not with single sign-on.")
	case identity.ReasonUserDisabled:
		return refuse(http.StatusForbidden, reason, "The account "+email+" is disabled.")
	case identity.ReasonLinkedElsewhere:
		return refuse(http.StatusForbidden, reason, "The account "+email+" signs in with another "+p+" account.")
	case identity.ReasonSecondFactor:
		return refuse(http.StatusForbidden, reason, "The account "+email+" has a second factor, which single sign-on would skip. Sign in once with your password and second factor, then link "+p+" on your account page; from then on "+p+" signs you in.")
	case identity.ReasonNotInvited:
		return refuse(http.StatusForbidden, reason, "There is no account "+email+" in this organization: ask an administrator to add you.")
	case identity.ReasonNoRole:
		return refuse(http.StatusForbidden, reason, "None of your "+cfg.RoleClaim+" gives you a role in this organization: ask an administrator.")
	case identity.ReasonNoEmail:
		return refuse(http.StatusUnauthorized, reason, p+" did not give your e-mail address: patchd needs the email claim.")
	case identity.ReasonLinkedToAnotherUser:
		return refuse(http.StatusForbidden, reason, "This "+p+" account is linked to another patchd account already.")
	case identity.ReasonLinkUserGone:
		return refuse(http.StatusForbidden, reason, "Your account is gone: sign in again.")
	case identity.ReasonLinkEmailMismatch:
		return refuse(http.StatusForbidden, reason, "The "+p+" account that signed in is "+email+", not your account's address: sign in to "+p+" as yourself.")
	}
	return refuse(http.StatusForbidden, reason, "Single sign-on refused ("+reason+").")
}

func trimText(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// The settings page: an organization Administrator configures its
// provider (the command line's patchd admin sso set|show|delete does the
// same through the same code, admin.SetSSO).

type ssoSettingsData struct {
	Config      *store.SSOConfig
	Form        ssoForm
	Roles       []store.Role
	RedirectURI string
	SignInURL   string
	Error       string
}

// ssoForm is the page's fields as text.
type ssoForm struct {
	ProviderName, Issuer, ClientID, AllowedDomains, Scopes, RoleClaim, RoleMap, DefaultRole string
	JustInTime, Enabled, ProviderVerifiesEmail                                              bool
}

func formOf(c store.SSOConfig) ssoForm {
	var lines []string
	for _, m := range c.RoleMap {
		role := m.RoleName
		if role == "" {
			role = m.RoleID
		}
		lines = append(lines, m.Value+" = "+role)
	}
	return ssoForm{ProviderName: c.ProviderName, Issuer: c.Issuer, ClientID: c.ClientID, AllowedDomains: strings.Join(c.AllowedDomains, ", "),
		Scopes: strings.Join(c.Scopes, " "), RoleClaim: c.RoleClaim, RoleMap: strings.Join(lines, "\n"), DefaultRole: c.DefaultRoleID,
		JustInTime: c.JustInTime, Enabled: c.Enabled, ProviderVerifiesEmail: c.ProviderVerifiesEmail}
}

func (c *Console) ssoSettings(w http.ResponseWriter, r *http.Request, s *session, status int, d ssoSettingsData) error {
	roles, err := c.store.ListRoles(r.Context(), s.User.OrgID)
	if err != nil {
		return err
	}
	d.Roles = roles
	d.RedirectURI = c.redirectURI(r)
	d.SignInURL = strings.TrimSuffix(d.RedirectURI, sso.CallbackPath) + "/console/sso/" + s.User.OrgID
	return c.render(w, r, s, status, "sso_settings", "", "Single sign-on", "sso", d)
}

func (c *Console) ssoSettingsPage(w http.ResponseWriter, r *http.Request, s *session) error {
	d := ssoSettingsData{Form: ssoForm{Enabled: true, RoleClaim: "groups"}}
	cfg, err := c.store.GetSSOConfig(r.Context(), s.User.OrgID)
	switch {
	case err == nil:
		d.Config, d.Form = &cfg, formOf(cfg)
	case !errors.Is(err, dberr.ErrNotFound):
		return err
	}
	return c.ssoSettings(w, r, s, http.StatusOK, d)
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' || r == ';' })
}

func (c *Console) ssoSettingsSave(w http.ResponseWriter, r *http.Request, s *session) error {
	f := ssoForm{ProviderName: r.PostFormValue("provider_name"), Issuer: r.PostFormValue("issuer"), ClientID: r.PostFormValue("client_id"),
		AllowedDomains: r.PostFormValue("allowed_domains"), Scopes: r.PostFormValue("scopes"), RoleClaim: r.PostFormValue("role_claim"),
		RoleMap: r.PostFormValue("role_map"), DefaultRole: r.PostFormValue("default_role"),
		JustInTime: r.PostFormValue("just_in_time") == "on", Enabled: r.PostFormValue("enabled") == "on",
		ProviderVerifiesEmail: r.PostFormValue("provider_verifies_email") == "on"}
	in := sso.Settings{ProviderName: f.ProviderName, Issuer: f.Issuer, ClientID: f.ClientID, AllowedDomains: splitList(f.AllowedDomains),
		Scopes: splitList(f.Scopes), RoleClaim: f.RoleClaim, DefaultRole: f.DefaultRole, JustInTime: f.JustInTime, Enabled: f.Enabled,
		ProviderVerifiesEmail: f.ProviderVerifiesEmail}
	if secret := r.PostFormValue("client_secret"); secret != "" {
		in.ClientSecret = &secret
	}
	var bad []string
	for _, line := range strings.Split(f.RoleMap, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		value, role, ok := strings.Cut(line, "=")
		if !ok {
			bad = append(bad, fmt.Sprintf("roleMap: %q is not \"claim value = role\"", strings.TrimSpace(line)))
			continue
		}
		in.RoleMap = append(in.RoleMap, sso.Mapping{Value: value, Role: role})
	}
	var out apiv1.SSO
	var refused string
	if len(bad) > 0 {
		refused = strings.Join(bad, "\n")
	} else {
		body := apiv1.SSOBody{ProviderName: in.ProviderName, Issuer: in.Issuer, ClientID: in.ClientID, ClientSecret: in.ClientSecret,
			AllowedDomains: in.AllowedDomains, Scopes: in.Scopes, RoleClaim: in.RoleClaim, RoleMap: []apiv1.SSORoleMapping{},
			DefaultRole: in.DefaultRole, JustInTime: in.JustInTime, Enabled: in.Enabled, ProviderVerifiesEmail: in.ProviderVerifiesEmail}
		for _, m := range in.RoleMap {
			body.RoleMap = append(body.RoleMap, apiv1.SSORoleMapping{Value: m.Value, Role: m.Role})
		}
		err := c.callAPI(r, s, http.MethodPut, "/api/v1/sso", body, &out)
		var ae *apiError
		switch {
		case errors.As(err, &ae) && (ae.Status == http.StatusUnprocessableEntity || ae.Status == http.StatusBadRequest):
			refused = ae.Text()
		case err != nil:
			return err
		}
	}
	if refused != "" {
		d := ssoSettingsData{Form: f, Error: refused}
		if cfg, err := c.store.GetSSOConfig(r.Context(), s.User.OrgID); err == nil {
			d.Config = &cfg
		}
		return c.ssoSettings(w, r, s, http.StatusUnprocessableEntity, d)
	}
	setFlash(w, c, "ok", "Single sign-on with "+out.ProviderName+" saved.")
	http.Redirect(w, r, "/console/settings/sso", http.StatusSeeOther)
	return nil
}

func (c *Console) ssoSettingsDelete(w http.ResponseWriter, r *http.Request, s *session) error {
	var ae *apiError
	if err := c.callAPI(r, s, http.MethodDelete, "/api/v1/sso", nil, nil); err != nil && !(errors.As(err, &ae) && ae.Status == http.StatusNotFound) {
		return err
	}
	setFlash(w, c, "ok", "Single sign-on removed: the organization's users sign in with passwords only.")
	http.Redirect(w, r, "/console/settings/sso", http.StatusSeeOther)
	return nil
}
