package console

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/identity/passkey"
	"github.com/patchd/patchd/internal/store"
)

// Passkeys (WebAuthn) as a second factor: the Account page registers,
// renames and removes them; after the password, a passkey answers the
// second-factor step as a TOTP code does. The ceremonies' options go to
// the browser as JSON and its answers come back as JSON (console.js calls
// navigator.credentials); the challenge and what the server expects stay
// on the session (store: pending_webauthn), taken once.

const (
	// maxCeremonyBody bounds a browser's answer (a few kilobytes at most).
	maxCeremonyBody = 64 << 10
	// maxPasskeyName bounds a passkey's name, in characters.
	maxPasskeyName = 60
	// MaxPasskeyStarts bounds the unfinished passwordless sign-ins of one
	// source address within SignInWindow (each keeps a row until it
	// expires); a sign-in that succeeds gives its start back.
	MaxPasskeyStarts = 50
)

func (c *Console) passkeyRoutes() {
	c.page("POST /console/account/passkeys/options", 0, c.passkeyRegisterOptions)
	c.page("POST /console/account/passkeys", 0, c.passkeyRegister)
	c.page("POST /console/account/passkeys/{id}/rename", 0, c.passkeyRename)
	c.page("POST /console/account/passkeys/{id}/remove", 0, c.passkeyRemove)
	c.staged("POST /console/signin/enroll/passkey/options", store.StageEnroll, c.passkeyRegisterOptions)
	c.staged("POST /console/signin/enroll/passkey", store.StageEnroll, c.passkeyEnroll)
	c.handleFunc("POST /console/login/passkey/options", c.passkeyLoginOptions)
	c.handleFunc("POST /console/login/passkey", c.passkeyLogin)
	c.staged("POST /console/signin/passkey/options", store.StageMFA, c.passkeySignInOptions)
	c.staged("POST /console/signin/passkey", store.StageMFA, c.passkeySignIn)
}

// relyingParty is the WebAuthn relying party of the request: --base-url
// when it names a domain, else the address the browser used
// (passkey.NewRelyingParty).
func (c *Console) relyingParty(r *http.Request) (*passkey.RelyingParty, error) {
	return passkey.NewRelyingParty(c.cfg.BaseURL, r.Host, r.TLS != nil || c.cfg.SecureCookies)
}

// passkeyUnavailable answers a server whose address cannot be a WebAuthn
// relying party (an IP address: browsers take only domain names).
func passkeyUnavailable(err error) error {
	return &pageError{http.StatusConflict, "Passkeys need the server to be reached by a domain name (its --base-url), not an IP address: " +
		"browsers refuse passkeys for IP addresses. " + err.Error()}
}

func (c *Console) keepCeremony(ctx context.Context, s *session, cer passkey.Ceremony) error {
	b, err := json.Marshal(cer)
	if err != nil {
		return err
	}
	return c.store.SetPendingWebAuthn(ctx, s.idHash, string(b))
}

// takeCeremony answers the session's ceremony of kind, once.
func (c *Console) takeCeremony(ctx context.Context, s *session, kind string) (passkey.Ceremony, error) {
	data, err := c.store.TakePendingWebAuthn(ctx, s.idHash)
	if err != nil {
		return passkey.Ceremony{}, err
	}
	var cer passkey.Ceremony
	if data == "" || json.Unmarshal([]byte(data), &cer) != nil || cer.Kind != kind {
		return passkey.Ceremony{}, badRequest("No passkey request is under way (or it was answered already): start again.")
	}
	if cer.Expired(c.now()) {
		return passkey.Ceremony{}, badRequest("The passkey request expired: start again.")
	}
	return cer, nil
}

// ceremonyBody reads a browser's JSON answer: a JSON body of at most
// maxCeremonyBody bytes.
func ceremonyBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		return nil, badRequest("Passkeys need JavaScript in the browser: this form sends the authenticator's answer as JSON.")
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCeremonyBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, &pageError{http.StatusRequestEntityTooLarge, "The browser's answer is too large."}
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, badRequest("The browser's answer is not JSON.")
	}
	return b, nil
}

