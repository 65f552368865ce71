// Command release builds a patchd release from a tag: patchd, patchctl
// and patchd-agent for linux, windows and darwin × amd64, arm64, in
// reproducible archives with a CycloneDX SBOM per binary, SHA256SUMS and
// its Ed25519 signature, and the container image of the server for each
// Linux platform (an OCI layout in a tar file) and its .deb and .rpm. See
// docs/releases.md.
//
//	go run ./scripts/release --tag v1.4.0 --release-key /secure/release.key --out dist/v1.4.0
//	go run ./scripts/release --snapshot --platforms linux/amd64 --out /tmp/snap
//	go run ./scripts/release verify --key BASE64 dist/v1.4.0
package main

import (
	"context"
	"crypto/ed25519"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/containerimage"
	"github.com/patchd/patchd/internal/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "verify" {
		fs := flag.NewFlagSet("release verify", flag.ContinueOnError)
		key := fs.String("key", "", "the release public key (base64, as patchd admin agent keygen prints it)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 || *key == "" {
			return fmt.Errorf("usage: release verify --key BASE64 DIR")
		}
		if err := release.VerifySums(fs.Arg(0), *key); err != nil {
			return err
		}
		fmt.Println("SHA256SUMS.sig verifies and every file matches SHA256SUMS")
		return nil
	}
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	tag := fs.String("tag", "", "the tag to build (v1.4.0); with --snapshot any commit (default HEAD)")
	snapshot := fs.Bool("snapshot", false, "build a commit that is not a release, as version 0.0.0-snapshot-<commit>")
	out := fs.String("out", "", "the release folder (new or empty)")
	keyFile := fs.String("release-key", os.Getenv("PATCHD_RELEASE_KEY"), "the release private key file (patchd admin agent keygen); signs SHA256SUMS; "+
		"required but with --snapshot")
	platforms := fs.String("platforms", "all", "comma-separated OS/ARCH (linux/amd64,windows/arm64…)")
	repo := fs.String("repo", ".", "a folder of the git repository")
	image := fs.Bool("image", true, "also write the server's container image for each Linux platform (patchd_VERSION_linux_ARCH.oci.tar)")
	caCerts := fs.String("ca-certs", containerimage.DefaultCACerts, "the CA certificates the image holds (PEM bundle)")
	packages := fs.Bool("packages", true, "also write the server's .deb and .rpm for each Linux platform (docs/server-packages.md)")
	gpgKey := fs.String("gpg-key", "", "OpenPGP secret key file that signs the server's .rpm (passphrase in PATCHD_PACKAGE_GPG_PASSPHRASE)")
	maintainer := fs.String("maintainer", "", "the server packages' maintainer, 'Name <address>'")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		return fmt.Errorf("usage: release --tag vX.Y.Z --release-key FILE --out DIR [--platforms OS/ARCH,…] | --snapshot [--tag REF] --out DIR")
	}
	var key ed25519.PrivateKey
	if *keyFile != "" {
		k, err := agentdist.ReadReleaseKey(*keyFile)
		if err != nil {
			return err
		}
		key = k
	} else if !*snapshot {
		return fmt.Errorf("a release is signed: --release-key FILE (or PATCHD_RELEASE_KEY); only --snapshot may be unsigned")
	}
	ps, err := release.ParsePlatforms(*platforms)
	if err != nil {
		return err
	}
	x := extras{image: *image, caCerts: *caCerts, packages: *packages, gpgKey: *gpgKey,
		maintainer: *maintainer, out: *out}
	res, err := release.Make(ctx, release.Options{Repo: *repo, Ref: *tag, Snapshot: *snapshot, Out: *out, Key: key,
		Platforms: ps, Log: os.Stderr, Extra: x.write})
	if err != nil {
		return err
	}
	for _, f := range res.Files {
		fmt.Println(res.Dir + "/" + f)
	}
	return nil
}

// extras writes the files of a release beside the archives, for each Linux
// platform: the server's container image and its .deb and .rpm.
type extras struct {
	image, packages    bool
	caCerts            string
	gpgKey, maintainer string
	out                string
}

func (x extras) write(ctx context.Context, b release.Build, p release.Platform, binDir string) error {
	if p.OS != "linux" {
		return nil
	}
	patchd := filepath.Join(binDir, "patchd")
	if x.image {
		name := fmt.Sprintf("patchd_%s_linux_%s.oci.tar", b.Version, p.Arch)
		fmt.Fprintf(os.Stderr, "container image %s\n", name)
		img, err := containerimage.Image(containerimage.Options{Patchd: patchd, Arch: p.Arch,
			CACerts: x.caCerts, Version: b.Version, Commit: b.Commit, Created: b.Date})
		if err != nil {
			return err
		}
		if err := containerimage.WriteOCIArchive(img, "patchd:"+b.Version, filepath.Join(x.out, name), b.Date); err != nil {
			return err
		}
	}
	if !x.packages {
		return nil
	}
	// The packages date their files by the binary's time: the commit's,
	// so that they are reproducible like the archives.
	if err := os.Chtimes(patchd, b.Date, b.Date); err != nil {
		return err
	}
	for _, typ := range []string{"deb", "rpm"} {
		pkg, err := agentdist.BuildServerPackage(ctx, agentdist.ServerPackageRequest{Type: typ, Binary: patchd, Arch: p.Arch,
			Version: b.Version, Maintainer: x.maintainer, GPGKey: x.gpgKey,
			GPGPassphrase: os.Getenv("PATCHD_PACKAGE_GPG_PASSPHRASE"), Out: x.out})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "server package %s\n", filepath.Base(pkg.Path))
	}
	return nil
}
