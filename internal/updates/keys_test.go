package updates

import (
	"testing"

	"github.com/patchd/patchd/agentproto"
)

func s(v string) *string { return &v }

func TestKey(t *testing.T) {
	for _, c := range []struct {
		name, platform, distro string
		u                      agentproto.Update
		want                   string
		bad                    bool
	}{
		{"windows KB field", "windows", "", agentproto.Update{Title: "2026-11 Cumulative Update", KB: s("KB5048685"), Source: SourceOSMandatory}, "KB5048685", false},
		{"windows KB digits", "windows", "", agentproto.Update{Title: "x", KB: s("5048685"), Source: SourceOSMandatory}, "KB5048685", false},
		{"windows KB in title", "windows", "", agentproto.Update{Title: "Security Update (kb5048685)", Source: SourceOSOptional}, "KB5048685", false},
		{"windows without KB", "windows", "", agentproto.Update{Title: "Driver", Source: SourceOSOptional}, "", true},
		{"linux", "linux", "debian", agentproto.Update{Title: "openssl", PackageName: s("openssl"), LatestVersion: s("3.0.15-1~deb12u1"), Source: SourceOSMandatory}, "debian:openssl@3.0.15-1~deb12u1", false},
		{"linux distro on update", "linux", "debian", agentproto.Update{Title: "curl", PackageName: s("curl"), LatestVersion: s("8.5"), Distro: s("Ubuntu"), Source: SourceOSOptional}, "ubuntu:curl@8.5", false},
		{"linux no version", "linux", "debian", agentproto.Update{Title: "curl", PackageName: s("curl"), Source: SourceOSOptional}, "", true},
		{"macos", "macos", "", agentproto.Update{Title: "macOS Sonoma 14.7.1", ProductKey: s("macOS Sonoma 14.7.1-23H222"), Source: SourceOSMandatory}, "macOS Sonoma 14.7.1-23H222", false},
		{"winget", "windows", "", agentproto.Update{Title: "Mozilla Firefox", WingetID: s("Mozilla.Firefox"), LatestVersion: s("133.0.3"), Source: SourceApps}, "Mozilla.Firefox@133.0.3", false},
		{"app without version", "windows", "", agentproto.Update{Title: "Mozilla Firefox", WingetID: s("Mozilla.Firefox"), Source: SourceApps}, "", true},
		{"app without id", "macos", "", agentproto.Update{Title: "Google Chrome", LatestVersion: s("131.0"), Source: SourceApps}, "google-chrome@131.0", false},
	} {
		got, err := Key(c.platform, c.distro, c.u)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("%s: %q %v, want %q (error %v)", c.name, got, err, c.want, c.bad)
		}
	}
}

func TestNormalizeSeverity(t *testing.T) {
	for in, want := range map[string]string{"critical": "Critical", "": "Unspecified", "LOW": "Low", "Important": "Important"} {
		if got, ok := NormalizeSeverity(in); !ok || got != want {
			t.Errorf("%q: %q %v", in, got, ok)
		}
	}
	if _, ok := NormalizeSeverity("urgent"); ok {
		t.Error("urgent accepted")
	}
}
