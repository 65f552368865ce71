package agentdist

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/files"

	"github.com/patchd/patchd/internal/config"
)

// Where the server's packages put things.
const (
	ServerPackageBin     = "/usr/bin/patchd"
	ServerPackageUnit    = "/usr/lib/systemd/system/patchd.service"
	ServerPackageState   = "/var/lib/patchd"
	ServerPackageEnv     = "/etc/patchd/patchd.env"
	ServerPackageSecrets = ServerPackageState + "/first-start-secrets"
	serverSysusers       = "/usr/lib/sysusers.d/patchd.conf"
)

// ServerPackageRequest asks for a .deb or .rpm of the server.
type ServerPackageRequest struct {
	Type string // deb or rpm
	// Binary is patchd built for linux/Arch (BuildServerBinary, or the
	// release builder's).
	Binary string
	Arch   string // amd64 or arm64
	// Version is the server's release version (1.5.0, 1.5.0-rc.1).
	Version    string
	Maintainer string // "Name <address>"; default patchd <patchd@localhost>
	// GPGKey signs the .rpm (as Packager.GPGKey); "" leaves it unsigned.
	GPGKey, GPGPassphrase string
	// Out is the folder the package is written to.
	Out string
}

// serverUnitEnv are the variables the unit sets before it reads
// /etc/patchd/patchd.env, which may change them.
var serverUnitEnv = map[string]string{
	"PATCHD_DATA":               ServerPackageState,
	"PATCHD_FIRST_SECRETS_FILE": ServerPackageSecrets,
	"PATCHD_NO_AGENT_BUILD":     "true",
}

// ServerUnit is the server's hardened systemd unit: its own system user
// (made by systemd-sysusers from the package's sysusers.d file), its state
// in /var/lib/patchd (StateDirectory, 0700) and configuration in
// /etc/patchd, the rest of the file system read-only, no new privileges
// and no capabilities: the default --addr 127.0.0.1:8080 needs none (to
// listen below 1024, docs/operations.md).
func ServerUnit() string {
	var env []string
	for _, k := range []string{"PATCHD_DATA", "PATCHD_FIRST_SECRETS_FILE", "PATCHD_NO_AGENT_BUILD"} {
		env = append(env, k+"="+serverUnitEnv[k])
	}
	return `[Unit]
Description=patchd patch-management server
Documentation=https://github.com/patchd/patchd/blob/main/docs/operations.md
Wants=network-online.target
After=network-online.target postgresql.service

[Service]
Type=simple
User=patchd
Group=patchd
StateDirectory=patchd
StateDirectoryMode=0700
ConfigurationDirectory=patchd
ConfigurationDirectoryMode=0755
UMask=0077
# Every flag of patchd serve is a variable in ` + ServerPackageEnv + `,
# read after these and winning over them.
Environment=` + strings.Join(env, " ") + `
EnvironmentFile=-` + ServerPackageEnv + `
ExecStart=` + ServerPackageBin + ` serve
Restart=on-failure
RestartSec=5
TimeoutStopSec=90
# Agents hold one long-poll connection each.
LimitNOFILE=65536

NoNewPrivileges=yes
CapabilityBoundingSet=
AmbientCapabilities=
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
RemoveIPC=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources

[Install]
WantedBy=multi-user.target
`
}

// ServerEnvFile is /etc/patchd/patchd.env: every flag of patchd serve as
// a commented variable (config.ServeEnvFile), the unit's own settings set.
func ServerEnvFile() string { return config.ServeEnvFile(serverUnitEnv) }

const serverSysusersConf = `# The patchd server's system user (systemd-sysusers).
u patchd - "patchd server" ` + ServerPackageState + ` /usr/sbin/nologin
`

const serverPackageSummary = "Self-hosted patch-management server"

const serverPackageDescription = serverPackageSummary + `
patchd keeps the inventory of the computers its agents run on, the
updates and vulnerabilities they have, and installs the updates its
administrators approve, through an HTTP API and a web console.
.
The package runs it as the patchd service, with its database in
/var/lib/patchd (SQLite, or PostgreSQL set in /etc/patchd/patchd.env).
The first start writes the Administrator credential and the enrollment
token to /var/lib/patchd/first-start-secrets (mode 0600).`

