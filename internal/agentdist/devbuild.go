package agentdist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// ModuleRoot finds the patchd source tree from dir upwards: the folder
// whose go.mod is module github.com/patchd/patchd and holds
// cmd/patchd-agent. It answers "" when there is none (an installed server).
func ModuleRoot(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module github.com/patchd/patchd\n")) {
			if fi, err := os.Stat(filepath.Join(dir, "cmd", "patchd-agent")); err == nil && fi.IsDir() {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// ErrNoToolchain: the agent cannot be built here.
var ErrNoToolchain = errors.New("no Go toolchain or patchd source here")

// BuildFromSource builds the agent for p with the go toolchain from the
// source tree at root and publishes it. `go run ./cmd/patchd serve` in a
// checkout uses it so that the agent for its own machine can be
// downloaded without a release build.
func (s *Store) BuildFromSource(ctx context.Context, root string, p Platform) (Binary, error) {
	gobin, err := exec.LookPath("go")
	if err != nil || root == "" {
		return Binary{}, ErrNoToolchain
	}
	tmp, err := os.MkdirTemp(s.Dir, ".build-*")
	if err != nil {
		return Binary{}, fmt.Errorf("build agent: %w", err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, p.FileName())
	cmd := exec.CommandContext(ctx, gobin, "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "./cmd/patchd-agent")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS="+p.OS, "GOARCH="+p.Arch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return Binary{}, fmt.Errorf("build agent for %s: %w: %s", p, err, strings.TrimSpace(string(b)))
	}
	return s.Publish(out, p)
}

// HostPlatform is the platform this server runs on.
func HostPlatform() (Platform, error) { return ParsePlatform(runtime.GOOS, runtime.GOARCH) }

// EnsureHostAgent builds the agent for this machine from source when none
// is published and a source tree with a toolchain is at hand; logged
// either way. The server runs it in the background at start.
func (s *Store) EnsureHostAgent(ctx context.Context, workDir string, log *slog.Logger) {
	p, err := HostPlatform()
	if err != nil {
		return
	}
	if _, err := s.Lookup(p); err == nil {
		return
	}
	root := ModuleRoot(workDir)
	if root == "" {
		log.Info("no agent published for this machine's platform; publish agents with patchd admin agent publish", "platform", p.String(), "agent_dir", s.Dir)
		return
	}
	log.Info("building the agent for this machine from source (go build), once", "platform", p.String(), "source", root, "agent_dir", s.Dir)
	b, err := s.BuildFromSource(ctx, root, p)
	if err != nil {
		log.Warn("could not build the agent from source; publish one with patchd admin agent publish", "platform", p.String(), "err", err)
		return
	}
	log.Info("agent built and published", "platform", p.String(), "sha256", b.SHA256, "size", b.Size)
}
