package version

import "strings"

// The generic scheme splits a version into numbers and words:
//
//	1.2.10         → 1 2 10
//	1.0.0-rc1      → 1 0 0 pre(rc) 1
//	3.12.0a1       → 3 12 0 pre(a) 1        (Python)
//	1.1.1w         → 1 1 1 post(w)          (OpenSSL letter releases)
//	8.9p1          → 8 9 post(p) 1          (OpenSSH)
//	10.0.19045.3930 → four numbers           (Windows)
//
// A leading "v" and build metadata after '+' are ignored. Missing trailing
// numbers count as 0 (1.2 = 1.2.0). A pre-release word makes a version
// older than the same version without it, a post-release word newer.
// Separators only split: 1.0-1 = 1.0.1.

type tokenKind uint8

const (
	tokNum  tokenKind = iota // a run of digits, leading zeros removed
	tokPre                   // a pre-release word (alpha, beta, rc, …)
	tokPost                  // any other word (a letter release)
)

type token struct {
	kind tokenKind
	rank int8   // pre-release rank: dev < alpha < beta < pre < rc; unknown words 0
	big  bool   // a number too long for n: compare s
	n    uint64 // the number, when it has at most 19 digits
	s    string // digits without leading zeros, or the lower-case word
}

var preRanks = map[string]int8{
	"dev": 1, "snapshot": 1, "nightly": 1, "canary": 1,
	"alpha": 2, "a": 2,
	"beta": 3, "b": 3,
	"pre": 4, "preview": 4, "m": 4,
	"rc": 5, "c": 5, "cr": 5,
}

// longPre are words that mean "pre-release" wherever they appear; the
// single letters a, b, c and m only when a number follows (3.12.0a1).
var longPre = map[string]bool{"dev": true, "snapshot": true, "nightly": true, "canary": true,
	"alpha": true, "beta": true, "pre": true, "preview": true, "rc": true, "cr": true}

func tokenize(v string) []token {
	v = strings.TrimSpace(v)
	if len(v) > 1 && (v[0] == 'v' || v[0] == 'V') && isDigit(v[1]) {
		v = v[1:]
	}
	if i := strings.IndexByte(v, '+'); i >= 0 {
		v = v[:i]
	}
	toks := make([]token, 0, 6)
	var sep byte // the separator just before the current token, 0 if none
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case isDigit(c):
			j := i
			for j < len(v) && isDigit(v[j]) {
				j++
			}
			t := token{kind: tokNum, s: strings.TrimLeft(v[i:j], "0")}
			if len(t.s) <= 19 {
				for k := 0; k < len(t.s); k++ {
					t.n = t.n*10 + uint64(t.s[k]-'0')
				}
			} else {
				t.big = true
			}
			toks = append(toks, t)
			i, sep = j, 0
		case isAlpha(c):
			j := i
			for j < len(v) && isAlpha(v[j]) {
				j++
			}
			word := strings.ToLower(v[i:j])
			numberNext := j < len(v) && isDigit(v[j])
			kind := tokPost
			switch {
			case longPre[word]:
				kind = tokPre
			case len(word) == 1 && numberNext && preRanks[word] > 0 && len(toks) > 0:
				kind = tokPre
			case sep == '-' || sep == '~':
				kind = tokPre
			}
			t := token{kind: kind, s: word}
			if kind == tokPre {
				t.rank = preRanks[word]
			}
			toks = append(toks, t)
			i, sep = j, 0
		default:
			sep = c
			i++
		}
	}
	return toks
}

// endWeight is how a token compares with the end of the other version: a
// number against 0, a pre-release word below, a post-release word above.
func endWeight(t token) int {
	switch t.kind {
	case tokNum:
		if t.s == "" {
			return 0
		}
		return 1
	case tokPre:
		return -1
	}
	return 1
}

func compareTokens(a, b []token) int {
	n := max(len(a), len(b))
	for i := 0; i < n; i++ {
		if i >= len(a) {
			if w := endWeight(b[i]); w != 0 {
				return -w
			}
			continue
		}
		if i >= len(b) {
			if w := endWeight(a[i]); w != 0 {
				return w
			}
			continue
		}
		if c := compareToken(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// kindOrder ranks token kinds met at the same position: a pre-release word
// is older than a letter release, which is older than a number
// (1.0-rc1 < 1.0a < 1.0.1).
var kindOrder = [...]int{tokPre: 0, tokPost: 1, tokNum: 2}

func compareToken(x, y token) int {
	if x.kind != y.kind {
		return sign(kindOrder[x.kind] - kindOrder[y.kind])
	}
	switch x.kind {
	case tokNum: // leading zeros were removed by tokenize
		if !x.big && !y.big {
			switch {
			case x.n < y.n:
				return -1
			case x.n > y.n:
				return 1
			}
			return 0
		}
		if len(x.s) != len(y.s) {
			return sign(len(x.s) - len(y.s))
		}
		return strings.Compare(x.s, y.s)
	case tokPre:
		if x.rank != y.rank {
			return sign(int(x.rank) - int(y.rank))
		}
	}
	return strings.Compare(x.s, y.s)
}

// Canonical answers a string that is equal for two versions exactly when
// Compare answers 0 for them, so that exact-version rules can be looked up
// in a map. It is not meant to be shown.
func Canonical(s Scheme, v string) string {
	switch s {
	case Deb, RPM:
		return canonicalPackage(s, v)
	}
	toks := tokenize(v)
	for len(toks) > 0 && toks[len(toks)-1].kind == tokNum && toks[len(toks)-1].s == "" {
		toks = toks[:len(toks)-1]
	}
	var b strings.Builder
	for _, t := range toks {
		switch t.kind {
		case tokNum:
			b.WriteByte('.')
			if t.s == "" {
				b.WriteByte('0')
			} else {
				b.WriteString(t.s)
			}
		case tokPre:
			b.WriteByte('-')
			b.WriteString(t.s)
		case tokPost:
			b.WriteByte('_')
			b.WriteString(t.s)
		}
	}
	return b.String()
}

// canonicalPackage is only an approximation for dpkg and rpm (whose
// equality ignores leading zeros and, for rpm, separators): it normalises
// the epoch, which is what differs in practice ("0:1.2-3" = "1.2-3").
func canonicalPackage(s Scheme, v string) string {
	var e, rest string
	if s == Deb {
		var u, r string
		e, u, r = splitDeb(v)
		rest = u
		if r != "" {
			rest += "-" + r
		}
	} else {
		var ver, r string
		e, ver, r = splitRPM(v)
		rest = ver
		if r != "" {
			rest += "-" + r
		}
	}
	e = strings.TrimLeft(e, "0")
	if e == "" {
		return rest
	}
	return e + ":" + rest
}
