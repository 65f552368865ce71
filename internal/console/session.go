package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/identity/passkey"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// Session lifetimes: a session unused for its idle timeout ends, and every
// session ends its absolute timeout after sign-in (Config.IdleTimeout and
// Config.MaxAge; patchd serve --session-idle-timeout and
// --session-max-age). A sign-in waiting for its second factor or a new
// password ends after stageTimeout.
const (
	DefaultIdleTimeout = 2 * time.Hour
	DefaultMaxAge      = 12 * time.Hour
	stageTimeout       = 10 * time.Minute
	// touchEvery bounds the writes a busy session makes to record its use.
	touchEvery = time.Minute
)

// Sign-in limits, within SignInWindow: MaxSignInFailures failed sign-ins
// for one e-mail address from one source address, and
// MaxAddressSignInFailures from one source address whatever the e-mail
// addresses. Past either, sign-ins from that address (for that e-mail
// address) answer 429 until the window ends; nobody else is locked out.
// The counts are kept in the store, so every replica agrees.
const (
	MaxSignInFailures        = 10
	MaxAddressSignInFailures = 50
	SignInWindow             = 15 * time.Minute
)

const (
	cookieSession = "patchd_session"
	cookieForm    = "patchd_form" // CSRF token of the sign-in and first-run forms
	cookieFlash   = "patchd_flash"
)

// session is a signed-in user's session.
type session struct {
	idHash string
	// addr is the client address of the request (Audit Trail).
	addr string
	store.ConsoleSession
}

func randomToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (c *Console) cookie(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/console", MaxAge: maxAge, HttpOnly: true,
		Secure: c.cfg.SecureCookies, SameSite: http.SameSiteLaxMode}
}

// session answers the request's session, or nil when it has none or it
// expired (the expired one is deleted).
func (c *Console) session(w http.ResponseWriter, r *http.Request) (*session, error) {
	ck, err := r.Cookie(cookieSession)
	if err != nil || ck.Value == "" {
		return nil, nil
	}
	idHash := auth.HashSecret(ck.Value)
	cs, err := c.store.GetConsoleSession(r.Context(), idHash)
	if errors.Is(err, dberr.ErrNotFound) {
		http.SetCookie(w, c.cookie(cookieSession, "", -1))
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := c.now()
	if now.Sub(cs.LastSeenAt) > c.cfg.IdleTimeout || now.Sub(cs.CreatedAt) > c.cfg.MaxAge ||
		cs.Stage != store.StageSignedIn && now.Sub(cs.CreatedAt) > stageTimeout {
		if err := c.store.DeleteConsoleSession(r.Context(), idHash); err != nil {
			return nil, err
		}
		http.SetCookie(w, c.cookie(cookieSession, "", -1))
		return nil, nil
	}
	if now.Sub(cs.LastSeenAt) > touchEvery {
		if err := c.store.TouchConsoleSession(r.Context(), idHash, now); err != nil {
			return nil, err
		}
	}
	return &session{idHash: idHash, addr: c.clientIP(r), ConsoleSession: cs}, nil
}

// checkCSRF tells whether a write carries the session's CSRF token (form
// field csrf, or header X-CSRF-Token from htmx) and, when the browser
// names it, comes from this origin.
func (c *Console) checkCSRF(r *http.Request, s *session) bool {
	if !sameOrigin(r) {
		return false
	}
	token := r.Header.Get("X-CSRF-Token")
	if token == "" {
		token = r.PostFormValue("csrf")
	}
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.CSRFToken)) == 1
}

// sameOrigin rejects a request whose Origin header names another site.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" && r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// formToken hands the sign-in and first-run forms a CSRF token kept in a
// cookie (double submit: there is no session yet to hold it).
func (c *Console) formToken(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(cookieForm); err == nil && len(ck.Value) >= 40 {
		return ck.Value
	}
	t := randomToken()
	http.SetCookie(w, c.cookie(cookieForm, t, 3600))
	return t
}

