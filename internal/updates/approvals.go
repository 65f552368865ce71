package updates

import (
	"errors"
	"regexp"
	"strings"

	"github.com/patchd/patchd/internal/vulns/version"
)

// Approval decisions (spec: Update.approval and ApprovalBody.status).
const (
	StatusNew      = "NEW"
	StatusApproved = "APPROVED"
	StatusDeclined = "DECLINED"
)

// ValidStatus tells whether s is one of the three decisions.
func ValidStatus(s string) bool {
	return s == StatusNew || s == StatusApproved || s == StatusDeclined
}

// Kinds of update key, as far as a key's spelling tells.
const (
	KindWindows    = "windows"     // KB5048685
	KindLinux      = "linux"       // debian:openssl@3.0.15-1~deb12u1
	KindThirdParty = "third-party" // Mozilla.Firefox@133.0.3
	KindOther      = "other"       // a macOS product key, or any other key
)

// ApprovalKey is a key as a client spelled it, read into its parts.
type ApprovalKey struct {
	// Normalized is the key in the spelling the server stores when the
	// organization's catalog does not know it: "KB" and digits for a KB,
	// the product id without an architecture suffix for a third-party key.
	Normalized string
	Kind       string
	// Product and Version are set for third-party and Linux keys (the part
	// before and after the last '@').
	Product, Version string
	// MaybeThirdParty is set for a key without '@' shaped like a winget id
	// (Publisher.Package): a third-party key that lacks its version, unless
	// the catalog knows it as something else.
	MaybeThirdParty bool
}

// ErrEmptyKey is the answer for an empty key.
var ErrEmptyKey = errors.New("key is empty")

