package console

import (
	"context"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/identity/passkey"
	"github.com/patchd/patchd/internal/store"
)

// Identity in the console: the steps of a sign-in after the password (the
// second factor, a new password after a reset, setting up a second factor
// the organization requires), the Account page (second factor, recovery
// codes, sessions, sign out everywhere) and the Audit Trail entries of
// sign-ins and sign-outs.

// MaxSecondFactorFailures is how many wrong second-factor codes a user may
// enter within SignInWindow (from any address) before it must wait.
const MaxSecondFactorFailures = 10

func (c *Console) identityRoutes() {
	c.staged("GET /console/signin/code", store.StageMFA, c.codePage)
	c.staged("POST /console/signin/code", store.StageMFA, c.codeSubmit)
	c.staged("GET /console/signin/password", store.StagePassword, c.newPasswordPage)
	c.staged("POST /console/signin/password", store.StagePassword, c.newPasswordSubmit)
	c.staged("GET /console/signin/enroll", store.StageEnroll, c.enrollStagePage)
	c.staged("POST /console/signin/enroll", store.StageEnroll, c.enrollStageSubmit)

	c.page("GET /console/account", 0, c.accountPage)
	c.page("POST /console/account/password", 0, c.passwordChange)
	c.page("POST /console/account/totp", 0, c.totpBegin)
	c.page("POST /console/account/totp/confirm", 0, c.totpConfirm)
	c.page("POST /console/account/totp/remove", 0, c.totpRemove)
	c.page("POST /console/account/recovery-codes", 0, c.recoveryRenew)
	c.page("POST /console/account/sessions/{id}/revoke", 0, c.sessionRevoke)
	c.page("POST /console/account/sessions/revoke", 0, c.sessionsRevoke)
	c.page("POST /console/settings/second-factor", adminOnly, c.requireSecondFactor)
}

// stagePath is the page of a sign-in step.
func stagePath(stage string) string {
	switch stage {
	case store.StageMFA:
		return "/console/signin/code"
	case store.StagePassword:
		return "/console/signin/password"
	case store.StageEnroll:
		return "/console/signin/enroll"
	}
	return "/console/"
}

// staged routes a page of a sign-in step: it needs a session at stage
// (any stage when stage is "", which is sign-out's) and, for a POST, the
// session's CSRF token.
func (c *Console) staged(pattern, stage string, h handler) {
	c.handleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s, err := c.session(w, r)
		if err != nil {
			slog.ErrorContext(r.Context(), "console session", "err", err)
			c.renderError(w, r, nil, http.StatusInternalServerError, "The console could not read your session.")
			return
		}
		if s == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/console/login", http.StatusSeeOther)
				return
			}
			c.renderError(w, r, nil, http.StatusUnauthorized, "Your session has ended. Sign in again.")
			return
		}
		if stage != "" && s.Stage != stage {
			http.Redirect(w, r, stagePath(s.Stage), http.StatusSeeOther)
			return
		}
		if r.Method != http.MethodGet && !c.checkCSRF(r, s) {
			c.renderError(w, r, nil, http.StatusForbidden, "The form was stale or did not come from this console (CSRF check). Reload the page and try again.")
			return
		}
		if err := h(w, r, s); err != nil {
			c.fail(w, r, nil, err)
		}
	})
}

// userAudit is an Audit Trail entry about the user u, by u.
func (c *Console) userAudit(r *http.Request, u store.ConsoleUser, action string, summary map[string]any) *store.AuditEntry {
	return &store.AuditEntry{OrgID: u.OrgID, Actor: "user:" + u.Email, Address: c.clientIP(r), Action: action, TargetType: "user",
		TargetID: u.ID, Summary: summary}
}

func (c *Console) record(r *http.Request, e *store.AuditEntry) {
	if err := c.store.RecordAudit(context.WithoutCancel(r.Context()), e); err != nil {
		slog.ErrorContext(r.Context(), "console: audit", "action", e.Action, "err", err)
	}
}

// auditFailedSignIn records a failed password sign-in in the Audit Trail
// of each organization with an account of that e-mail address (an
// address nobody has belongs to no organization: the log has it).
func (c *Console) auditFailedSignIn(r *http.Request, users []store.ConsoleUser) {
	if len(users) == 0 {
		slog.InfoContext(r.Context(), "console: sign-in with an unknown e-mail address", "address", c.clientIP(r))
	}
	for _, u := range users {
		c.record(r, c.userAudit(r, u, "user.sign_in_failed", map[string]any{"reason": "password", "disabled": u.Disabled}))
	}
}

