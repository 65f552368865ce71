package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/store"
)

// buildAgent builds the real agent for this machine as version into
// file; extra are more -ldflags (another build of the same version).
func buildAgent(t *testing.T, file, version string, extra ...string) {
	t.Helper()
	ldflags := strings.Join(append([]string{"-X github.com/patchd/patchd/agent.Version=" + version}, extra...), " ")
	cmd := exec.Command("go", "build", "-trimpath", "-o", file, "-ldflags", ldflags, "github.com/patchd/patchd/cmd/patchd-agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the agent %s: %v\n%s", version, err, out)
	}
}

// TestAgentReleaseSigning: keygen writes a private key (0600) and prints
// the public one; sign prints a signature that verifies with it over the
// file's platform, version and SHA-256; publish --version --release-key
// stores the release, publish --signature with a signature of another
// file is stored as given (agents refuse it), and the store answers no
// release once the binary is published again without one. A --version
// that is no semantic version, or not the one the binary reports, is
// refused by sign and publish, and publishes nothing.
func TestAgentReleaseSigning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := func(args ...string) (int, map[string]any, string) {
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		var m map[string]any
		if code == 0 {
			m = decode(t, out.String())
		}
		return code, m, errb.String()
	}
	keyFile := filepath.Join(dir, "release.key")
	code, m, e := run("admin", "agent", "keygen", "--out", keyFile)
	if code != 0 {
		t.Fatal(e)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	pub, err := agentproto.ParseReleaseKey(m["publicKey"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _ := run("admin", "agent", "keygen", "--out", keyFile); code == 0 {
		t.Error("keygen overwrote a key")
	}
	goos, arch := runtime.GOOS, runtime.GOARCH
	p := agentdist.Platform{OS: goos, Arch: arch}
	if _, err := agentdist.ParsePlatform(goos, arch); err != nil {
		t.Skipf("no agent is hosted for %s", p)
	}
	agentFile := filepath.Join(dir, "agent")
	buildAgent(t, agentFile, "2.0.0")
	sum, _ := agentdist.FileSHA256(agentFile)

	for _, bad := range []struct{ version, says string }{
		{"9.9.9", "reports version 2.0.0"},
		{"linux/amd64", "not a semantic version"},
		{"v2.0.0", "not a semantic version"},
	} {
		if code, _, e := run("admin", "agent", "sign", "--release-key", keyFile, "--version", bad.version, "--os", goos, "--arch", arch, agentFile); code != 2 || !strings.Contains(e, bad.says) {
			t.Errorf("sign --version %s: %d %s", bad.version, code, e)
		}
	}
	code, m, e = run("admin", "agent", "sign", "--release-key", keyFile, "--version", "2.0.0", "--os", goos, "--arch", arch, agentFile)
	if code != 0 {
		t.Fatal(e)
	}
	rel := agentproto.Release{OS: goos, Arch: arch, Version: "2.0.0", SHA256: sum, Signature: m["signature"].(string)}
	if err := agentproto.VerifyRelease([]ed25519.PublicKey{pub}, rel); err != nil || m["sha256"] != sum {
		t.Fatalf("sign: %v %v", m, err)
	}
	other := rel
	other.Version = "3.0.0"
	if agentproto.VerifyRelease([]ed25519.PublicKey{pub}, other) == nil {
		t.Fatal("a signature of 2.0.0 verifies as 3.0.0")
	}

	agentDir := filepath.Join(dir, "agents")
	if code, _, e := run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", goos, "--arch", arch, "--release-key", keyFile, agentFile); code != 2 || !strings.Contains(e, "--version") {
		t.Errorf("a signed release without --version: %d %s", code, e)
	}
	code, m, e = run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", goos, "--arch", arch, "--version", "2.0.0", "--release-key", keyFile, agentFile)
	if release, _ := m["release"].(map[string]any); code != 0 || release["version"] != "2.0.0" || release["sha256"] != sum {
		t.Fatalf("publish a signed release: %d %v %s", code, m, e)
	}
	st, _ := agentdist.NewStore(agentDir)
	got, err := st.Release(p)
	if err != nil || got.Version != "2.0.0" || got.SHA256 != sum || agentproto.VerifyRelease([]ed25519.PublicKey{pub}, got) != nil {
		t.Fatalf("stored release: %+v %v", got, err)
	}
	// Another build that reports 1.0.0, published as 9.9.9 or under a
	// platform for a version: refused, and the release stays as it was.
	oneFile := filepath.Join(dir, "agent-1.0.0")
	buildAgent(t, oneFile, "1.0.0")
	for _, bad := range []struct{ version, says string }{
		{"9.9.9", "reports version 1.0.0"},
		{"linux/amd64", "not a semantic version"},
	} {
		if code, _, e := run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", goos, "--arch", arch, "--version", bad.version, "--release-key", keyFile, oneFile); code != 2 || !strings.Contains(e, bad.says) {
			t.Errorf("publish --version %s of a binary that reports 1.0.0: %d %s", bad.version, code, e)
		}
	}
	if got, err := st.Release(p); err != nil || got.Version != "2.0.0" || got.SHA256 != sum {
		t.Fatalf("a refused publish changed the release: %+v %v", got, err)
	}
	// Published again without a release: the old release is not served
	// for the new binary.
	os.WriteFile(agentFile, append([]byte{0x7f, 'E', 'L', 'F'}, make([]byte, 200)...), 0o755)
	if code, _, e := run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", goos, "--arch", arch, agentFile); code != 0 {
		t.Fatal(e)
	}
	if _, err := st.Release(p); !errors.Is(err, agentdist.ErrNoRelease) {
		t.Fatalf("a release served for a binary it was not made for: %v", err)
	}
	// --signature of the previous file on another build of 2.0.0: stored
	// (only agents hold the keys), and it does not verify.
	buildAgent(t, agentFile, "2.0.0", "-X github.com/patchd/patchd/agent.ReleaseKey="+m["release"].(map[string]any)["sha256"].(string))
	code, _, e = run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", goos, "--arch", arch, "--version", "2.0.0", "--signature", rel.Signature, agentFile)
	if code != 0 {
		t.Fatal(e)
	}
	if got, err := st.Release(p); err != nil || agentproto.VerifyRelease([]ed25519.PublicKey{pub}, got) == nil {
		t.Fatalf("a signature of another file: %+v %v", got, err)
	}
}

