// Package passkey runs the WebAuthn ceremonies of the console's passkeys:
// registering one (a second factor after the password), the second-factor
// step with one, the passwordless sign-in with a discoverable passkey
// that verifies its user, and proving another account of the person with
// one of its passkeys to join it. It makes the go-webauthn calls and applies the
// rules (the origin and RP ID of the server, user verification, the
// signature counter, the account's state); the console reads the
// browser's JSON, keeps the ceremony on the session, throttles, records
// and answers.
package passkey

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/patchd/patchd/internal/store"
)

// CeremonyTimeout is how long the browser (and the server) waits for the
// user to touch the authenticator.
const CeremonyTimeout = 5 * time.Minute

// Ceremony kinds.
const (
	KindRegister = "register" // registering a passkey
	KindSignIn   = "signin"   // the second-factor step
	KindLogin    = "login"    // a passwordless sign-in
	KindJoin     = "join"     // proving another account to join it
)

// Ceremony is what the server keeps of a ceremony under way, between its
// options and the browser's answer.
type Ceremony struct {
	// Kind is KindRegister, KindSignIn, KindLogin or KindJoin.
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
	// Account is the id of the account a KindJoin ceremony proves.
	Account string               `json:"account,omitempty"`
	Session webauthn.SessionData `json:"session"`
	// ThrottleKey and ThrottleStart name a passwordless start's
	// reservation, given back when it signs in.
	ThrottleKey   string    `json:"throttleKey,omitempty"`
	ThrottleStart time.Time `json:"throttleStart,omitzero"`
}

// Expired tells whether the ceremony's challenge has expired at now.
func (c Ceremony) Expired(now time.Time) bool {
	return !c.Session.Expires.IsZero() && now.After(c.Session.Expires)
}

// RelyingParty is the server as the WebAuthn relying party.
type RelyingParty struct {
	wa *webauthn.WebAuthn
	// Origin is the only origin accepted.
	Origin string
}

// NewRelyingParty answers the relying party: the RP ID is the host of the
// server's base URL and the only origin accepted is the base URL's.
// Without a base URL naming a domain (none, or one made of an IP address
// such as http://127.0.0.1:8080), the address the browser used (host, on
// https when secure).
func NewRelyingParty(baseURL, host string, secure bool) (*RelyingParty, error) {
	origin := strings.TrimRight(baseURL, "/")
	if u, err := url.Parse(origin); err != nil || !namesHost(u.Hostname()) {
		scheme := "http"
		if secure {
			scheme = "https"
		}
		origin = scheme + "://" + host
	}
	u, err := url.Parse(origin)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("passkey: base URL %q: %v", origin, err)
	}
	origin = u.Scheme + "://" + u.Host
	wa, err := webauthn.New(&webauthn.Config{
		RPID:                  u.Hostname(),
		RPDisplayName:         "patchd",
		RPOrigins:             []string{origin},
		AttestationPreference: protocol.PreferNoAttestation,
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Enforce: true, Timeout: CeremonyTimeout, TimeoutUVD: CeremonyTimeout},
			Registration: webauthn.TimeoutConfig{Enforce: true, Timeout: CeremonyTimeout, TimeoutUVD: CeremonyTimeout},
		},
	})
	if err != nil {
		return nil, err
	}
	return &RelyingParty{wa: wa, Origin: origin}, nil
}

// Possible tells whether passkeys can work for a console reached at host
// (the request's Host) with the base URL baseURL: the relying party is a
// name, as browsers refuse IP addresses ("127.0.0.1"); "localhost" works.
func Possible(baseURL, host string) bool {
	if u, err := url.Parse(strings.TrimRight(baseURL, "/")); err == nil && namesHost(u.Hostname()) {
		return true
	}
	u, err := url.Parse("http://" + host)
	return err == nil && namesHost(u.Hostname())
}

