package version

import "strings"

// compareRPM orders RPM [epoch:]version[-release] strings: epochs
// numerically (missing is 0), then version and release with rpmvercmp. As
// rpm does when comparing dependencies, a missing release on either side
// matches any release.
func compareRPM(a, b string) int {
	ea, va, ra := splitRPM(a)
	eb, vb, rb := splitRPM(b)
	if c := compareDigits(ea, eb); c != 0 {
		return c
	}
	if c := rpmvercmp(va, vb); c != 0 {
		return c
	}
	if ra == "" || rb == "" {
		return 0
	}
	return rpmvercmp(ra, rb)
}

func splitRPM(v string) (epoch, version, release string) {
	v = strings.TrimSpace(v)
	epoch = "0"
	if i := strings.IndexByte(v, ':'); i > 0 && allDigits(v[:i]) {
		epoch, v = v[:i], v[i+1:]
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		return epoch, v[:i], v[i+1:]
	}
	return epoch, v, ""
}

func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }

// rpmvercmp follows rpm's lib/rpmvercmp.c (rpm >= 4.15): alternate runs of
// digits and letters are compared, separators only split; '~' sorts before
// anything (even the end), '^' after the end but before any other segment;
// a numeric segment is newer than an alphabetic one.
func rpmvercmp(a, b string) int {
	if a == b {
		return 0
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		for i < len(a) && !isAlnum(a[i]) && a[i] != '~' && a[i] != '^' {
			i++
		}
		for j < len(b) && !isAlnum(b[j]) && b[j] != '~' && b[j] != '^' {
			j++
		}
		at, bt := i < len(a), j < len(b)
		if (at && a[i] == '~') || (bt && b[j] == '~') {
			if !at || a[i] != '~' {
				return 1
			}
			if !bt || b[j] != '~' {
				return -1
			}
			i++
			j++
			continue
		}
		if (at && a[i] == '^') || (bt && b[j] == '^') {
			if !at {
				return -1
			}
			if !bt {
				return 1
			}
			if a[i] != '^' {
				return 1
			}
			if b[j] != '^' {
				return -1
			}
			i++
			j++
			continue
		}
		if !at || !bt {
			break
		}
		si, sj := i, j
		numeric := isDigit(a[i])
		if numeric {
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
		} else {
			for i < len(a) && isAlpha(a[i]) {
				i++
			}
			for j < len(b) && isAlpha(b[j]) {
				j++
			}
		}
		if sj == j { // b's segment is of the other kind
			if numeric {
				return 1
			}
			return -1
		}
		var c int
		if numeric {
			c = compareDigits(a[si:i], b[sj:j])
		} else {
			c = strings.Compare(a[si:i], b[sj:j])
		}
		if c != 0 {
			return c
		}
	}
	at, bt := i < len(a), j < len(b)
	switch {
	case !at && !bt:
		return 0
	case at:
		return 1
	}
	return -1
}