// writeJSON answers a ceremony's options or its outcome.
func writeJSON(w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
	return nil
}

// passkeyName checks a passkey's name: 1 to maxPasskeyName printable
// characters.
func passkeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", badRequest("Name the passkey (for example the device or key that holds it).")
	case utf8.RuneCountInString(name) > maxPasskeyName:
		return "", badRequest(fmt.Sprintf("A passkey's name has at most %d characters.", maxPasskeyName))
	case strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return "", badRequest("A passkey's name holds only printable characters.")
	}
	return name, nil
}

// passkeyView is a passkey as the Account page lists it.
type passkeyView struct {
	ID, Name   string
	CreatedAt  time.Time
	LastUsedAt time.Time
	Synced     bool
}

func passkeyViews(keys []store.Passkey) []passkeyView {
	out := make([]passkeyView, 0, len(keys))
	for _, k := range keys {
		out = append(out, passkeyView{ID: k.ID, Name: k.Name, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt,
			Synced: passkey.Synced(k)})
	}
	return out
}

// passkeyRegisterOptions starts registering a passkey: the name comes in
// the JSON body ({"name": …}); the answer is the options of
// navigator.credentials.create.
func (c *Console) passkeyRegisterOptions(w http.ResponseWriter, r *http.Request, s *session) error {
	b, err := ceremonyBody(w, r)
	if err != nil {
		return err
	}
	var in struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return badRequest("The request holds no passkey name.")
	}
	name, err := passkeyName(in.Name)
	if err != nil {
		return err
	}
	if s.User.PasswordHash == "" {
		return &pageError{http.StatusConflict, "Passkeys are a second factor after your password, and you sign in through single sign-on: your provider has your second factor."}
	}
	if s.User.Passkeys >= store.MaxPasskeys {
		return &pageError{http.StatusConflict, fmt.Sprintf("You have %d passkeys, the most one may have: remove one first.", store.MaxPasskeys)}
	}
	rp, err := c.relyingParty(r)
	if err != nil {
		return passkeyUnavailable(err)
	}
	keys, err := c.store.ListPasskeys(r.Context(), s.User.OrgID, s.User.ID)
	if err != nil {
		return err
	}
	opts, cer, err := rp.BeginRegistration(s.User, keys, name)
	if err != nil {
		return err
	}
	if err := c.keepCeremony(r.Context(), s, cer); err != nil {
		return err
	}
	return writeJSON(w, opts)
}

// passkeyRegister finishes a registration on the Account page.
func (c *Console) passkeyRegister(w http.ResponseWriter, r *http.Request, s *session) error {
	name, err := c.finishRegistration(w, r, s)
	if err != nil {
		return err
	}
	setFlash(w, c, "ok", "The passkey "+name+" is added: it signs you in after your password.")
	return writeJSON(w, map[string]string{"next": "/console/account"})
}

// passkeyEnroll finishes a registration at the sign-in step of a user
// whose organization requires a second factor: the passkey is it, and the
// user is signed in.
func (c *Console) passkeyEnroll(w http.ResponseWriter, r *http.Request, s *session) error {
	if _, err := c.finishRegistration(w, r, s); err != nil {
		return err
	}
	u := s.User
	u.SecondFactor = true
	u.Passkeys++
	to, err := c.openStage(w, r, s, u, store.StageSignedIn, stageQuery(r).Method, r.URL.Query().Get("next"), map[string]any{"enrolled": "passkey"})
	if err != nil {
		return err
	}
	return writeJSON(w, map[string]string{"next": to})
}

