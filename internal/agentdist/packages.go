package agentdist

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager

	"github.com/patchd/patchd/agent"
)

// Where the packages put things.
const (
	PackageBin   = agent.PackageBinary
	PackageUnit  = "/usr/lib/systemd/system/patchd-agent.service"
	PackageState = "/var/lib/patchd-agent"
	// PackageConf is read by the package's postinst: PATCHD_SERVER=… and
	// PATCHD_TOKEN=… (shell syntax) enroll at installation.
	PackageConf = "/etc/patchd-agent/enroll.conf"
)

// ErrNoTool: a program the package needs (wixl, osslsigncode) is missing.
var ErrNoTool = errors.New("tool missing")

// PackageError is a request for a package that does not exist.
type PackageError struct{ msg string }

func (e *PackageError) Error() string { return e.msg }

// PackageRequest asks for one package.
type PackageRequest struct {
	Type string // deb, rpm or msi
	Arch string // amd64 or arm64 (msi: amd64)
	// Server is the server the package enrolls with by default
	// (Packager.Server when empty).
	Server string
}

// Package is a built package.
type Package struct {
	Path   string
	Name   string
	SHA256 string
}

// Packager builds packages from the published agents, cached by the
// binary's hash and everything else that goes into them.
type Packager struct {
	Store *Store
	// Server is baked in as the default server the package enrolls with.
	Server string
	// Sign signs the Windows binary and the MSI (nil: unsigned).
	Sign *Signer
	// CacheDir holds built packages (default Store.Dir/.packages).
	CacheDir string

	mu sync.Mutex
}

// packageFormat is bumped when what goes into packages changes.
const packageFormat = "2" // 2: the MSI sets the service's recovery

// Build returns the package, from the cache when it is there.
func (pk *Packager) Build(ctx context.Context, req PackageRequest) (Package, error) {
	goos := "linux"
	switch req.Type {
	case "deb", "rpm":
	case "msi":
		goos = "windows"
		if req.Arch != "amd64" {
			return Package{}, &PackageError{"the MSI is built for amd64 (Windows on arm64 runs it); the arm64 agent installs with install.ps1"}
		}
	default:
		return Package{}, &PackageError{fmt.Sprintf("unknown package type %q: deb, rpm or msi", req.Type)}
	}
	p, err := ParsePlatform(goos, req.Arch)
	if err != nil {
		return Package{}, &PackageError{err.Error()}
	}
	bin, err := pk.Store.Served(p)
	if err != nil {
		return Package{}, err
	}
	h := sha256.New()
	server := req.Server
	if server == "" {
		server = pk.Server
	}
	if server != "" {
		if err := CheckServerURL(server); err != nil {
			return Package{}, &PackageError{err.Error()}
		}
	}
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n%s\n", packageFormat, bin.SHA256, server, agent.Version, req.Type)
	if pk.Sign != nil {
		fmt.Fprintf(h, "%s\n", pk.Sign.CertFile)
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]
	name := packageName(req.Type, req.Arch)
	dir := pk.CacheDir
	if dir == "" {
		dir = filepath.Join(pk.Store.Dir, ".packages")
	}
	path := filepath.Join(dir, key, name)

	pk.mu.Lock()
	defer pk.mu.Unlock()
	if _, err := os.Stat(path); err != nil {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return Package{}, fmt.Errorf("build %s: %w", name, err)
		}
		switch req.Type {
		case "msi":
			err = pk.buildMSI(ctx, bin, server, path)
		default:
			err = writeAtomic(path, 0o644, func(w io.Writer) error { return buildLinux(req.Type, bin, server, w) })
		}
		if err != nil {
			return Package{}, err
		}
		// Packages of older binaries are not served any more.
		old, _ := filepath.Glob(filepath.Join(dir, "*", name))
		for _, o := range old {
			if o != path {
				os.RemoveAll(filepath.Dir(o))
			}
		}
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return Package{}, err
	}
	return Package{Path: path, Name: name, SHA256: sum}, nil
}

func packageName(typ, arch string) string {
	switch typ {
	case "rpm":
		return "patchd-agent-" + agent.Version + "-1." + map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[arch] + ".rpm"
	case "msi":
		return "patchd-agent-" + agent.Version + "-x64.msi"
	}
	return "patchd-agent_" + agent.Version + "_" + arch + ".deb"
}