func checkFormToken(r *http.Request) bool {
	ck, err := r.Cookie(cookieForm)
	field := r.PostFormValue("csrf")
	return err == nil && sameOrigin(r) && field != "" && subtle.ConstantTimeCompare([]byte(ck.Value), []byte(field)) == 1
}

// clientIP is the caller's address, by the REST API's rule: behind a
// trusted proxy, from X-Forwarded-For.
func (c *Console) clientIP(r *http.Request) string {
	return httpx.ClientIP(r, c.cfg.TrustedProxies)
}

type loginData struct {
	Email, Next, Error, FormToken string
	NeedsSetup                    bool
	// NoPasskeys says passkeys cannot work at this address (an IP
	// address): the page says where they do instead of offering them.
	NoPasskeys bool
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if s, _ := c.session(w, r); s != nil {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	d := loginData{Next: safeNext(r.URL.Query().Get("next")), FormToken: c.formToken(w, r), NoPasskeys: !passkey.Possible(c.cfg.BaseURL, r.Host)}
	if err := c.render(w, r, nil, http.StatusOK, "login", "", "Sign in", "", d); err != nil {
		c.fail(w, r, nil, err)
	}
}

// safeNext keeps a post-sign-in destination inside the console.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/console/") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return "/console/"
}

// waitText says how long a locked-out caller waits, in whole minutes.
func waitText(d time.Duration) string {
	m := int((d + time.Minute - 1) / time.Minute)
	if m <= 1 {
		return "a minute"
	}
	return strconv.Itoa(m) + " minutes"
}

// retryAfter sets Retry-After to d in whole seconds (at least one).
func retryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int((d+time.Second-1)/time.Second))))
}

// login signs a user in. Its order bounds what a flood of sign-ins costs:
// a hashing slot first (in memory; when all are taken, 503 at once), then
// the failed-attempt limits (one atomic write each, before any hash), and
// only then the password hash, against a dummy hash when no account has the
// e-mail address, so that both cost the same.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	email := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	password := r.PostFormValue("password")
	d := loginData{Email: email, Next: safeNext(r.PostFormValue("next")), FormToken: c.formToken(w, r)}
	show := func(status int, msg string) {
		d.Error = msg
		if err := c.render(w, r, nil, status, "login", "", "Sign in", "", d); err != nil {
			c.fail(w, r, nil, err)
		}
	}
	if !checkFormToken(r) {
		show(http.StatusForbidden, "The form was stale. Sign in again.")
		return
	}
	check, err := auth.BeginPasswordCheck()
	if err != nil {
		retryAfter(w, time.Second)
		show(http.StatusServiceUnavailable, "The server is checking too many sign-ins at once. Try again in a few seconds.")
		return
	}
	defer check.End()
	attempt, err := c.throttle.Begin(r.Context(), c.now(), auth.ThrottleKeys("console-login", email, c.clientIP(r),
		auth.Limit{Max: MaxSignInFailures, Window: SignInWindow}, auth.Limit{Max: MaxAddressSignInFailures, Window: SignInWindow})...)
	var limited *auth.RateLimitedError
	if errors.As(err, &limited) {
		retryAfter(w, limited.RetryAfter)
		show(http.StatusTooManyRequests, "Too many failed sign-ins from your address. Try again in "+waitText(limited.RetryAfter)+".")
		return
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	users, err := c.store.UsersByEmail(r.Context(), email)
	if err != nil {
		attempt.Release(context.WithoutCancel(r.Context()))
		c.fail(w, r, nil, err)
		return
	}
	var who *store.ConsoleUser
	for i := range users {
		if ok, err := check.Matches(password, users[i].PasswordHash); err == nil && ok && !users[i].Disabled {
			who = &users[i]
			break
		}
	}
	if len(users) == 0 {
		check.Dummy(password)
	}
	check.End()
	if who == nil {
		// The attempt stays counted.
		c.auditFailedSignIn(r, users)
		show(http.StatusUnauthorized, "The e-mail address or the password is wrong, or the account is disabled.")
		return
	}
	attempt.Release(context.WithoutCancel(r.Context()))
	if err := c.passwordSignedIn(w, r, *who, d.Next); err != nil {
		c.fail(w, r, nil, err)
	}
}