// finishRegistration checks the browser's answer to the session's
// registration (the PublicKeyCredential as JSON) and stores the passkey;
// it answers the passkey's name.
func (c *Console) finishRegistration(w http.ResponseWriter, r *http.Request, s *session) (string, error) {
	b, err := ceremonyBody(w, r)
	if err != nil {
		return "", err
	}
	cer, err := c.takeCeremony(r.Context(), s, passkey.KindRegister)
	if err != nil {
		return "", err
	}
	parsed, err := passkey.ParseRegistration(b)
	if err != nil {
		slog.InfoContext(r.Context(), "console: passkey registration answer unreadable", "user", s.User.Email, "err", err)
		return "", badRequest("The browser's answer is not a passkey registration.")
	}
	rp, err := c.relyingParty(r)
	if err != nil {
		return "", passkeyUnavailable(err)
	}
	keys, err := c.store.ListPasskeys(r.Context(), s.User.OrgID, s.User.ID)
	if err != nil {
		return "", err
	}
	p, err := rp.FinishRegistration(s.User, keys, cer, parsed)
	var refused *passkey.Refused
	switch {
	case errors.As(err, &refused):
		slog.InfoContext(r.Context(), "console: passkey registration refused", "user", s.User.Email, "err", passkey.Detail(refused.Err))
		return "", badRequest("The passkey was not accepted: its answer does not match this request or this server's address (" + c.originText(r) + ").")
	case err != nil:
		return "", err
	}
	e := c.userAudit(r, s.User, "user.passkey_add", map[string]any{"aaguid": p.AAGUID})
	if _, err := c.store.AddPasskey(r.Context(), e, p); errors.Is(err, dberr.ErrConflict) {
		return "", &pageError{http.StatusConflict, "This passkey is registered already, or you have the most passkeys one may have."}
	} else if err != nil {
		return "", err
	}
	return cer.Name, nil
}

// originText names the origin passkeys belong to, for a refusal.
func (c *Console) originText(r *http.Request) string {
	rp, err := c.relyingParty(r)
	if err != nil {
		return "unknown"
	}
	return rp.Origin
}

func (c *Console) passkeyRename(w http.ResponseWriter, r *http.Request, s *session) error {
	name, err := passkeyName(r.PostFormValue("name"))
	if err != nil {
		return c.done(w, r, "/console/account", err, "")
	}
	err = c.store.RenamePasskey(r.Context(), s.audit("user.passkey_rename", "user", s.User.ID), s.User.OrgID, s.User.ID, r.PathValue("id"), name)
	if errors.Is(err, dberr.ErrNotFound) {
		err = notFound("passkey of yours")
	}
	return c.done(w, r, "/console/account", err, "The passkey is renamed "+name+".")
}

// passkeyRemove removes one of the user's passkeys. It takes the user's
// password (a session alone does not remove a factor), and an organization
// that requires a second factor refuses to remove the user's last one.
func (c *Console) passkeyRemove(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	p, err := c.store.GetPasskey(r.Context(), s.User.OrgID, s.User.ID, id)
	if errors.Is(err, dberr.ErrNotFound) {
		return c.done(w, r, "/console/account", notFound("passkey of yours"), "")
	}
	if err != nil {
		return err
	}
	required, err := c.store.OrgRequiresMFA(r.Context(), s.User.OrgID)
	if err != nil {
		return err
	}
	if required && !s.User.TOTP && s.User.Passkeys <= 1 {
		return c.done(w, r, "/console/account", &pageError{http.StatusForbidden, "Your organization requires a second factor and this passkey is your only one: add another first, or an administrator can reset it if you lost it."}, "")
	}
	if err := c.reprovePassword(w, r, s); err != nil {
		return c.done(w, r, "/console/account", err, "")
	}
	err = c.store.RemovePasskey(r.Context(), s.audit("user.passkey_remove", "user", s.User.ID), s.User.OrgID, s.User.ID, id)
	if errors.Is(err, dberr.ErrNotFound) {
		err = notFound("passkey of yours")
	}
	return c.done(w, r, "/console/account", err, "The passkey "+p.Name+" is removed.")
}

