package agentdist_test

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/patchd/patchd/internal/agentdist"
)

var serverBuilds sync.Map // version → *realAgentBuild

// realServer builds patchd for linux/amd64 as version, once per test run.
func realServer(t *testing.T, version string) string {
	t.Helper()
	return realBuild(t, &serverBuilds, version, "patchd", func(path string) ([]byte, error) {
		return nil, agentdist.BuildServerBinary(context.Background(), agentdist.ModuleRoot("."), "amd64", version, path)
	})
}

// serverPackage builds the server's package of type typ as version.
func serverPackage(t *testing.T, typ, version, gpgKey string) agentdist.Package {
	t.Helper()
	pkg, err := agentdist.BuildServerPackage(context.Background(), agentdist.ServerPackageRequest{
		Type: typ, Binary: realServer(t, version), Arch: "amd64", Version: version,
		Maintainer: "patchd <patchd@example.com>", GPGKey: gpgKey, Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

func TestServerDebLintian(t *testing.T) {
	need(t, "lintian")
	pkg := serverPackage(t, "deb", "1.5.0", "")
	out, _ := exec.Command("lintian", "-I", "--pedantic", "--no-tag-display-limit", pkg.Path).CombinedOutput()
	if tags := lintTags(string(out), "E: ", "W: ", "I: ", "P: ", "X: "); len(tags) > 0 {
		t.Errorf("lintian -I --pedantic %s:\n%s", pkg.Name, strings.Join(tags, "\n"))
	}
	env, err := exec.Command("sh", "-c", "dpkg-deb --fsys-tarfile "+pkg.Path+" | tar -xOf - ./etc/patchd/patchd.env").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(env) != agentdist.ServerEnvFile() || !strings.Contains(string(env), "\n#PATCHD_DB=\n") {
		t.Errorf("the package's patchd.env:\n%s", env)
	}
}

func TestServerRPMLint(t *testing.T) {
	need(t, "rpmlint", "rpm", "cpio")
	secret, public, _ := gpgKey(t, "patchd server rpmlint test")
	pkg := serverPackage(t, "rpm", "1.5.0", secret)
	db := rpmlintClean(t, pkg.Path, "patchd", agentdist.ServerRPMLintConfig(), public)
	if out, err := exec.Command("rpm", "--dbpath", db, "-K", pkg.Path).CombinedOutput(); err != nil || !strings.Contains(string(out), "signatures OK") {
		t.Errorf("rpm -K %s: %v %s", pkg.Name, err, out)
	}
}

// TestServerPackagesReproducible builds each package twice from one binary:
// a release's packages are the same bytes whoever builds the tag (the
// release sets the binary's time to the commit's).
func TestServerPackagesReproducible(t *testing.T) {
	for _, typ := range []string{"deb", "rpm"} {
		a, b := serverPackage(t, typ, "1.5.0", ""), serverPackage(t, typ, "1.5.0", "")
		if a.SHA256 != b.SHA256 || a.Name != b.Name {
			t.Errorf("%s built twice: %s %s, %s %s", typ, a.Name, a.SHA256, b.Name, b.SHA256)
		}
	}
}