// TestAgentPolicyCommands: patchd admin agent-policy set/get.
func TestAgentPolicyCommands(t *testing.T) {
	t.Parallel()
	c := newCLITest(t)
	db := c.db
	c.ok("", "admin", "org", "create", "--name", "Acme")
	get := func() map[string]any { return c.ok("", "admin", "agent-policy", "get", "--org", "Acme") }
	if m := get(); m["policy"] != "none" || m["agentTarget"] != "" {
		t.Fatalf("default: %v", m)
	}
	c.ok("", "admin", "agent-policy", "set", "--org", "Acme", "--policy", "pinned", "--version", "2.0.0")
	if m := get(); m["policy"] != "pinned" || m["agentTarget"] != "2.0.0" {
		t.Fatalf("pinned: %v", m)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "pinned"}, "--version: policy pinned needs the agent version"},
		{[]string{"--policy", "latest", "--version", "2"}, "--version: goes only with policy pinned or staged"},
		{[]string{"--policy", "soon"}, "--policy: must be latest, pinned, staged or none"},
	} {
		if code, _, e := patchd(t, db, "", append([]string{"admin", "agent-policy", "set", "--org", "Acme"}, bad.args...)...); code != 2 || !strings.Contains(e, bad.want) {
			t.Errorf("%v: %d %s", bad.args, code, e)
		}
	}
	if m := get(); m["agentTarget"] != "2.0.0" {
		t.Fatalf("after refused changes: %v", m)
	}
	c.ok("", "admin", "agent-policy", "set", "--org", "Acme", "--policy", "none")
	if m := get(); m["policy"] != "none" {
		t.Fatalf("none: %v", m)
	}
}