// reprovePassword checks the password of the form against the user's,
// within the second-factor throttle: removing a factor takes the password,
// not only the session.
func (c *Console) reprovePassword(w http.ResponseWriter, r *http.Request, s *session) error {
	password := r.PostFormValue("password")
	if password == "" {
		return badRequest("Enter your password to remove a passkey.")
	}
	check, err := auth.BeginPasswordCheck()
	if err != nil {
		retryAfter(w, time.Second)
		return &pageError{http.StatusServiceUnavailable, "The server is checking too many passwords at once. Try again in a few seconds."}
	}
	defer check.End()
	attempt, err := c.throttle.Begin(r.Context(), c.now(), auth.Key{Name: "console-mfa-user:" + s.User.ID,
		Limit: auth.Limit{Max: MaxSecondFactorFailures, Window: SignInWindow}})
	var limited *auth.RateLimitedError
	if errors.As(err, &limited) {
		retryAfter(w, limited.RetryAfter)
		return &pageError{http.StatusTooManyRequests, "Too many wrong attempts. Try again in " + waitText(limited.RetryAfter) + "."}
	}
	if err != nil {
		return err
	}
	if ok, err := check.Matches(password, s.User.PasswordHash); err != nil || !ok {
		e := s.audit("user.mfa_check_failed", "user", s.User.ID)
		e.Summary = map[string]any{"reason": "password"}
		c.record(r, e)
		return &pageError{http.StatusUnauthorized, "That password is wrong."}
	}
	attempt.Release(context.WithoutCancel(r.Context()))
	return nil
}

// passkeySignInOptions starts the second-factor step with a passkey: the
// options of navigator.credentials.get, listing the user's passkeys.
func (c *Console) passkeySignInOptions(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.askPasskey(w, r, s, s.User, "You have no passkey: enter the code of your authenticator app.",
		func(rp *passkey.RelyingParty, keys []store.Passkey) (any, passkey.Ceremony, error) {
			return rp.BeginSignIn(s.User, keys)
		})
}

// askPasskey answers the options of navigator.credentials.get that begin
// makes for the passkeys of u, and keeps the ceremony on the session; u
// without a passkey is refused with none.
func (c *Console) askPasskey(w http.ResponseWriter, r *http.Request, s *session, u store.ConsoleUser, none string,
	begin func(*passkey.RelyingParty, []store.Passkey) (any, passkey.Ceremony, error)) error {
	rp, err := c.relyingParty(r)
	if err != nil {
		return passkeyUnavailable(err)
	}
	keys, err := c.store.ListPasskeys(r.Context(), u.OrgID, u.ID)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return badRequest(none)
	}
	opts, cer, err := begin(rp, keys)
	if err != nil {
		return err
	}
	if err := c.keepCeremony(r.Context(), s, cer); err != nil {
		return err
	}
	return writeJSON(w, opts)
}

// passkeySignIn checks the browser's assertion: a passkey of the user,
// signed for this server's origin over the session's challenge, with a
// signature counter that moved on. Wrong answers count against the user as
// wrong codes do, and are in the Audit Trail.
func (c *Console) passkeySignIn(w http.ResponseWriter, r *http.Request, s *session) error {
	b, err := ceremonyBody(w, r)
	if err != nil {
		return err
	}
	next := safeNext(r.URL.Query().Get("next"))
	method := "password+passkey"
	cer, err := c.takeCeremony(r.Context(), s, passkey.KindSignIn)
	if err != nil {
		return err
	}
	parsed, err := passkey.ParseAssertion(b)
	if err != nil {
		slog.InfoContext(r.Context(), "console: passkey sign-in answer unreadable", "user", s.User.Email, "err", err)
		return badRequest("The browser's answer is not a passkey sign-in.")
	}
	attempt, err := c.throttle.Begin(r.Context(), c.now(), auth.Key{Name: "console-mfa-user:" + s.User.ID,
		Limit: auth.Limit{Max: MaxSecondFactorFailures, Window: SignInWindow}})
	var limited *auth.RateLimitedError
	if errors.As(err, &limited) {
		retryAfter(w, limited.RetryAfter)
		return &pageError{http.StatusTooManyRequests, "Too many wrong attempts. Try again in " + waitText(limited.RetryAfter) + "."}
	}
	if err != nil {
		return err
	}
	refuse := func(reason string, detail error) error {
		slog.InfoContext(r.Context(), "console: passkey sign-in refused", "user", s.User.Email, "reason", reason, "err", passkey.Detail(detail))
		c.record(r, c.userAudit(r, s.User, "user.sign_in_failed", map[string]any{"reason": "passkey", "detail": reason}))
		msg := "That passkey did not sign you in: it is not one of your passkeys, or its answer does not match this sign-in or this server's address (" +
			c.originText(r) + "). Try again"
		if s.User.TOTP {
			msg += ", or enter the code of your authenticator app"
		}
		return &pageError{http.StatusUnauthorized, msg + "."}
	}
	rp, err := c.relyingParty(r)
	if err != nil {
		attempt.Release(context.WithoutCancel(r.Context()))
		return passkeyUnavailable(err)
	}
	key, err := rp.FinishSignIn(r.Context(), c.store, s.User, cer, parsed, c.now())
	var refused *passkey.Refused
	if errors.As(err, &refused) {
		return refuse(refused.Reason, refused.Err)
	}
	if err != nil {
		attempt.Release(context.WithoutCancel(r.Context()))
		return err
	}
	attempt.Release(context.WithoutCancel(r.Context()))
	stage, err := c.nextStage(r.Context(), s.User)
	if err != nil {
		return err
	}
	to, err := c.openStage(w, r, s, s.User, stage, method, next, map[string]any{"passkeyId": key.ID, "passkey": key.Name})
	if err != nil {
		return err
	}
	return writeJSON(w, map[string]string{"next": to})
}

