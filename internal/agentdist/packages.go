package agentdist

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager

	"github.com/patchd/patchd/agentsvc"
)

// Where the packages put things.
const (
	PackageBin   = agentsvc.PackageBinary
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
	// Version is the package's version: the agent's release version as
	// dpkg and rpm write it, or the MSI's ProductVersion.
	Version string
}

// Packager builds packages from the published agents, cached by the
// binary's hash and everything else that goes into them.
type Packager struct {
	Store *Store
	// Server is baked in as the default server the package enrolls with.
	Server string
	// Sign signs the Windows binary and the MSI (nil: unsigned).
	Sign *Signer
	// GPGKey is an OpenPGP secret key file (armored or binary) that signs
	// the .rpm (its header signature, which rpm -K checks); "" leaves it
	// unsigned. GPGPassphrase unlocks it when it is encrypted. The .deb is
	// never signed: apt trusts it through a signed repository.
	GPGKey, GPGPassphrase string
	// Maintainer is the packages' Maintainer (deb) and Packager (rpm),
	// "Name <address>"; by default patchd <patchd@HOST>, HOST being the
	// server's host name.
	Maintainer string
	// CacheDir holds built packages (default Store.Dir/.packages).
	CacheDir string

	mu sync.Mutex
}

// packageFormat is bumped when what goes into packages changes.
const packageFormat = "3" // 3: the release's version, documentation, signatures

// Build returns the package, from the cache when it is there. The
// package's version is the version of the agent's signed release: a
// package built after a newer release upgrades an older one.
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
	rel, err := pk.Store.Release(p)
	if errors.Is(err, ErrNoRelease) {
		return Package{}, &PackageError{fmt.Sprintf("the agent published for %s has no release version, and a package needs one "+
			"(a newer package upgrades an older one by it): publish it with --version "+
			"(patchd admin agent publish --os %s --arch %s --version V --release-key KEY FILE)", p, p.OS, p.Arch)}
	}
	if err != nil {
		return Package{}, err
	}
	ver, err := parsePackageVersion(rel.Version, req.Type)
	if err != nil {
		return Package{}, &PackageError{fmt.Sprintf("%s: %v", p, err)}
	}
	server := req.Server
	if server == "" {
		server = pk.Server
	}
	if server != "" {
		if err := CheckServerURL(server); err != nil {
			return Package{}, &PackageError{err.Error()}
		}
	}
	maintainer := pk.Maintainer
	if maintainer == "" {
		maintainer = DefaultMaintainer(server)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n%s\n%s\n", packageFormat, bin.SHA256, server, rel.Version, req.Type, maintainer)
	if pk.Sign != nil {
		fmt.Fprintf(h, "%s\n", pk.Sign.CertFile)
	}
	if pk.GPGKey != "" && req.Type == "rpm" {
		sum, err := fileSHA256(pk.GPGKey)
		if err != nil {
			return Package{}, fmt.Errorf("package signing key: %w", err)
		}
		fmt.Fprintf(h, "gpg %s\n", sum)
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]
	name := packageName(req.Type, req.Arch, ver)
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
			err = pk.buildMSI(ctx, bin, ver, server, path)
		default:
			spec := linuxPackage{typ: req.Type, bin: bin, version: ver, server: server, maintainer: maintainer, gpgKey: pk.GPGKey, gpgPassphrase: pk.GPGPassphrase}
			err = writeAtomic(path, 0o644, func(w io.Writer) error { return spec.build(w) })
		}
		if err != nil {
			return Package{}, err
		}
		// Packages of older binaries are not served any more.
		old, _ := filepath.Glob(filepath.Join(dir, "*", packageGlob(req.Type, req.Arch)))
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
	version := ver.Linux
	if req.Type == "msi" {
		version = ver.MSI
	}
	return Package{Path: path, Name: name, SHA256: sum, Version: version}, nil
}

var rpmArch = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}

// packageName is the package's conventional file name.
func packageName(typ, arch string, v packageVersion) string {
	switch typ {
	case "rpm":
		return "patchd-agent-" + v.Linux + "-1." + rpmArch[arch] + ".rpm"
	case "msi":
		return "patchd-agent-" + v.Linux + "-x64.msi"
	}
	return "patchd-agent_" + v.Linux + "_" + arch + ".deb"
}

// packageGlob matches the packages of every version of one type and
// architecture.
func packageGlob(typ, arch string) string {
	switch typ {
	case "rpm":
		return "patchd-agent-*." + rpmArch[arch] + ".rpm"
	case "msi":
		return "patchd-agent-*-x64.msi"
	}
	return "patchd-agent_*_" + arch + ".deb"
}

// packageVersion is an agent's release version as the package managers
// compare it.
type packageVersion struct {
	// Release is the agent's version as published (1.5.0-rc.1).
	Release string
	// Linux is the .deb and .rpm version: the numbers, a prerelease after
	// "~" (1.5.0~rc.1 sorts before 1.5.0 for dpkg and rpm alike), build
	// metadata after "+".
	Linux string
	// MSI is the ProductVersion: major.minor.build, numbers.
	MSI string
}

