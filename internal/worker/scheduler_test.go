package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/worker"
)

// quietScheduler keeps the server's own scheduler out of the way: the tests
// drive one with a fake clock.
func quietScheduler(c *config.Config) { c.SchedulerInterval = time.Hour }

func str(s string) *string { return &s }
func intp(n int) *int      { return &n }

// clock is a fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type fixture struct {
	t     *testing.T
	e     *apitest.Env
	clock *clock
	sched *worker.Scheduler
}

func newFixture(t *testing.T) *fixture {
	e := apitest.New(t, quietScheduler)
	f := &fixture{t: t, e: e, clock: &clock{t: time.Now()}}
	f.sched = &worker.Scheduler{Store: e.Store, Queued: e.Server.Presence().Queued, Now: f.clock.Now}
	return f
}

func (f *fixture) tick() int {
	f.t.Helper()
	n, err := f.sched.Tick(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fixture) automation(id string) apiv1.Automation {
	f.t.Helper()
	a, err := f.e.Admin.GetAutomation(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

func (f *fixture) runs(id string) []apiv1.Run {
	f.t.Helper()
	l, err := f.e.Admin.ListRuns(context.Background(), client.RunQuery{AutomationID: id})
	if err != nil {
		f.t.Fatal(err)
	}
	return l.Items
}

func (f *fixture) create(b apiv1.AutomationBody) string {
	f.t.Helper()
	c, err := f.e.Admin.CreateAutomation(context.Background(), b)
	if err != nil {
		f.t.Fatalf("create automation: %v", err)
	}
	return c.Automation.ID
}

func (f *fixture) allGroup() string {
	id, err := f.e.Store.BuiltinGroupID(context.Background(), f.e.Org.ID, "all")
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

func TestScheduledSlotsWindowsAndExpiry(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	ag := f.e.Enroll("w1", "win-01", "windows")

	id := f.create(apiv1.AutomationBody{Name: "Daily script", ActionType: "RUN_SCRIPT", TargetMode: str("all"), ScheduleKind: str("RECURRING"),
		Freq: str("DAILY"), AtTime: str("03:00"), WindowMinutes: intp(60), Payload: json.RawMessage(`{"script":"echo","language":"sh"}`)})
	slot := *f.automation(id).NextRunAt
	if f.tick() != 0 || len(f.runs(id)) != 0 {
		t.Fatal("fired before its slot")
	}
	// At the slot: one run, commands carry the window's end as notAfter.
	f.clock.Set(slot.Add(10 * time.Second))
	if n := f.tick(); n != 1 {
		t.Fatalf("fired %d", n)
	}
	if n := f.tick(); n != 0 {
		t.Fatalf("fired again: %d", n)
	}
	runs := f.runs(id)
	if len(runs) != 1 || runs[0].Status != "RUNNING" || *runs[0].CreatedBy != "scheduler" || *runs[0].AutomationID != id {
		t.Fatalf("runs: %+v", runs)
	}
	a := f.automation(id)
	if !a.NextRunAt.Equal(slot.Add(24*time.Hour)) || a.LastRunAt == nil {
		t.Fatalf("after the slot: next %v last %v", a.NextRunAt, a.LastRunAt)
	}
	resp, _ := ag.Checkin(0, agentproto.CheckinRequest{})
	if len(resp.Commands) != 1 || resp.Commands[0].NotAfter == nil || !resp.Commands[0].NotAfter.Equal(slot.Add(time.Hour)) {
		t.Fatalf("command: %+v", resp.Commands)
	}
	// Not started by the window's end: CANCELLED, saying why; the run ends.
	f.clock.Set(slot.Add(61 * time.Minute))
	f.tick()
	run, _ := f.e.Admin.RunCommands(ctx, runs[0].ID, client.RunQuery{})
	if run.Items[0].Status != "CANCELLED" || !strings.Contains(*run.Items[0].Result, "maintenance window") {
		t.Fatalf("expired: %+v", run.Items[0])
	}
	if r := f.runs(id)[0]; r.Status != "COMPLETED" || r.FinishedAt == nil {
		t.Fatalf("run after expiry: %+v", r)
	}

	// Server down for three days: the slots whose window ended are skipped and recorded, never run late.
	f.clock.Set(slot.Add(3*24*time.Hour + 2*time.Hour))
	if n := f.tick(); n != 1 {
		t.Fatalf("handled %d", n)
	}
	if len(f.runs(id)) != 1 {
		t.Fatal("a missed slot ran late")
	}
	a = f.automation(id)
	if !a.NextRunAt.Equal(slot.Add(4 * 24 * time.Hour)) {
		t.Fatalf("next after downtime: %v", a.NextRunAt)
	}
	skips, err := f.e.Store.ListSkips(ctx, f.e.Org.ID, id, 10)
	if err != nil || len(skips) != 1 || !strings.Contains(skips[0].Reason, "missed") || !strings.Contains(skips[0].Reason, "2 later slots") {
		t.Fatalf("skips: %+v %v", skips, err)
	}
	if entries, _ := f.e.Store.ListAudit(ctx, f.e.Org.ID, store.AuditFilter{Action: "automation.skip"}); len(entries) != 1 {
		t.Fatalf("audit of the skip: %+v", entries)
	}

	// A disabled automation does not fire.
	f.e.Admin.PatchAutomation(ctx, id, apiv1.AutomationPatch{Enabled: new(bool)})
	f.clock.Set(slot.Add(4*24*time.Hour + time.Minute))
	if n := f.tick(); n != 0 {
		t.Fatalf("disabled fired %d", n)
	}
}

func TestOnceWithoutWindowRunsLateOnceAndExpiresAfterSevenDays(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ag := f.e.Enroll("w1", "win-01", "windows")
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	id := f.create(apiv1.AutomationBody{Name: "Once", ActionType: "REBOOT", TargetMode: str("endpoints"), EndpointIDs: []string{ag.ID},
		ScheduleKind: str("ONCE"), RunAt: str(at.Format(time.RFC3339))})
	if a := f.automation(id); !a.NextRunAt.Equal(at) {
		t.Fatalf("next %v", a.NextRunAt)
	}
	// Late by a day without a window: it still runs, once.
	f.clock.Set(at.Add(24 * time.Hour))
	if f.tick() != 1 || f.tick() != 0 {
		t.Fatal("ONCE fired not exactly once")
	}
	if a := f.automation(id); a.NextRunAt != nil {
		t.Fatalf("ONCE next %v", a.NextRunAt)
	}
	runs := f.runs(id)
	// The command waits up to the expiry (7 days by default), then is cancelled.
	f.clock.Add(6 * 24 * time.Hour)
	f.tick()
	if r := f.runs(id)[0]; r.Status != "RUNNING" {
		t.Fatalf("expired early: %+v", r)
	}
	f.clock.Add(24*time.Hour + time.Minute)
	f.tick()
	cmds, _ := f.e.Admin.RunCommands(context.Background(), runs[0].ID, client.RunQuery{})
	if cmds.Items[0].Status != "CANCELLED" || !strings.Contains(*cmds.Items[0].Result, "within 7 days") {
		t.Fatalf("expiry: %+v", cmds.Items[0])
	}
}

func TestRingRolloutGate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	var agents []*apitest.Agent
	for i := range 4 {
		agents = append(agents, f.e.Enroll("m"+string(rune('a'+i)), "host-"+string(rune('a'+i)), "windows"))
	}
	all := f.allGroup()
	loc, _ := time.LoadLocation("UTC")
	start := time.Now().In(loc).AddDate(0, 0, 1)
	startDate := start.Format("2006-01-02")
	id := f.create(apiv1.AutomationBody{Name: "Rollout", ActionType: "RUN_SCRIPT", Kind: str("RING"), StartDate: str(startDate), AtTime: str("04:00"),
		Rings:   []apiv1.Ring{{Name: "Pilot", GroupID: all}, {Name: "Broad", GroupID: all, OffsetDays: 2}, {Name: "Last", GroupID: all, OffsetDays: 4}},
		Payload: json.RawMessage(`{"script":"echo","language":"sh","minSuccessRate":75}`)})
	first := *f.automation(id).NextRunAt
	if first.Format("2006-01-02 15:04") != startDate+" 04:00" {
		t.Fatalf("first ring at %s", first)
	}
	f.clock.Set(first.Add(time.Minute))
	if f.tick() != 1 {
		t.Fatal("ring 1 did not fire")
	}
	runs := f.runs(id)
	if len(runs) != 1 || *runs[0].Detail != "ring 1 of 3: Pilot" || runs[0].Total != 4 {
		t.Fatalf("ring 1: %+v", runs)
	}
	// Ring 1: 3 of 4 succeed (75%): ring 2 proceeds.
	for i, ag := range agents {
		resp, _ := ag.Checkin(0, agentproto.CheckinRequest{})
		st := "SUCCESS"
		if i == 0 {
			st = "FAILED"
		}
		ag.Status(resp.Commands[0].ID, st, "", nil)
	}
	a := f.automation(id)
	if !a.NextRunAt.Equal(first.AddDate(0, 0, 2)) {
		t.Fatalf("ring 2 slot %v", a.NextRunAt)
	}
	f.clock.Set(a.NextRunAt.Add(time.Minute))
	if f.tick() != 1 || len(f.runs(id)) != 2 {
		t.Fatal("ring 2 did not fire")
	}
	// Ring 2: 2 of 4 succeed (50% < 75%): the rollout halts and says why.
	for i, ag := range agents {
		resp, _ := ag.Checkin(0, agentproto.CheckinRequest{})
		st := "SUCCESS"
		if i < 2 {
			st = "FAILED"
		}
		ag.Status(resp.Commands[0].ID, st, "", nil)
	}
	f.clock.Set(first.AddDate(0, 0, 4).Add(time.Minute))
	if f.tick() != 1 {
		t.Fatal("ring 3 slot not handled")
	}
	if runs := f.runs(id); len(runs) != 2 {
		t.Fatalf("ring 3 ran despite the gate: %d runs", len(runs))
	}
	if a := f.automation(id); a.NextRunAt != nil {
		t.Fatalf("halted rollout has next %v", a.NextRunAt)
	}
	skips, _ := f.e.Store.ListSkips(ctx, f.e.Org.ID, id, 10)
	if len(skips) != 1 || skips[0].Reason != `rollout halted: ring "Broad" succeeded on 2 of 4 endpoints (50%), below the minimum of 75%` {
		t.Fatalf("halt: %+v", skips)
	}
}

// Many due slots claimed by several schedulers at once fire exactly once.
func TestConcurrentSchedulersFireOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.e.Enroll("w1", "win-01", "windows")
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	var ids []string
	for i := range 40 {
		ids = append(ids, f.create(apiv1.AutomationBody{Name: "a" + string(rune('A'+i)), ActionType: "REBOOT", TargetMode: str("all"),
			ScheduleKind: str("ONCE"), RunAt: str(at.Format(time.RFC3339))}))
	}
	f.clock.Set(at.Add(time.Second))
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		s := &worker.Scheduler{Store: f.e.Store, Now: f.clock.Now, Parallel: 4}
		wg.Go(func() {
			n, err := s.Tick(context.Background())
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if total != len(ids) {
		t.Fatalf("handled %d slots, want %d", total, len(ids))
	}
	for _, id := range ids {
		if n := len(f.runs(id)); n != 1 {
			t.Fatalf("automation %s ran %d times", id, n)
		}
	}
}
