package passkey

import (
	"testing"
	"time"

	"github.com/patchd/patchd/internal/store"
)

// TestNewRelyingParty: the RP ID and the one origin accepted come from
// --base-url when it names a domain, else from the address the browser
// used; an IP address is no RP ID.
func TestNewRelyingParty(t *testing.T) {
	for _, tc := range []struct {
		base, host      string
		rpID, origin    string
		secure, refused bool
	}{
		{base: "https://patchd.example.com", host: "other.example.com", rpID: "patchd.example.com", origin: "https://patchd.example.com"},
		{base: "https://patchd.example.com:8443/", host: "patchd.example.com:8443", rpID: "patchd.example.com", origin: "https://patchd.example.com:8443"},
		{base: "http://127.0.0.1:8080", host: "localhost:8080", rpID: "localhost", origin: "http://localhost:8080"},
		{base: "https://:8443", host: "patchd.lan:8443", secure: true, rpID: "patchd.lan", origin: "https://patchd.lan:8443"},
		{base: "http://[::1]:8080", host: "[::1]:8080", refused: true},
		{base: "", host: "10.0.0.5", refused: true},
	} {
		rp, err := NewRelyingParty(tc.base, tc.host, tc.secure)
		if tc.refused {
			if err == nil {
				t.Errorf("%s via %s: RP %q accepted", tc.base, tc.host, rp.wa.Config.RPID)
			}
			continue
		}
		if err != nil || rp.wa.Config.RPID != tc.rpID || len(rp.wa.Config.RPOrigins) != 1 || rp.wa.Config.RPOrigins[0] != tc.origin || rp.Origin != tc.origin {
			t.Errorf("%s via %s: %+v %v", tc.base, tc.host, rp, err)
		}
	}
}

// TestBeginJoin: the join asks the other account's passkeys as the
// second-factor step does, names that account, and ends by the pending
// join's deadline (never later than a ceremony's own).
func TestBeginJoin(t *testing.T) {
	rp, err := NewRelyingParty("https://patchd.example.com", "patchd.example.com", true)
	if err != nil {
		t.Fatal(err)
	}
	other := store.ConsoleUser{User: store.User{ID: "other", OrgID: "globex", Email: "ann@example.com"}}
	keys := []store.Passkey{{CredentialID: []byte("globex key"), PublicKey: []byte{1}}}
	now := time.Now()
	for _, tc := range []struct {
		what  string
		until time.Time
		want  func(time.Time) bool
	}{
		{"a minute left", now.Add(time.Minute), func(got time.Time) bool { return got.Equal(now.Add(time.Minute)) }},
		{"an hour left", now.Add(time.Hour), func(got time.Time) bool { return !got.After(time.Now().Add(CeremonyTimeout)) }},
	} {
		pending := PendingJoin(other.ID, tc.until)
		if pending.Asked() || pending.Kind != KindJoin || pending.Account != "other" {
			t.Errorf("%s: the pending join %+v", tc.what, pending)
		}
		_, cer, err := rp.BeginJoin(other, keys, pending)
		if err != nil {
			t.Fatal(err)
		}
		if !cer.Asked() || cer.Kind != KindJoin || cer.Account != "other" || len(cer.Session.AllowedCredentialIDs) != 1 ||
			string(cer.Session.AllowedCredentialIDs[0]) != "globex key" || cer.Session.UserVerification != "preferred" || !tc.want(cer.Session.Expires) {
			t.Errorf("%s: the join's ceremony %+v", tc.what, cer)
		}
	}
}
