package agentdist

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckBinaryVersionCrossPlatform: a Windows agent, built as a
// release build is (-trimpath -s -w: no symbols, no -ldflags in its build
// information), is checked without running it: the version linked into it
// passes, any other is refused, and so is the file as another platform's.
func TestCheckBinaryVersionCrossPlatform(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := filepath.Join(dir, "patchd-agent.exe")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/patchd/patchd/agent.Version=1.4.0-rc.2", "-o", exe,
		"github.com/patchd/patchd/cmd/patchd-agent")
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v %s", err, out)
	}
	ctx := context.Background()
	win := Platform{OS: "windows", Arch: "amd64"}
	if err := CheckBinaryVersion(ctx, exe, win, "1.4.0-rc.2"); err != nil {
		t.Fatalf("the version it was built as: %v", err)
	}
	var mismatch *VersionMismatchError
	for _, v := range []string{"9.9.9", "1.4.0", "1.0.0"} {
		if err := CheckBinaryVersion(ctx, exe, win, v); !errors.As(err, &mismatch) {
			t.Errorf("--version %s: %v, want a mismatch", v, err)
		}
	}
	if err := CheckBinaryVersion(ctx, exe, win, "windows/amd64"); err == nil || !strings.Contains(err.Error(), "not a semantic version") {
		t.Errorf("a platform for a version: %v", err)
	}
	if err := CheckBinaryVersion(ctx, exe, Platform{OS: "darwin", Arch: "arm64"}, "1.4.0-rc.2"); err == nil || !strings.Contains(err.Error(), "built for windows/amd64") {
		t.Errorf("published as another platform's: %v", err)
	}
	// Not the agent at all.
	other := filepath.Join(dir, "other.exe")
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n\ngo 1.21\n"), 0o644)
	b := exec.Command("go", "build", "-o", other, ".")
	b.Dir, b.Env = dir, append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := b.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v %s", err, out)
	}
	if err := CheckBinaryVersion(ctx, other, win, "1.4.0-rc.2"); err == nil || !strings.Contains(err.Error(), "not the agent") {
		t.Errorf("another program: %v", err)
	}
}

func TestLdflagsVersion(t *testing.T) {
	for _, tc := range []struct {
		ldflags, want string
		ok            bool
	}{
		{"-s -w -X github.com/patchd/patchd/agent.Version=1.4.0 -X github.com/patchd/patchd/agent.ReleaseKey=abc", "1.4.0", true},
		{"-X=github.com/patchd/patchd/agent.Version=2.0.0", "2.0.0", true},
		{"-X github.com/patchd/patchd/agent.Version=1.0.0 -X github.com/patchd/patchd/agent.Version=3.0.0", "3.0.0", true},
		{"-X 'github.com/patchd/patchd/agent.Version=1.2.3'", "1.2.3", true},
		{"-s -w", "", false},
		{"-X github.com/other/agent.Version=9.9.9", "", false},
	} {
		if got, ok := ldflagsVersion(tc.ldflags); got != tc.want || ok != tc.ok {
			t.Errorf("%q: %q %v", tc.ldflags, got, ok)
		}
	}
}