// startSession opens a session at a stage (store.StageSignedIn, or a
// step still to take): a new random session id (never one the browser
// brought), stored hashed with its own CSRF token. It answers the id's
// hash.
func (c *Console) startSession(w http.ResponseWriter, r *http.Request, u store.ConsoleUser, stage string) (string, error) {
	id := randomToken()
	idHash := auth.HashSecret(id)
	ua := r.UserAgent()
	if len(ua) > 300 {
		ua = ua[:300]
	}
	ua = strings.ReplaceAll(strings.ToValidUTF8(ua, ""), "\x00", "")
	if err := c.store.CreateConsoleSession(r.Context(), idHash, randomToken(), u, c.clientIP(r), ua, stage, c.now()); err != nil {
		return "", err
	}
	http.SetCookie(w, c.cookie(cookieSession, id, int(c.cfg.MaxAge.Seconds())))
	http.SetCookie(w, c.cookie(cookieForm, "", -1))
	return idHash, nil
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := c.store.DeleteConsoleSession(r.Context(), s.idHash); err != nil {
		return err
	}
	if s.Stage == store.StageSignedIn {
		if err := c.store.RecordAudit(r.Context(), s.audit("user.sign_out", "user", s.User.ID)); err != nil {
			slog.ErrorContext(r.Context(), "console: audit sign-out", "err", err)
		}
	}
	http.SetCookie(w, c.cookie(cookieSession, "", -1))
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
	return nil
}

// The first-run page. An organization without console users gets its first
// administrator here; whoever fills it in proves to be an administrator of
// the organization with the client id and secret of one of its API
// credentials whose role holds every permission — the first start prints
// one (bootstrap-admin), and `patchd admin credential create --role
// Administrator` makes another. Nothing secret is printed for the console
// alone, the page is useless to someone without such a secret, and it
// closes by itself once the organization has a user. The user made here
// with the first start's credential while the instance has no operator
// is its first instance operator; every other user made here is told
// plainly that they are not.

type setupData struct {
	Email, ClientID, Error, FormToken string
	MinPassword                       int
}

func (c *Console) setupPage(w http.ResponseWriter, r *http.Request) {
	d := setupData{FormToken: c.formToken(w, r), MinPassword: admin.MinPasswordLength}
	if err := c.render(w, r, nil, http.StatusOK, "setup", "", "First sign-in", "", d); err != nil {
		c.fail(w, r, nil, err)
	}
}

