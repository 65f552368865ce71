package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/config"
)

// defaultBaseURL is patchd serve's address when --base-url is not given.
const defaultBaseURL = "http://127.0.0.1:8080"

// agentVerbHelp is what -h prints of each patchd admin agent command,
// after its usage line.
var agentVerbHelp = map[string]string{
	"publish": " FILE\n\nPublishes FILE as the agent the server serves for --os/--arch; with --version and\n--release-key (or --signature) as a signed release agents update themselves to.",
	"keygen":  "\n\nWrites a new release private key to --out (its public key is printed).",
	"sign":    " FILE\n\nPrints the release signature of FILE for --os/--arch/--version, made with --release-key.",
	"list":    "\n\nLists the published agents.",
	"package": "\n\nWrites the package (--type deb, rpm or msi, --arch amd64 or arm64) of the published agent\nto --out; it enrolls with --base-url by default.",
}

// runAgentAdmin is patchd admin agent publish|list|package: the agents the
// server hosts (a folder; no database needed).
func runAgentAdmin(ctx context.Context, verb string, args []string, stdio IO) error {
	name := "patchd admin agent " + verb
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var dataDir, db, agentDir string
	config.Common(fs, &dataDir, &db)
	fs.StringVar(&agentDir, "agent-dir", config.Env("PATCHD_AGENT_DIR", ""), "the served agents' folder (default DATA/agents)")
	goos := fs.String("os", runtime.GOOS, "linux, windows or darwin")
	arch := fs.String("arch", runtime.GOARCH, "amd64 or arm64")
	typ := fs.String("type", "", "package: deb, rpm or msi")
	out := fs.String("out", "", "package: the file to write")
	base := fs.String("base-url", config.Env("PATCHD_BASE_URL", defaultBaseURL), "package: the server the package enrolls with by default")
	signCert := fs.String("sign-cert", config.Env("PATCHD_SIGN_CERT", ""), "publish a Windows agent, package msi: PEM certificate for Authenticode signing")
	signKey := fs.String("sign-key", config.Env("PATCHD_SIGN_KEY", ""), "PEM key of --sign-cert")
	gpgKey := fs.String("gpg-key", config.Env("PATCHD_PACKAGE_GPG_KEY", ""), "package rpm: OpenPGP secret key file to sign with (passphrase: env PATCHD_PACKAGE_GPG_PASSPHRASE)")
	maintainer := fs.String("maintainer", config.Env("PATCHD_PACKAGE_MAINTAINER", ""), "package: the maintainer, 'Name <address>' (default patchd <patchd@HOST of --base-url>)")
	version := fs.String("version", "", "publish, sign: the agent's version, a semantic version such as 1.4.0; it must be the one the binary reports (checked)")
	signature := fs.String("signature", "", "publish: the release signature (patchd admin agent sign)")
	releaseKey := fs.String("release-key", config.Env("PATCHD_RELEASE_KEY", ""), "publish, sign: the release private key file (patchd admin agent keygen); publish signs with it")
	if err := parseFlags(fs, args, agentVerbHelp[verb]); err != nil {
		return err
	}
	if agentDir == "" {
		agentDir = filepath.Join(dataDir, "agents")
	}
	st, err := agentdist.NewStore(agentDir)
	if err != nil {
		return err
	}
	switch verb {
	case "publish":
		if fs.NArg() != 1 {
			return usagef("%s: give the agent's file: patchd admin agent publish --os linux --arch amd64 FILE", name)
		}
		p, err := agentdist.ParsePlatform(*goos, *arch)
		if err != nil {
			return usagef("%s: %v", name, err)
		}
		if (*signCert == "") != (*signKey == "") {
			return usagef("%s: --sign-cert and --sign-key go together", name)
		}
		var sign *agentdist.Signer
		if *signCert != "" {
			sign = &agentdist.Signer{CertFile: *signCert, KeyFile: *signKey}
		}
		if (*signature != "" || *releaseKey != "") && *version == "" {
			return usagef("%s: a signed release needs --version", name)
		}
		if *signature != "" && *releaseKey != "" {
			return usagef("%s: give --signature or --release-key, not both", name)
		}
		if *version != "" {
			if err := agentproto.CheckVersion(*version); err != nil {
				return usagef("%s: --version: %v", name, err)
			}
			// Before anything is published: a refused release changes nothing.
			if err := agentdist.CheckBinaryVersion(ctx, fs.Arg(0), p, *version); err != nil {
				return usagef("%s: --version %s: %v", name, *version, err)
			}
		}
		b, err := st.PublishSigned(ctx, fs.Arg(0), p, sign)
		if err != nil {
			return err
		}
		if *version == "" {
			return printJSON(stdio.Out, b)
		}
		sig, keys := *signature, []ed25519.PublicKey(nil)
		if *releaseKey != "" {
			key, err := agentdist.ReadReleaseKey(*releaseKey)
			if err != nil {
				return err
			}
			sig, keys = agentproto.SignRelease(key, p.OS, p.Arch, *version, b.SHA256), []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}
		}
		if sig == "" {
			return usagef("%s: --version needs --signature or --release-key", name)
		}
		rel, err := st.SetRelease(p, *version, sig, keys)
		if err != nil {
			return err
		}
		return printJSON(stdio.Out, map[string]any{"binary": b, "release": rel})
	case "keygen":
		if *out == "" {
			return usagef("%s: --out FILE: where to write the private key", name)
		}
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if _, err := fmt.Fprintln(f, base64.StdEncoding.EncodeToString(priv.Seed())); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		return printJSON(stdio.Out, map[string]any{"privateKeyFile": *out, "publicKey": base64.StdEncoding.EncodeToString(pub)})
	case "sign":
		if fs.NArg() != 1 || *releaseKey == "" || *version == "" {
			return usagef("%s: patchd admin agent sign --release-key KEY --version V [--os --arch] FILE", name)
		}
		p, err := agentdist.ParsePlatform(*goos, *arch)
		if err != nil {
			return usagef("%s: %v", name, err)
		}
		if err := agentproto.CheckVersion(*version); err != nil {
			return usagef("%s: --version: %v", name, err)
		}
		if err := agentdist.CheckBinaryVersion(ctx, fs.Arg(0), p, *version); err != nil {
			return usagef("%s: --version %s: %v", name, *version, err)
		}
		key, err := agentdist.ReadReleaseKey(*releaseKey)
		if err != nil {
			return err
		}
		sum, err := agentdist.FileSHA256(fs.Arg(0))
		if err != nil {
			return err
		}
		return printJSON(stdio.Out, map[string]any{"os": p.OS, "arch": p.Arch, "version": *version, "sha256": sum,
			"signature": agentproto.SignRelease(key, p.OS, p.Arch, *version, sum)})
	case "list":
		list, err := st.List()
		if err != nil {
			return err
		}
		return printJSON(stdio.Out, map[string]any{"items": nonNil(list), "total": len(list), "agentDir": agentDir})
	case "package":
		if *typ == "" || *out == "" {
			return usagef("%s: --type deb|rpm|msi and --out FILE are required", name)
		}
		if err := agentdist.CheckServerURL(*base); err != nil {
			return usagef("%s: --base-url: %v", name, err)
		}
		if (*signCert == "") != (*signKey == "") {
			return usagef("%s: --sign-cert and --sign-key go together", name)
		}
		if *maintainer != "" {
			if err := agentdist.CheckMaintainer(*maintainer); err != nil {
				return usagef("%s: --maintainer: %v", name, err)
			}
		}
		if *gpgKey != "" {
			if _, err := os.Stat(*gpgKey); err != nil {
				return usagef("%s: --gpg-key: %v", name, err)
			}
		}
		pk := &agentdist.Packager{Store: st, Server: *base, CacheDir: filepath.Join(agentDir, ".packages"),
			GPGKey: *gpgKey, GPGPassphrase: os.Getenv("PATCHD_PACKAGE_GPG_PASSPHRASE"), Maintainer: *maintainer}
		if *signCert != "" {
			pk.Sign = &agentdist.Signer{CertFile: *signCert, KeyFile: *signKey}
		}
		pkg, err := pk.Build(ctx, agentdist.PackageRequest{Type: *typ, Arch: *arch})
		var bad *agentdist.PackageError
		if errors.As(err, &bad) {
			return usagef("%s: %v", name, err)
		}
		if err != nil {
			return err
		}
		if err := agentdist.CopyOut(pkg.Path, *out); err != nil {
			return err
		}
		return printJSON(stdio.Out, map[string]any{"type": *typ, "arch": *arch, "file": *out, "sha256": pkg.SHA256, "name": pkg.Name, "version": pkg.Version})
	}
	return usagef("unknown admin command %q", "agent "+verb)
}
