package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestAgentReleaseSigning: keygen writes a private key (0600) and prints
// the public one; sign prints a signature that verifies with it over the
// file's platform, version and SHA-256; publish --version --release-key
// stores the release, publish --signature with a signature of another
// file is stored as given (agents refuse it), and the store answers no
// release once the binary is published again without one.
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
	agentFile := filepath.Join(dir, "agent")
	os.WriteFile(agentFile, append([]byte{0x7f, 'E', 'L', 'F'}, make([]byte, 100)...), 0o755)
	sum, _ := agentdist.FileSHA256(agentFile)

	code, m, e = run("admin", "agent", "sign", "--release-key", keyFile, "--version", "2.0.0", "--os", "linux", "--arch", "arm64", agentFile)
	if code != 0 {
		t.Fatal(e)
	}
	rel := agentproto.Release{OS: "linux", Arch: "arm64", Version: "2.0.0", SHA256: sum, Signature: m["signature"].(string)}
	if err := agentproto.VerifyRelease([]ed25519.PublicKey{pub}, rel); err != nil || m["sha256"] != sum {
		t.Fatalf("sign: %v %v", m, err)
	}
	other := rel
	other.Version = "3.0.0"
	if agentproto.VerifyRelease([]ed25519.PublicKey{pub}, other) == nil {
		t.Fatal("a signature of 2.0.0 verifies as 3.0.0")
	}

	agentDir := filepath.Join(dir, "agents")
	if code, _, e := run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", "linux", "--arch", "arm64", "--release-key", keyFile, agentFile); code != 2 || !strings.Contains(e, "--version") {
		t.Errorf("a signed release without --version: %d %s", code, e)
	}
	code, m, e = run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", "linux", "--arch", "arm64", "--version", "2.0.0", "--release-key", keyFile, agentFile)
	if release, _ := m["release"].(map[string]any); code != 0 || release["version"] != "2.0.0" || release["sha256"] != sum {
		t.Fatalf("publish a signed release: %d %v %s", code, m, e)
	}
	st, _ := agentdist.NewStore(agentDir)
	p := agentdist.Platform{OS: "linux", Arch: "arm64"}
	got, err := st.Release(p)
	if err != nil || got.Version != "2.0.0" || got.SHA256 != sum || agentproto.VerifyRelease([]ed25519.PublicKey{pub}, got) != nil {
		t.Fatalf("stored release: %+v %v", got, err)
	}
	// Published again without a release: the old release is not served
	// for the new binary.
	os.WriteFile(agentFile, append([]byte{0x7f, 'E', 'L', 'F'}, make([]byte, 200)...), 0o755)
	if code, _, e := run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", "linux", "--arch", "arm64", agentFile); code != 0 {
		t.Fatal(e)
	}
	if _, err := st.Release(p); err == nil {
		t.Fatal("a release served for a binary it was not made for")
	}
	// --signature of the previous file: stored (only agents hold the keys),
	// and it does not verify.
	code, _, e = run("admin", "agent", "publish", "--agent-dir", agentDir, "--os", "linux", "--arch", "arm64", "--version", "2.0.0", "--signature", rel.Signature, agentFile)
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
	db := storetest.URL(t)
	if code, _, e := patchd(t, db, "", "admin", "org", "create", "--name", "Acme"); code != 0 {
		t.Fatal(e)
	}
	get := func() map[string]any {
		code, out, e := patchd(t, db, "", "admin", "agent-policy", "get", "--org", "Acme")
		if code != 0 {
			t.Fatal(e)
		}
		return decode(t, out)
	}
	if m := get(); m["policy"] != "none" || m["agentTarget"] != "" {
		t.Fatalf("default: %v", m)
	}
	if code, _, e := patchd(t, db, "", "admin", "agent-policy", "set", "--org", "Acme", "--policy", "pinned", "--version", "2.0.0"); code != 0 {
		t.Fatal(e)
	}
	if m := get(); m["policy"] != "pinned" || m["agentTarget"] != "2.0.0" {
		t.Fatalf("pinned: %v", m)
	}
	for _, bad := range [][]string{{"--policy", "pinned"}, {"--policy", "latest", "--version", "2"}, {"--policy", "soon"}} {
		if code, _, e := patchd(t, db, "", append([]string{"admin", "agent-policy", "set", "--org", "Acme"}, bad...)...); code != 2 || !strings.Contains(e, "--policy") {
			t.Errorf("%v: %d %s", bad, code, e)
		}
	}
	if m := get(); m["agentTarget"] != "2.0.0" {
		t.Fatalf("after refused changes: %v", m)
	}
	if code, _, e := patchd(t, db, "", "admin", "agent-policy", "set", "--org", "Acme", "--policy", "none"); code != 0 {
		t.Fatal(e)
	}
	if m := get(); m["policy"] != "none" {
		t.Fatalf("none: %v", m)
	}
}