// Passwordless sign-in ("Sign in with a passkey" on the sign-in page): a
// discoverable passkey that verifies its user (a PIN or a biometric) is
// two factors on its own, so it signs in without the password. There is no
// session yet: the ceremony is kept under the hash of the sign-in form's
// cookie (only the browser that started can finish), and the form's CSRF
// token comes in the X-CSRF-Token header.

// loginFormToken tells whether a JSON request of the sign-in page carries
// its form token (header X-CSRF-Token, equal to the form cookie), and
// answers the cookie.
func loginFormToken(r *http.Request) (string, bool) {
	ck, err := r.Cookie(cookieForm)
	token := r.Header.Get("X-CSRF-Token")
	if err != nil || len(ck.Value) < 40 || !sameOrigin(r) || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(token)) != 1 {
		return "", false
	}
	return ck.Value, true
}

func (c *Console) passkeyLoginOptions(w http.ResponseWriter, r *http.Request) {
	cookie, ok := loginFormToken(r)
	if !ok {
		c.renderError(w, r, nil, http.StatusForbidden, "The sign-in page was stale. Reload it and try again.")
		return
	}
	if _, err := ceremonyBody(w, r); err != nil {
		c.fail(w, r, nil, err)
		return
	}
	rp, err := c.relyingParty(r)
	if err != nil {
		c.fail(w, r, nil, passkeyUnavailable(err))
		return
	}
	now := c.now()
	key := "console-passkey-start-ip:" + c.clientIP(r)
	n, windowStart, err := c.store.ReserveAttempt(r.Context(), key, now, SignInWindow)
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	if n > MaxPasskeyStarts {
		c.store.ReleaseAttempt(context.WithoutCancel(r.Context()), key, windowStart)
		wait := max(windowStart.Add(SignInWindow).Sub(now), time.Second)
		retryAfter(w, wait)
		c.renderError(w, r, nil, http.StatusTooManyRequests, "Too many unfinished passkey sign-ins from your address. Try again in "+waitText(wait)+".")
		return
	}
	opts, cer, err := rp.BeginLogin()
	if err != nil {
		c.store.ReleaseAttempt(context.WithoutCancel(r.Context()), key, windowStart)
		c.fail(w, r, nil, err)
		return
	}
	cer.ThrottleKey, cer.ThrottleStart = key, windowStart
	b, err := json.Marshal(cer)
	if err == nil {
		err = c.store.PutPasskeyLogin(r.Context(), auth.HashSecret(cookie), string(b), now.Add(passkey.CeremonyTimeout), now)
	}
	if err != nil {
		c.store.ReleaseAttempt(context.WithoutCancel(r.Context()), key, windowStart)
		c.fail(w, r, nil, err)
		return
	}
	if err := writeJSON(w, opts); err != nil {
		c.fail(w, r, nil, err)
	}
}