// buildLinux writes a .deb or .rpm with nfpm: the binary, the systemd
// unit, a SysV init script for systems without systemd, and maintainer
// scripts that enroll, enable and start (postinst), stop (prerm) and
// remove the state on purge (postrm).
func buildLinux(typ string, bin Binary, server string, w io.Writer) error {
	tmp, err := os.MkdirTemp("", "patchd-pkg-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	write := func(name, content string) string {
		p := filepath.Join(tmp, name)
		os.WriteFile(p, []byte(content), 0o644)
		return p
	}
	unit := write("unit", agent.SystemdUnit(PackageBin, PackageState))
	initd := write("initd", agent.SysVScript(PackageBin, PackageState))
	postinst := write("postinst", postinstScript(server))
	prerm := write("prerm", prermScript)
	postrm := write("postrm", postrmScript)
	mtime := bin.ModTime.UTC().Truncate(time.Second)
	info := &nfpm.Info{
		Name: "patchd-agent", Arch: bin.Arch, Platform: "linux", Version: agent.Version, Release: "1",
		Section: "admin", Priority: "optional", Maintainer: "patchd <patchd@localhost>",
		Description: "patchd agent: checks in with a patchd server, reports inventory and installs updates",
		Vendor:      "patchd", Homepage: "https://github.com/patchd/patchd", License: "Apache-2.0", MTime: mtime,
		Overridables: nfpm.Overridables{
			Contents: files.Contents{
				{Source: bin.Path, Destination: PackageBin, FileInfo: &files.ContentFileInfo{Mode: 0o755, MTime: mtime}},
				{Source: unit, Destination: PackageUnit, FileInfo: &files.ContentFileInfo{Mode: 0o644, MTime: mtime}},
				{Source: initd, Destination: agent.InitScript, Type: files.TypeConfig, FileInfo: &files.ContentFileInfo{Mode: 0o755, MTime: mtime}},
				{Destination: PackageState, Type: files.TypeDir, FileInfo: &files.ContentFileInfo{Mode: 0o700, MTime: mtime}},
			},
			Scripts: nfpm.Scripts{PostInstall: postinst, PreRemove: prerm, PostRemove: postrm},
		},
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, typ); err != nil {
		return fmt.Errorf("build %s: %w", typ, err)
	}
	packager, err := nfpm.Get(typ)
	if err != nil {
		return fmt.Errorf("build %s: %w", typ, err)
	}
	if err := packager.Package(info, w); err != nil {
		return fmt.Errorf("build %s: %w", typ, err)
	}
	return nil
}

// The maintainer scripts serve dpkg ($1: configure, remove, purge,
// upgrade) and rpm ($1: 1 install, 2 upgrade, 0 erase) alike.
func postinstScript(server string) string {
	return `#!/bin/sh
set -e
STATE=` + PackageState + `
CONF=` + PackageConf + `
mkdir -p "$STATE"
chmod 0700 "$STATE"
# Enroll once: PATCHD_SERVER and PATCHD_TOKEN from the environment or
# ` + PackageConf + ` (written by config management before installing).
DEFAULT_SERVER='` + server + `'
if [ -r "$CONF" ]; then . "$CONF"; fi
PATCHD_SERVER=${PATCHD_SERVER:-$DEFAULT_SERVER}
if [ ! -f "$STATE/state.json" ] && [ -n "${PATCHD_TOKEN:-}" ] && [ -n "$PATCHD_SERVER" ]; then
	if ! ` + PackageBin + ` enroll --server "$PATCHD_SERVER" --token "$PATCHD_TOKEN" --state "$STATE"; then
		echo "patchd-agent: enrollment failed; enroll with: patchd-agent enroll --server URL --token TOKEN, then start the service" >&2
	fi
fi
if [ ! -f "$STATE/state.json" ]; then
	echo "patchd-agent: not enrolled yet: run patchd-agent enroll --server URL --token TOKEN, then start the patchd-agent service"
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
	systemctl enable patchd-agent.service >/dev/null 2>&1 || true
	if [ -f "$STATE/state.json" ]; then systemctl restart patchd-agent.service || true; fi
elif command -v update-rc.d >/dev/null 2>&1; then
	update-rc.d patchd-agent defaults >/dev/null || true
	if [ -f "$STATE/state.json" ]; then invoke-rc.d patchd-agent restart || true; fi
elif command -v chkconfig >/dev/null 2>&1; then
	chkconfig --add patchd-agent || true
	if [ -f "$STATE/state.json" ]; then /etc/init.d/patchd-agent restart || true; fi
fi
exit 0
`
}

const prermScript = `#!/bin/sh
set -e
case "$1" in
	upgrade|1|failed-upgrade) exit 0 ;; # the new postinst restarts the agent
esac
if [ -d /run/systemd/system ]; then
	systemctl disable --now patchd-agent.service >/dev/null 2>&1 || true
elif command -v invoke-rc.d >/dev/null 2>&1; then
	invoke-rc.d patchd-agent stop || true
elif [ -x /etc/init.d/patchd-agent ]; then
	/etc/init.d/patchd-agent stop || true
fi
exit 0
`

const postrmScript = `#!/bin/sh
set -e
case "$1" in
	remove|0)
		if command -v update-rc.d >/dev/null 2>&1; then update-rc.d -f patchd-agent remove >/dev/null || true
		elif command -v chkconfig >/dev/null 2>&1; then chkconfig --del patchd-agent >/dev/null 2>&1 || true; fi
		if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
		;;
	purge)
		if command -v update-rc.d >/dev/null 2>&1; then update-rc.d -f patchd-agent remove >/dev/null || true; fi
		rm -rf ` + PackageState + ` /etc/patchd-agent /var/log/patchd-agent.log
		;;
esac
exit 0
`

// wixEscape escapes s for an XML attribute.
func wixEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