// serverCopyright: patchd is Apache-2.0; the server links Go modules,
// each under its own license, which the package lists (modules).
const serverCopyright = `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: patchd
Source: https://github.com/patchd/patchd

Files: *
Copyright: 2026 patchd contributors
License: Apache-2.0

Files: usr/bin/patchd
Copyright: 2026 patchd contributors
 2009 The Go Authors
License: Apache-2.0
Comment: patchd is a Go program: the Go standard library (BSD-3-Clause)
 and the modules listed in /usr/share/doc/patchd/modules are linked into
 it, each under its own license.

` + apacheLicenseStanza

// serverLintianOverrides are the lintian tags the server's .deb accepts,
// each with its reason.
const serverLintianOverrides = `# patchd is a Go program, linked statically like every Go program without
# cgo: one file for every distribution, whatever its C library.
patchd: statically-linked-binary [usr/bin/patchd]
# The reference is patchd help and patchd serve -h, and
# /usr/share/doc/patchd/README; there is no manual page.
patchd: no-manual-page [usr/bin/patchd]
# The file may hold the database's and the mail server's passwords: it is
# readable by root and the service's group only.
patchd: non-standard-file-perm 0640 != 0644 [etc/patchd/patchd.env]
# The server only names /var/lib/dpkg in the agent packages' manual page it
# builds (and the agent's code it compiles for download); it never reads
# dpkg's database.
patchd: uses-dpkg-database-directly [usr/bin/patchd]
# The server runs under systemd only: its unit's sandboxing is part of how
# it is meant to run, which an init script could not give.
patchd: package-supports-alternative-init-but-no-init.d-script [usr/lib/systemd/system/patchd.service]
# Words in the strings of the Go modules linked into the server, not in
# patchd's own texts.
patchd: spelling-error-in-binary limitis limits [usr/bin/patchd]
patchd: spelling-error-in-binary ment meant [usr/bin/patchd]
patchd: spelling-error-in-binary wTH with [usr/bin/patchd]
`

// serverRPMLintFilters: what rpmlint may say about the server's .rpm.
var serverRPMLintFilters = []struct{ pattern, reason string }{
	{"statically-linked-binary", "patchd is a Go program, linked statically like every Go program without cgo"},
	{"position-independent-executable-suggested", "a release built with go build -buildmode=pie satisfies this check"},
	{"no-manual-page-for-binary", "the reference is patchd help and patchd serve -h, and the README"},
	{"non-readable /etc/patchd/patchd.env", "the file may hold the database's and the mail server's passwords"},
	{"invalid-license", "Apache-2.0 is an SPDX identifier, which Fedora and openSUSE use; Debian's rpmlint has no list of valid licenses"},
	{"only-non-binary-in-usr-lib", "the systemd unit and sysusers.d file are in /usr/lib, where RPM distributions keep packaged ones"},
}

// ServerRPMLintConfig is an rpmlintrc for the server's .rpm.
func ServerRPMLintConfig() string {
	return rpmlintrc("the patchd server package", serverRPMLintFilters)
}

const serverReadme = `patchd
======

The patchd patch-management server, run as the patchd service.

  Configuration:  /etc/patchd/patchd.env (every flag of patchd serve),
                  then systemctl restart patchd
  State:          /var/lib/patchd (database, secret key), mode 0700
  First start:    /var/lib/patchd/first-start-secrets (mode 0600) holds
                  the Administrator credential and the enrollment token
  Readiness:      curl http://127.0.0.1:8080/readyz
  Admin commands: sudo -u patchd patchd admin org list --data /var/lib/patchd
  Backup:         sudo -u patchd patchd admin backup --data /var/lib/patchd --to FILE

Removing the package stops the service and keeps /var/lib/patchd; purging
it (dpkg --purge) deletes the database. Documentation:
https://github.com/patchd/patchd/blob/main/docs/operations.md
`

