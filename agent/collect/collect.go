// Package collect gathers what patchd-agent reports about the computer it
// runs on: the inventory (system, disks, software, missing updates and the
// datasets behind the reports), the small facts sent with every check-in,
// and the identity used to enroll.
//
// Each platform has its collectors in a file behind a build tag
// (collect_linux.go, collect_windows.go, collect_darwin.go); the parsers of
// command output live in platform-independent files so that they are tested
// everywhere against captured output in testdata/. A collector that fails
// leaves its fields null or empty and logs why: it never aborts the
// inventory.
package collect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// Options tune a collection.
type Options struct {
	// Logger receives one line per failing collector. Nil discards.
	Logger *slog.Logger
}

// Inventory collects the whole inventory of this computer.
func Inventory(ctx context.Context, opts Options) *agentproto.Inventory {
	c := newCollector(opts)
	c.inv.CollectedAt = time.Now().UTC().Truncate(time.Second)
	c.inv.System.Arch = runtime.GOARCH
	c.inv.System.Type = "server"
	if h, err := os.Hostname(); err == nil {
		c.inv.System.Hostname = h
	}
	collectPlatform(ctx, c)
	c.wg.Wait()
	c.finish()
	return &c.inv
}

// Hash is the hex SHA-256 of the inventory's canonical JSON with
// collectedAt zeroed: two collections of an unchanged computer hash alike.
// encoding/json writes struct fields in declaration order and map keys
// sorted, which makes its output canonical for these types.
func Hash(inv *agentproto.Inventory) string {
	c := *inv
	c.CollectedAt = time.Time{}
	b, err := json.Marshal(&c)
	if err != nil {
		// Only values that JSON cannot represent (NaN) end here; hash
		// what fmt makes of them rather than fail.
		b = []byte(fmt.Sprintf("%#v", c))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Facts are the cheap observations sent with every check-in.
type Facts struct {
	LastBootAt    *time.Time
	PendingReboot bool
	User          *string
	IPAddresses   []string
}

// CheckinFacts gathers the facts of a check-in. It must stay cheap: it runs
// about once a minute.
func CheckinFacts(ctx context.Context, opts Options) Facts {
	c := newCollector(opts)
	f := platformFacts(ctx, c)
	f.IPAddresses = ipAddresses()
	return f
}

// Identity is what an agent tells the server when it enrolls.
type Identity struct {
	MachineUID string
	Hostname   string
	Platform   string // windows, linux or macos
	OS         string
	OSVersion  string
	Arch       string
}

// ErrNoMachineID: the operating system keeps no machine id (a minimal
// Debian or a container without /etc/machine-id). MachineIdentity returns
// it with the rest of the identity filled in; the agent then uses an id of
// its own, kept in its state folder.
var ErrNoMachineID = errors.New("this computer has no machine id")

// MachineIdentity reads the stable identity of this computer. Without an
// operating-system machine id it returns the identity and ErrNoMachineID.
func MachineIdentity(ctx context.Context) (Identity, error) {
	id := Identity{Arch: runtime.GOARCH, Platform: Platform()}
	h, err := os.Hostname()
	if err != nil {
		return id, fmt.Errorf("hostname: %w", err)
	}
	id.Hostname = h
	c := newCollector(Options{})
	if err := platformIdentity(ctx, c, &id); err != nil {
		return id, err
	}
	if id.MachineUID == "" {
		return id, ErrNoMachineID
	}
	return id, nil
}

// Platform names this build's platform the way the protocol does.
func Platform() string {
	if runtime.GOOS == "darwin" {
		return "macos"
	}
	return runtime.GOOS
}

// collector holds one collection in progress. Collectors started with go()
// run concurrently; each writes only its own fields, and datasets go
// through setDataset.
type collector struct {
	log *slog.Logger
	inv agentproto.Inventory
	wg  sync.WaitGroup
	mu  sync.Mutex
}

func newCollector(opts Options) *collector {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &collector{log: log, inv: agentproto.Inventory{Datasets: map[string][]map[string]any{}}}
}

// do runs one collector in the background; an error or a panic is logged
// and the collection goes on without that collector's data.
func (c *collector) do(name string, f func() error) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				c.log.Error("collector panicked", "collector", name, "panic", r)
			}
		}()
		start := time.Now()
		if err := f(); err != nil {
			c.log.Log(context.Background(), failureLevel(err), "collector failed", "collector", name, "err", err)
			return
		}
		c.log.Debug("collector done", "collector", name, "took", time.Since(start))
	}()
}

