package httpx

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientIP(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, c := range []struct {
		peer, xff, want string
	}{
		{"192.0.2.7:5000", "", "192.0.2.7"},
		{"192.0.2.7:5000", "203.0.113.9", "192.0.2.7"},            // untrusted peer: its header is ignored
		{"10.1.2.3:5000", "203.0.113.9", "203.0.113.9"},           // trusted proxy
		{"10.1.2.3:5000", "203.0.113.9, 10.9.9.9", "203.0.113.9"}, // two trusted hops
		{"10.1.2.3:5000", "198.51.100.1, 203.0.113.9", "203.0.113.9"},
		{"10.1.2.3:5000", "garbage", "10.1.2.3"},
		{"[::1]:5000", "2001:db8::5", "2001:db8::5"},
		{"[::ffff:192.0.2.8]:5000", "", "192.0.2.8"}, // one address, one key, however the socket spells it
		{"10.1.2.3:5000", "::ffff:203.0.113.10", "203.0.113.10"},
	} {
		r := httptest.NewRequest("POST", "/api/oauth/token", nil)
		r.RemoteAddr = c.peer
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := ClientIP(r, proxies); got != c.want {
			t.Errorf("peer %s, X-Forwarded-For %q: %s, want %s", c.peer, c.xff, got, c.want)
		}
	}
}

// TestClientIPWithoutProxies: with no trusted proxy the peer is the
// client, however its socket spells the address, and X-Forwarded-For is
// never believed.
func TestClientIPWithoutProxies(t *testing.T) {
	for peer, want := range map[string]string{
		"192.0.2.7:5000":          "192.0.2.7",
		"[::ffff:192.0.2.8]:5000": "192.0.2.8",
		"[2001:db8::1]:443":       "2001:db8::1",
		"not-an-address":          "not-an-address",
	} {
		r := httptest.NewRequest("GET", "/api/v1/groups", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", "203.0.113.9")
		if got := ClientIP(r, nil); got != want {
			t.Errorf("peer %s: %s, want %s", peer, got, want)
		}
	}
}