func (c *Console) setup(w http.ResponseWriter, r *http.Request) {
	d := setupData{Email: strings.TrimSpace(r.PostFormValue("email")), ClientID: strings.TrimSpace(r.PostFormValue("client_id")),
		FormToken: c.formToken(w, r), MinPassword: admin.MinPasswordLength}
	show := func(status int, msg string) {
		d.Error = msg
		if err := c.render(w, r, nil, status, "setup", "", "First sign-in", "", d); err != nil {
			c.fail(w, r, nil, err)
		}
	}
	if !checkFormToken(r) {
		show(http.StatusForbidden, "The form was stale. Fill it in again.")
		return
	}
	attempt, err := c.throttle.Begin(r.Context(), c.now(), auth.Key{Name: "console-setup-ip:" + c.clientIP(r),
		Limit: auth.Limit{Max: MaxSignInFailures, Window: SignInWindow}})
	var limited *auth.RateLimitedError
	if errors.As(err, &limited) {
		retryAfter(w, limited.RetryAfter)
		show(http.StatusTooManyRequests, "Too many failed attempts from your address. Try again in "+waitText(limited.RetryAfter)+".")
		return
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	cred, err := c.store.CredentialByClientID(r.Context(), d.ClientID)
	if err != nil && !errors.Is(err, dberr.ErrNotFound) {
		attempt.Release(context.WithoutCancel(r.Context()))
		c.fail(w, r, nil, err)
		return
	}
	if err != nil || cred.Disabled || !auth.SecretMatches(r.PostFormValue("client_secret"), cred.SecretHash) || cred.Permissions&perm.All != perm.All {
		// The attempt stays counted.
		show(http.StatusUnauthorized, "Those are not the client id and secret of an enabled API credential with the Administrator role.")
		return
	}
	attempt.Release(context.WithoutCancel(r.Context()))
	password := r.PostFormValue("password")
	if password != r.PostFormValue("password2") {
		show(http.StatusUnprocessableEntity, "The two passwords differ.")
		return
	}
	if len([]rune(password)) < admin.MinPasswordLength {
		show(http.StatusUnprocessableEntity, "The password must have at least "+strconv.Itoa(admin.MinPasswordLength)+" characters.")
		return
	}
	email, err := admin.CheckEmail(d.Email)
	if err != nil {
		show(http.StatusUnprocessableEntity, err.Error())
		return
	}
	role, err := c.store.FindRole(r.Context(), cred.OrgID, store.RoleAdministrator)
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	e := &store.AuditEntry{OrgID: cred.OrgID, Actor: "user:" + email, Address: c.clientIP(r), Action: "user.create", TargetType: "user",
		Summary: map[string]any{"email": email, "role": role.Name, "firstRun": true, "provedWith": "api:" + cred.Name}}
	hash, err := auth.HashPassword(r.Context(), password)
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	// The first user made with the first start's credential while the
	// instance has no operator becomes its first operator (the store
	// decides, in the transaction that creates the user).
	ie := &store.InstanceEvent{Actor: "user:" + email, Address: c.clientIP(r), Action: "instance_operator.grant",
		Summary: map[string]any{"email": email, "orgId": cred.OrgID, "firstRun": true, "provedWith": "api:" + cred.Name}}
	u, err := c.store.CreateFirstUser(r.Context(), e, ie, store.User{OrgID: cred.OrgID, Email: email, RoleID: role.ID, PasswordHash: hash}, cred.ID)
	if errors.Is(err, dberr.ErrConflict) {
		show(http.StatusConflict, "This organization has console users already: sign in, or ask an administrator for an account.")
		return
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	welcome := "Welcome. You are the organization's first administrator."
	if u.InstanceOperator {
		welcome += " As the first user made with the first start's credential you are also this server's instance operator: you manage the vulnerability feeds every organization shares."
	} else {
		ops, err := c.store.ListInstanceOperators(r.Context())
		if err != nil {
			c.fail(w, r, nil, err)
			return
		}
		if len(ops) > 0 {
			welcome += " You are not this server's instance operator (who manages the vulnerability feeds every organization shares): another user is."
		} else {
			welcome += " You are not this server's instance operator (who manages the vulnerability feeds every organization shares), and it has none yet: " +
				"only the credential the first start printed (bootstrap-admin) makes one here. Whoever runs the server grants it with: patchd admin user operator grant --email " + email
		}
	}
	slog.Info("console: first administrator created", "org", cred.OrgID, "email", email, "instanceOperator", u.InstanceOperator)
	if _, err := c.startSession(w, r, store.ConsoleUser{User: u, RoleName: role.Name, Permissions: role.Permissions}, store.StageSignedIn); err != nil {
		c.fail(w, r, nil, err)
		return
	}
	setFlash(w, c, "ok", welcome)
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// flash is a one-time message shown on the next page.
type flash struct {
	Kind string // ok or error
	Text string
}

func setFlash(w http.ResponseWriter, c *Console, kind, text string) {
	v := base64.RawURLEncoding.EncodeToString([]byte(kind + "\x00" + text))
	if len(v) > 3000 {
		v = v[:3000]
	}
	http.SetCookie(w, c.cookie(cookieFlash, v, 60))
}

func takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	ck, err := r.Cookie(cookieFlash)
	if err != nil || ck.Value == "" {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: cookieFlash, Value: "", Path: "/console", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	b, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil {
		return nil
	}
	kind, text, ok := strings.Cut(string(b), "\x00")
	if !ok || (kind != "ok" && kind != "error") {
		return nil
	}
	return &flash{Kind: kind, Text: text}
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
