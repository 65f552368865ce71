// Package containerimage builds patchd's container image without a
// container engine (github.com/google/go-containerregistry): one layer
// holding the CA certificates, /etc/passwd and /etc/group naming the
// user nonroot (65532), an empty /data owned by it and /tmp, and one
// layer holding /usr/local/bin/patchd. No shell, no libc, no package
// manager. The process runs as 65532:65532, `patchd serve` listening on
// 0.0.0.0:8080 with its data in the volume /data. The output is an OCI
// image layout in a tar file (podman load, skopeo copy oci-archive:…).
//
// scripts/image is the command; the server binary does not link this
// package (internal/deplist).
package containerimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// UID and GID of the user the server runs as (distroless' nonroot).
const (
	UID = 65532
	GID = 65532
)

// Options say what the image holds.
type Options struct {
	// Patchd is the server binary, built for linux/Arch with CGO_ENABLED=0.
	Patchd string
	Arch   string // amd64 or arm64
	// CACerts is a PEM bundle of the CA certificates the server trusts
	// (default /etc/ssl/certs/ca-certificates.crt, Debian's
	// ca-certificates).
	CACerts string
	// Version, Commit and Created label the image (org.opencontainers.image.*);
	// Created is also every file's time, so the image is reproducible.
	Version, Commit string
	Created         time.Time
	// Ref names the image in the layout (org.opencontainers.image.ref.name),
	// e.g. "patchd:1.4.0"; podman load tags it with it.
	Ref string
}

// DefaultCACerts is Debian's bundle of the CA certificates.
const DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"

// Image answers the image opt describes.
func Image(opt Options) (v1.Image, error) {
	if opt.CACerts == "" {
		opt.CACerts = DefaultCACerts
	}
	certs, err := os.ReadFile(opt.CACerts)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	bin, err := os.ReadFile(opt.Patchd)
	if err != nil {
		return nil, fmt.Errorf("patchd binary: %w", err)
	}
	t := opt.Created.UTC()
	base, err := layer([]entry{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID))},
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/data:/sbin/nologin\n", UID, GID))},
		{name: "etc/ssl/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs},
		{name: "data/", dir: true, mode: 0o700, uid: UID, gid: GID},
		{name: "tmp/", dir: true, mode: 0o1777},
	}, t)
	if err != nil {
		return nil, err
	}
	app, err := layer([]entry{
		{name: "usr/", dir: true, mode: 0o755},
		{name: "usr/local/", dir: true, mode: 0o755},
		{name: "usr/local/bin/", dir: true, mode: 0o755},
		{name: "usr/local/bin/patchd", mode: 0o755, data: bin},
	}, t)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, base, app)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", opt.Arch
	cf.Created = v1.Time{Time: t}
	cf.Author = "patchd"
	cf.History = []v1.History{
		{Created: v1.Time{Time: t}, CreatedBy: "patchd scripts/image: CA certificates, /etc/passwd, /etc/group, /data, /tmp", Comment: "base"},
		{Created: v1.Time{Time: t}, CreatedBy: "patchd scripts/image: /usr/local/bin/patchd " + opt.Version, Comment: "patchd"},
	}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: []string{"/usr/local/bin/patchd", "serve"},
		Env: []string{
			"PATH=/usr/local/bin",
			"PATCHD_ADDR=0.0.0.0:8080",
			"PATCHD_DATA=/data",
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		},
		WorkingDir:   "/data",
		Volumes:      map[string]struct{}{"/data": {}},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		StopSignal:   "SIGTERM",
		Labels: map[string]string{
			"org.opencontainers.image.title":    "patchd",
			"org.opencontainers.image.version":  opt.Version,
			"org.opencontainers.image.revision": opt.Commit,
			"org.opencontainers.image.created":  t.Format(time.RFC3339),
			"org.opencontainers.image.licenses": "see LICENSE",
		},
	}
	return mutate.ConfigFile(img, cf)
}

// WriteOCIArchive writes img as an OCI image layout in a tar file, the
// image named ref (org.opencontainers.image.ref.name).
func WriteOCIArchive(img v1.Image, ref, out string, created time.Time) error {
	dir, err := os.MkdirTemp("", "patchd-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
		return err
	}
	return tarDir(dir, out, created)
}

// tarDir writes the files under dir to a tar file: sorted, owner 0:0,
// every mtime t.
func tarDir(dir, out string, t time.Time) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error { // lexical order
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755, ModTime: t, Format: tar.FormatPAX})
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o644, Size: int64(len(data)), ModTime: t, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

type entry struct {
	name     string
	dir      bool
	mode     int64
	uid, gid int
	data     []byte
}

// layer is a gzip'd tar layer of entries, every time t.
func layer(entries []entry, t time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: t, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}
