// Package worker holds patchd's background loops. Each is driven from the
// store, so any number of replicas can run them on one PostgreSQL database.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/patchd/patchd/internal/actions"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/schedule"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// ActorScheduler is the Audit Trail actor of what the scheduler does.
const ActorScheduler = "scheduler"

// Scheduler fires due automation slots and expires commands that never
// started. A slot is claimed with a compare-and-swap on the automation's
// stored next run time in the transaction that creates its run, so among
// several replicas exactly one fires it, and a replica that dies before
// committing leaves it due for the others.
type Scheduler struct {
	Store *store.Store
	// Queued is told which endpoints got commands, after the commit.
	Queued func(ctx context.Context, endpointIDs []string)
	// Now is the clock (tests move it); time.Now when nil.
	Now func() time.Time
	// Interval between passes; 2 s when zero.
	Interval time.Duration
	// CommandExpiry cancels commands without a window that did not start
	// within it; store.DefaultCommandExpiry (7 days) when zero.
	CommandExpiry time.Duration
	// Parallel is how many slots fire at once; 8 on PostgreSQL, 1 on SQLite.
	Parallel int
}

const dueBatch = 1000

func (s *Scheduler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Run passes every Interval until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	interval := s.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if _, err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("scheduler pass", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Tick fires every slot due now and expires commands; it answers how many
// slots it handled (fired, skipped or halted).
func (s *Scheduler) Tick(ctx context.Context) (int, error) {
	handled := 0
	locs := &zones{s: s.Store, m: map[string]*time.Location{}}
	for {
		before := handled
		now := s.now()
		due, err := s.Store.DueAutomations(ctx, now, dueBatch)
		if err != nil {
			return handled, err
		}
		parallel := s.Parallel
		if parallel <= 0 {
			parallel = 1
			if s.Store.Engine() == store.Postgres {
				parallel = 8
			}
		}
		work := make(chan store.Automation)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range min(parallel, max(len(due), 1)) {
			wg.Go(func() {
				for a := range work {
					err := s.fire(ctx, a, locs, now)
					mu.Lock()
					switch {
					case err == nil:
						handled++
					case errors.Is(err, store.ErrSlotTaken):
					default:
						slog.Warn("scheduler: automation slot", "automation", a.ID, "err", err)
					}
					mu.Unlock()
				}
			})
		}
		for _, a := range due {
			work <- a
		}
		close(work)
		wg.Wait()
		// A full batch may hide more due slots; stop when one made no
		// progress (every slot failed) rather than retry it at once.
		if len(due) < dueBatch || handled == before || ctx.Err() != nil {
			break
		}
	}
	if _, err := s.Store.ExpireCommands(ctx, s.now(), s.CommandExpiry); err != nil {
		return handled, err
	}
	return handled, nil
}

// zones caches organizations' time zones for one pass.
type zones struct {
	s  *store.Store
	mu sync.Mutex
	m  map[string]*time.Location
}

func (z *zones) of(ctx context.Context, orgID string) (*time.Location, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if l, ok := z.m[orgID]; ok {
		return l, nil
	}
	o, err := z.s.FindOrg(ctx, orgID)
	if err != nil {
		return nil, err
	}
	l := store.Location(o.TimeZone)
	z.m[orgID] = l
	return l, nil
}

// fire handles one due slot of a: it runs, or is skipped (missed window, no
// target) or, for a ring, halts the rollout; each outcome is recorded.
func (s *Scheduler) fire(ctx context.Context, a store.Automation, locs *zones, now time.Time) error {
	loc, err := locs.of(ctx, a.OrgID)
	if err != nil {
		return err
	}
	slot := *a.NextRunAt
	window := schedule.Window{}
	if a.WindowMinutes != nil {
		window.Minutes = *a.WindowMinutes
	}
	claim := store.Slot{OrgID: a.OrgID, AutomationID: a.ID, At: slot, RingNext: a.RingNext, RingRunID: a.RingRunID}
	audit := func(action string, summary map[string]any) *store.AuditEntry {
		summary["slot"] = slot
		return &store.AuditEntry{OrgID: a.OrgID, Actor: ActorScheduler, Action: action, TargetType: "automation", TargetID: a.ID, Summary: summary}
	}
	// skip claims the slot without running it and records why.
	skip := func(reason string) error {
		return s.Store.Audited(ctx, audit("automation.skip", map[string]any{"reason": reason}), func(tx *store.Tx) error {
			if err := tx.ClaimSlot(ctx, claim, now); err != nil {
				return err
			}
			return tx.RecordSkip(ctx, a.OrgID, a.ID, slot, reason, now)
		})
	}

	var group string
	if a.Kind == store.KindRing {
		ring := a.Rings[a.RingNext]
		group = ring.GroupID
		after := a
		after.RingNext++
		claim.RingNext, claim.Next = after.RingNext, after.Next(slot, loc)
		if window.Missed(slot, now) {
			claim.Next, claim.HaltedReason = nil, fmt.Sprintf("rollout halted: ring %q missed its maintenance window (due %s, the server ran at %s)",
				ring.Name, slot.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
			return s.halt(ctx, a, claim, audit, now)
		}
		if a.RingNext > 0 && a.RingRunID != "" {
			prev := a.Rings[a.RingNext-1]
			attempted, succeeded, running, err := s.Store.RingOutcome(ctx, a.OrgID, a.RingRunID)
			if err != nil && !errors.Is(err, dberr.ErrNotFound) {
				return err
			}
			rate := schedule.DefaultMinSuccessRate
			if a.MinSuccessRate != nil {
				rate = *a.MinSuccessRate
			}
			if ok, reason := schedule.Gate(schedule.RingOutcome{Name: prev.Name, Attempted: attempted, Succeeded: succeeded, Running: running}, rate); !ok {
				claim.Next, claim.HaltedReason = nil, reason
				return s.halt(ctx, a, claim, audit, now)
			}
		}
		claim.RingRunID = ""
	} else {
		if window.Missed(slot, now) {
			// Never run late: skip this slot and every later one whose window
			// also ended while the server was down.
			next, more := a.Next(slot, loc), 0
			for next != nil && window.Missed(*next, now) && more < 100_000 {
				next, more = a.Next(*next, loc), more+1
			}
			claim.Next = next
			reason := fmt.Sprintf("missed: the server ran at %s, after the %d-minute maintenance window of the slot", now.UTC().Format(time.RFC3339), window.Minutes)
			if more > 0 {
				reason += fmt.Sprintf(" (%d later slots missed as well)", more)
			}
			return skip(reason)
		}
		// Without a window a late slot runs once; the next slot is the
		// first one after now, not the ones missed meanwhile.
		claim.Next = a.Next(maxTime(slot, now), loc)
		group = a.GroupID
	}

	var targets []string
	if a.Kind == store.KindSimple && a.TargetMode == store.TargetEndpoints {
		targets = a.EndpointIDs
	} else {
		targets, err = s.Store.GroupMemberIDs(ctx, a.OrgID, group)
		if errors.Is(err, dberr.ErrNotFound) {
			return skip("not run: the target group no longer exists")
		}
		if err != nil {
			return err
		}
	}
	act, err := actions.Parse(a.ActionType, a.Payload, "payload.")
	if err != nil {
		return skip("not run: the stored payload is no longer valid: " + err.Error())
	}
	var notAfter *time.Time
	if end, ok := window.End(slot); ok {
		notAfter = &end
	}
	var run store.CreatedRun
	e := audit("automation.fire", map[string]any{})
	err = s.Store.Audited(ctx, e, func(tx *store.Tx) error {
		if err := tx.ClaimSlot(ctx, claim, now); err != nil {
			return err
		}
		var err error
		run, err = tx.LaunchRun(ctx, store.Launch{
			Run:    store.NewRun{OrgID: a.OrgID, Name: a.Name, CreatedBy: ActorScheduler, AutomationID: a.ID, AutomationName: a.Name, Detail: runDetail(a)},
			Action: act, EndpointIDs: targets, NotAfter: notAfter, RecordEmpty: true,
		}, now)
		var v *valid.Error
		switch {
		case errors.Is(err, store.ErrNoEndpoints):
			e.Action, e.Summary["reason"] = "automation.skip", "not run: the target holds no endpoint"
			return tx.RecordSkip(ctx, a.OrgID, a.ID, slot, "not run: the target holds no endpoint", now)
		case errors.Is(err, dberr.ErrNotFound), errors.As(err, &v):
			reason := "not run: " + err.Error()
			e.Action, e.Summary["reason"] = "automation.skip", reason
			return tx.RecordSkip(ctx, a.OrgID, a.ID, slot, reason, now)
		case err != nil:
			return err
		}
		e.Summary["runId"], e.Summary["queued"] = run.RunID, run.Queued
		if err := tx.MarkAutomationRan(ctx, a.OrgID, a.ID, now); err != nil {
			return err
		}
		if a.Kind == store.KindRing {
			return tx.SetRingRun(ctx, a.ID, run.RunID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if s.Queued != nil && len(run.Endpoints) > 0 {
		s.Queued(ctx, run.Endpoints)
	}
	return nil
}

// halt stops a ring rollout and records why.
func (s *Scheduler) halt(ctx context.Context, a store.Automation, claim store.Slot, audit func(string, map[string]any) *store.AuditEntry, now time.Time) error {
	return s.Store.Audited(ctx, audit("automation.halt", map[string]any{"reason": claim.HaltedReason}), func(tx *store.Tx) error {
		if err := tx.ClaimSlot(ctx, claim, now); err != nil {
			return err
		}
		return tx.RecordSkip(ctx, a.OrgID, a.ID, claim.At, claim.HaltedReason, now)
	})
}

// runDetail names the ring a run belongs to.
func runDetail(a store.Automation) string {
	if a.Kind != store.KindRing {
		return ""
	}
	return fmt.Sprintf("ring %d of %d: %s", a.RingNext+1, len(a.Rings), a.Rings[a.RingNext].Name)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
