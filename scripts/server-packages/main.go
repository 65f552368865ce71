// Command server-packages builds the server's .deb and .rpm:
//
//	go run ./scripts/server-packages --version 1.5.0 [--arch amd64,arm64] [--type deb,rpm]
//	    [--out dist] [--binary FILE] [--gpg-key FILE] [--maintainer 'Name <address>']
//
// It compiles patchd for each architecture from this source tree (or takes
// --binary, for one architecture) and writes the packages with
// agentdist.BuildServerPackage, the function a release builder calls. The
// .rpm is signed with --gpg-key (passphrase in PATCHD_PACKAGE_GPG_PASSPHRASE).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/patchd/patchd/internal/agentdist"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "server-packages:", err)
		os.Exit(1)
	}
}

func run() error {
	version := flag.String("version", "", "the server's version (1.5.0, 1.5.0-rc.1)")
	arches := flag.String("arch", "amd64", "comma-separated: amd64, arm64")
	types := flag.String("type", "deb,rpm", "comma-separated: deb, rpm")
	out := flag.String("out", "dist", "folder the packages are written to")
	binary := flag.String("binary", "", "a patchd built for linux and the one --arch, instead of building it")
	gpgKey := flag.String("gpg-key", "", "OpenPGP secret key file that signs the .rpm")
	maintainer := flag.String("maintainer", "", "the packages' maintainer, 'Name <address>'")
	flag.Parse()
	if *version == "" {
		return fmt.Errorf("--version is required")
	}
	archList := strings.Split(*arches, ",")
	if *binary != "" && len(archList) != 1 {
		return fmt.Errorf("--binary is for one --arch")
	}
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "patchd-server-packages-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	root := agentdist.ModuleRoot(".")
	for _, arch := range archList {
		bin := *binary
		if bin == "" {
			bin = filepath.Join(tmp, "patchd-"+arch)
			if err := agentdist.BuildServerBinary(ctx, root, arch, *version, bin); err != nil {
				return err
			}
		}
		for _, typ := range strings.Split(*types, ",") {
			pkg, err := agentdist.BuildServerPackage(ctx, agentdist.ServerPackageRequest{Type: typ, Binary: bin, Arch: arch,
				Version: *version, Maintainer: *maintainer, GPGKey: *gpgKey,
				GPGPassphrase: os.Getenv("PATCHD_PACKAGE_GPG_PASSPHRASE"), Out: *out})
			if err != nil {
				return err
			}
			fmt.Printf("%s  %s\n", pkg.SHA256, pkg.Path)
		}
	}
	return nil
}
