package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"

	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/config"
)

// defaultBaseURL is patchd serve's address when --base-url is not given.
const defaultBaseURL = "http://127.0.0.1:8080"

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
	if err := fs.Parse(args); err != nil {
		return asUsage(fmt.Errorf("%s: %w", name, err))
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
		b, err := st.PublishSigned(ctx, fs.Arg(0), p, sign)
		if err != nil {
			return err
		}
		return printJSON(stdio.Out, b)
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
		pk := &agentdist.Packager{Store: st, Server: *base, CacheDir: filepath.Join(agentDir, ".packages")}
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
		return printJSON(stdio.Out, map[string]any{"type": *typ, "arch": *arch, "file": *out, "sha256": pkg.SHA256})
	}
	return usagef("unknown admin command %q", "agent "+verb)
}