// namesHost tells whether a base URL's host is a domain name, which a
// passkey can belong to (browsers refuse IP addresses as RP IDs: a base
// URL made of --addr, such as http://127.0.0.1:8080, leaves the choice to
// the address the browser used).
func namesHost(host string) bool {
	_, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return host != "" && err != nil
}

// user is a console user as the WebAuthn library sees it: the user handle
// is the user's id (random, and no personal data).
type user struct {
	u     store.ConsoleUser
	creds []webauthn.Credential
}

func (w user) WebAuthnID() []byte                         { return []byte(w.u.ID) }
func (w user) WebAuthnName() string                       { return w.u.Email }
func (w user) WebAuthnDisplayName() string                { return w.u.Email }
func (w user) WebAuthnCredentials() []webauthn.Credential { return w.creds }

func userOf(u store.ConsoleUser, keys []store.Passkey) user {
	wu := user{u: u}
	for _, k := range keys {
		wu.creds = append(wu.creds, credentialOf(k))
	}
	return wu
}

func credentialOf(k store.Passkey) webauthn.Credential {
	aaguid, _ := hex.DecodeString(strings.ReplaceAll(k.AAGUID, "-", ""))
	var transports []protocol.AuthenticatorTransport
	for _, t := range k.Transports {
		transports = append(transports, protocol.AuthenticatorTransport(t))
	}
	return webauthn.Credential{ID: k.CredentialID, PublicKey: k.PublicKey, AttestationType: k.AttestationType, AttestationFormat: k.AttestationFormat,
		Transport: transports, Flags: webauthn.NewCredentialFlags(protocol.AuthenticatorFlags(k.Flags)),
		Authenticator: webauthn.Authenticator{AAGUID: aaguid, SignCount: k.SignCount}}
}

// aaguidText writes an authenticator's AAGUID as a UUID ("" when it sent
// none, or only zeros).
func aaguidText(b []byte) string {
	if len(b) != 16 || strings.Trim(string(b), "\x00") == "" {
		return ""
	}
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Synced tells whether a passkey may be synced between devices (backup
// eligible).
func Synced(k store.Passkey) bool { return protocol.AuthenticatorFlags(k.Flags).HasBackupEligible() }

// Detail is the library's detail of a refusal, for the log.
func Detail(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Type + ": " + pe.Details + " " + pe.DevInfo
	}
	return err.Error()
}

// ErrUnreadable: the browser's answer is not the ceremony's JSON.
var ErrUnreadable = errors.New("passkey: the answer is not readable")

// Refused is an answer the rules refuse. Reason is the Audit Trail's
// detail; Err the library's (for the log).
type Refused struct {
	Reason string
	Err    error
}

func (r *Refused) Error() string { return "passkey: refused: " + r.Reason + ": " + Detail(r.Err) }

// BeginRegistration starts registering a passkey named name for u, whose
// passkeys are keys: the options of navigator.credentials.create, and the
// ceremony to keep.
func (rp *RelyingParty) BeginRegistration(u store.ConsoleUser, keys []store.Passkey, name string) (any, Ceremony, error) {
	wu := userOf(u, keys)
	var exclude []protocol.CredentialDescriptor
	for _, cr := range wu.creds {
		exclude = append(exclude, cr.Descriptor())
	}
	opts, sd, err := rp.wa.BeginRegistration(wu, webauthn.WithExclusions(exclude),
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{ResidentKey: protocol.ResidentKeyRequirementPreferred,
			UserVerification: protocol.VerificationPreferred}),
		webauthn.WithConveyancePreference(protocol.PreferNoAttestation))
	if err != nil {
		return nil, Ceremony{}, fmt.Errorf("passkey: begin registration: %w", err)
	}
	return opts, Ceremony{Kind: KindRegister, Name: name, Session: *sd}, nil
}

