package release

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSnapshotReleaseReproducibleSignedWithSBOM builds patchctl for
// linux/amd64 from this repository's HEAD twice: the two releases are
// byte-identical, SHA256SUMS.sig verifies with the release key (here and
// with openssl, as docs/releases.md tells users), the SBOM lists the
// modules `go version -m` reads from the binary, and the binary prints
// the version, commit and date built into it.
func TestSnapshotReleaseReproducibleSignedWithSBOM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release twice")
	}
	for _, tool := range []string{"git", "go", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH", tool)
		}
	}
	if err := exec.Command("git", "-C", "../..", "rev-parse", "HEAD").Run(); err != nil {
		t.Skip("not in a git checkout")
	}
	_, key, _ := ed25519.GenerateKey(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	var results []Result
	for i := range 2 {
		out := filepath.Join(t.TempDir(), "release")
		res, err := Make(ctx, Options{Repo: "../..", Snapshot: true, Out: out, Key: key,
			Platforms: []Platform{{"linux", "amd64"}}, Programs: []string{"patchctl"}, Bin: filepath.Join(t.TempDir(), "bin")})
		if err != nil {
			t.Fatalf("build %d: %v", i+1, err)
		}
		results = append(results, res)
	}
	a, b := results[0], results[1]
	if !slices.Equal(a.Files, b.Files) {
		t.Fatalf("files differ: %v, %v", a.Files, b.Files)
	}
	base := "patchd_" + a.Version + "_linux_amd64"
	if want := []string{base + ".tar.gz", base + "_patchctl.cdx.json", "SHA256SUMS", "SHA256SUMS.sig"}; !slices.Equal(a.Files, want) {
		t.Errorf("files %v, want %v", a.Files, want)
	}
	for _, f := range a.Files {
		if x, y := readFile(t, filepath.Join(a.Dir, f)), readFile(t, filepath.Join(b.Dir, f)); !bytes.Equal(x, y) {
			t.Errorf("%s differs between two builds of the same commit", f)
		}
	}

	pub := base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))
	if err := VerifySums(a.Dir, pub); err != nil {
		t.Fatal(err)
	}
	other, _, _ := ed25519.GenerateKey(nil)
	if err := VerifySums(a.Dir, base64.StdEncoding.EncodeToString(other)); err == nil {
		t.Error("SHA256SUMS.sig verifies with another key")
	}
	if _, err := exec.LookPath("openssl"); err == nil {
		// docs/releases.md's commands: the base64 key to PEM, then verify.
		pemFile := filepath.Join(t.TempDir(), "patchd-release.pem")
		conv := exec.Command("sh", "-c", `(printf '\060\052\060\005\006\003\053\145\160\003\041\000'; printf %s "$KEY" | base64 -d) | openssl pkey -pubin -inform DER -out "$PEM"`)
		conv.Env = append(os.Environ(), "KEY="+pub, "PEM="+pemFile)
		if out, err := conv.CombinedOutput(); err != nil {
			t.Fatalf("the key to PEM: %v\n%s", err, out)
		}
		cmd := exec.Command("openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pemFile, "-rawin", "-in", "SHA256SUMS", "-sigfile", "SHA256SUMS.sig")
		cmd.Dir = a.Dir
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Signature Verified Successfully") {
			t.Errorf("openssl pkeyutl -verify: %v\n%s", err, out)
		}
		cmd = exec.Command("sha256sum", "-c", "SHA256SUMS")
		cmd.Dir = a.Dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c: %v\n%s", err, out)
		}
	}

	ex := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", filepath.Join(a.Dir, base+".tar.gz"), "-C", ex).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	for _, f := range []string{"LICENSE", "README.md", "patchctl"} {
		if _, err := os.Stat(filepath.Join(ex, base, f)); err != nil {
			t.Errorf("the archive lacks %s: %v", f, err)
		}
	}
	bin := filepath.Join(ex, base, "patchctl")
	out, err := exec.Command(bin, "version").Output()
	want := "patchctl " + a.Version + " (commit " + a.Commit + ", " + a.Date.Format(time.RFC3339) + ", "
	if err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("patchctl version: %q (%v), want it to start %q", out, err, want)
	}

	// The SBOM's components are the modules go version -m reads.
	mout, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var mods []string
	for _, line := range strings.Split(string(mout), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && (f[0] == "dep" || f[0] == "=>") {
			if f[0] == "=>" {
				mods = mods[:len(mods)-1]
			}
			mods = append(mods, f[1]+"@"+f[2])
		}
	}
	var bom struct {
		BOMFormat, SpecVersion string
		Components             []struct{ Name, Version, PURL string }
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(a.Dir, base+"_patchctl.cdx.json")), &bom); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, c := range bom.Components {
		if c.Name == "std" {
			continue
		}
		listed = append(listed, c.Name+"@"+c.Version)
		if !strings.HasPrefix(c.PURL, "pkg:golang/"+c.Name+"@"+c.Version) {
			t.Errorf("purl %s of %s@%s", c.PURL, c.Name, c.Version)
		}
	}
	slices.Sort(mods)
	slices.Sort(listed)
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != "1.5" || len(mods) == 0 || !slices.Equal(mods, listed) {
		t.Errorf("SBOM %s %s lists %v; the binary holds %v", bom.BOMFormat, bom.SpecVersion, listed, mods)
	}
}

func readFile(t *testing.T, f string) []byte {
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
