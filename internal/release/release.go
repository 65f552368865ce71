// Package release builds a patchd release from a commit of the repository
// (scripts/release is its command; docs/releases.md tells how to use it
// and why it is a program of its own rather than GoReleaser).
//
// A release is one flat folder:
//
//	patchd_VERSION_OS_ARCH.tar.gz          linux and darwin: patchd, patchctl, patchd-agent, LICENSE, README.md
//	patchd_VERSION_windows_ARCH.zip        the same with .exe
//	patchd_VERSION_OS_ARCH_PROGRAM.cdx.json  a CycloneDX 1.5 SBOM per binary
//	SHA256SUMS                             the SHA-256 of every other file of the folder
//	SHA256SUMS.sig                         its Ed25519 signature (64 bytes), with a release key
//
// Everything is reproducible: the source is the commit's tree (git
// archive), built with -trimpath, an empty build id, no VCS stamping and
// CGO_ENABLED=0; archives have sorted entries, the commit's time as every
// mtime (SOURCE_DATE_EPOCH) and owner 0:0. Building the same commit twice
// gives byte-identical files.
package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// Platform is a target of the release.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Platforms are every platform a release is built for.
var Platforms = []Platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
}

// Programs are the binaries of a release (folders under cmd/).
var Programs = []string{"patchd", "patchctl", "patchd-agent"}

// ParsePlatforms reads "linux/amd64,windows/arm64"; "" or "all" is every
// platform.
func ParsePlatforms(s string) ([]Platform, error) {
	if s == "" || s == "all" {
		return Platforms, nil
	}
	var out []Platform
	for _, f := range strings.Split(s, ",") {
		goos, arch, _ := strings.Cut(strings.TrimSpace(f), "/")
		p := Platform{goos, arch}
		if !slices.Contains(Platforms, p) {
			return nil, fmt.Errorf("platform %q: not one of linux, windows, darwin × amd64, arm64", f)
		}
		out = append(out, p)
	}
	return out, nil
}

// Options say what to build.
type Options struct {
	// Repo is a folder of the git repository (its work tree is not read:
	// the source is the commit's tree).
	Repo string
	// Ref is the tag (v1.4.0) the release is built from, or, with
	// Snapshot, any commit ("" is HEAD).
	Ref string
	// Snapshot builds Ref as version 0.0.0-snapshot-<12 hex of the commit>.
	Snapshot bool
	// Out is the release folder; it must not exist or be empty.
	Out string
	// Key signs SHA256SUMS (nil: not signed) and is built into the agents
	// as the release key they trust for self-updates.
	Key ed25519.PrivateKey
	// Platforms and Programs default to all.
	Platforms []Platform
	Programs  []string
	// Log gets a line per step (nil: none).
	Log io.Writer
	// Bin, when set, keeps the binaries: Bin/OS_ARCH/PROGRAM[.exe].
	Bin string
	// Extra, when set, is called for each platform once its binaries are
	// built (in binDir, named as in Bin) and writes further files of the
	// release into Out: scripts/release writes the server's container
	// image and packages. SHA256SUMS covers them.
	Extra func(ctx context.Context, b Build, p Platform, binDir string) error
}

// Build describes what a release was built from.
type Build struct {
	Version string    // semantic version without "v": 1.4.0
	Commit  string    // the full commit hash
	Date    time.Time // the commit's time, UTC (SOURCE_DATE_EPOCH)
}

// Result is a built release.
type Result struct {
	Build
	Dir   string
	Files []string // the release's files, sorted, SHA256SUMS and its signature last
}