// ParseRegistration reads the browser's answer to a registration (the
// PublicKeyCredential as JSON): ErrUnreadable when it is none.
func ParseRegistration(b []byte) (*protocol.ParsedCredentialCreationData, error) {
	parsed, err := protocol.ParseCredentialCreationResponseBytes(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnreadable, Detail(err))
	}
	return parsed, nil
}

// FinishRegistration checks the browser's answer (ParseRegistration) to
// the registration cer of u, whose passkeys are keys, and answers the
// passkey to store; a *Refused when it does not match the ceremony or the
// server's origin.
func (rp *RelyingParty) FinishRegistration(u store.ConsoleUser, keys []store.Passkey, cer Ceremony, parsed *protocol.ParsedCredentialCreationData) (store.Passkey, error) {
	cred, err := rp.wa.CreateCredential(userOf(u, keys), cer.Session, parsed)
	if err != nil {
		return store.Passkey{}, &Refused{Reason: "invalid attestation", Err: err}
	}
	var transports []string
	for _, t := range cred.Transport {
		transports = append(transports, string(t))
	}
	return store.Passkey{OrgID: u.OrgID, UserID: u.ID, CredentialID: cred.ID, PublicKey: cred.PublicKey, SignCount: cred.Authenticator.SignCount,
		Flags: byte(cred.Flags.ProtocolValue()), AAGUID: aaguidText(cred.Authenticator.AAGUID), Transports: transports,
		AttestationType: cred.AttestationType, AttestationFormat: cred.AttestationFormat, Name: cer.Name}, nil
}

// BeginSignIn starts the second-factor step of u with one of its passkeys
// keys (at least one): the options of navigator.credentials.get.
func (rp *RelyingParty) BeginSignIn(u store.ConsoleUser, keys []store.Passkey) (any, Ceremony, error) {
	opts, sd, err := rp.wa.BeginLogin(userOf(u, keys), webauthn.WithUserVerification(protocol.VerificationPreferred))
	if err != nil {
		return nil, Ceremony{}, fmt.Errorf("passkey: begin sign-in: %w", err)
	}
	return opts, Ceremony{Kind: KindSignIn, Session: *sd}, nil
}

// PendingJoin is the ceremony kept once the password of the account
// account is proved, before its passkey is asked for: no challenge yet,
// and the deadline until of the whole join.
func PendingJoin(account string, until time.Time) Ceremony {
	return Ceremony{Kind: KindJoin, Account: account, Session: webauthn.SessionData{Expires: until}}
}

// Asked tells whether the ceremony has a challenge (its options were
// given to the browser).
func (c Ceremony) Asked() bool { return c.Session.Challenge != "" }

// BeginJoin asks for a passkey of u, whose passkeys are keys (at least
// one), after pending (PendingJoin of u): the second-factor step's
// options and rules, kept as a KindJoin ceremony that ends by pending's
// deadline.
func (rp *RelyingParty) BeginJoin(u store.ConsoleUser, keys []store.Passkey, pending Ceremony) (any, Ceremony, error) {
	opts, cer, err := rp.BeginSignIn(u, keys)
	if err != nil {
		return nil, Ceremony{}, err
	}
	cer.Kind, cer.Account = KindJoin, u.ID
	if !pending.Session.Expires.IsZero() && pending.Session.Expires.Before(cer.Session.Expires) {
		cer.Session.Expires = pending.Session.Expires
	}
	return opts, cer, nil
}

// ParseAssertion reads the browser's answer to a sign-in (ErrUnreadable).
func ParseAssertion(b []byte) (*protocol.ParsedCredentialAssertionData, error) {
	parsed, err := protocol.ParseCredentialRequestResponseBytes(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnreadable, Detail(err))
	}
	return parsed, nil
}