var (
	kbKey = regexp.MustCompile(`(?i)^kb[\s_-]?(\d{6,8})(?:[\s_.-]*(?:x64|x86|amd64|arm64|ia64|x86_64|32-?bit|64-?bit))?$`)
	// A winget-like id: letters, digits and - _ + separated by dots, at
	// least one dot, no spaces.
	wingetLike = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_+-]*(?:\.[A-Za-z0-9_+-]+)+$`)
	linuxKey   = regexp.MustCompile(`^[A-Za-z0-9._-]+:[^@\s]+@\S+$`)
)

// archSuffixes are the architecture spellings clients append to a product
// id ("mozilla.firefox.x64"); the updates list never shows them.
var archSuffixes = []string{".x64", ".x86", ".arm64", ".amd64", ".aarch64", "-x64", "-x86", "-arm64", "_x64", "_x86", "_arm64"}

// StripArch removes one architecture suffix from a product id,
// case-insensitively.
func StripArch(id string) string {
	lower := strings.ToLower(id)
	for _, s := range archSuffixes {
		if strings.HasSuffix(lower, s) && len(id) > len(s) {
			return id[:len(id)-len(s)]
		}
	}
	return id
}

// ParseApprovalKey reads a key sent to POST /api/v1/updates/approvals.
func ParseApprovalKey(raw string) (ApprovalKey, error) {
	k := strings.TrimSpace(raw)
	if k == "" {
		return ApprovalKey{}, ErrEmptyKey
	}
	if m := kbKey.FindStringSubmatch(k); m != nil {
		return ApprovalKey{Normalized: "KB" + m[1], Kind: KindWindows}, nil
	}
	if linuxKey.MatchString(k) {
		at := strings.LastIndexByte(k, '@')
		distro, pkg, _ := strings.Cut(k[:at], ":")
		return ApprovalKey{Normalized: strings.ToLower(distro) + ":" + pkg + "@" + k[at+1:], Kind: KindLinux,
			Product: strings.ToLower(distro) + ":" + pkg, Version: k[at+1:]}, nil
	}
	if at := strings.LastIndexByte(k, '@'); at >= 0 {
		product := StripArch(strings.TrimSpace(k[:at]))
		ver := strings.TrimSpace(k[at+1:])
		if ver == "" {
			return ApprovalKey{Normalized: product, Kind: KindThirdParty, Product: product}, nil
		}
		return ApprovalKey{Normalized: product + "@" + ver, Kind: KindThirdParty, Product: product, Version: ver}, nil
	}
	if wingetLike.MatchString(k) {
		return ApprovalKey{Normalized: StripArch(k), Kind: KindOther, Product: StripArch(k), MaybeThirdParty: true}, nil
	}
	return ApprovalKey{Normalized: k, Kind: KindOther}, nil
}

// MissingVersion tells whether a third-party key lacks its @<version>.
func (k ApprovalKey) MissingVersion() bool {
	return k.Kind == KindThirdParty && k.Version == ""
}

// SplitThirdParty splits a third-party key "<id>@<version>" into its
// product id and version; ok is false when the key has no '@'.
func SplitThirdParty(key string) (product, ver string, ok bool) {
	at := strings.LastIndexByte(key, '@')
	if at <= 0 || at == len(key)-1 {
		return "", "", false
	}
	return key[:at], key[at+1:], true
}

// CompareVersions orders two application versions (dotted numbers with
// pre-release tags): -1, 0 or +1 as a is older than, equal to or newer
// than b.
func CompareVersions(a, b string) int {
	return version.Compare(version.Generic, a, b)
}

// Source filters of the updates list and of approval policies.
const (
	FilterOS         = "OS"
	FilterThirdParty = "THIRD_PARTY"
	// Any matches every severity or source in an approval policy.
	Any = "ANY"
)

// SourcesOf answers the sources a source filter stands for; ok is false for
// an unknown filter.
func SourcesOf(filter string) (sources []string, ok bool) {
	switch filter {
	case FilterOS:
		return []string{SourceOSMandatory, SourceOSOptional}, true
	case FilterThirdParty:
		return []string{SourceApps}, true
	}
	return nil, false
}

// PolicyRule is one rule of an organization's automatic approval policy:
// keys of this severity and source are approved DelayDays after they are
// first seen (at once for 0).
type PolicyRule struct {
	Severity  string `json:"severity"` // one of Severities, or Any
	Source    string `json:"source"`   // FilterOS, FilterThirdParty or Any
	DelayDays int    `json:"delayDays"`
}

// Matches tells whether the rule covers an update of this severity and source.
func (r PolicyRule) Matches(severity, source string) bool {
	if r.Severity != Any && r.Severity != severity {
		return false
	}
	switch r.Source {
	case Any:
		return true
	case FilterThirdParty:
		return ThirdParty(source)
	case FilterOS:
		return source == SourceOSMandatory || source == SourceOSOptional
	}
	return false
}

// Delay answers the shortest delay among the rules matching an update, and
// whether any matches.
func Delay(rules []PolicyRule, severity, source string) (days int, ok bool) {
	for _, r := range rules {
		if r.Matches(severity, source) && (!ok || r.DelayDays < days) {
			days, ok = r.DelayDays, true
		}
	}
	return days, ok
}

// CheckPolicyRule normalises a rule's severity and source
// (case-insensitively) and checks its delay.
func CheckPolicyRule(r PolicyRule) (PolicyRule, error) {
	if strings.EqualFold(r.Severity, Any) || r.Severity == "*" {
		r.Severity = Any
	} else if sev, ok := NormalizeSeverity(r.Severity); ok && r.Severity != "" {
		r.Severity = sev
	} else {
		return r, errors.New("severity must be Critical, Important, Moderate, Low, Unspecified or ANY")
	}
	switch strings.ToUpper(strings.TrimSpace(r.Source)) {
	case FilterOS:
		r.Source = FilterOS
	case FilterThirdParty, "THIRD-PARTY", "APPLICATIONS":
		r.Source = FilterThirdParty
	case Any, "*":
		r.Source = Any
	default:
		return r, errors.New("source must be OS, THIRD_PARTY or ANY")
	}
	if r.DelayDays < 0 || r.DelayDays > 365 {
		return r, errors.New("delay-days must be between 0 and 365")
	}
	return r, nil
}
