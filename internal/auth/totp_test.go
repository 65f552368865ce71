package auth

import (
	"encoding/base32"
	"net/url"
	"strings"
	"testing"
	"time"
)

// RFC 6238 appendix B, SHA-1 rows: the 20-byte key "12345678901234567890"
// and 8-digit codes; the last six digits are the 6-digit codes.
func TestTOTPCodeRFC6238Vectors(t *testing.T) {
	secret := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte("12345678901234567890"))
	for _, tc := range []struct {
		unix int64
		want string
	}{
		{59, "94287082"}, {1111111109, "07081804"}, {1111111111, "14050471"},
		{1234567890, "89005924"}, {2000000000, "69279037"}, {20000000000, "65353130"},
	} {
		got, err := TOTPCode(secret, TOTPStep(time.Unix(tc.unix, 0)))
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want[2:] {
			t.Errorf("at %d: %s, want %s", tc.unix, got, tc.want[2:])
		}
	}
}

func TestCheckTOTPSkew(t *testing.T) {
	secret := NewTOTPSecret()
	now := time.Date(2026, 11, 23, 12, 0, 10, 0, time.UTC)
	step := TOTPStep(now)
	code := func(s int64) string {
		c, err := TOTPCode(secret, s)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		code string
		ok   bool
		step int64
	}{
		{"current", code(step), true, step},
		{"phone 30 s behind", code(step - 1), true, step - 1},
		{"phone 30 s ahead", code(step + 1), true, step + 1},
		{"60 s behind", code(step - 2), false, 0},
		{"60 s ahead", code(step + 2), false, 0},
		{"with a space", code(step)[:3] + " " + code(step)[3:], true, step},
		{"five digits", code(step)[:5], false, 0},
		{"letters", "abcdef", false, 0},
	} {
		got, ok := CheckTOTP(secret, tc.code, now)
		if ok != tc.ok || got != tc.step {
			t.Errorf("%s: %d %v, want %d %v", tc.name, got, ok, tc.step, tc.ok)
		}
	}
	if _, ok := CheckTOTP("not base32!", "123456", now); ok {
		t.Error("a broken secret accepted a code")
	}
}

func TestTOTPURIAndRecoveryCodes(t *testing.T) {
	u, err := url.Parse(TOTPURI("patchd (Acme)", "alice@example.com", "JBSWY3DPEHPK3PXP"))
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "otpauth" || u.Host != "totp" || u.Query().Get("secret") != "JBSWY3DPEHPK3PXP" || u.Query().Get("issuer") != "patchd (Acme)" ||
		!strings.HasSuffix(u.Path, ":alice@example.com") {
		t.Errorf("URI %s", u)
	}
	// A base URL with a port: the label has exactly one colon (the key URI
	// format forbids others: apps show what follows the first as the
	// account), and a space is %20, never "+", in the label and the issuer.
	raw := TOTPURI("patchd 127.0.0.1:18480", "user@example.com", "JBSWY3DPEHPK3PXP")
	want := "otpauth://totp/patchd%20127.0.0.1%2018480:user@example.com?secret=JBSWY3DPEHPK3PXP&issuer=patchd%20127.0.0.1%2018480&"
	if !strings.HasPrefix(raw, want) || strings.Contains(raw, "+") {
		t.Errorf("URI %s\nwant %s...", raw, want)
	}
	u, err = url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if label := strings.TrimPrefix(u.Path, "/"); strings.Count(label, ":") != 1 || label != "patchd 127.0.0.1 18480:user@example.com" ||
		u.Query().Get("issuer") != "patchd 127.0.0.1 18480" {
		t.Errorf("label %q, issuer %q", label, u.Query().Get("issuer"))
	}
	codes := NewRecoveryCodes()
	if len(codes) != RecoveryCodes {
		t.Fatalf("%d codes", len(codes))
	}
	seen := map[string]bool{}
	for _, c := range codes {
		if len(c) != 19 || seen[c] {
			t.Errorf("code %q", c)
		}
		seen[c] = true
	}
	if HashRecoveryCode("u1", codes[0]) != HashRecoveryCode("u1", " "+strings.ToUpper(strings.ReplaceAll(codes[0], "-", ""))) {
		t.Error("a recovery code typed without dashes in capitals does not match")
	}
	if HashRecoveryCode("u1", codes[0]) == HashRecoveryCode("u2", codes[0]) {
		t.Error("recovery code hashes do not depend on the user")
	}
}