// passwordSignedIn goes on from a right password: to the second factor,
// a new password or setting up a second factor, or straight in.
func (c *Console) passwordSignedIn(w http.ResponseWriter, r *http.Request, u store.ConsoleUser, next string) error {
	stage := store.StageMFA
	if !u.SecondFactor {
		var err error
		if stage, err = c.nextStage(r.Context(), u); err != nil {
			return err
		}
	}
	return c.enterStage(w, r, nil, u, stage, "password", next)
}

// nextStage is the step a user who proved its password (and its second
// factor, if it has one) still has to take.
func (c *Console) nextStage(ctx context.Context, u store.ConsoleUser) (string, error) {
	if u.MustChangePassword {
		return store.StagePassword, nil
	}
	if !u.SecondFactor {
		required, err := c.store.OrgRequiresMFA(ctx, u.OrgID)
		if err != nil {
			return "", err
		}
		if required {
			return store.StageEnroll, nil
		}
	}
	return store.StageSignedIn, nil
}

// enterStage replaces the session (old, nil at the password) with a new
// one at stage, so that a session id never gains power, and sends the
// browser to the stage's page; reaching store.StageSignedIn is the
// sign-in the Audit Trail records (with method: how the user proved who
// it is).
func (c *Console) enterStage(w http.ResponseWriter, r *http.Request, old *session, u store.ConsoleUser, stage, method, next string) error {
	to, err := c.openStage(w, r, old, u, stage, method, next, nil)
	if err != nil {
		return err
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// openStage is enterStage without the redirect: it answers where the
// browser goes next (a passkey's sign-in answers it as JSON). summary
// adds to the Audit Trail entry of a completed sign-in.
func (c *Console) openStage(w http.ResponseWriter, r *http.Request, old *session, u store.ConsoleUser, stage, method, next string, summary map[string]any) (string, error) {
	if old != nil {
		if err := c.store.DeleteConsoleSession(r.Context(), old.idHash); err != nil {
			return "", err
		}
	}
	if _, err := c.startSession(w, r, u, stage); err != nil {
		return "", err
	}
	next = safeNext(next)
	if stage == store.StageSignedIn {
		if summary == nil {
			summary = map[string]any{}
		}
		summary["method"] = method
		c.record(r, c.userAudit(r, u, "user.sign_in", summary))
		return next, nil
	}
	return stagePath(stage) + "?method=" + urlQueryEscape(method) + "&next=" + urlQueryEscape(next), nil
}

type stageData struct {
	Next, Method, Error string
	MinPassword         int
	// TOTP and Passkeys say which second factors the user may answer
	// with (the code page).
	TOTP, Passkeys bool
	Enroll         *enrollView
	RecoveryCodes  []string
}

func stageQuery(r *http.Request) stageData {
	method := r.FormValue("method")
	switch method {
	case "password", "password+totp", "password+recovery_code", "password+passkey", "passkey":
	default:
		method = "password"
	}
	return stageData{Next: safeNext(r.FormValue("next")), Method: method, MinPassword: admin.MinPasswordLength}
}

func (c *Console) codePage(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.render(w, r, nil, http.StatusOK, "signin_code", "", "Second factor", "", withCSRF(c.codeQuery(r, s), s))
}

// codeQuery is the code page's data: the factors the user has.
func (c *Console) codeQuery(r *http.Request, s *session) stageData {
	d := stageQuery(r)
	d.TOTP, d.Passkeys = s.User.TOTP, s.User.Passkeys > 0
	return d
}

// withCSRF hands a sign-in step's page the session's CSRF token (it has
// no layout session).
type stageView struct {
	stageData
	CSRF string
}

func withCSRF(d stageData, s *session) stageView { return stageView{d, s.CSRFToken} }

// checkSecondFactor checks a TOTP code or a recovery code of the user,
// within the second-factor throttle; it answers the method that matched
// ("" when none did) or a *auth.RateLimitedError.
func (c *Console) checkSecondFactor(r *http.Request, u store.ConsoleUser, code string) (string, error) {
	attempt, err := c.throttle.Begin(r.Context(), c.now(), auth.Key{Name: "console-mfa-user:" + u.ID,
		Limit: auth.Limit{Max: MaxSecondFactorFailures, Window: SignInWindow}})
	if err != nil {
		return "", err
	}
	code = strings.TrimSpace(code)
	method := ""
	if len(strings.ReplaceAll(code, " ", "")) == auth.TOTPDigits {
		secret, err := c.store.UserTOTPSecret(r.Context(), u.ID)
		if err != nil {
			attempt.Release(context.WithoutCancel(r.Context()))
			return "", err
		}
		if step, ok := auth.CheckTOTP(secret, code, c.now()); ok && secret != "" {
			fresh, err := c.store.UseTOTPStep(r.Context(), u.ID, step)
			if err != nil {
				attempt.Release(context.WithoutCancel(r.Context()))
				return "", err
			}
			if fresh {
				method = "totp"
			}
		}
	} else if code != "" {
		used, err := c.store.UseRecoveryCode(r.Context(), c.userAudit(r, u, "user.recovery_code_use", nil), u.ID, auth.HashRecoveryCode(u.ID, code))
		if err != nil {
			attempt.Release(context.WithoutCancel(r.Context()))
			return "", err
		}
		if used {
			method = "recovery_code"
		}
	}
	if method != "" {
		attempt.Release(context.WithoutCancel(r.Context()))
	}
	return method, nil
}

func (c *Console) codeSubmit(w http.ResponseWriter, r *http.Request, s *session) error {
	d := c.codeQuery(r, s)
	method, err := c.checkSecondFactor(r, s.User, r.PostFormValue("code"))
	var limited *auth.RateLimitedError
	if errors.As(err, &limited) {
		retryAfter(w, limited.RetryAfter)
		d.Error = "Too many wrong codes. Try again in " + waitText(limited.RetryAfter) + "."
		return c.render(w, r, nil, http.StatusTooManyRequests, "signin_code", "", "Second factor", "", withCSRF(d, s))
	}
	if err != nil {
		return err
	}
	if method == "" {
		c.record(r, c.userAudit(r, s.User, "user.sign_in_failed", map[string]any{"reason": "second factor"}))
		d.Error = "That code is wrong or was used already. Enter the code your authenticator app shows now, or an unused recovery code."
		return c.render(w, r, nil, http.StatusUnauthorized, "signin_code", "", "Second factor", "", withCSRF(d, s))
	}
	stage, err := c.nextStage(r.Context(), s.User)
	if err != nil {
		return err
	}
	return c.enterStage(w, r, s, s.User, stage, "password+"+method, d.Next)
}

func (c *Console) newPasswordPage(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.render(w, r, nil, http.StatusOK, "signin_password", "", "Choose a new password", "", withCSRF(stageQuery(r), s))
}

func (c *Console) newPasswordSubmit(w http.ResponseWriter, r *http.Request, s *session) error {
	d := stageQuery(r)
	password := r.PostFormValue("password")
	show := func(msg string) error {
		d.Error = msg
		return c.render(w, r, nil, http.StatusUnprocessableEntity, "signin_password", "", "Choose a new password", "", withCSRF(d, s))
	}
	if password != r.PostFormValue("password2") {
		return show("The two passwords differ.")
	}
	if len([]rune(password)) < admin.MinPasswordLength {
		return show("The password must have at least 12 characters.")
	}
	if check, err := auth.BeginPasswordCheck(); err == nil {
		same, err := check.Matches(password, s.User.PasswordHash)
		check.End()
		if err == nil && same {
			return show("Choose a password other than the one you were given.")
		}
	}
	hash, err := auth.HashPassword(r.Context(), password)
	if err != nil {
		return err
	}
	if err := c.store.SetUserPassword(r.Context(), c.userAudit(r, s.User, "user.password_change", nil), s.User.OrgID, s.User.ID, hash, false, true, s.idHash); err != nil {
		return err
	}
	u := s.User
	u.MustChangePassword, u.PasswordHash = false, hash
	stage, err := c.nextStage(r.Context(), u)
	if err != nil {
		return err
	}
	return c.enterStage(w, r, s, u, stage, d.Method, d.Next)
}

// enrollView is a TOTP secret being set up: shown as text and as the
// otpauth:// URI an authenticator app takes.
type enrollView struct {
	Secret string
	// URI is the otpauth:// URI (a scheme html/template would refuse).
	URI template.URL
}

func (c *Console) enrollView(s *session, secret string) *enrollView {
	issuer := "patchd"
	if c.cfg.BaseURL != "" {
		issuer += " " + strings.TrimPrefix(strings.TrimPrefix(c.cfg.BaseURL, "https://"), "http://")
	}
	// Groups of four letters are easier to type.
	var b strings.Builder
	for i := 0; i < len(secret); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(secret[i:min(i+4, len(secret))])
	}
	return &enrollView{Secret: b.String(), URI: template.URL(auth.TOTPURI(issuer, s.User.Email, secret))}
}

// pendingSecret is the session's TOTP secret being set up, made when it
// has none.
func (c *Console) pendingSecret(r *http.Request, s *session) (string, error) {
	if s.PendingTOTP != "" {
		return s.PendingTOTP, nil
	}
	secret := auth.NewTOTPSecret()
	if err := c.store.SetPendingTOTP(r.Context(), s.idHash, secret); err != nil {
		return "", err
	}
	s.PendingTOTP = secret
	return secret, nil
}

func (c *Console) enrollStagePage(w http.ResponseWriter, r *http.Request, s *session) error {
	secret, err := c.pendingSecret(r, s)
	if err != nil {
		return err
	}
	d := stageQuery(r)
	d.Enroll = c.enrollView(s, secret)
	return c.render(w, r, nil, http.StatusOK, "signin_enroll", "", "Set up a second factor", "", withCSRF(d, s))
}

// confirmTOTP checks a code of the session's pending secret and, when it
// is right, makes the secret the user's second factor with new recovery
// codes, which it answers (nil: the code was wrong).
func (c *Console) confirmTOTP(r *http.Request, s *session) ([]string, error) {
	if s.PendingTOTP == "" {
		return nil, badRequest("Start setting up the authenticator app again.")
	}
	step, ok := auth.CheckTOTP(s.PendingTOTP, r.PostFormValue("code"), c.now())
	if !ok {
		return nil, nil
	}
	codes := auth.NewRecoveryCodes()
	hashes := make([]string, len(codes))
	for i, code := range codes {
		hashes[i] = auth.HashRecoveryCode(s.User.ID, code)
	}
	e := c.userAudit(r, s.User, "user.mfa_enable", map[string]any{"factor": "totp", "recoveryCodes": len(codes)})
	if err := c.store.EnableTOTP(r.Context(), e, s.User.OrgID, s.User.ID, s.PendingTOTP, step, hashes); err != nil {
		return nil, err
	}
	return codes, nil
}

func (c *Console) enrollStageSubmit(w http.ResponseWriter, r *http.Request, s *session) error {
	d := stageQuery(r)
	codes, err := c.confirmTOTP(r, s)
	if err != nil {
		return err
	}
	if codes == nil {
		d.Error = "That code is wrong: check the phone's clock, and enter the code the app shows now."
		d.Enroll = c.enrollView(s, s.PendingTOTP)
		return c.render(w, r, nil, http.StatusUnprocessableEntity, "signin_enroll", "", "Set up a second factor", "", withCSRF(d, s))
	}
	// Signed in: a new session, and the recovery codes shown once.
	if err := c.store.DeleteConsoleSession(r.Context(), s.idHash); err != nil {
		return err
	}
	u := s.User
	u.SecondFactor, u.TOTP = true, true
	idHash, err := c.startSession(w, r, u, store.StageSignedIn)
	if err != nil {
		return err
	}
	c.record(r, c.userAudit(r, u, "user.sign_in", map[string]any{"method": d.Method}))
	ns, err := c.store.GetConsoleSession(r.Context(), idHash)
	if err != nil {
		return err
	}
	d.RecoveryCodes = codes
	return c.render(w, r, &session{idHash: idHash, addr: s.addr, ConsoleSession: ns}, http.StatusOK, "recovery_codes", "", "Recovery codes", "account", d)
}

// The Account page.

type accountData struct {
	Sessions []sessionView
	// TOTP: the user has an authenticator app.
	TOTP     bool
	Passkeys []passkeyView
	// PasswordUser: the user signs in with a password (passkeys are for
	// those; single sign-on users have their provider's factors).
	PasswordUser bool
	// NoPasskeys: the console is reached at an IP address, where browsers
	// refuse passkeys (passkey.Possible).
	NoPasskeys     bool
	CodesLeft      int
	Required       bool
	Enroll         *enrollView
	RecoveryCodes  []string
	Error          string
	IdleTimeout    time.Duration
	MaxAge         time.Duration
	MinPassword    int
	RecoveryTotal  int
	NewCodesReason string
	// PasswordError is the password form's refusal.
	PasswordError string
	// JoinError is the refusal of the form that joins another account.
	JoinError string
	// JoinPasskey: the other account's password is proved, and one of its
	// passkeys is asked for next.
	JoinPasskey bool
	// SSO is the organization's enabled single sign-on, if any: its
	// provider, and whether the user is linked to an account of it.
	SSO *accountSSO
}

type accountSSO struct {
	ProviderName string
	Linked       bool
	// Operator: an instance operator, which single sign-on does not sign
	// in unless an instance-level action allowed it.
	Operator bool
}

type sessionView struct {
	store.SessionInfo
	Current bool
	Expires time.Time
}

func (c *Console) accountData(r *http.Request, s *session) (*accountData, error) {
	list, err := c.store.ListUserSessions(r.Context(), s.User.OrgID, s.User.ID)
	if err != nil {
		return nil, err
	}
	left, err := c.store.CountRecoveryCodes(r.Context(), s.User.ID)
	if err != nil {
		return nil, err
	}
	required, err := c.store.OrgRequiresMFA(r.Context(), s.User.OrgID)
	if err != nil {
		return nil, err
	}
	keys, err := c.store.ListPasskeys(r.Context(), s.User.OrgID, s.User.ID)
	if err != nil {
		return nil, err
	}
	d := &accountData{MinPassword: admin.MinPasswordLength, TOTP: s.User.TOTP, Passkeys: passkeyViews(keys), PasswordUser: s.User.PasswordHash != "",
		NoPasskeys: !passkey.Possible(c.cfg.BaseURL, r.Host), CodesLeft: left, Required: required, IdleTimeout: c.cfg.IdleTimeout,
		MaxAge: c.cfg.MaxAge, RecoveryTotal: auth.RecoveryCodes}
	if cfg, err := c.store.GetSSOConfig(r.Context(), s.User.OrgID); err == nil && cfg.Enabled {
		linked, err := c.store.SSOLinked(r.Context(), s.User.ID, cfg.Issuer)
		if err != nil {
			return nil, err
		}
		d.SSO = &accountSSO{ProviderName: cfg.ProviderName, Linked: linked, Operator: s.User.InstanceOperator && !s.User.OperatorSSO}
	} else if err != nil && !errors.Is(err, dberr.ErrNotFound) {
		return nil, err
	}
	for _, si := range list {
		exp := si.LastSeenAt.Add(c.cfg.IdleTimeout)
		if abs := si.CreatedAt.Add(c.cfg.MaxAge); abs.Before(exp) {
			exp = abs
		}
		d.Sessions = append(d.Sessions, sessionView{SessionInfo: si, Current: si.IDHash == s.idHash, Expires: exp})
	}
	return d, nil
}

func (c *Console) renderAccount(w http.ResponseWriter, r *http.Request, s *session, status int, edit func(*accountData)) error {
	d, err := c.accountData(r, s)
	if err != nil {
		return err
	}
	if edit != nil {
		edit(d)
	}
	return c.render(w, r, s, status, "account", "", "Your account", "account", d)
}

func (c *Console) accountPage(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.renderAccount(w, r, s, http.StatusOK, nil)
}

// passwordChange changes the user's own password: it takes the current
// one, within a throttle like sign-in's (so a session left open does not
// let anyone try passwords), and signs the user's other sessions out.
func (c *Console) passwordChange(w http.ResponseWriter, r *http.Request, s *session) error {
	if s.User.PasswordHash == "" {
		return c.done(w, r, "/console/account", badRequest("You sign in through single sign-on: your provider keeps your password."), "")
	}
	current, password := r.PostFormValue("current"), r.PostFormValue("password")
	show := func(status int, msg string) error {
		return c.renderAccount(w, r, s, status, func(d *accountData) { d.PasswordError = msg })
	}
	switch {
	case current == "":
		return show(http.StatusUnprocessableEntity, "Enter your current password.")
	case password != r.PostFormValue("password2"):
		return show(http.StatusUnprocessableEntity, "The two new passwords differ.")
	case len([]rune(password)) < admin.MinPasswordLength:
		return show(http.StatusUnprocessableEntity, "The new password must have at least 12 characters.")
	case password == current:
		return show(http.StatusUnprocessableEntity, "Choose a new password other than your current one.")
	}
	check, err := auth.BeginPasswordCheck()
	if err != nil {
		retryAfter(w, time.Second)
		return show(http.StatusServiceUnavailable, "The server is checking too many passwords at once. Try again in a few seconds.")
	}
	defer check.End()
	attempt, err := c.throttle.Begin(r.Context(), c.now(), auth.ThrottleKeys("console-password-change", s.User.ID, c.clientIP(r),
		auth.Limit{Max: MaxSignInFailures, Window: SignInWindow}, auth.Limit{Max: MaxAddressSignInFailures, Window: SignInWindow})...)
	var limited *auth.RateLimitedError
	if errors.As(err, &limited) {
		retryAfter(w, limited.RetryAfter)
		return show(http.StatusTooManyRequests, "Too many wrong passwords. Try again in "+waitText(limited.RetryAfter)+".")
	}
	if err != nil {
		return err
	}
	if ok, err := check.Matches(current, s.User.PasswordHash); err != nil || !ok {
		// The attempt stays counted.
		c.record(r, c.userAudit(r, s.User, "user.password_change_failed", map[string]any{"reason": "current password"}))
		return show(http.StatusUnauthorized, "Your current password is wrong.")
	}
	check.End()
	attempt.Release(context.WithoutCancel(r.Context()))
	hash, err := auth.HashPassword(r.Context(), password)
	if err != nil {
		return err
	}
	e := c.userAudit(r, s.User, "user.password_change", map[string]any{"otherSessionsEnded": true})
	if err := c.store.SetUserPassword(r.Context(), e, s.User.OrgID, s.User.ID, hash, false, true, s.idHash); err != nil {
		return err
	}
	return c.done(w, r, "/console/account", nil, "Your password is changed; your other sessions are signed out.")
}

// ssoSecondFactor refuses an authenticator app to a single sign-on user.
const ssoSecondFactor = "You sign in through single sign-on: your provider has your second factor, and patchd asks for none."

// totpBegin starts setting up an authenticator app: a new secret kept on
// the session until a code of it confirms it.
//
// A user who signs in through single sign-on only is not offered one: that
// sign-in never asks patchd's second factor (the provider has its own), so
// an app set up here would protect nothing.
func (c *Console) totpBegin(w http.ResponseWriter, r *http.Request, s *session) error {
	if s.User.PasswordHash == "" {
		return c.done(w, r, "/console/account", badRequest(ssoSecondFactor), "")
	}
	if s.User.TOTP {
		return c.done(w, r, "/console/account", badRequest("You have an authenticator app: remove it first to set up another."), "")
	}
	secret := auth.NewTOTPSecret()
	if err := c.store.SetPendingTOTP(r.Context(), s.idHash, secret); err != nil {
		return err
	}
	return c.renderAccount(w, r, s, http.StatusOK, func(d *accountData) { d.Enroll = c.enrollView(s, secret) })
}

func (c *Console) totpConfirm(w http.ResponseWriter, r *http.Request, s *session) error {
	if s.User.PasswordHash == "" {
		return c.done(w, r, "/console/account", badRequest(ssoSecondFactor), "")
	}
	if s.User.TOTP {
		return c.done(w, r, "/console/account", badRequest("You have an authenticator app already."), "")
	}
	codes, err := c.confirmTOTP(r, s)
	if err != nil {
		return c.done(w, r, "/console/account", err, "")
	}
	if codes == nil {
		return c.renderAccount(w, r, s, http.StatusUnprocessableEntity, func(d *accountData) {
			d.Enroll = c.enrollView(s, s.PendingTOTP)
			d.Error = "That code is wrong: check the phone's clock, and enter the code the app shows now."
		})
	}
	s.User.SecondFactor, s.User.TOTP = true, true
	return c.renderAccount(w, r, s, http.StatusOK, func(d *accountData) { d.RecoveryCodes = codes })
}

// totpRemove removes the user's authenticator app; it takes a current
// code (or a recovery code), and an organization that requires a second
// factor refuses it unless the user keeps a passkey.
func (c *Console) totpRemove(w http.ResponseWriter, r *http.Request, s *session) error {
	if !s.User.TOTP {
		return c.done(w, r, "/console/account", badRequest("You have no authenticator app."), "")
	}
	required, err := c.store.OrgRequiresMFA(r.Context(), s.User.OrgID)
	if err != nil {
		return err
	}
	if required && s.User.Passkeys == 0 {
		return c.done(w, r, "/console/account", &pageError{http.StatusForbidden, "Your organization requires a second factor: an administrator can reset it if you lost your phone."}, "")
	}
	if err := c.reprove(w, r, s); err != nil {
		return c.done(w, r, "/console/account", err, "")
	}
	err = c.store.RemoveTOTP(r.Context(), s.audit("user.mfa_disable", "user", s.User.ID), s.User.OrgID, s.User.ID)
	return c.done(w, r, "/console/account", err, "Your second factor is off.")
}

// reprove checks the code of the form against the user's second factor:
// changes to it take a code, not only the session.
func (c *Console) reprove(w http.ResponseWriter, r *http.Request, s *session) error {
	method, err := c.checkSecondFactor(r, s.User, r.PostFormValue("code"))
	var limited *auth.RateLimitedError
	if errors.As(err, &limited) {
		retryAfter(w, limited.RetryAfter)
		return &pageError{http.StatusTooManyRequests, "Too many wrong codes. Try again in " + waitText(limited.RetryAfter) + "."}
	}
	if err != nil {
		return err
	}
	if method == "" {
		c.record(r, s.audit("user.mfa_check_failed", "user", s.User.ID))
		return &pageError{http.StatusUnauthorized, "That code is wrong or was used already."}
	}
	return nil
}

func (c *Console) recoveryRenew(w http.ResponseWriter, r *http.Request, s *session) error {
	if !s.User.TOTP {
		return c.done(w, r, "/console/account", badRequest("Recovery codes come with an authenticator app, and you have none."), "")
	}
	if err := c.reprove(w, r, s); err != nil {
		return c.done(w, r, "/console/account", err, "")
	}
	codes := auth.NewRecoveryCodes()
	hashes := make([]string, len(codes))
	for i, code := range codes {
		hashes[i] = auth.HashRecoveryCode(s.User.ID, code)
	}
	if err := c.store.ReplaceRecoveryCodes(r.Context(), s.audit("user.recovery_codes_renew", "user", s.User.ID), s.User.OrgID, s.User.ID, hashes); err != nil {
		return err
	}
	return c.renderAccount(w, r, s, http.StatusOK, func(d *accountData) { d.RecoveryCodes = codes })
}

// sessionRevoke ends one of the user's own sessions (this one: a
// sign-out).
func (c *Console) sessionRevoke(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	_, err := c.store.EndUserSessions(r.Context(), s.audit("user.session_revoke", "user", s.User.ID), s.User.OrgID, s.User.ID, id, "")
	if errors.Is(err, dberr.ErrNotFound) {
		return c.done(w, r, "/console/account", notFound("session of yours"), "")
	}
	if err != nil {
		return err
	}
	if id == s.idHash {
		http.SetCookie(w, c.cookie(cookieSession, "", -1))
		http.Redirect(w, r, "/console/login", http.StatusSeeOther)
		return nil
	}
	return c.done(w, r, "/console/account", nil, "The session is signed out.")
}

// sessionsRevoke signs the user out everywhere (scope "all") or
// everywhere else ("others").
func (c *Console) sessionsRevoke(w http.ResponseWriter, r *http.Request, s *session) error {
	keep := ""
	action := "user.sign_out_everywhere"
	switch r.PostFormValue("scope") {
	case "all":
	case "others":
		keep, action = s.idHash, "user.sign_out_others"
	default:
		return c.done(w, r, "/console/account", badRequest("Choose which sessions to sign out."), "")
	}
	n, err := c.store.EndUserSessions(r.Context(), s.audit(action, "user", s.User.ID), s.User.OrgID, s.User.ID, "", keep)
	if err != nil {
		return err
	}
	if keep == "" {
		http.SetCookie(w, c.cookie(cookieSession, "", -1))
		http.Redirect(w, r, "/console/login", http.StatusSeeOther)
		return nil
	}
	return c.done(w, r, "/console/account", nil, plural(n, "other session", "other sessions")+" signed out.")
}

// requireSecondFactor is the organization's "require a second factor for
// password users" (administrators).
func (c *Console) requireSecondFactor(w http.ResponseWriter, r *http.Request, s *session) error {
	on := r.PostFormValue("require") == "on"
	err := c.callAPI(r, s, http.MethodPut, "/api/v1/sign-in-policy", apiv1.SignInPolicy{RequireSecondFactor: &on}, nil)
	text := "Password users without a second factor now set one up at their next sign-in."
	if !on {
		text = "A second factor is optional again."
	}
	return c.done(w, r, "/console/users", err, text)
}
