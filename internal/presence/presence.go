// Package presence keeps what a replica knows of its agents between
// database writes: the check-ins not yet written (flushed in batches, and on
// shutdown), which endpoints may have pending commands, and the long polls
// waiting for a command. Queued commands wake the long poll on this replica
// at once and, through the store's notifications, on every other replica.
package presence

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/patchd/patchd/internal/clock"
	"github.com/patchd/patchd/internal/store"
)

// FlushInterval is how often batched check-ins are written.
const FlushInterval = 2 * time.Second

// FinalFlushTimeout bounds the last write of the check-ins when the replica
// stops; the shutdown keeps this long for it (server.Running.Shutdown).
const FinalFlushTimeout = 10 * time.Second

// Hub is one replica's view of its agents.
type Hub struct {
	store *store.Store
	// replica names this replica's presence watermark.
	replica string
	clock   clock.Clock
	// writeMu makes flushes take turns: the watermark follows one batch
	// in flight at a time.
	writeMu sync.Mutex

	mu   sync.Mutex
	seen map[string]store.Checkin
	// unwritten is the oldest time of the check-ins in seen (of those
	// replaced by a later one too); writing is that of the batch being
	// written. Zero when there are none.
	unwritten, writing time.Time
	// beforeWrite runs before a batch is written (tests slow a flush).
	beforeWrite func(context.Context)
	// accepted and written count check-ins: accepted in memory, written
	// by a flush (refused ones included: they are done with).
	accepted, written atomic.Int64
	pending           map[string]bool
	waiters           map[string][]*waiter
	// ends holds the long polls by the second their wait ends (see Wait).
	ends     map[int64][]*waiter
	endsOnce sync.Once
	seeded   bool
	// held counts the long polls waiting; maxHeld bounds it.
	held, maxHeld int
	// stopping is closed by Drain.
	stopping  chan struct{}
	drainOnce sync.Once
	// forgetLocal, set when the watermark is kept in memory rather than
	// written (see KeepWatermarkLocal), undoes that at the stop.
	forgetLocal func()
}

// New makes a Hub on the store that holds at most maxLongPolls long polls
// at once; 0 or less derives the bound from the process's open-files limit
// (DefaultMaxLongPolls).
func New(s *store.Store, maxLongPolls int) *Hub {
	if maxLongPolls <= 0 {
		maxLongPolls = DefaultMaxLongPolls()
	}
	return &Hub{store: s, replica: "replica-" + store.NewID(), seen: map[string]store.Checkin{}, pending: map[string]bool{}, waiters: map[string][]*waiter{}, ends: map[int64][]*waiter{},
		maxHeld: maxLongPolls, stopping: make(chan struct{})}
}

// KeepWatermarkLocal makes the replica's watermark one the store reads in
// memory (store.KeepPresenceLocal) instead of a row written with every
// flush, and every FlushInterval when there is nothing to write. Only for a
// database no other process serves (SQLite); call it before Run.
func (h *Hub) KeepWatermarkLocal() {
	h.forgetLocal = h.store.KeepPresenceLocal(h.replica, h.Watermark)
}

// local tells whether the watermark is kept in memory.
func (h *Hub) local() bool { return h.forgetLocal != nil }

// Drain ends the long polls held now, and every later Wait at once: the
// replica is stopping (http.Server.RegisterOnShutdown), and a long poll
// would hold the shutdown for up to a minute. The agents get their answer
// (no commands) and check in again, with another replica or after the
// restart.
func (h *Hub) Drain() { h.drainOnce.Do(func() { close(h.stopping) }) }

// reservedFiles are the open files kept for everything but long polls, at
// the least: database connections, agents' other calls (inventories queue
// while the database is busy), API clients, the console, log and database
// files. A quarter of the limit is kept when that is more.
const reservedFiles = 1024

// minLongPolls is the bound when the open-files limit is small.
const minLongPolls = 64

