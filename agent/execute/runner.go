package execute

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Cmd is one program to run.
type Cmd struct {
	Path string
	Args []string
	// Env is added to the agent's environment (KEY=value).
	Env []string
	Dir string
	// Timeout ends the command (and, on Unix, its process group); zero
	// means no limit beyond the context's.
	Timeout time.Duration
	// RawCmdLine, on Windows, is the whole command line passed to
	// CreateProcess as it is (Path and Args are then only for display):
	// uninstall strings from the registry carry their own quoting.
	RawCmdLine string
}

// String shows the command for logs and results.
func (c Cmd) String() string {
	if c.RawCmdLine != "" {
		return c.RawCmdLine
	}
	return strings.Join(append([]string{c.Path}, c.Args...), " ")
}

// Result is what a finished command left.
type Result struct {
	ExitCode int
	// Output is standard output and standard error interleaved, capped
	// to the runner's limit (head and tail kept).
	Output   string
	TimedOut bool
}

// Runner runs commands. Every command that changes the computer goes
// through one, so that tests can check the exact argv without running it.
type Runner interface {
	// Run returns an error only when the command could not be started;
	// a non-zero exit is a Result.
	Run(ctx context.Context, c Cmd) (Result, error)
}

// DefaultOutputLimit caps the output kept of one command: 64 KiB.
const DefaultOutputLimit = 64 << 10

// ExecRunner runs commands on this computer.
type ExecRunner struct {
	// OutputLimit caps Result.Output; zero means DefaultOutputLimit.
	OutputLimit int
}

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, c Cmd) (Result, error) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Dir = c.Dir
	limit := r.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	out := newHeadTail(limit)
	cmd.Stdout, cmd.Stderr = out, out
	prepare(cmd, c)
	// Children that keep the output pipes open must not hold the agent.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	res := Result{Output: out.String(), ExitCode: -1}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil && (err != nil || res.ExitCode != 0) {
		res.TimedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
		return res, nil
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		return res, fmt.Errorf("run %s: %w", c.Path, err)
	}
	return res, nil
}

// headTail keeps the first and the last limit/2 bytes written to it.
type headTail struct {
	mu      sync.Mutex
	half    int
	head    []byte
	tail    []byte // ring buffer once full
	pos     int
	written int64
}

func newHeadTail(limit int) *headTail {
	return &headTail{half: limit / 2}
}

func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	h.written += int64(n)
	if room := h.half - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(h.tail) < h.half {
			k := min(h.half-len(h.tail), len(p))
			h.tail = append(h.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := min(h.half-h.pos, len(p))
		copy(h.tail[h.pos:], p[:k])
		h.pos = (h.pos + k) % h.half
		p = p[k:]
	}
	return n, nil
}

// String returns the kept output with a marker where bytes were dropped.
func (h *headTail) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b bytes.Buffer
	b.Write(h.head)
	kept := int64(len(h.head) + len(h.tail))
	if dropped := h.written - kept; dropped > 0 {
		fmt.Fprintf(&b, "\n[… %d bytes of output omitted …]\n", dropped)
	}
	b.Write(h.tail[h.pos:])
	b.Write(h.tail[:h.pos])
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}
