package updates

import "testing"

func TestParseApprovalKey(t *testing.T) {
	for _, c := range []struct {
		raw, norm, kind, product, version string
		missing, maybeThirdParty          bool
	}{
		{raw: "KB5048685", norm: "KB5048685", kind: KindWindows},
		{raw: "kb5048685", norm: "KB5048685", kind: KindWindows},
		{raw: " KB5048685-x64 ", norm: "KB5048685", kind: KindWindows},
		{raw: "kb5048685_arm64", norm: "KB5048685", kind: KindWindows},
		{raw: "KB 5048685 x86", norm: "KB5048685", kind: KindWindows},
		{raw: "Mozilla.Firefox@133.0.3", norm: "Mozilla.Firefox@133.0.3", kind: KindThirdParty, product: "Mozilla.Firefox", version: "133.0.3"},
		{raw: "mozilla.firefox.x64@133.0.3", norm: "mozilla.firefox@133.0.3", kind: KindThirdParty, product: "mozilla.firefox", version: "133.0.3"},
		{raw: "Mozilla.Firefox.ARM64@134.0", norm: "Mozilla.Firefox@134.0", kind: KindThirdParty, product: "Mozilla.Firefox", version: "134.0"},
		{raw: "google-chrome@131.0", norm: "google-chrome@131.0", kind: KindThirdParty, product: "google-chrome", version: "131.0"},
		{raw: "Mozilla.Firefox@", norm: "Mozilla.Firefox", kind: KindThirdParty, product: "Mozilla.Firefox", missing: true},
		{raw: "Mozilla.Firefox", norm: "Mozilla.Firefox", kind: KindOther, product: "Mozilla.Firefox", maybeThirdParty: true},
		{raw: "Mozilla.Firefox.x64", norm: "Mozilla.Firefox", kind: KindOther, product: "Mozilla.Firefox", maybeThirdParty: true},
		{raw: "Debian:openssl@3.0.15-1~deb12u1", norm: "debian:openssl@3.0.15-1~deb12u1", kind: KindLinux, product: "debian:openssl", version: "3.0.15-1~deb12u1"},
		{raw: "macOS Sonoma 14.7.1-23H222", norm: "macOS Sonoma 14.7.1-23H222", kind: KindOther},
		{raw: "KB12", norm: "KB12", kind: KindOther},
	} {
		k, err := ParseApprovalKey(c.raw)
		if err != nil {
			t.Fatalf("%q: %v", c.raw, err)
		}
		if k.Normalized != c.norm || k.Kind != c.kind || k.Product != c.product || k.Version != c.version ||
			k.MissingVersion() != c.missing || k.MaybeThirdParty != c.maybeThirdParty {
			t.Errorf("%q: %+v missing=%v", c.raw, k, k.MissingVersion())
		}
	}
	if _, err := ParseApprovalKey("  "); err != ErrEmptyKey {
		t.Errorf("blank key: %v", err)
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"133.0.3", "134.0", -1},
		{"134.0", "133.0.3", 1},
		{"133.0.3", "133.0.3", 0},
		{"9.9", "10.0", -1},
		{"24.08", "24.9", -1},
		{"1.2.0-beta1", "1.2.0", -1},
	} {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("%s vs %s: %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestPolicy(t *testing.T) {
	rules := []PolicyRule{{Severity: "Critical", Source: FilterOS, DelayDays: 3}, {Severity: Any, Source: FilterThirdParty, DelayDays: 7},
		{Severity: "Critical", Source: Any, DelayDays: 1}}
	for _, c := range []struct {
		sev, src string
		days     int
		ok       bool
	}{
		{"Critical", SourceOSMandatory, 1, true},
		{"Critical", SourceApps, 1, true},
		{"Low", SourceApps, 7, true},
		{"Low", SourceOSOptional, 0, false},
		{"Important", SourceOSMandatory, 0, false},
	} {
		days, ok := Delay(rules, c.sev, c.src)
		if days != c.days || ok != c.ok {
			t.Errorf("%s %s: %d %v", c.sev, c.src, days, ok)
		}
	}
	for _, bad := range []PolicyRule{{Severity: "urgent", Source: "OS"}, {Severity: "Low", Source: "apps"}, {Severity: "Low", Source: "OS", DelayDays: -1}, {Severity: "", Source: "OS"}} {
		if _, err := CheckPolicyRule(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	r, err := CheckPolicyRule(PolicyRule{Severity: "critical", Source: "third_party", DelayDays: 2})
	if err != nil || r.Severity != "Critical" || r.Source != FilterThirdParty {
		t.Errorf("normalised rule: %+v %v", r, err)
	}
}
