package agentdist_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/patchd/patchd/internal/agentdist"
)

var realAgents sync.Map // version → *realAgentBuild

// TestMain removes the agents realAgent built.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, builds := range []*sync.Map{&realAgents, &serverBuilds} {
		builds.Range(func(_, v any) bool {
			if b := v.(*realAgentBuild); b.path != "" {
				os.RemoveAll(filepath.Dir(b.path))
			}
			return true
		})
	}
	os.Exit(code)
}

type realAgentBuild struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// realAgent builds the agent for linux/amd64 as a release build does
// (-trimpath -ldflags "-s -w -X …agent.Version=V"), once per version and
// test run: lintian and rpmlint judge the real, statically linked binary.
func realAgent(t *testing.T, version string) string {
	t.Helper()
	return realBuild(t, &realAgents, version, "patchd-agent", func(path string) ([]byte, error) {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/patchd/patchd/agent.Version="+version, "-o", path, "./cmd/patchd-agent")
		cmd.Dir = agentdist.ModuleRoot(".")
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
		return cmd.CombinedOutput()
	})
}

// realBuild builds a program once per test run and version with build,
// into a temporary folder TestMain removes, and answers its path.
func realBuild(t *testing.T, cache *sync.Map, version, name string, build func(path string) ([]byte, error)) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no Go toolchain to build " + name)
	}
	v, _ := cache.LoadOrStore(version, &realAgentBuild{})
	b := v.(*realAgentBuild)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", name+"-build-*")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, name)
		b.out, b.err = build(b.path)
	})
	if b.err != nil {
		t.Fatalf("go build %s: %v %s", name, b.err, b.out)
	}
	return b.path
}

func publishRelease(t *testing.T, h *agentdist.Host, p agentdist.Platform, file, version string) {
	t.Helper()
	if _, err := h.Store.Publish(file, p); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store.SetRelease(p, version, "test-signature", nil); err != nil {
		t.Fatal(err)
	}
}

// lintTags are the tags a lint tool printed ("E: pkg: tag …" lines and
// the like), without its own notices.
func lintTags(out string, prefixes ...string) []string {
	var tags []string
	for _, line := range strings.Split(out, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				tags = append(tags, line)
			}
		}
	}
	return tags
}

