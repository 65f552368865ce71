package agentproto

import (
	"fmt"
	"strconv"
	"strings"
)

// A release's version is a semantic version (https://semver.org, 2.0.0):
// MAJOR.MINOR.PATCH, an optional pre-release after "-" and optional build
// metadata after "+", without a leading "v". The server refuses to
// publish any other, and an agent following the policy "latest" compares
// versions by their precedence: it never goes to a lower one.

// semver is a parsed semantic version.
type semver struct {
	core [3]uint64
	pre  []string // pre-release identifiers; none for a release
}

// CheckVersion answers an error saying why v is not a semantic version.
func CheckVersion(v string) error {
	_, err := parseSemver(v)
	return err
}

func parseSemver(v string) (semver, error) {
	bad := func(why string) (semver, error) {
		return semver{}, fmt.Errorf("%q is not a semantic version (MAJOR.MINOR.PATCH such as 1.4.0, optionally -PRERELEASE and +BUILD): %s", v, why)
	}
	if v == "" || len(v) > MaxAgentVersion {
		return bad(fmt.Sprintf("1 to %d characters", MaxAgentVersion))
	}
	rest, build, hasBuild := strings.Cut(v, "+")
	if hasBuild {
		for _, id := range strings.Split(build, ".") {
			if id == "" || !identChars(id) {
				return bad("the build metadata is dot-separated identifiers of letters, digits and hyphens")
			}
		}
	}
	core, pre, hasPre := strings.Cut(rest, "-")
	var s semver
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return bad("three numbers separated by dots")
	}
	for i, p := range parts {
		if !numeric(p) {
			return bad("each of MAJOR, MINOR and PATCH is a number without leading zeros")
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return bad("a number too large")
		}
		s.core[i] = n
	}
	if hasPre {
		for _, id := range strings.Split(pre, ".") {
			if id == "" || !identChars(id) {
				return bad("the pre-release is dot-separated identifiers of letters, digits and hyphens")
			}
			if isDigits(id) && !numeric(id) {
				return bad("a numeric pre-release identifier has no leading zeros")
			}
			s.pre = append(s.pre, id)
		}
	}
	return s, nil
}

func identChars(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// numeric: digits without a leading zero (0 itself is fine).
func numeric(s string) bool {
	return isDigits(s) && (s == "0" || s[0] != '0')
}

// CompareVersions compares two semantic versions by precedence (build
// metadata ignored): -1 when a is lower than b, 0 when equal, +1 when
// higher. It answers an error when either is not a semantic version.
func CompareVersions(a, b string) (int, error) {
	x, err := parseSemver(a)
	if err != nil {
		return 0, err
	}
	y, err := parseSemver(b)
	if err != nil {
		return 0, err
	}
	for i := range x.core {
		if x.core[i] != y.core[i] {
			if x.core[i] < y.core[i] {
				return -1, nil
			}
			return 1, nil
		}
	}
	// A pre-release is lower than the release.
	switch {
	case len(x.pre) == 0 && len(y.pre) == 0:
		return 0, nil
	case len(x.pre) == 0:
		return 1, nil
	case len(y.pre) == 0:
		return -1, nil
	}
	for i := 0; i < len(x.pre) && i < len(y.pre); i++ {
		if c := comparePre(x.pre[i], y.pre[i]); c != 0 {
			return c, nil
		}
	}
	switch {
	case len(x.pre) < len(y.pre):
		return -1, nil
	case len(x.pre) > len(y.pre):
		return 1, nil
	}
	return 0, nil
}

// comparePre compares two pre-release identifiers: numbers numerically
// and below text, text in ASCII order.
func comparePre(a, b string) int {
	an, bn := isDigits(a), isDigits(b)
	switch {
	case an && bn:
		if len(a) != len(b) { // no leading zeros: the longer is larger
			if len(a) < len(b) {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}
