package passkey

import "testing"

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
