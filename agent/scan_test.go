package agent

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/agent/execute"
	"github.com/patchd/patchd/agentproto"
)

// events records, in order, what the agent ran and collected.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	e.list = append(e.list, s)
	e.mu.Unlock()
}

func (e *events) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

func (e *events) count(s string) int {
	n := 0
	for _, x := range e.get() {
		if x == s {
			n++
		}
	}
	return n
}

// recordingRunner is the executor's command seam: it runs nothing.
type recordingRunner struct{ ev *events }

func (r recordingRunner) Run(ctx context.Context, c execute.Cmd) (execute.Result, error) {
	r.ev.add("run " + c.String())
	return execute.Result{}, nil
}

// TestScanRefreshesThenCollects: at its first check-in the agent refreshes
// the package lists (through the executor: apt-get update) and then
// collects; the next refresh is due after the server's refreshSeconds give
// or take a quarter; a "scan now" refreshes and sends the inventory at
// once, even unchanged; a due refresh survives a restart.
func TestScanRefreshesThenCollects(t *testing.T) {
	f, srv := newFakeServer(t)
	f.longPoll = true
	f.refreshSeconds = 3600
	dir := enroll(t, srv)
	var collects atomic.Int32
	ev := &events{}
	cfg := testConfig(t, dir, &collects)
	inner := cfg.Collect
	cfg.Collect = func(ctx context.Context) *agentproto.Inventory {
		ev.add("collect")
		return inner(ctx)
	}
	cfg.Executor = &execute.Executor{OS: "linux", PackageManager: "apt", Runner: recordingRunner{ev}, TempDir: t.TempDir()}
	cfg.Refresh = nil // the default: the executor's refresh
	stop, _ := start(t, cfg)

	const update = "run apt-get update -q"
	eventually(t, "the first inventory", func() bool { return f.inventoryCount() == 1 })
	if got := ev.get(); len(got) < 2 || got[0] != update || got[1] != "collect" {
		t.Fatalf("first cycle: %q; want the refresh, then the collection", got)
	}
	// The next check-in: the inventory's hash is kept by then.
	eventually(t, "a second check-in", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.checkins >= 2
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	st, err := LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.RefreshSeconds != 3600 || st.NextRefreshAt == nil {
		t.Fatalf("state after the refresh: %+v", st)
	}
	if in := time.Until(*st.NextRefreshAt); in < 44*time.Minute || in > 76*time.Minute {
		t.Fatalf("next refresh in %s; want an hour give or take a quarter", in)
	}

	// Restarted before the refresh is due: no refresh; the long poll is held.
	ev.list = nil
	f.mu.Lock()
	before := f.checkins
	f.mu.Unlock()
	stop, _ = start(t, cfg)
	eventually(t, "a check-in after the restart", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.checkins > before
	})
	// Scan now: the held long poll ends, the lists are refreshed and the
	// unchanged inventory is sent anyway.
	f.requestScan()
	eventually(t, "the scan's inventory", func() bool { return f.inventoryCount() == 2 })
	got := ev.get()
	if i := slices.Index(got, update); i < 0 || !slices.Contains(got[i:], "collect") || ev.count(update) != 1 {
		t.Fatalf("after scan now: %q; want one refresh, then a collection", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// A refresh that is due (the interval passed while it was stopped)
	// runs at the next start without being asked.
	st, _ = LoadState(dir)
	past := time.Now().Add(-time.Minute)
	st.NextRefreshAt = &past
	if err := st.Save(dir); err != nil {
		t.Fatal(err)
	}
	ev.list = nil
	f.mu.Lock()
	f.longPoll = false // the check-in answers at once; the refresh follows it
	f.mu.Unlock()
	stop, _ = start(t, cfg)
	eventually(t, "the due refresh", func() bool { return ev.count(update) == 1 })
	stop()
}

// TestSpread: refresh times are spread over the interval give or take a
// quarter, differently for each draw.
func TestSpread(t *testing.T) {
	d := 4 * time.Hour
	seen := map[time.Duration]bool{}
	for range 200 {
		s := spread(d)
		if s < 3*time.Hour || s >= 5*time.Hour {
			t.Fatalf("spread(%s) = %s", d, s)
		}
		seen[s] = true
	}
	if len(seen) < 100 {
		t.Fatalf("only %d different waits in 200 draws", len(seen))
	}
}
