// Command release builds a patchd release from a tag: patchd, patchctl
// and patchd-agent for linux, windows and darwin × amd64, arm64, in
// reproducible archives with a CycloneDX SBOM per binary, SHA256SUMS and
// its Ed25519 signature, and the container image of the server for each
// Linux platform (an OCI layout in a tar file). See docs/releases.md.
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
	bin, err := os.MkdirTemp("", "patchd-release-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bin)
	res, err := release.Make(ctx, release.Options{Repo: *repo, Ref: *tag, Snapshot: *snapshot, Out: *out, Key: key, Platforms: ps, Log: os.Stderr, Bin: bin})
	if err != nil {
		return err
	}
	if *image {
		var images []string
		for _, p := range ps {
			if p.OS != "linux" {
				continue
			}
			name := fmt.Sprintf("patchd_%s_linux_%s.oci.tar", res.Version, p.Arch)
			fmt.Fprintf(os.Stderr, "container image %s\n", name)
			img, err := containerimage.Image(containerimage.Options{Patchd: filepath.Join(bin, "linux_"+p.Arch, "patchd"), Arch: p.Arch,
				CACerts: *caCerts, Version: res.Version, Commit: res.Commit, Created: res.Date})
			if err != nil {
				return err
			}
			if err := containerimage.WriteOCIArchive(img, "patchd:"+res.Version, filepath.Join(*out, name), res.Date); err != nil {
				return err
			}
			images = append(images, name)
		}
		if len(images) > 0 {
			if err := release.WriteSums(*out, key); err != nil {
				return err
			}
			n := len(res.Files) - 1
			if key != nil {
				n--
			}
			res.Files = append(append(res.Files[:n:n], images...), res.Files[n:]...)
		}
	}
	for _, f := range res.Files {
		fmt.Println(res.Dir + "/" + f)
	}
	return nil
}
