package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/agentdist"
)

// TestEnrollTokenInstallers: enroll-token create prints the one-line
// installers with the server address given.
func TestEnrollTokenInstallers(t *testing.T) {
	t.Parallel()
	c := newCLITest(t)
	db := c.db
	c.ok("", "admin", "org", "create", "--name", "Acme")
	m := c.ok("", "admin", "enroll-token", "create", "--org", "Acme", "--base-url", "https://patchd.example.com")
	tok, _ := m["token"].(string)
	if tok == "" || m["installLinux"] != agentdist.InstallersFor("https://patchd.example.com", tok, "").Linux ||
		!strings.Contains(m["installWindows"].(string), "https://patchd.example.com/install.ps1") || m["warning"] != nil || m["agentToken"] != tok {
		t.Errorf("enroll-token create: %v", m)
	}
	code, out, _ := patchd(t, db, "", "admin", "enroll-token", "create", "--org", "Acme", "--base-url", "http://127.0.0.1:8080")
	if m := decode(t, out); code != 0 || !strings.Contains(m["warning"].(string), "loopback") {
		t.Errorf("loopback: %v", m)
	}
	if code, _, e := patchd(t, db, "", "admin", "enroll-token", "create", "--org", "Acme", "--base-url", "https://x/';reboot"); code != 2 || !strings.Contains(e, "--base-url") {
		t.Errorf("a base URL with shell syntax: %d %s", code, e)
	}
}

// TestAgentPublishAndPackage: publish an agent into the folder, list it,
// build a .deb from it.
func TestAgentPublishAndPackage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agentFile := filepath.Join(dir, "agent")
	os.WriteFile(agentFile, append([]byte{0x7f, 'E', 'L', 'F'}, make([]byte, 100)...), 0o755)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}
	agentDir := filepath.Join(dir, "agents")
	if code, out, e := run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", "linux", "--arch", "arm64", agentFile); code != 0 || decode(t, out)["sha256"] == "" {
		t.Fatalf("publish: %d %s %s", code, out, e)
	}
	if code, _, e := run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", "windows", "--arch", "amd64", agentFile); code != 1 || !strings.Contains(e, "not a windows program") {
		t.Errorf("publish a Linux program as Windows: %d %s", code, e)
	}
	if code, _, e := run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", "plan9", "--arch", "amd64", agentFile); code != 2 || !strings.Contains(e, "unknown platform") {
		t.Errorf("publish for plan9: %d %s", code, e)
	}
	if code, out, _ := run("admin", "agent", "list", "--agent-dir", agentDir); code != 0 || decode(t, out)["total"].(float64) != 1 {
		t.Errorf("list: %s", out)
	}
	for _, verb := range []string{"package", "publish", "keygen", "sign", "list"} {
		if code, out, _ := run("admin", "agent", verb, "--help"); code != 0 || !strings.HasPrefix(out, "usage: patchd admin agent "+verb) || !strings.Contains(out, "-agent-dir") {
			t.Errorf("%s --help: %d %q", verb, code, out)
		}
	}
	deb := filepath.Join(dir, "agent.deb")
	// A package takes the version of the agent's release: none yet.
	if code, _, e := run("admin", "agent", "package", "--agent-dir", agentDir, "--type", "deb", "--arch", "arm64", "--out", deb); code != 2 || !strings.Contains(e, "publish it with --version") {
		t.Errorf("package of an agent without a release: %d %s", code, e)
	}
	key := filepath.Join(dir, "release.key")
	if code, _, e := run("admin", "agent", "keygen", "--out", key); code != 0 {
		t.Fatalf("keygen: %d %s", code, e)
	}
	// A release's version is checked against the binary's own: the real
	// agent, built for linux/arm64 as 1.4.0.
	realAgent := filepath.Join(dir, "patchd-agent-1.4.0")
	build := exec.Command("go", "build", "-trimpath", "-o", realAgent, "-ldflags", "-X github.com/patchd/patchd/agent.Version=1.4.0", "github.com/patchd/patchd/cmd/patchd-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the agent: %v\n%s", err, out)
	}
	if code, _, e := run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", "linux", "--arch", "arm64", "--version", "1.4.0", "--release-key", key, realAgent); code != 0 {
		t.Fatalf("publish a release: %d %s", code, e)
	}
	if code, _, e := run("admin", "agent", "package", "--agent-dir", agentDir, "--type", "deb", "--arch", "arm64", "--out", deb, "--maintainer", "nobody"); code != 2 || !strings.Contains(e, "Name <address>") {
		t.Errorf("package with a bad maintainer: %d %s", code, e)
	}
	code, out, e := run("admin", "agent", "package", "--agent-dir", agentDir, "--type", "deb", "--arch", "arm64", "--out", deb, "--base-url", "https://patchd.example.com")
	if code != 0 {
		t.Fatalf("package: %d %s", code, e)
	}
	if b, _ := os.ReadFile(deb); !bytes.HasPrefix(b, []byte("!<arch>\n")) || decode(t, out)["sha256"] == "" || decode(t, out)["version"] != "1.4.0" {
		t.Errorf("package wrote no .deb: %s", out)
	}
	if _, err := exec.LookPath("dpkg-deb"); err == nil {
		info, _ := exec.Command("dpkg-deb", "-I", deb).CombinedOutput()
		if !strings.Contains(string(info), "Architecture: arm64") || !strings.Contains(string(info), "Package: patchd-agent") ||
			!strings.Contains(string(info), "Version: 1.4.0\n") || !strings.Contains(string(info), "Maintainer: patchd <patchd@patchd.example.com>") {
			t.Errorf("dpkg-deb -I:\n%s", info)
		}
		ctl, _ := exec.Command("dpkg-deb", "--ctrl-tarfile", deb).Output()
		if !bytes.Contains(ctl, []byte("DEFAULT_SERVER='https://patchd.example.com'")) {
			t.Error("the package does not default to the server given")
		}
	}
	if code, _, e := run("admin", "agent", "package", "--agent-dir", agentDir, "--type", "deb", "--arch", "amd64", "--out", deb); code != 1 || !strings.Contains(e, "no agent published") {
		t.Errorf("package without an agent: %d %s", code, e)
	}
	if code, _, e := run("admin", "agent", "package", "--agent-dir", agentDir, "--type", "zip", "--arch", "arm64", "--out", deb); code != 2 || !strings.Contains(e, "unknown package type") {
		t.Errorf("package zip: %d %s", code, e)
	}
}