// The maintainer scripts. The service is enabled and started on
// installation, restarted on upgrade (it migrates the database then),
// stopped on removal; purge deletes the state.
const serverDebPostinst = `#!/bin/sh
set -e
if [ "$1" = configure ]; then
	systemd-sysusers patchd.conf
	if [ "$(stat -c %G ` + ServerPackageEnv + `)" = root ]; then
		chgrp patchd ` + ServerPackageEnv + `
	fi
	deb-systemd-helper unmask patchd.service >/dev/null || true
	if deb-systemd-helper --quiet was-enabled patchd.service; then
		deb-systemd-helper enable patchd.service >/dev/null || true
	else
		deb-systemd-helper update-state patchd.service >/dev/null || true
	fi
	if [ -d /run/systemd/system ]; then
		systemctl --system daemon-reload >/dev/null || true
		if [ -n "$2" ]; then
			deb-systemd-invoke restart patchd.service >/dev/null || true
		else
			deb-systemd-invoke start patchd.service >/dev/null || true
		fi
	fi
fi
exit 0
`

const serverDebPrerm = `#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
	deb-systemd-invoke stop patchd.service >/dev/null || true
fi
exit 0
`

const serverDebPostrm = `#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
	systemctl --system daemon-reload >/dev/null || true
fi
if [ "$1" = remove ] && command -v deb-systemd-helper >/dev/null; then
	deb-systemd-helper mask patchd.service >/dev/null || true
fi
if [ "$1" = purge ]; then
	if command -v deb-systemd-helper >/dev/null; then
		deb-systemd-helper purge patchd.service >/dev/null || true
		deb-systemd-helper unmask patchd.service >/dev/null || true
	fi
	rm -rf ` + ServerPackageState + ` /etc/patchd
fi
exit 0
`

const serverRPMPost = `#!/bin/sh
systemd-sysusers patchd.conf
chgrp patchd ` + ServerPackageEnv + `
systemctl daemon-reload >/dev/null 2>&1 || :
if [ "$1" -eq 1 ]; then
	systemctl enable --now patchd.service >/dev/null 2>&1 || :
else
	systemctl try-restart patchd.service >/dev/null 2>&1 || :
fi
`

const serverRPMPreun = `#!/bin/sh
if [ "$1" -eq 0 ]; then
	systemctl disable --now patchd.service >/dev/null 2>&1 || :
fi
`

const serverRPMPostun = `#!/bin/sh
systemctl daemon-reload >/dev/null 2>&1 || :
`

