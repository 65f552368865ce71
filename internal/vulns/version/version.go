// Package version compares software versions the way each packaging world
// orders them: dpkg for Debian and Ubuntu, rpmvercmp for the Red Hat family,
// and a generic dotted-numeric order (with pre-release tags and OpenSSL-style
// letter suffixes) for everything else, which is what NVD CPE ranges use.
package version

import "strings"

// Scheme names a version ordering.
type Scheme string

// The supported schemes.
const (
	Generic Scheme = "generic"
	Deb     Scheme = "deb"
	RPM     Scheme = "rpm"
)

// SchemeFor answers the scheme of a distribution ecosystem such as
// "debian:12", "Ubuntu:22.04:LTS", "AlmaLinux:9" or "rocky:9"; anything it
// does not know is Generic.
func SchemeFor(ecosystem string) Scheme {
	name := strings.ToLower(ecosystem)
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	switch strings.TrimSpace(name) {
	case "debian", "ubuntu", "deb", "linuxmint", "raspbian", "kali", "pop", "devuan":
		return Deb
	case "almalinux", "alma", "rocky", "rocky linux", "rhel", "red hat", "redhat", "centos",
		"fedora", "oracle", "oraclelinux", "ol", "amazon", "amzn", "opensuse", "suse", "sles",
		"mageia", "openeuler", "rpm":
		return RPM
	}
	return Generic
}

// Compare answers -1, 0 or +1 as a is older than, equal to or newer than b
// in the given scheme. An unknown scheme compares as Generic. Compare never
// fails: a malformed version is ordered by the same rules as best it can.
func Compare(s Scheme, a, b string) int {
	switch s {
	case Deb:
		return compareDeb(a, b)
	case RPM:
		return compareRPM(a, b)
	}
	return compareTokens(tokenize(a), tokenize(b))
}

// Version is a version parsed once for repeated comparisons (the matcher
// compares one installed version with thousands of bounds).
type Version struct {
	scheme Scheme
	raw    string
	toks   []token // Generic only
}

// Parse prepares v for comparisons in scheme s.
func Parse(s Scheme, v string) Version {
	p := Version{scheme: s, raw: v}
	if s != Deb && s != RPM {
		p.scheme = Generic
		p.toks = tokenize(v)
	}
	return p
}

// String answers the version as it was given.
func (v Version) String() string { return v.raw }

// Scheme answers the scheme v was parsed for.
func (v Version) Scheme() Scheme { return v.scheme }

// Compare answers -1, 0 or +1 as v is older than, equal to or newer than w.
// Both must have been parsed in the same scheme; if not, v's scheme is used.
func (v Version) Compare(w Version) int {
	switch v.scheme {
	case Deb:
		return compareDeb(v.raw, w.raw)
	case RPM:
		return compareRPM(v.raw, w.raw)
	}
	if w.scheme != Generic {
		return compareTokens(v.toks, tokenize(w.raw))
	}
	return compareTokens(v.toks, w.toks)
}

// Range holds CPE-style bounds; an empty bound is open. Exact, when it is
// neither empty nor "*" (any) nor "-" (not applicable), requires equality and
// the other bounds are ignored.
type Range struct {
	Exact     string
	StartIncl string
	StartExcl string
	EndIncl   string
	EndExcl   string
}

// IsAny reports whether the range has no bound at all (every version).
func (r Range) IsAny() bool {
	return !hasExact(r.Exact) && r.StartIncl == "" && r.StartExcl == "" && r.EndIncl == "" && r.EndExcl == ""
}

func hasExact(s string) bool { return s != "" && s != "*" && s != "-" }

// InRange reports whether v lies within r in scheme s.
func InRange(s Scheme, v string, r Range) bool {
	if hasExact(r.Exact) {
		return Compare(s, v, r.Exact) == 0
	}
	if r.StartIncl != "" && Compare(s, v, r.StartIncl) < 0 {
		return false
	}
	if r.StartExcl != "" && Compare(s, v, r.StartExcl) <= 0 {
		return false
	}
	if r.EndIncl != "" && Compare(s, v, r.EndIncl) > 0 {
		return false
	}
	if r.EndExcl != "" && Compare(s, v, r.EndExcl) >= 0 {
		return false
	}
	return true
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// compareDigits compares two runs of decimal digits of any length.
func compareDigits(a, b string) int {
	a = strings.TrimLeft(a, "0")
	b = strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return sign(len(a) - len(b))
	}
	return strings.Compare(a, b)
}
