package passkey

import "testing"

// TestPossible: passkeys work where the relying party is a name: a base
// URL naming a host, or else the address the browser used; never at an
// IP address.
func TestPossible(t *testing.T) {
	for _, c := range []struct {
		base, host string
		want       bool
	}{
		{"http://127.0.0.1:8080", "127.0.0.1:8080", false},
		{"", "[::1]:8080", false},
		{"http://127.0.0.1:8080", "localhost:8080", true},
		{"https://patch.example.com", "10.0.0.5:8443", true},
		{"", "patch.example.com", true},
	} {
		if got := Possible(c.base, c.host); got != c.want {
			t.Errorf("Possible(%q, %q) = %v, want %v", c.base, c.host, got, c.want)
		}
	}
}
