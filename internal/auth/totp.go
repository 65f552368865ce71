package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// TOTP second factors (RFC 6238 with RFC 4226's HOTP): HMAC-SHA1, 30-second
// steps, 6 digits, what every authenticator app reads from an otpauth://
// URI. A code of the step before or after the current one is accepted (a
// phone's clock is often off by a few seconds); the store refuses a code
// whose step is not later than the last accepted one, so no code signs in
// twice.
const (
	TOTPPeriod = 30 * time.Second
	TOTPDigits = 6
	// TOTPSkew is how many steps either side of now are accepted.
	TOTPSkew = 1
	// RecoveryCodes is how many single-use recovery codes a user gets.
	RecoveryCodes = 10
)

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewTOTPSecret returns a random 160-bit secret in base32 (RFC 4226
// recommends 160 bits).
func NewTOTPSecret() string {
	var b [20]byte
	rand.Read(b[:])
	return b32.EncodeToString(b[:])
}

// TOTPStep is the time step of t.
func TOTPStep(t time.Time) int64 { return t.Unix() / int64(TOTPPeriod/time.Second) }

// TOTPCode is the code of a secret at a time step.
func TOTPCode(secret string, step int64) (string, error) {
	key, err := b32.DecodeString(strings.ToUpper(strings.TrimRight(secret, "=")))
	if err != nil || len(key) == 0 {
		return "", fmt.Errorf("auth: the TOTP secret is not base32")
	}
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(step))
	m := hmac.New(sha1.New, key)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	bin := binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff
	return fmt.Sprintf("%06d", bin%1_000_000), nil
}

// CheckTOTP tells whether code is the secret's code at now, or within
// TOTPSkew steps of it, and answers the step it matched (for the store's
// replay check). Spaces in the code are ignored.
func CheckTOTP(secret, code string, now time.Time) (int64, bool) {
	code = strings.ReplaceAll(strings.TrimSpace(code), " ", "")
	if len(code) != TOTPDigits {
		return 0, false
	}
	cur := TOTPStep(now)
	matched, found := int64(0), 0
	for step := cur - TOTPSkew; step <= cur+TOTPSkew; step++ {
		want, err := TOTPCode(secret, step)
		if err != nil {
			return 0, false
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 && found == 0 {
			matched, found = step, 1
		}
	}
	return matched, found == 1
}

// TOTPURI is the otpauth:// URI an authenticator app enrolls from (the
// Key Uri Format of Google Authenticator, which the others follow): the
// label is the issuer, one colon, and the account; neither may hold a
// colon of its own (an app splits the label at the first one and would
// show the rest of the issuer as the account), so each colon in them
// becomes a space. Every part is percent-encoded, a space as %20: the
// format has no "+" for a space.
func TOTPURI(issuer, account, secret string) string {
	issuer, account = labelPart(issuer), labelPart(account)
	label := strings.ReplaceAll(uriEscape(issuer)+":"+uriEscape(account), "%40", "@") // a path may carry "@"
	return "otpauth://totp/" + label + "?secret=" + uriEscape(secret) + "&issuer=" + uriEscape(issuer) +
		"&algorithm=SHA1&digits=6&period=30"
}

// labelPart is an issuer or account name as the label may carry it: no
// colon, spaces collapsed.
func labelPart(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, ":", " ")), " ")
}

// uriEscape percent-encodes everything but RFC 3986's unreserved
// characters (a space is %20).
func uriEscape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

// NewRecoveryCodes returns RecoveryCodes random codes of 80 bits each,
// written as four groups of four base32 letters and digits.
func NewRecoveryCodes() []string {
	out := make([]string, RecoveryCodes)
	for i := range out {
		var b [10]byte
		rand.Read(b[:])
		s := strings.ToLower(b32.EncodeToString(b[:]))
		out[i] = s[0:4] + "-" + s[4:8] + "-" + s[8:12] + "-" + s[12:16]
	}
	return out
}

// HashRecoveryCode is the stored form of a user's recovery code: SHA-256
// of the user id and the code without dashes, spaces or case (80 random
// bits need no slow hash).
func HashRecoveryCode(userID, code string) string {
	c := strings.ToLower(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(code)))
	return HashSecret("recovery:" + userID + ":" + c)
}