// TestDebLintian runs lintian -I --pedantic on the .deb of the real
// agent, built by a packager with a signing key: no tag at all, except those the package overrides (with their
// reasons, in /usr/share/lintian/overrides/patchd-agent).
func TestDebLintian(t *testing.T) {
	need(t, "lintian")
	_, h := newEnv(t)
	// With a signing key, which signs the .rpm only.
	h.Packages.GPGKey, _, _ = gpgKey(t, "patchd lintian test")
	p := agentdist.Platform{OS: "linux", Arch: "amd64"}
	publishRelease(t, h, p, realAgent(t, "1.5.0"), "1.5.0")
	pkg, err := h.Packages.Build(context.Background(), agentdist.PackageRequest{Type: "deb", Arch: "amd64", Server: "https://patchd.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("lintian", "-I", "--pedantic", "--no-tag-display-limit", pkg.Path).CombinedOutput()
	if tags := lintTags(string(out), "E: ", "W: ", "I: ", "P: ", "X: "); len(tags) > 0 {
		t.Errorf("lintian -I --pedantic %s:\n%s", pkg.Name, strings.Join(tags, "\n"))
	}
	// The manual page names every command the agent's help names.
	help, _ := exec.Command(realAgent(t, "1.5.0"), "help").CombinedOutput()
	man, err := exec.Command("sh", "-c", "dpkg-deb --fsys-tarfile "+pkg.Path+" | tar -xOf - ./usr/share/man/man8/patchd-agent.8.gz | gzip -dc").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(help), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "patchd-agent" && !strings.Contains(string(man), ".B patchd-agent "+f[1]+"\n") {
			t.Errorf("the manual page lacks %q (patchd-agent help: %s)", f[1], l)
		}
	}
}

// TestRPMLint runs rpmlint on the signed .rpm of the real agent: no
// error or warning but those RPMLintConfig filters (with their reasons).
//
// rpmlint unpacks the payload with rpm2cpio | cpio -id, and nfpm writes
// the payload's names absolute (/usr/bin/patchd-agent; rpm installs from
// the header and does not mind): cpio would write them into this
// machine's own folders. A cpio first in rpmlint's PATH adds
// --no-absolute-filenames. rpmlint checks the signature with rpm's key
// database: a database of the test's own, named in the .rpmmacros of a
// HOME of its own, holds the test key.
func TestRPMLint(t *testing.T) {
	need(t, "rpmlint", "rpm", "cpio")
	_, h := newEnv(t)
	secret, public, _ := gpgKey(t, "patchd rpmlint test")
	h.Packages.GPGKey = secret
	p := agentdist.Platform{OS: "linux", Arch: "amd64"}
	publishRelease(t, h, p, realAgent(t, "1.5.0"), "1.5.0")
	pkg, err := h.Packages.Build(context.Background(), agentdist.PackageRequest{Type: "rpm", Arch: "amd64", Server: "https://patchd.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	rpmlintClean(t, pkg.Path, "patchd-agent", agentdist.RPMLintConfig(), public)
}

// rpmlintClean runs rpmlint on the .rpm of the package name (its
// configuration rc) as TestRPMLint says, the signing key public in a key
// database of the test's own, and wants no error or warning; it answers
// that database.
func rpmlintClean(t *testing.T, path, name, rc, public string) (db string) {
	t.Helper()
	dir := t.TempDir()
	bin, home := filepath.Join(dir, "bin"), filepath.Join(dir, "home")
	db = filepath.Join(dir, "rpmdb")
	os.MkdirAll(bin, 0o755)
	os.MkdirAll(home, 0o755)
	os.WriteFile(filepath.Join(bin, "cpio"), []byte("#!/bin/sh\nexec /usr/bin/cpio --no-absolute-filenames \"$@\"\n"), 0o755)
	os.WriteFile(filepath.Join(home, ".rpmmacros"), []byte("%_dbpath "+db+"\n"), 0o644)
	if out, err := exec.Command("rpm", "--dbpath", db, "--import", public).CombinedOutput(); err != nil {
		t.Fatalf("rpm --import: %v %s", err, out)
	}
	rcFile := filepath.Join(dir, name+".rpmlintrc")
	os.WriteFile(rcFile, []byte(rc), 0o644)
	before := exists("/", "usr/bin/"+name)
	cmd := exec.Command("rpmlint", "--rpmlintrc", rcFile, path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+home)
	out, _ := cmd.CombinedOutput()
	if tags := lintTags(string(out), name+".x86_64: E: ", name+".x86_64: W: "); len(tags) > 0 || !strings.Contains(string(out), "1 packages and 0 specfiles checked; 0 errors, 0 warnings") {
		t.Errorf("rpmlint %s:\n%s", filepath.Base(path), out)
	}
	if !before && exists("/", "usr/bin/"+name) {
		t.Fatalf("rpmlint unpacked the package into this machine's /usr/bin: remove /usr/bin/%s and what came with it", name)
	}
	return db
}

// TestSignedPackages: with a signing key the .rpm carries a header
// signature rpm -K verifies with the key imported (and not without it, or
// with another key).
func TestSignedPackages(t *testing.T) {
	need(t, "rpm")
	secret, public, _ := gpgKey(t, "patchd signing test")
	_, otherPublic, _ := gpgKey(t, "another key")
	_, h := newEnv(t)
	h.Packages.GPGKey = secret
	dir := t.TempDir()
	rpmFile := buildPackage(t, h, "rpm", "1.5.0", agentOf("1.5.0"), dir)
	check := func(keys ...string) string {
		db := t.TempDir()
		for _, k := range keys {
			if out, err := exec.Command("rpm", "--dbpath", db, "--import", k).CombinedOutput(); err != nil {
				t.Fatalf("rpm --import: %v %s", err, out)
			}
		}
		out, _ := exec.Command("rpm", "--dbpath", db, "-K", rpmFile).CombinedOutput()
		return string(out)
	}
	if out := check(public); !strings.HasSuffix(out, ": digests signatures OK\n") {
		t.Errorf("rpm -K with the key: %s", out)
	}
	if out := check(); strings.Contains(out, "signatures OK") || !strings.Contains(out, "SIGNATURES NOT OK") {
		t.Errorf("rpm -K without the key: %s", out)
	}
	if out := check(otherPublic); strings.Contains(out, "signatures OK") {
		t.Errorf("rpm -K with another key: %s", out)
	}
	// An unsigned package says so.
	h.Packages.GPGKey = ""
	unsigned := buildPackage(t, h, "rpm", "1.5.1", agentOf("1.5.1"), dir)
	if out, _ := exec.Command("rpm", "-qp", "--queryformat", "%{RSAHEADER:pgpsig}", unsigned).Output(); string(out) != "(none)" {
		t.Errorf("unsigned rpm: %s", out)
	}
	h.Packages.GPGKey = secret

	// The .deb is not signed (apt trusts a signed repository), with a key
	// or without.
	deb := buildPackage(t, h, "deb", "1.5.0", agentOf("1.5.0"), dir)
	if out, _ := exec.Command("ar", "t", deb).Output(); string(out) != "debian-binary\ncontrol.tar.gz\ndata.tar.gz\n" {
		t.Errorf("the .deb's members: %q", out)
	}
}

// gpgKey makes an OpenPGP signing key (RSA, no passphrase) in its own
// GnuPG home: the secret key file the packager signs with, the public
// key file and the key's long id.
func gpgKey(t *testing.T, name string) (secret, public, keyID string) {
	t.Helper()
	need(t, "gpg")
	home, err := os.MkdirTemp("", "patchd-gpg-*") // short: gpg-agent's socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		os.RemoveAll(home)
	})
	gpg := func(args ...string) []byte {
		cmd := exec.Command("gpg", append([]string{"--homedir", home, "--batch", "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gpg %v: %v", args, err)
		}
		return out
	}
	gpg("--quick-gen-key", name+" <packages@example.com>", "rsa3072", "sign", "never")
	for _, l := range strings.Split(string(gpg("--with-colons", "--list-keys")), "\n") {
		if f := strings.Split(l, ":"); f[0] == "pub" && len(f) > 4 {
			keyID = f[4]
			break
		}
	}
	dir := t.TempDir()
	secret, public = filepath.Join(dir, "secret.asc"), filepath.Join(dir, "public.asc")
	os.WriteFile(secret, gpg("--armor", "--export-secret-keys", keyID), 0o600)
	os.WriteFile(public, gpg("--armor", "--export", keyID), 0o644)
	if keyID == "" {
		t.Fatal("gpg made no key")
	}
	return secret, public, keyID
}