// Make builds the release opt describes.
func Make(ctx context.Context, opt Options) (Result, error) {
	if opt.Platforms == nil {
		opt.Platforms = Platforms
	}
	if opt.Programs == nil {
		opt.Programs = Programs
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	b, err := resolve(ctx, opt)
	if err != nil {
		return Result{}, err
	}
	if err := emptyDir(opt.Out); err != nil {
		return Result{}, err
	}
	tmp, err := os.MkdirTemp("", "patchd-release-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	if err := export(ctx, opt.Repo, b.Commit, src); err != nil {
		return Result{}, err
	}
	fmt.Fprintf(opt.Log, "release %s from commit %s (%s)\n", b.Version, b.Commit, b.Date.Format(time.RFC3339))
	var pub string
	if opt.Key != nil {
		pub = base64.StdEncoding.EncodeToString(opt.Key.Public().(ed25519.PublicKey))
	}
	for _, p := range opt.Platforms {
		base := fmt.Sprintf("patchd_%s_%s_%s", b.Version, p.OS, p.Arch)
		binDir := filepath.Join(tmp, "bin", p.OS+"_"+p.Arch)
		if opt.Bin != "" {
			binDir = filepath.Join(opt.Bin, p.OS+"_"+p.Arch)
		}
		var files []archived
		for _, prog := range opt.Programs {
			name := prog
			if p.OS == "windows" {
				name += ".exe"
			}
			bin := filepath.Join(binDir, name)
			fmt.Fprintf(opt.Log, "build %s for %s\n", prog, p)
			if err := goBuild(ctx, src, prog, p, b, pub, bin); err != nil {
				return Result{}, err
			}
			sbom, err := SBOM(bin, prog, b)
			if err != nil {
				return Result{}, err
			}
			if err := os.WriteFile(filepath.Join(opt.Out, base+"_"+prog+".cdx.json"), sbom, 0o644); err != nil {
				return Result{}, err
			}
			files = append(files, archived{name: name, path: bin, mode: 0o755})
		}
		files = append(files, archived{name: "LICENSE", path: filepath.Join(src, "LICENSE"), mode: 0o644},
			archived{name: "README.md", path: filepath.Join(src, "README.md"), mode: 0o644})
		if p.OS == "windows" {
			err = writeZip(filepath.Join(opt.Out, base+".zip"), base, files, b.Date)
		} else {
			err = writeTarGz(filepath.Join(opt.Out, base+".tar.gz"), base, files, b.Date)
		}
		if err != nil {
			return Result{}, err
		}
		if opt.Extra != nil {
			if err := opt.Extra(ctx, b, p, binDir); err != nil {
				return Result{}, err
			}
		}
	}
	if err := WriteSums(opt.Out, opt.Key); err != nil {
		return Result{}, err
	}
	entries, err := os.ReadDir(opt.Out)
	if err != nil {
		return Result{}, err
	}
	res := Result{Build: b, Dir: opt.Out}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), sumsFile) {
			res.Files = append(res.Files, e.Name())
		}
	}
	res.Files = append(res.Files, sumsFile)
	if opt.Key != nil {
		res.Files = append(res.Files, sigFile)
	}
	return res, nil
}

// resolve finds the commit, its time and the version.
func resolve(ctx context.Context, opt Options) (Build, error) {
	ref := opt.Ref
	if ref == "" {
		if !opt.Snapshot {
			return Build{}, errors.New("a release is built from a tag (v1.4.0); --snapshot builds any commit")
		}
		ref = "HEAD"
	}
	commit, err := git(ctx, opt.Repo, "rev-parse", "--verify", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return Build{}, err
	}
	epoch, err := git(ctx, opt.Repo, "log", "-1", "--format=%ct", commit)
	if err != nil {
		return Build{}, err
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return Build{}, fmt.Errorf("the commit time of %s: %q", commit, epoch)
	}
	b := Build{Commit: commit, Date: time.Unix(sec, 0).UTC()}
	if opt.Snapshot {
		b.Version = "0.0.0-snapshot-" + commit[:12]
		return b, nil
	}
	if _, err := git(ctx, opt.Repo, "rev-parse", "--verify", "--end-of-options", "refs/tags/"+ref); err != nil {
		return Build{}, fmt.Errorf("%s is not a tag: a release is built from a tag such as v1.4.0 (--snapshot builds any commit)", ref)
	}
	b.Version = strings.TrimPrefix(ref, "v")
	if err := agentproto.CheckVersion(b.Version); err != nil || !strings.HasPrefix(ref, "v") {
		return Build{}, fmt.Errorf("tag %s: a release tag is v and a semantic version, such as v1.4.0", ref)
	}
	return b, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// export writes the commit's tree to dir (no work-tree changes, no
// untracked files).
func export(ctx context.Context, repo, commit, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	archive := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", commit)
	extract := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	extract.Stdin = pipe
	var e1, e2 bytes.Buffer
	archive.Stderr, extract.Stderr = &e1, &e2
	if err := archive.Start(); err != nil {
		return err
	}
	if err := extract.Run(); err != nil {
		archive.Wait()
		return fmt.Errorf("extract the source of %s: %v: %s", commit, err, e2.String())
	}
	if err := archive.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %v: %s", commit, err, e1.String())
	}
	return nil
}