// FinishSignIn checks the assertion of the second-factor step (or of a
// join, BeginJoin) cer of u: a passkey of u, signed for this server's
// origin over the ceremony's challenge, with a signature counter that
// moved on (the store keeps the new counter). It answers the passkey, or a *Refused.
func (rp *RelyingParty) FinishSignIn(ctx context.Context, st *store.Store, u store.ConsoleUser, cer Ceremony,
	parsed *protocol.ParsedCredentialAssertionData, now time.Time) (store.Passkey, error) {
	keys, err := st.ListPasskeys(ctx, u.OrgID, u.ID)
	if err != nil {
		return store.Passkey{}, err
	}
	cred, err := rp.wa.ValidateLogin(userOf(u, keys), cer.Session, parsed)
	if err != nil {
		reason := "invalid assertion"
		var unknown *protocol.ErrorUnknownCredential
		if errors.As(err, &unknown) {
			reason = "unknown passkey"
		}
		return store.Passkey{}, &Refused{Reason: reason, Err: err}
	}
	var key store.Passkey
	for _, k := range keys {
		if string(k.CredentialID) == string(cred.ID) {
			key = k
		}
	}
	return key, use(ctx, st, key, cred, now)
}

// use records the passkey's use and refuses a signature counter that did
// not move on (a cloned authenticator).
func use(ctx context.Context, st *store.Store, key store.Passkey, cred *webauthn.Credential, now time.Time) error {
	fresh, err := st.UsePasskey(ctx, key.ID, cred.Authenticator.SignCount, byte(cred.Flags.ProtocolValue()), now)
	if err != nil {
		return err
	}
	if !fresh || cred.Authenticator.CloneWarning {
		return &Refused{Reason: "signature counter did not increase", Err: errors.New("counter")}
	}
	return nil
}

// BeginLogin starts a passwordless sign-in: a discoverable passkey that
// verifies its user (a PIN or a biometric), two factors on its own.
func (rp *RelyingParty) BeginLogin() (any, Ceremony, error) {
	opts, sd, err := rp.wa.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return nil, Ceremony{}, fmt.Errorf("passkey: begin passwordless sign-in: %w", err)
	}
	return opts, Ceremony{Kind: KindLogin, Session: *sd}, nil
}

// LoginUser answers the user whose passkey signs the passwordless
// assertion, and the passkey: dberr.ErrNotFound when the passkey is not
// one of this server's, a *Refused when the user is disabled.
func LoginUser(ctx context.Context, st *store.Store, parsed *protocol.ParsedCredentialAssertionData) (store.ConsoleUser, store.Passkey, error) {
	u, key, err := st.PasskeyUser(ctx, parsed.RawID)
	if err != nil {
		return u, key, err
	}
	if u.Disabled {
		return u, key, &Refused{Reason: "account disabled", Err: errors.New("disabled")}
	}
	return u, key, nil
}

// FinishLogin checks a passwordless assertion of the passkey key of u
// (LoginUser): the passkey's user handle names u, its signature is for
// this server's origin over the ceremony's challenge, it verified the
// user, and its signature counter moved on. A refusal is a *Refused.
func (rp *RelyingParty) FinishLogin(ctx context.Context, st *store.Store, u store.ConsoleUser, key store.Passkey, cer Ceremony,
	parsed *protocol.ParsedCredentialAssertionData, now time.Time) error {
	keys, err := st.ListPasskeys(ctx, u.OrgID, u.ID)
	if err != nil {
		return err
	}
	wu := userOf(u, keys)
	cred, err := rp.wa.ValidateDiscoverableLogin(func(rawID, userHandle []byte) (webauthn.User, error) {
		if string(userHandle) != u.ID {
			return nil, errors.New("the user handle is not the passkey's owner")
		}
		return wu, nil
	}, cer.Session, parsed)
	if err != nil {
		return &Refused{Reason: "invalid assertion", Err: err}
	}
	if !parsed.Response.AuthenticatorData.Flags.HasUserVerified() {
		return &Refused{Reason: "user not verified", Err: errors.New("no UV flag")}
	}
	return use(ctx, st, key, cred, now)
}
