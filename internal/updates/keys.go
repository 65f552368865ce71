// Package updates holds the logic of missing updates that needs neither
// HTTP nor SQL: the stable key of an update (the unit of approval), the
// spellings of keys that clients send, and the labels of sources and
// severities.
package updates

import (
	"errors"
	"regexp"
	"strings"

	"github.com/patchd/patchd/agentproto"
)

// Sources of an update (spec: Update.source).
const (
	SourceOSMandatory = "OS - Mandatory"
	SourceOSOptional  = "OS - Optional"
	SourceApps        = "Applications"
)

// Severities of an update (spec: Update.severity).
var Severities = []string{"Critical", "Important", "Moderate", "Low", "Unspecified"}

// ValidSource tells whether s is one of the three sources.
func ValidSource(s string) bool {
	return s == SourceOSMandatory || s == SourceOSOptional || s == SourceApps
}

// NormalizeSeverity maps a reported severity to the spec's five values,
// case-insensitively; ok is false for anything else.
func NormalizeSeverity(s string) (string, bool) {
	if s == "" {
		return "Unspecified", true
	}
	for _, v := range Severities {
		if strings.EqualFold(s, v) {
			return v, true
		}
	}
	return "", false
}

// ThirdParty tells whether an update of the given source is a third-party
// (application) update, whose key carries @<version>.
func ThirdParty(source string) bool { return source == SourceApps }

var kbPattern = regexp.MustCompile(`(?i)\bKB\s*(\d{6,8})\b`)

// KB extracts a KB article id ("KB5048685") from a reported KB or title.
func KB(s string) string {
	if m := kbPattern.FindStringSubmatch(s); m != nil {
		return "KB" + m[1]
	}
	digits := strings.TrimSpace(s)
	if len(digits) >= 6 && len(digits) <= 8 && strings.Trim(digits, "0123456789") == "" {
		return "KB" + digits
	}
	return ""
}

// Key derives the stable key of an update on an endpoint of the given
// platform and Linux distribution: a Windows update's KB; a Linux package
// update "<distro>:<package>@<version>"; a macOS update its product key; a
// third-party application "<wingetId or product id>@<latestVersion>".
func Key(platform, distro string, u agentproto.Update) (string, error) {
	if ThirdParty(u.Source) {
		id := firstNonEmpty(deref(u.WingetID), deref(u.PackageName), deref(u.ProductKey))
		if id == "" {
			id = strings.ToLower(strings.Join(strings.Fields(u.Title), "-"))
		}
		if deref(u.LatestVersion) == "" {
			return "", errors.New("a third-party update needs latestVersion")
		}
		return id + "@" + strings.TrimSpace(*u.LatestVersion), nil
	}
	switch platform {
	case "windows":
		if kb := KB(firstNonEmpty(deref(u.KB), u.Title)); kb != "" {
			return kb, nil
		}
		if id := deref(u.ProductKey); id != "" {
			return id, nil
		}
		return "", errors.New("a Windows update needs a KB number or a productKey")
	case "linux":
		pkg := deref(u.PackageName)
		if pkg == "" {
			return "", errors.New("a Linux update needs packageName")
		}
		d := firstNonEmpty(deref(u.Distro), distro)
		if d == "" {
			d = "linux"
		}
		ver := deref(u.LatestVersion)
		if ver == "" {
			return "", errors.New("a Linux update needs latestVersion")
		}
		return strings.ToLower(d) + ":" + pkg + "@" + ver, nil
	case "macos":
		if id := firstNonEmpty(deref(u.ProductKey), deref(u.PackageName)); id != "" {
			return id, nil
		}
		if u.Title != "" {
			return u.Title, nil
		}
		return "", errors.New("a macOS update needs a productKey")
	}
	return "", errors.New("unknown platform " + platform)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