// LDFlags are the linker flags of a release binary: no symbol table, no
// build id, and the version, commit and date (and, for the agent, its
// version and the release key it trusts).
func LDFlags(b Build, pubKey string) string {
	f := []string{"-s", "-w", "-buildid=",
		"-X", "github.com/patchd/patchd/internal/version.Version=" + b.Version,
		"-X", "github.com/patchd/patchd/internal/version.Commit=" + b.Commit,
		"-X", "github.com/patchd/patchd/internal/version.Date=" + b.Date.Format(time.RFC3339),
		"-X", "github.com/patchd/patchd/agent.Version=" + b.Version,
	}
	if pubKey != "" {
		f = append(f, "-X", "github.com/patchd/patchd/agent.ReleaseKey="+pubKey)
	}
	return strings.Join(f, " ")
}

func goBuild(ctx context.Context, src, prog string, p Platform, b Build, pubKey, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-mod=readonly",
		"-ldflags", LDFlags(b, pubKey), "-o", out, "./cmd/"+prog)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOOS="+p.OS, "GOARCH="+p.Arch, "CGO_ENABLED=0", "GOFLAGS=",
		"SOURCE_DATE_EPOCH="+strconv.FormatInt(b.Date.Unix(), 10))
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %v\n%s", prog, p, err, o)
	}
	return nil
}

func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty: a release is written to a new folder", dir)
	}
	return nil
}

type archived struct {
	name, path string
	mode       int64
}

// writeTarGz writes files under folder base/ in a gzip'd tar: entries
// sorted, mtime date, owner root 0:0, no gzip name or time.
func writeTarGz(out, base string, files []archived, date time.Time) error {
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b archived) int { return strings.Compare(a.name, b.name) })
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: base + "/", Mode: 0o755, ModTime: date,
		Uname: "root", Gname: "root", Format: tar.FormatPAX}); err != nil {
		return err
	}
	for _, f := range sorted {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: base + "/" + f.name, Mode: f.mode, Size: int64(len(data)), ModTime: date,
			Uname: "root", Gname: "root", Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// writeZip writes files under folder base/ in a zip: entries sorted,
// every time date, deflated.
func writeZip(out, base string, files []archived, date time.Time) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b archived) int { return strings.Compare(a.name, b.name) })
	for _, f := range sorted {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return err
		}
		hdr := &zip.FileHeader{Name: base + "/" + f.name, Method: zip.Deflate, Modified: date}
		hdr.SetMode(os.FileMode(f.mode))
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

const (
	sumsFile = "SHA256SUMS"
	sigFile  = "SHA256SUMS.sig"
)

// WriteSums writes dir/SHA256SUMS, the SHA-256 of every other regular
// file of dir in `sha256sum` format (sorted by name), and, with key,
// dir/SHA256SUMS.sig, its Ed25519 signature (the 64 bytes). Files added
// to a release (packages) are covered when it is called again after.
func WriteSums(dir string, key ed25519.PrivateKey) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var sums strings.Builder
	for _, e := range entries { // sorted by name
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), sumsFile) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), e.Name())
	}
	if err := os.WriteFile(filepath.Join(dir, sumsFile), []byte(sums.String()), 0o644); err != nil {
		return err
	}
	os.Remove(filepath.Join(dir, sigFile))
	if key == nil {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, sigFile), ed25519.Sign(key, []byte(sums.String())), 0o644)
}

// VerifySums checks dir/SHA256SUMS.sig with the release public key
// (base64, as patchd admin agent keygen prints it) and every file
// SHA256SUMS names against its sum.
func VerifySums(dir, pubKey string) error {
	pub, err := agentproto.ParseReleaseKey(pubKey)
	if err != nil {
		return err
	}
	sums, err := os.ReadFile(filepath.Join(dir, sumsFile))
	if err != nil {
		return err
	}
	sig, err := os.ReadFile(filepath.Join(dir, sigFile))
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, sums, sig) {
		return errors.New("SHA256SUMS.sig does not verify with the release key")
	}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		want, name, ok := strings.Cut(line, "  ")
		if !ok || strings.ContainsAny(name, `/\`) {
			return fmt.Errorf("SHA256SUMS: bad line %q", line)
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != want {
			return fmt.Errorf("%s: SHA-256 %x, SHA256SUMS says %s", name, got, want)
		}
	}
	return nil
}