// longPollsFor answers the long polls a process with an open-files limit
// of n may hold.
func longPollsFor(n uint64) int {
	n = min(n, 1<<26)
	keep := max(reservedFiles, n/4)
	if n <= keep+minLongPolls {
		return minLongPolls
	}
	return int(n - keep)
}

// Seed loads the endpoints that have pending commands (at start).
func (h *Hub) Seed(ctx context.Context) error {
	ids, err := h.store.EndpointsWithPending(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	for _, id := range ids {
		h.pending[id] = true
	}
	h.seeded = true
	h.mu.Unlock()
	return nil
}

// Seen records a check-in in memory; Run writes it within FlushInterval.
func (h *Hub) Seen(c store.Checkin) {
	h.mu.Lock()
	// What a later check-in leaves out, an earlier unwritten one may know.
	if prev, ok := h.seen[c.EndpointID]; ok {
		if len(c.IPAddresses) == 0 {
			c.IPAddresses = prev.IPAddresses
		}
		if c.LastBootAt == nil {
			c.LastBootAt = prev.LastBootAt
		}
		if c.AgentVersion == "" {
			c.AgentVersion = prev.AgentVersion
		}
	}
	h.seen[c.EndpointID] = c
	if h.unwritten.IsZero() || c.At.Before(h.unwritten) {
		h.unwritten = c.At
	}
	h.mu.Unlock()
	h.accepted.Add(1)
}

// SetClock replaces the clock the watermark is published with (tests move
// it with the agent API's, which stamps the check-ins).
func (h *Hub) SetClock(now func() time.Time) { h.clock.Set(now) }

// SetBeforeWrite makes every flush call f before writing its batch: tests
// hold a replica's writes back as a database that gives it no transaction
// would.
func (h *Hub) SetBeforeWrite(f func(context.Context)) {
	h.mu.Lock()
	h.beforeWrite = f
	h.mu.Unlock()
}

// Watermark answers the time before which every check-in this replica
// accepted is written: the oldest unwritten one's, or now.
func (h *Hub) Watermark(now time.Time) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := now
	for _, t := range []time.Time{h.unwritten, h.writing} {
		if !t.IsZero() && t.Before(w) {
			w = t
		}
	}
	return w
}

// WriteLag answers how long the oldest check-in accepted and not yet
// written has waited (0 when all are written), and how many endpoints'
// check-ins wait.
func (h *Hub) WriteLag(now time.Time) (time.Duration, int) {
	w := h.Watermark(now)
	h.mu.Lock()
	n := len(h.seen)
	h.mu.Unlock()
	return max(now.Sub(w), 0), n
}

// Counts answers the check-ins accepted and written since the start.
func (h *Hub) Counts() (accepted, written int64) { return h.accepted.Load(), h.written.Load() }

// Publish records the replica's watermark in the database (see
// store.PresenceWatermark): the offline alert evaluation of every replica
// waits for this replica's unwritten check-ins.
func (h *Hub) Publish(ctx context.Context) error {
	now := h.clock.Now()
	return h.store.PublishPresenceWatermark(ctx, h.replica, h.Watermark(now), now)
}

// MayHavePending tells whether the endpoint may have pending commands; a
// false answer is certain (every queueing goes through Queued).
func (h *Hub) MayHavePending(endpointID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.seeded || h.pending[endpointID]
}

// NoPending records that the endpoint was found without pending commands.
func (h *Hub) NoPending(endpointID string) {
	h.mu.Lock()
	delete(h.pending, endpointID)
	h.mu.Unlock()
}

// Queued is told, after the commit, which endpoints got new commands: it
// wakes their long polls here and tells the other replicas.
func (h *Hub) Queued(ctx context.Context, endpointIDs []string) {
	h.wake(endpointIDs)
	h.notify(ctx, endpointIDs)
}

// QueuedSoon is Queued for an answer that should not wait for the other
// replicas to be told (one notification per few hundred endpoints on
// PostgreSQL): this replica's long polls are woken, and its next check-ins
// see the commands, before it returns; the other replicas are told in the
// background.
func (h *Hub) QueuedSoon(ctx context.Context, endpointIDs []string) {
	h.wake(endpointIDs)
	go h.notify(context.WithoutCancel(ctx), endpointIDs)
}