var versionIdent = regexp.MustCompile(`^[0-9A-Za-z.-]+$`)

// parsePackageVersion reads a release version: numbers separated by dots
// (1.5.0, a leading "v" allowed), then optionally a -prerelease and a
// +build, as in semantic versioning. Anything else cannot be ordered the
// same way by dpkg, rpm and Windows Installer, and is refused.
func parsePackageVersion(v, typ string) (packageVersion, error) {
	bad := fmt.Errorf("the release version %q cannot be a package version: use numbers separated by dots (1.5.0), optionally followed by -prerelease and +build", v)
	rest, meta, hasMeta := strings.Cut(strings.TrimPrefix(v, "v"), "+")
	core, pre, hasPre := strings.Cut(rest, "-")
	nums := strings.Split(core, ".")
	if len(nums) > 4 || hasPre && !versionIdent.MatchString(pre) || hasMeta && !versionIdent.MatchString(meta) {
		return packageVersion{}, bad
	}
	for _, n := range nums {
		if n == "" || len(n) > 9 || strings.Trim(n, "0123456789") != "" {
			return packageVersion{}, bad
		}
	}
	out := packageVersion{Release: v, Linux: core}
	if hasPre {
		out.Linux += "~" + strings.ReplaceAll(pre, "-", ".")
	}
	if hasMeta {
		out.Linux += "+" + strings.ReplaceAll(meta, "-", ".")
	}
	// Windows Installer compares the first three fields of
	// ProductVersion: up to 255, 255 and 65535.
	msi := append(nums[:min(len(nums), 3):min(len(nums), 3)], "0", "0")[:3]
	for i, limit := range []int{255, 255, 65535} {
		n, _ := strconv.Atoi(msi[i])
		if n > limit && typ == "msi" {
			return packageVersion{}, fmt.Errorf("the release version %q cannot be an MSI ProductVersion: its first fields may be up to 255.255.65535", v)
		}
		msi[i] = strconv.Itoa(n)
	}
	out.MSI = strings.Join(msi, ".")
	return out, nil
}

// DefaultMaintainer is the packages' maintainer when none is configured:
// patchd at the server's host name.
func DefaultMaintainer(server string) string {
	host := "localhost"
	if u, err := url.Parse(server); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	return "patchd <patchd@" + host + ">"
}

// CheckMaintainer checks a configured maintainer: "Name <address>".
func CheckMaintainer(m string) error {
	a, err := mail.ParseAddress(m)
	if err != nil || a.Name == "" || strings.ContainsAny(m, "\n\r") {
		return fmt.Errorf("the packages' maintainer must be Name <address>, not %q", m)
	}
	return nil
}

// linuxPackage is one .deb or .rpm to build.
type linuxPackage struct {
	typ                   string // deb or rpm
	bin                   Binary
	version               packageVersion
	server, maintainer    string
	gpgKey, gpgPassphrase string
}

// Package texts.
const (
	packageSummary     = "Agent of the patchd patch-management server"
	packageDescription = packageSummary + `
patchd-agent runs as a service on a managed computer: it checks in with a
patchd server, reports the computer's inventory (installed software and the
updates its package manager offers) and installs the updates the server's
administrators approve.
.
The package enrolls the computer when PATCHD_TOKEN is set in the
environment or in /etc/patchd-agent/enroll.conf, and starts the service
once the computer is enrolled.`
)