// TestAgentPolicyStagedCommand: patchd admin agent-policy set --policy
// staged takes what PUT /api/v1/agent-policy takes (rings of groups by id
// or name, the delay, the success gate), stores the same policy and
// refuses bad input with the API's messages, worded by the flags.
func TestAgentPolicyStagedCommand(t *testing.T) {
	t.Parallel()
	c := newCLITest(t)
	db := c.db
	orgID := c.ok("", "admin", "org", "create", "--name", "Acme")["id"].(string)
	ctx := context.Background()
	s := c.open()
	group := func(name string) string {
		g, err := s.CreateGroup(ctx, &store.AuditEntry{OrgID: orgID, Actor: "test", Action: "group.create", TargetType: "group"}, orgID,
			store.GroupChange{Name: &name}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return g.ID
	}
	pilot, canary := group("Pilot"), group("Canary")
	set := func(args ...string) (int, string, string) {
		return patchd(t, db, "", append([]string{"admin", "agent-policy", "set", "--org", "Acme"}, args...)...)
	}

	// Rings by name and by id, the delay in days.
	code, out, e := set("--policy", "staged", "--version", "3.0.0", "--ring", "Pilot", "--ring", canary, "--delay", "2d", "--success-rate", "90")
	if code != 0 {
		t.Fatal(e)
	}
	m := decode(t, out)
	if m["policy"] != "staged" || m["version"] != "3.0.0" || fmt.Sprint(m["rings"]) != fmt.Sprint([]string{pilot, canary}) ||
		m["delayHours"] != float64(48) || m["successRate"] != float64(90) {
		t.Fatalf("set staged: %v", m)
	}
	p, err := s.AgentPolicyOf(ctx, orgID)
	if err != nil || p.Policy != store.AgentPolicyStaged || p.Version != "3.0.0" || !slices.Equal(p.Rings, []string{pilot, canary}) ||
		p.Delay != 48*time.Hour || p.SuccessRate != 90 {
		t.Fatalf("stored: %+v %v", p, err)
	}
	// The rollout starts as the API's does: the first ring has the version,
	// the rest waits; the output shows it as the API's agent-versions does.
	ro, err := s.AgentRolloutOf(ctx, orgID, time.Now())
	if err != nil || len(ro.Rings) != 3 || ro.Rings[0].StartedAt.IsZero() || !ro.Rings[1].StartedAt.IsZero() {
		t.Fatalf("rollout: %+v %v", ro, err)
	}
	rollout, _ := m["rollout"].(map[string]any)
	rings, _ := rollout["rings"].([]any)
	if len(rings) != 3 || rollout["version"] != "3.0.0" {
		t.Fatalf("printed rollout: %v", m["rollout"])
	}
	for i, want := range []struct{ group, state any }{{"Pilot", "rolling_out"}, {"Canary", "waiting"}, {nil, "waiting"}} {
		r := rings[i].(map[string]any)
		if r["groupName"] != want.group || r["state"] != want.state {
			t.Errorf("printed ring %d: %v", i, r)
		}
	}
	code, out, e = patchd(t, db, "", "admin", "agent-policy", "get", "--org", "Acme")
	if code != 0 {
		t.Fatal(e)
	}
	if g := decode(t, out); fmt.Sprint(g["rings"]) != fmt.Sprint(m["rings"]) || g["delayHours"] != m["delayHours"] ||
		g["successRate"] != m["successRate"] || fmt.Sprint(g["rollout"].(map[string]any)["rings"]) != fmt.Sprint(rings) {
		t.Fatalf("get answers %v, set answered %v", g, m)
	}

	for _, bad := range []struct {
		args []string
		want []string
	}{
		{[]string{"--policy", "staged", "--version", "4"}, []string{
			"--ring: policy staged needs 1 to 20 endpoint group ids, the rings in order",
			"--delay: policy staged needs the hours a ring runs the version before the next gets it: 0 to 8760",
			"--success-rate: policy staged needs the percent of a ring that must run the version: 0 to 100"}},
		{[]string{"--policy", "staged", "--ring", "Pilot", "--ring", "Nope", "--ring", "Pilot", "--delay", "12h", "--success-rate", "50"}, []string{
			"--version: policy staged needs the agent version: 1 to 64 characters",
			`--ring "Nope": no such endpoint group`,
			`--ring "Pilot": the group is already a ring before`}},
		{[]string{"--policy", "staged", "--version", "4", "--ring", "Pilot", "--delay", "366d", "--success-rate", "101"}, []string{
			"--delay: must be 0 to 8760", "--success-rate: must be 0 to 100"}},
		{[]string{"--policy", "pinned", "--version", "4", "--ring", "Pilot", "--delay", "1h", "--success-rate", "5"}, []string{
			"--ring: go only with policy staged", "--delay: goes only with policy staged", "--success-rate: goes only with policy staged"}},
		{[]string{"--policy", "staged", "--version", "4", "--ring", "Pilot", "--delay", "soon", "--success-rate", "5"}, []string{
			`--delay "soon": wants hours or days: 12h, 3d`}},
		{[]string{"--policy", "staged", "--version", "4", "--ring", "Pilot", "--delay", "1h", "--success-rate", "most"}, []string{
			"-success-rate: wants a percent: 0 to 100"}},
	} {
		code, _, e := set(bad.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", bad.args, code, e)
		}
		for _, w := range bad.want {
			if !strings.Contains(e, w) {
				t.Errorf("%v: %q lacks %q", bad.args, firstLine(e), w)
			}
		}
	}
	if p2, err := s.AgentPolicyOf(ctx, orgID); err != nil || !slices.Equal(p2.Rings, p.Rings) || p2.Version != "3.0.0" {
		t.Fatalf("after refused changes: %+v %v", p2, err)
	}
	// Back to latest: the rings go.
	if code, _, e := set("--policy", "latest"); code != 0 {
		t.Fatal(e)
	}
	if p, err := s.AgentPolicyOf(ctx, orgID); err != nil || p.Policy != store.AgentPolicyLatest || len(p.Rings) != 0 {
		t.Fatalf("latest: %+v %v", p, err)
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
