package auth

import (
	"strings"
	"testing"
)

// TestEnrollTokenAlphabet: enrollment tokens are printed "<token>.<pin>",
// which needs '.' never to occur in a token itself.
func TestEnrollTokenAlphabet(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for range 2000 {
		tok := NewSecret(PrefixEnrollToken)
		rest, ok := strings.CutPrefix(tok, PrefixEnrollToken)
		if !ok || strings.Contains(tok, ".") || strings.Trim(rest, alphabet) != "" {
			t.Fatalf("token %q is outside pde_ + base64url", tok)
		}
	}
}