// BuildServerPackage writes the .deb or .rpm of the server into req.Out
// and answers it; the same binary and version give the same bytes.
func BuildServerPackage(ctx context.Context, req ServerPackageRequest) (Package, error) {
	if req.Type != "deb" && req.Type != "rpm" {
		return Package{}, &PackageError{fmt.Sprintf("unknown package type %q: deb or rpm", req.Type)}
	}
	if _, ok := rpmArch[req.Arch]; !ok {
		return Package{}, &PackageError{fmt.Sprintf("unknown architecture %q: amd64 or arm64", req.Arch)}
	}
	ver, err := parsePackageVersion(req.Version, req.Type)
	if err != nil {
		return Package{}, &PackageError{err.Error()}
	}
	maintainer := req.Maintainer
	if maintainer == "" {
		maintainer = DefaultMaintainer("")
	}
	if err := CheckMaintainer(maintainer); err != nil {
		return Package{}, &PackageError{err.Error()}
	}
	st, err := os.Stat(req.Binary)
	if err != nil {
		return Package{}, fmt.Errorf("server package: %w", err)
	}
	modules, err := moduleList(req.Binary)
	if err != nil {
		return Package{}, err
	}
	name := "patchd_" + ver.Linux + "_" + req.Arch + ".deb"
	if req.Type == "rpm" {
		name = "patchd-" + ver.Linux + "-1." + rpmArch[req.Arch] + ".rpm"
	}
	pf, err := newPackageFiles(st.ModTime())
	if err != nil {
		return Package{}, err
	}
	defer pf.close()
	write, file := pf.write, pf.file
	doc := "/usr/share/doc/patchd/"
	contents := files.Contents{
		file(req.Binary, ServerPackageBin, 0o755, ""),
		file(write("unit", []byte(ServerUnit())), ServerPackageUnit, 0o644, ""),
		file(write("sysusers", []byte(serverSysusersConf)), serverSysusers, 0o644, ""),
		// A conffile: dpkg and rpm keep an administrator's changes.
		file(write("env", []byte(ServerEnvFile())), ServerPackageEnv, 0o640, files.TypeConfigNoReplace),
	}
	info := newPackageInfo("patchd", req.Arch, ver.Linux, maintainer, serverPackageDescription, pf.mtime)
	switch req.Type {
	case "deb":
		contents[3].Type = files.TypeConfig
		contents = append(contents,
			file(write("copyright", []byte(serverCopyright)), doc+"copyright", 0o644, ""),
			file(write("README", []byte(serverReadme)), doc+"README", 0o644, ""),
			file(write("modules", []byte(modules)), doc+"modules", 0o644, ""),
			file(write("changelog", gzipBytes(serverDebChangelog(ver.Linux, maintainer, pf.mtime))), doc+"changelog.gz", 0o644, ""),
			file(write("overrides", []byte(serverLintianOverrides)), "/usr/share/lintian/overrides/patchd", 0o644, ""),
		)
		info.Scripts = nfpm.Scripts{PostInstall: write("postinst", []byte(serverDebPostinst)),
			PreRemove: write("prerm", []byte(serverDebPrerm)), PostRemove: write("postrm", []byte(serverDebPostrm))}
		info.Depends = []string{"systemd"}
	case "rpm":
		changelog, err := rpmChangelog(ver, maintainer, pf.mtime, "patchd server "+ver.Release+".")
		if err != nil {
			return Package{}, err
		}
		contents = append(contents,
			file(write("copyright", []byte(serverCopyright)), "/usr/share/licenses/patchd/copyright", 0o644, files.TypeRPMLicense),
			file(write("README", []byte(serverReadme)), doc+"README", 0o644, files.TypeRPMDoc),
			file(write("modules", []byte(modules)), doc+"modules", 0o644, files.TypeRPMDoc),
		)
		info.Release = "1"
		info.License = "Apache-2.0"
		info.Changelog = write("changelog.yaml", changelog)
		info.RPM = nfpm.RPM{Group: "System Environment/Daemons", Summary: serverPackageSummary, Packager: maintainer, BuildHost: "patchd"}
		info.Scripts = nfpm.Scripts{PostInstall: write("post", []byte(serverRPMPost)),
			PreRemove: write("preun", []byte(serverRPMPreun)), PostRemove: write("postun", []byte(serverRPMPostun))}
		info.Depends = []string{"systemd"}
		if req.GPGKey != "" {
			info.RPM.Signature = nfpm.RPMSignature{PackageSignature: nfpm.PackageSignature{KeyFile: req.GPGKey, KeyPassphrase: req.GPGPassphrase}}
		}
	}
	if err := os.MkdirAll(req.Out, 0o755); err != nil {
		return Package{}, err
	}
	path := filepath.Join(req.Out, name)
	if err := writeAtomic(path, 0o644, func(w io.Writer) error { return pf.pack(w, req.Type, info, contents) }); err != nil {
		return Package{}, err
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return Package{}, err
	}
	return Package{Path: path, Name: name, SHA256: sum, Version: ver.Linux}, nil
}

// serverDebChangelog is the .deb's changelog: one entry.
func serverDebChangelog(version, maintainer string, at time.Time) []byte {
	return []byte("patchd (" + version + ") unstable; urgency=medium\n\n" +
		"  * patchd server " + version + ".\n\n" +
		" -- " + maintainer + "  " + at.UTC().Format(time.RFC1123Z) + "\n")
}

// moduleList lists the Go modules linked into the binary, with versions.
func moduleList(bin string) (string, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("server package: %s: %w", bin, err)
	}
	var b strings.Builder
	b.WriteString("Go modules linked into /usr/bin/patchd (" + bi.GoVersion + "), each under its own license:\n\n")
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		b.WriteString(d.Path + " " + d.Version + "\n")
	}
	return b.String(), nil
}

// BuildServerBinary compiles patchd from the source tree at root for
// linux/arch, reproducibly (-trimpath, no build id), with its version.
func BuildServerBinary(ctx context.Context, root, arch, version, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-o", out,
		"-ldflags", "-s -w -buildid= -X github.com/patchd/patchd/internal/version.Version="+version, "./cmd/patchd")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build patchd %s for linux/%s: %w\n%s", version, arch, err, b)
	}
	return nil
}
