package agentproto

import (
	"strings"
	"testing"
)

func TestSplitEnrollToken(t *testing.T) {
	pin := strings.Repeat("0123456789abcdef", 4)
	for _, tc := range []struct{ in, token, pin string }{
		{"pde_abc-_XYZ", "pde_abc-_XYZ", ""},
		{"pde_abc-_XYZ." + pin, "pde_abc-_XYZ", pin},
		{"  pde_abc." + pin + "\n", "pde_abc", pin},
		{"pde_abc." + strings.ToUpper(pin), "pde_abc." + strings.ToUpper(pin), ""}, // the pin is lowercase
		{"pde_abc." + pin[:63], "pde_abc." + pin[:63], ""},
		{"pde_abc.", "pde_abc.", ""},
		{"", "", ""},
	} {
		tok, p := SplitEnrollToken(tc.in)
		if tok != tc.token || p != tc.pin {
			t.Errorf("%q: %q %q, want %q %q", tc.in, tok, p, tc.token, tc.pin)
		}
	}
}
