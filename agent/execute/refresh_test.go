package execute

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestRefreshPackageLists: the scan's refresh runs the package manager's
// own metadata refresh on Linux, nothing on Windows and macOS (their
// searches are online), and a failure is an error naming the command.
func TestRefreshPackageLists(t *testing.T) {
	for _, tc := range []struct {
		os, pm string
		want   []string
	}{
		{"linux", "apt", []string{"apt-get update -q"}},
		{"linux", "dnf", []string{"dnf makecache --refresh -q"}},
		{"linux", "yum", []string{"yum makecache -q"}},
		{"windows", "", nil},
		{"darwin", "", nil},
	} {
		t.Run(tc.os+" "+tc.pm, func(t *testing.T) {
			r := &fakeRunner{}
			e := &Executor{OS: tc.os, PackageManager: tc.pm, Runner: r}
			ran, err := e.RefreshPackageLists(context.Background())
			if err != nil || !slices.Equal(r.argv(), tc.want) || ran != strings.Join(tc.want, "") {
				t.Fatalf("ran %q (%q), err %v; want %q", r.argv(), ran, err, tc.want)
			}
			if tc.pm == "apt" && !slices.Contains(r.calls[0].Env, "DEBIAN_FRONTEND=noninteractive") {
				t.Errorf("apt-get update without the non-interactive environment: %v", r.calls[0].Env)
			}
		})
	}
	r := &fakeRunner{answers: map[string]Result{"apt-get": {ExitCode: 100, Output: "E: Temporary failure resolving 'deb.debian.org'"}}}
	_, err := (&Executor{OS: "linux", PackageManager: "apt", Runner: r}).RefreshPackageLists(context.Background())
	if err == nil || !strings.Contains(err.Error(), "apt-get update") || !strings.Contains(err.Error(), "Temporary failure") {
		t.Fatalf("failed refresh: %v", err)
	}
}