func (h *Hub) notify(ctx context.Context, endpointIDs []string) {
	if err := h.store.NotifyCommands(ctx, endpointIDs); err != nil {
		slog.Warn("presence: notify other replicas", "err", err)
	}
}

func (h *Hub) wake(endpointIDs []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range endpointIDs {
		h.pending[id] = true
		for _, w := range h.waiters[id] {
			w.done, w.command = true, true
			close(w.ch)
		}
		delete(h.waiters, id)
	}
}

// ErrTooManyLongPolls answers Wait when the replica holds its bound of long
// polls already: each long poll is an open connection, and a server out of
// file descriptors could not accept any. The agent checks in again after its
// interval (and stays connected).
var ErrTooManyLongPolls = errors.New("presence: too many long polls")

// waiter is one long poll.
type waiter struct {
	endpointID string
	ch         chan struct{}
	// done: answered (ch closed) or gone; command: closed by a queued
	// command rather than by the end of the wait.
	done, command bool
}

// pollTick is the grid long polls end on (see Wait).
const pollTick = time.Second

// Wait blocks until a command is queued for the endpoint, the wait ends,
// ctx ends or the hub drains; it answers true when woken by a command, and
// at once ErrTooManyLongPolls past the bound.
//
// A wait ends on a one-second grid, up to two seconds after it is due,
// never before: the long polls that end in the same second are answered
// together, and the agents' next polls arrive together, so the process
// wakes once for all of them instead of once per poll. Waking an idle
// process costs more CPU than a check-in (docs/performance.md).
func (h *Hub) Wait(ctx context.Context, endpointID string, wait time.Duration) (bool, error) {
	w := &waiter{endpointID: endpointID, ch: make(chan struct{})}
	h.mu.Lock()
	if h.pending[endpointID] {
		h.mu.Unlock()
		return true, nil
	}
	select {
	case <-h.stopping:
		h.mu.Unlock()
		return false, nil
	default:
	}
	if h.held >= h.maxHeld {
		h.mu.Unlock()
		return false, ErrTooManyLongPolls
	}
	h.held++
	h.waiters[endpointID] = append(h.waiters[endpointID], w)
	end := time.Now().Add(wait)
	sec := end.Unix()
	if end.Nanosecond() > 0 {
		sec++
	}
	h.ends[sec] = append(h.ends[sec], w)
	h.mu.Unlock()
	h.endsOnce.Do(func() { go h.endPolls() })
	select {
	case <-w.ch:
	case <-ctx.Done():
	case <-h.stopping:
	}
	h.mu.Lock()
	h.held--
	if !w.done {
		w.done = true
		h.forget(w)
	}
	woken := w.command
	h.mu.Unlock()
	return woken, nil
}

// forget removes a long poll from its endpoint's; h.mu is held.
func (h *Hub) forget(w *waiter) {
	list := h.waiters[w.endpointID]
	for i, c := range list {
		if c == w {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(h.waiters, w.endpointID)
	} else {
		h.waiters[w.endpointID] = list
	}
}

// endPolls answers, every pollTick until the hub drains, the long polls
// whose wait ended.
func (h *Hub) endPolls() {
	t := time.NewTicker(pollTick)
	defer t.Stop()
	for {
		select {
		case <-h.stopping:
			return
		case now := <-t.C:
			h.endPollsDue(now.Unix())
		}
	}
}

// endPollsDue answers the long polls due by the second upTo.
func (h *Hub) endPollsDue(upTo int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sec, list := range h.ends {
		if sec > upTo {
			continue
		}
		for _, w := range list {
			if !w.done {
				w.done = true
				h.forget(w)
				close(w.ch)
			}
		}
		delete(h.ends, sec)
	}
}

// LongPolls answers how many long polls the replica holds, and its bound.
func (h *Hub) LongPolls() (held, bound int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held, h.maxHeld
}

// Polling tells whether the endpoint holds a long poll on this replica.
func (h *Hub) Polling(endpointID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiters[endpointID]) > 0
}