// errNotFound: what a collector reads is not on this computer (no sound
// card, no CUPS, no journal, no systemd manager in a container). That is
// ordinary, not a failure worth a warning at every inventory.
type errNotFound string

func (e errNotFound) Error() string { return "not found: " + string(e) }

// failureLevel is the level a collector's error is logged at: debug for
// an absence (an errNotFound, also wrapped), warn for a real failure.
func failureLevel(err error) slog.Level {
	var nf errNotFound
	if errors.As(err, &nf) {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

func (c *collector) setDataset(name string, rows []map[string]any) {
	if rows == nil {
		rows = []map[string]any{}
	}
	c.mu.Lock()
	c.inv.Datasets[name] = rows
	c.mu.Unlock()
}

// finish puts the lists in a stable order, replaces nil lists by empty
// ones, so that the JSON and the hash do not depend on timing, and gives
// every dataset row exactly the keys of the contract (conform).
func (c *collector) finish() {
	inv := &c.inv
	if inv.Disks == nil {
		inv.Disks = []agentproto.Disk{}
	}
	if inv.Software == nil {
		inv.Software = []agentproto.Software{}
	}
	if inv.Updates == nil {
		inv.Updates = []agentproto.Update{}
	}
	if inv.System.MACAddresses == nil {
		inv.System.MACAddresses = []string{}
	}
	for name, rows := range inv.Datasets {
		conformed, extra := conform(name, rows)
		if len(extra) > 0 {
			c.log.Debug("dataset keys outside the contract left out", "dataset", name, "keys", extra)
		}
		inv.Datasets[name] = conformed
	}
	sort.SliceStable(inv.Disks, func(i, j int) bool { return inv.Disks[i].Drive < inv.Disks[j].Drive })
	sort.SliceStable(inv.Software, func(i, j int) bool {
		a, b := inv.Software[i], inv.Software[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return deref(a.Version) < deref(b.Version)
	})
	sort.SliceStable(inv.Updates, func(i, j int) bool {
		a, b := inv.Updates[i], inv.Updates[j]
		if a.Title != b.Title {
			return a.Title < b.Title
		}
		return deref(a.KB) < deref(b.KB)
	})
}

// commandTimeout bounds one external command of a collector.
const commandTimeout = 20 * time.Second

// run executes a command with the C locale and returns its standard
// output. A non-zero exit is an error of type *exec.ExitError, returned
// together with the output.
func run(ctx context.Context, timeout time.Duration, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 300 {
			msg = msg[:300]
		}
		if ctx.Err() != nil {
			return stdout.Bytes(), fmt.Errorf("%s: timed out after %s", name, timeout)
		}
		if msg != "" {
			return stdout.Bytes(), fmt.Errorf("%s: %w: %s", name, err, msg)
		}
		return stdout.Bytes(), fmt.Errorf("%s: %w", name, err)
	}
	return stdout.Bytes(), nil
}

// exitCode tells the exit code carried by err, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func ptr[T any](v T) *T { return &v }

// str returns nil for an empty or blank string.
func str(s string) *string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// round1 rounds to one decimal.
func round1(f float64) float64 { return math.Round(f*10) / 10 }

// gib converts bytes to GiB rounded to 0.1.
func gib(bytes uint64) float64 { return round1(float64(bytes) / (1 << 30)) }

// runStream executes a command with the C locale and hands its standard
// output to read as it comes, for outputs too large to hold (a day of the
// journal). An error of read, a non-zero exit or the timeout is returned;
// read's partial work is then the caller's to drop.
func runStream(ctx context.Context, timeout time.Duration, read func(io.Reader) error, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	rerr := read(out)
	if rerr != nil {
		cancel() // stop the command rather than wait for it to finish writing
	}
	werr := cmd.Wait()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("%s: timed out after %s", name, timeout)
	case rerr != nil:
		return fmt.Errorf("%s: %w", name, rerr)
	case werr != nil:
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return fmt.Errorf("%s: %w: %s", name, werr, msg)
	}
	return nil
}
