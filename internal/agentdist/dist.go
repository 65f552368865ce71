// Package agentdist hosts patchd-agent for rollout: the published
// binaries of every platform (a folder, --agent-dir), their SHA-256, the
// one-line installers (install.sh, install.ps1) with the server's address
// baked in, and the .deb, .rpm and .msi packages built from the binaries
// on request.
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
	"sort"
	"sync"
	"time"
)

// Platform is an operating system and architecture the agent is built for.
type Platform struct {
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Platforms are those the server hosts the agent for.
var Platforms = []Platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
	{"darwin", "arm64"}, {"darwin", "amd64"},
}

// ErrUnknownPlatform: not one of Platforms.
var ErrUnknownPlatform = errors.New("unknown platform")

// ErrNotPublished: no agent was published for the platform yet.
var ErrNotPublished = errors.New("no agent published for this platform")

// ParsePlatform checks os and arch against Platforms.
func ParsePlatform(goos, arch string) (Platform, error) {
	for _, p := range Platforms {
		if p.OS == goos && p.Arch == arch {
			return p, nil
		}
	}
	return Platform{}, fmt.Errorf("%w %s/%s: one of linux, windows, darwin with amd64 or arm64", ErrUnknownPlatform, goos, arch)
}

// FileName is the binary's name on p.
func (p Platform) FileName() string {
	if p.OS == "windows" {
		return "patchd-agent.exe"
	}
	return "patchd-agent"
}

// Binary is a published agent.
type Binary struct {
	Platform
	Path    string    `json:"-"`
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	ModTime time.Time `json:"publishedAt"`
}

// Store is the folder of published agents: DIR/{os}-{arch}/patchd-agent[.exe].
// Replicas share it when it is on shared storage or baked into their
// image; a release build fills it (scripts in docs/agents.md), and
// `patchd admin agent publish` adds one.
type Store struct {
	Dir string

	mu   sync.Mutex
	sums map[string]Binary // by path, valid while size and mtime match
}

// NewStore opens (and creates) the folder.
func NewStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("agent folder: %w", err)
	}
	return &Store{Dir: dir, sums: map[string]Binary{}}, nil
}

func (s *Store) path(p Platform) string {
	return filepath.Join(s.Dir, p.OS+"-"+p.Arch, p.FileName())
}

// Lookup is the published agent of p, with its SHA-256 (computed once per
// file version).
func (s *Store) Lookup(p Platform) (Binary, error) {
	if s.Dir == "" {
		return Binary{}, fmt.Errorf("%w: %s", ErrNotPublished, p)
	}
	path := s.path(p)
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return Binary{}, fmt.Errorf("%w: %s", ErrNotPublished, p)
	}
	if err != nil {
		return Binary{}, fmt.Errorf("agent %s: %w", p, err)
	}
	s.mu.Lock()
	b, ok := s.sums[path]
	s.mu.Unlock()
	if ok && b.Size == fi.Size() && b.ModTime.Equal(fi.ModTime()) {
		return b, nil
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return Binary{}, fmt.Errorf("agent %s: %w", p, err)
	}
	b = Binary{Platform: p, Path: path, Size: fi.Size(), SHA256: sum, ModTime: fi.ModTime()}
	s.mu.Lock()
	if s.sums == nil {
		s.sums = map[string]Binary{}
	}
	s.sums[path] = b
	s.mu.Unlock()
	return b, nil
}

// List is every published agent.
func (s *Store) List() ([]Binary, error) {
	var out []Binary
	for _, p := range Platforms {
		b, err := s.Lookup(p)
		if errors.Is(err, ErrNotPublished) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// Publish copies the agent binary at file into the store for p,
// atomically (a download in progress keeps reading the old file).
func (s *Store) Publish(file string, p Platform) (Binary, error) {
	if _, err := ParsePlatform(p.OS, p.Arch); err != nil {
		return Binary{}, err
	}
	if err := checkExecutable(file, p); err != nil {
		return Binary{}, err
	}
	// The release of the binary before goes first: a release is only
	// ever served with the file it was signed for, and a file that
	// differs from its release is one changed outside patchd.
	if err := s.withdrawRelease(p); err != nil {
		return Binary{}, err
	}
	dst := s.path(p)
	if err := copyFile(file, dst, 0o755); err != nil {
		return Binary{}, fmt.Errorf("publish %s: %w", p, err)
	}
	return s.Lookup(p)
}

// PublishSigned is Publish signing a Windows agent with sign first
// (Authenticode), so that the download and the MSI carry the signature.
func (s *Store) PublishSigned(ctx context.Context, file string, p Platform, sign *Signer) (Binary, error) {
	if sign == nil || p.OS != "windows" {
		return s.Publish(file, p)
	}
	if err := checkExecutable(file, p); err != nil {
		return Binary{}, err
	}
	tmp, err := os.MkdirTemp("", "patchd-publish-*")
	if err != nil {
		return Binary{}, err
	}
	defer os.RemoveAll(tmp)
	signed := filepath.Join(tmp, p.FileName())
	if err := copyFile(file, signed, 0o755); err != nil {
		return Binary{}, err
	}
	if err := sign.SignFile(ctx, signed); err != nil {
		return Binary{}, err
	}
	return s.Publish(signed, p)
}

// checkExecutable refuses a file that is not an executable of p's kind:
// publishing the Linux agent as the Windows one is an easy mistake.
func checkExecutable(file string, p Platform) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	defer f.Close()
	var head [4]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return fmt.Errorf("publish %s: too short to be a program", file)
	}
	var ok bool
	switch p.OS {
	case "windows":
		ok = head[0] == 'M' && head[1] == 'Z'
	case "darwin":
		ok = head == [4]byte{0xcf, 0xfa, 0xed, 0xfe} // Mach-O 64-bit, little-endian
	default:
		ok = head == [4]byte{0x7f, 'E', 'L', 'F'}
	}
	if !ok {
		return fmt.Errorf("publish %s: not a %s program", file, p.OS)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copyFile copies src to dst through a temporary file renamed into place.
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeAtomic(dst, mode, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

func writeAtomic(dst string, mode os.FileMode, write func(w io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// FileSHA256 is the lowercase hex SHA-256 of a file.
func FileSHA256(path string) (string, error) { return fileSHA256(path) }

// CopyOut copies a built file to dst (the command line's --out).
func CopyOut(src, dst string) error { return copyFile(src, dst, 0o644) }