// passkeyLogin checks a passwordless sign-in: the passkey names its user,
// whose account must be enabled, and must have verified the user. Wrong
// answers count against the address as wrong passwords do.
func (c *Console) passkeyLogin(w http.ResponseWriter, r *http.Request) {
	if err := c.passkeyLoginErr(w, r); err != nil {
		c.fail(w, r, nil, err)
	}
}

func (c *Console) passkeyLoginErr(w http.ResponseWriter, r *http.Request) error {
	cookie, ok := loginFormToken(r)
	if !ok {
		return &pageError{http.StatusForbidden, "The sign-in page was stale. Reload it and try again."}
	}
	b, err := ceremonyBody(w, r)
	if err != nil {
		return err
	}
	data, err := c.store.TakePasskeyLogin(r.Context(), auth.HashSecret(cookie), c.now())
	if err != nil {
		return err
	}
	var cer passkey.Ceremony
	if data == "" || json.Unmarshal([]byte(data), &cer) != nil || cer.Kind != passkey.KindLogin {
		return badRequest("No passkey sign-in is under way (or it was answered already): start again.")
	}
	parsed, err := passkey.ParseAssertion(b)
	if err != nil {
		slog.InfoContext(r.Context(), "console: passkey sign-in answer unreadable", "err", err)
		return badRequest("The browser's answer is not a passkey sign-in.")
	}
	attempt, err := c.throttle.Begin(r.Context(), c.now(), auth.Key{Name: "console-passkey-ip:" + c.clientIP(r),
		Limit: auth.Limit{Max: MaxAddressSignInFailures, Window: SignInWindow}})
	var limited *auth.RateLimitedError
	if errors.As(err, &limited) {
		retryAfter(w, limited.RetryAfter)
		return &pageError{http.StatusTooManyRequests, "Too many failed sign-ins from your address. Try again in " + waitText(limited.RetryAfter) + "."}
	}
	if err != nil {
		return err
	}
	refused := &pageError{http.StatusUnauthorized, "That passkey did not sign you in: it is not a passkey of an enabled account of this server (" + c.originText(r) +
		"), or it did not verify you. Sign in with your password."}
	u, key, err := passkey.LoginUser(r.Context(), c.store, parsed)
	if errors.Is(err, dberr.ErrNotFound) {
		slog.InfoContext(r.Context(), "console: passwordless sign-in with an unknown passkey", "address", c.clientIP(r))
		return refused
	}
	refuse := func(reason string, detail error) error {
		slog.InfoContext(r.Context(), "console: passwordless sign-in refused", "user", u.Email, "reason", reason, "err", passkey.Detail(detail))
		c.record(r, c.userAudit(r, u, "user.sign_in_failed", map[string]any{"reason": "passkey", "detail": reason, "passwordless": true, "disabled": u.Disabled}))
		return refused
	}
	var no *passkey.Refused
	if errors.As(err, &no) {
		return refuse(no.Reason, no.Err)
	}
	if err != nil {
		attempt.Release(context.WithoutCancel(r.Context()))
		return err
	}
	rp, err := c.relyingParty(r)
	if err != nil {
		attempt.Release(context.WithoutCancel(r.Context()))
		return passkeyUnavailable(err)
	}
	err = rp.FinishLogin(r.Context(), c.store, u, key, cer, parsed, c.now())
	if errors.As(err, &no) {
		return refuse(no.Reason, no.Err)
	}
	if err != nil {
		attempt.Release(context.WithoutCancel(r.Context()))
		return err
	}
	attempt.Release(context.WithoutCancel(r.Context()))
	stage, err := c.nextStage(r.Context(), u)
	if err != nil {
		return err
	}
	to, err := c.openStage(w, r, nil, u, stage, "passkey", r.URL.Query().Get("next"), map[string]any{"passkeyId": key.ID, "passkey": key.Name})
	if err != nil {
		return err
	}
	if cer.ThrottleKey != "" {
		if err := c.store.ReleaseAttempt(context.WithoutCancel(r.Context()), cer.ThrottleKey, cer.ThrottleStart); err != nil {
			slog.WarnContext(r.Context(), "console: give back a passkey sign-in start", "err", err)
		}
	}
	return writeJSON(w, map[string]string{"next": to})
}