// Flush writes the batched check-ins with the replica's watermark, or
// publishes the watermark alone when there are none; a watermark kept in
// memory is not written.
func (h *Hub) Flush(ctx context.Context) error {
	wrote, err := h.write(ctx)
	if err != nil || wrote || h.local() {
		return err
	}
	return h.Publish(ctx)
}

// write writes the batched check-ins and, in the same transaction, the
// watermark they make true: every check-in accepted before the batch was
// taken is in it or written before. It answers false when there was
// nothing to write.
func (h *Hub) write(ctx context.Context) (bool, error) {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	h.mu.Lock()
	if len(h.seen) == 0 {
		h.mu.Unlock()
		return false, nil
	}
	batch := make([]store.Checkin, 0, len(h.seen))
	for _, c := range h.seen {
		batch = append(batch, c)
	}
	if len(batch) <= keptSeen {
		clear(h.seen) // the next flush's check-ins fill it to about its size again
	} else {
		h.seen = make(map[string]store.Checkin) // not kept at a burst's size
	}
	h.writing, h.unwritten = h.unwritten, time.Time{}
	var mark *store.PresenceMark
	if !h.local() {
		now := h.clock.Now()
		mark = &store.PresenceMark{Replica: h.replica, WrittenThrough: now, At: now}
	}
	hold := h.beforeWrite
	h.mu.Unlock()
	if hold != nil {
		hold(ctx)
	}
	err := h.store.RecordCheckins(ctx, batch, mark)
	h.mu.Lock()
	if err != nil && !errors.As(err, new(*store.CheckinsRefused)) {
		// Put the batch back unless newer check-ins replaced it.
		for _, c := range batch {
			if _, newer := h.seen[c.EndpointID]; !newer {
				h.seen[c.EndpointID] = c
			}
		}
		if h.unwritten.IsZero() || h.writing.Before(h.unwritten) {
			h.unwritten = h.writing
		}
	} else {
		h.written.Add(int64(len(batch)))
	}
	h.writing = time.Time{}
	h.mu.Unlock()
	var refused *store.CheckinsRefused
	if errors.As(err, &refused) {
		// The others are written; these would fail again: drop them (the
		// agent's next check-in is written if its data is sound).
		for id, e := range refused.Refused {
			slog.Warn("presence: a check-in refused by the database is dropped", "endpoint", id, "err", e)
		}
		return true, nil
	}
	return err == nil, err
}

// keptSeen bounds the check-ins of a flush whose map is cleared for the
// next one rather than made anew (a map keeps its size once grown).
const keptSeen = 4096

// Run flushes check-ins every FlushInterval and listens for commands queued
// on other replicas until ctx ends; then it flushes once more, so that a
// clean shutdown loses no check-in.
func (h *Hub) Run(ctx context.Context) {
	if err := h.Seed(ctx); err != nil && ctx.Err() == nil {
		slog.Warn("presence: seed pending commands", "err", err)
	}
	if h.local() {
		// The rows are of earlier processes on this database: they
		// stopped, and what they had not written died with them.
		if err := h.store.ForgetPresenceWatermarks(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("presence: forget earlier processes' watermarks", "err", err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		err := h.store.ListenCommands(ctx, h.wake)
		if err != nil && ctx.Err() == nil {
			slog.Error("presence: listen for queued commands", "err", err)
		}
	})
	tick := time.NewTicker(FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), FinalFlushTimeout)
			if _, err := h.write(final); err != nil {
				slog.Error("presence: final flush of check-ins", "err", err)
			} else if h.local() {
				h.forgetLocal()
			} else if err := h.store.DropPresenceWatermark(final, h.replica); err != nil {
				slog.Warn("presence: remove this replica's watermark", "err", err)
			}
			cancel()
			wg.Wait()
			return
		case <-tick.C:
			if err := h.Flush(ctx); err != nil && ctx.Err() == nil {
				slog.Warn("presence: flush check-ins", "err", err)
			}
		}
	}
}
