package containerimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// fakeBinary stands in for patchd where only the image's shape is checked.
func fakeBinary(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "patchd")
	if err := os.WriteFile(f, []byte("\x7fELF not really patchd"), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

func certs(t *testing.T) string {
	if _, err := os.Stat(DefaultCACerts); err != nil {
		t.Skipf("no CA bundle at %s (Debian's ca-certificates)", DefaultCACerts)
	}
	return DefaultCACerts
}

// TestImageConfigAndLayers reads the image back from the OCI archive with
// go-containerregistry: non-root, `patchd serve` on 0.0.0.0:8080 with its
// data in the volume /data, and in the layers nothing but the CA
// certificates, passwd/group, /data, /tmp and the binary.
func TestImageConfigAndLayers(t *testing.T) {
	bin := fakeBinary(t)
	created := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	img, err := Image(Options{Patchd: bin, Arch: "amd64", CACerts: certs(t), Version: "1.4.0", Commit: "0123456789abcdef", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "patchd.oci.tar")
	if err := WriteOCIArchive(img, "patchd:1.4.0", out, created); err != nil {
		t.Fatal(err)
	}
	// Reproducible: the same inputs write the same bytes.
	again := filepath.Join(t.TempDir(), "again.oci.tar")
	img2, _ := Image(Options{Patchd: bin, Arch: "amd64", CACerts: certs(t), Version: "1.4.0", Commit: "0123456789abcdef", Created: created})
	if err := WriteOCIArchive(img2, "patchd:1.4.0", again, created); err != nil {
		t.Fatal(err)
	}
	if a, b := read(t, out), read(t, again); !bytes.Equal(a, b) {
		t.Error("two builds of the same image differ")
	}

	dir := t.TempDir()
	untar(t, out, dir)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "patchd:1.4.0" {
		t.Fatalf("index: %+v", im.Manifests)
	}
	got, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := got.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != "amd64" || c.User != "65532:65532" ||
		!slices.Equal(c.Entrypoint, []string{"/usr/local/bin/patchd", "serve"}) || len(c.Cmd) != 0 ||
		!slices.Contains(c.Env, "PATCHD_ADDR=0.0.0.0:8080") || !slices.Contains(c.Env, "PATCHD_DATA=/data") ||
		len(c.Volumes) != 1 || c.Volumes["/data"] != struct{}{} || len(c.ExposedPorts) != 1 ||
		c.Labels["org.opencontainers.image.version"] != "1.4.0" || c.Labels["org.opencontainers.image.revision"] != "0123456789abcdef" ||
		!cf.Created.Time.Equal(created) {
		t.Errorf("config: %s %s %+v", cf.OS, cf.Architecture, c)
	}

	layers, err := got.Layers()
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		mode     int64
		uid, gid int
		size     int64
	}
	files := map[string]file{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !h.ModTime.Equal(created) {
				t.Errorf("%s: mtime %v", h.Name, h.ModTime)
			}
			files[h.Name] = file{h.Mode, h.Uid, h.Gid, h.Size}
		}
		rc.Close()
	}
	caSize, _ := os.Stat(DefaultCACerts)
	want := map[string]file{
		"etc/": {0o755, 0, 0, 0}, "etc/group": {0o644, 0, 0, -1}, "etc/passwd": {0o644, 0, 0, -1},
		"etc/ssl/": {0o755, 0, 0, 0}, "etc/ssl/certs/": {0o755, 0, 0, 0},
		"etc/ssl/certs/ca-certificates.crt": {0o644, 0, 0, caSize.Size()},
		"data/":                             {0o700, UID, GID, 0}, "tmp/": {0o1777, 0, 0, 0},
		"usr/": {0o755, 0, 0, 0}, "usr/local/": {0o755, 0, 0, 0}, "usr/local/bin/": {0o755, 0, 0, 0},
		"usr/local/bin/patchd": {0o755, 0, 0, int64(len("\x7fELF not really patchd"))},
	}
	for name, w := range want {
		g, ok := files[name]
		if w.size == -1 {
			w.size = g.size
		}
		if !ok || g != w {
			t.Errorf("%s: %+v, want %+v (present: %v)", name, g, w, ok)
		}
	}
	for name := range files {
		if _, ok := want[name]; !ok {
			t.Errorf("the image holds %s too", name)
		}
	}
}

func read(t *testing.T, f string) []byte {
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func untar(t *testing.T, file, dir string) {
	if out, err := exec.Command("tar", "-x", "-f", file, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
}

// TestImageLoadsInPodman: podman (Debian's package) loads the OCI archive
// into a store of the test's own and reads the same configuration back.
// Running it needs crun to set resource limits, which this machine's
// sandbox refuses (docs/container.md); where podman is missing the test
// is skipped.
func TestImageLoadsInPodman(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed (apt-get install podman)")
	}
	created := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	img, err := Image(Options{Patchd: fakeBinary(t), Arch: "amd64", CACerts: certs(t), Version: "1.4.0", Commit: "0123456789abcdef", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "patchd.oci.tar")
	if err := WriteOCIArchive(img, "patchd:1.4.0", out, created); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	podman := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("podman", append([]string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"),
			"--storage-driver", "vfs"}, args...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("podman %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	t.Cleanup(func() {
		exec.Command("podman", "--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "--storage-driver", "vfs", "rmi", "-a", "-f").Run()
	})
	if got := podman("load", "-i", out); !strings.Contains(got, "localhost/patchd:1.4.0") {
		t.Fatalf("podman load: %s", got)
	}
	var inspected []struct {
		Architecture, Os string
		Config           struct {
			User       string
			Entrypoint []string
			Env        []string
			Volumes    map[string]struct{}
		}
	}
	if err := json.Unmarshal([]byte(podman("image", "inspect", "localhost/patchd:1.4.0")), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("podman image inspect: %v %d", err, len(inspected))
	}
	c := inspected[0].Config
	if inspected[0].Os != "linux" || inspected[0].Architecture != "amd64" || c.User != "65532:65532" ||
		!slices.Equal(c.Entrypoint, []string{"/usr/local/bin/patchd", "serve"}) || !slices.Contains(c.Env, "PATCHD_DATA=/data") {
		t.Errorf("podman reads: %+v", inspected[0])
	}
	if _, ok := c.Volumes["/data"]; !ok {
		t.Errorf("podman reads no volume /data: %+v", c.Volumes)
	}
}

// TestComposeSettingsAreServerSettings: every PATCHD_ setting of
// docs/compose.yaml is one the server reads (internal/config), and the
// image's own settings are too.
func TestComposeSettingsAreServerSettings(t *testing.T) {
	compose := string(read(t, "../../docs/compose.yaml"))
	config := string(read(t, "../config/config.go"))
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(PATCHD_[A-Z_]+):`).FindAllStringSubmatch(compose, -1) {
		names = append(names, m[1])
	}
	if !slices.Contains(names, "PATCHD_DB") || !slices.Contains(names, "PATCHD_BASE_URL") {
		t.Fatalf("docs/compose.yaml sets %v", names)
	}
	names = append(names, "PATCHD_ADDR", "PATCHD_DATA")
	for _, n := range names {
		if !strings.Contains(config, `Env("`+n+`"`) {
			t.Errorf("docs/compose.yaml sets %s, which the server does not read", n)
		}
	}
	if !strings.Contains(compose, "- patchd-data:/data") || !strings.Contains(compose, `"8443:8080"`) {
		t.Error("docs/compose.yaml does not keep /data in a volume or publish port 8080")
	}
}