// build writes the .deb or .rpm with nfpm: the binary, the systemd unit, a
// SysV init script for systems without systemd, the documentation and
// maintainer scripts that enroll, enable and start (postinst), stop
// (prerm) and remove the state on purge (postrm).
func (lp linuxPackage) build(w io.Writer) error {
	typ := lp.typ
	pf, err := newPackageFiles(lp.bin.ModTime)
	if err != nil {
		return err
	}
	defer pf.close()
	write, file, mtime := pf.write, pf.file, pf.mtime
	doc := "/usr/share/doc/patchd-agent/"
	contents := files.Contents{
		file(lp.bin.Path, PackageBin, 0o755, ""),
		file(write("unit", []byte(agentsvc.SystemdUnit(PackageBin, PackageState))), PackageUnit, 0o644, ""),
	}
	man := write("man", gzipBytes(manPage(lp.version.Release, mtime)))
	const manPath = "/usr/share/man/man8/patchd-agent.8.gz"
	info := newPackageInfo("patchd-agent", lp.bin.Arch, lp.version.Linux, lp.maintainer, packageDescription, mtime)
	initd := packageInitScript()
	switch typ {
	case "deb":
		contents = append(contents,
			// A conffile: dpkg keeps an administrator's changes.
			file(write("initd", []byte(initd)), agentsvc.InitScript, 0o755, files.TypeConfig),
			file(man, manPath, 0o644, ""),
			file(write("copyright", []byte(copyrightFile)), doc+"copyright", 0o644, ""),
			file(write("changelog", gzipBytes(debChangelog(lp.version.Linux, lp.maintainer, mtime))), doc+"changelog.gz", 0o644, ""),
			file(write("overrides", []byte(lintianOverrides)), "/usr/share/lintian/overrides/patchd-agent", 0o644, ""),
		)
		info.Scripts = nfpm.Scripts{PostInstall: write("postinst", []byte(debPostinst(lp.server))),
			PreRemove: write("prerm", []byte(debPrerm)), PostRemove: write("postrm", []byte(debPostrm))}
		// invoke-rc.d --skip-systemd-native (init-system-helpers 1.54).
		info.Deb.Predepends = []string{"init-system-helpers (>= 1.54~)"}
		// Not signed: a signature inside a .deb is an extra ar member,
		// which Debian's archive tools refuse (lintian:
		// misplaced-extra-member-in-deb) and dpkg never checks; apt
		// trusts a package through its repository's signed InRelease.
	case "rpm":
		changelog, err := rpmChangelog(lp.version, lp.maintainer, mtime, "patchd agent "+lp.version.Release+", packaged from the published agent.")
		if err != nil {
			return err
		}
		contents = append(contents,
			// Not a configuration file: the package replaces it whole.
			file(write("initd", []byte(initd)), agentsvc.InitScript, 0o755, ""),
			file(write("copyright", []byte(copyrightFile)), "/usr/share/licenses/patchd-agent/copyright", 0o644, files.TypeRPMLicense),
			file(write("README", []byte(rpmReadme)), doc+"README", 0o644, files.TypeRPMDoc),
			file(man, manPath, 0o644, files.TypeRPMDoc),
		)
		info.Release = "1"
		info.License = "Apache-2.0 AND BSD-3-Clause"
		info.Changelog = write("changelog.yaml", changelog)
		info.RPM = nfpm.RPM{Group: "System Environment/Daemons", Summary: packageSummary, Packager: lp.maintainer, BuildHost: "patchd"}
		info.Scripts = nfpm.Scripts{PostInstall: write("post", []byte(rpmPost(lp.server))),
			PreRemove: write("preun", []byte(rpmPreun)), PostRemove: write("postun", []byte(rpmPostun))}
		if lp.gpgKey != "" {
			info.RPM.Signature = nfpm.RPMSignature{PackageSignature: nfpm.PackageSignature{KeyFile: lp.gpgKey, KeyPassphrase: lp.gpgPassphrase}}
		}
	}
	return pf.pack(w, typ, info, contents)
}

// packageFiles is the temporary folder a package's generated files are
// written to before nfpm reads them; the agent's and the server's packages
// share it and pack.
type packageFiles struct {
	tmp   string
	mtime time.Time
	err   error
}

func newPackageFiles(mtime time.Time) (*packageFiles, error) {
	tmp, err := os.MkdirTemp("", "patchd-pkg-*")
	if err != nil {
		return nil, err
	}
	return &packageFiles{tmp: tmp, mtime: mtime.UTC().Truncate(time.Second)}, nil
}

func (pf *packageFiles) close() { os.RemoveAll(pf.tmp) }

// write writes a generated file and answers its path (the first error is
// kept for pack).
func (pf *packageFiles) write(name string, content []byte) string {
	p := filepath.Join(pf.tmp, name)
	if err := os.WriteFile(p, content, 0o644); err != nil && pf.err == nil {
		pf.err = err
	}
	return p
}

// file is one file of the package, with the package's modification time.
func (pf *packageFiles) file(src, dst string, mode os.FileMode, kind string) *files.Content {
	return &files.Content{Source: src, Destination: dst, Type: kind, FileInfo: &files.ContentFileInfo{Mode: mode, MTime: pf.mtime}}
}

// newPackageInfo is what the .deb and .rpm of the agent and the server
// say of themselves alike. The .deb's version has no Debian revision: a
// package made by its own project (a native package).
func newPackageInfo(name, arch, version, maintainer, description string, mtime time.Time) *nfpm.Info {
	return &nfpm.Info{
		Name: name, Arch: arch, Platform: "linux", Version: version, VersionSchema: "none",
		Section: "admin", Priority: "optional", Maintainer: maintainer,
		Description: description, Vendor: "patchd", Homepage: "https://github.com/patchd/patchd", MTime: mtime,
	}
}

// rpmChangelog is the .rpm's one changelog entry, as nfpm reads it.
func rpmChangelog(v packageVersion, maintainer string, at time.Time, note string) ([]byte, error) {
	return json.Marshal([]map[string]any{{
		"semver": v.Linux + "-1", "date": at, "packager": maintainer,
		"changes": []map[string]string{{"note": note}},
	}})
}

// pack writes the package of type typ (deb or rpm) to w with nfpm.
func (pf *packageFiles) pack(w io.Writer, typ string, info *nfpm.Info, contents files.Contents) error {
	if pf.err != nil {
		return pf.err
	}
	info.Contents = contents
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

// gzipBytes compresses b as Debian wants documentation: best compression,
// no name or time in the header (the same input gives the same bytes).
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// wixEscape escapes s for an XML attribute.
func wixEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
