package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
)

// SQLite has one writer, and a commit is much of what a small write
// transaction costs it (the log's pages written, the lock taken and given
// back). When many requests make such a transaction at once — a fleet
// enrolling — inSharedTx runs theirs together: the requests queued while
// one shared transaction is written run one after the other in the next,
// which commits once for all. Each request still sees what the earlier
// ones wrote, as it would have after their commits, and fails alone: when
// its function answers an error, the shared transaction is rolled back and
// written again without it, so nothing it did stays. A request is answered
// once the transaction holding it committed. PostgreSQL, whose writers run
// side by side, runs each in a transaction of its own (InTxRetry).
type sharedTx struct {
	mu      sync.Mutex
	queue   []*sharedReq
	writing bool
	// inFlight counts the requests of the transaction being written.
	inFlight int
}

type sharedReq struct {
	ctx  context.Context
	fn   func(tx *Tx) error
	done chan error
}

// maxShared bounds how many requests share one transaction.
const maxShared = 64

// errSharedMember aborts a shared transaction one of whose requests failed.
var errSharedMember = errors.New("store: a request of the shared transaction failed")

// inSharedTx runs fn in a write transaction it may share with other
// requests (see sharedTx), and answers fn's error, or the commit's. fn may
// run more than once (in transactions rolled back for another request's
// failure): like InTxRetry's, it must leave nothing behind outside tx but
// what its last run sets.
func (s *Store) inSharedTx(ctx context.Context, fn func(tx *Tx) error) error {
	if s.engine != SQLite {
		return s.InTxRetry(ctx, fn)
	}
	r := &sharedReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	g := &s.shared
	g.mu.Lock()
	g.queue = append(g.queue, r)
	start := !g.writing
	g.writing = true
	g.mu.Unlock()
	if start {
		go s.writeShared()
	}
	// Not given up when ctx ends: a request already in the transaction
	// being written is decided with it (one not begun yet is skipped).
	return <-r.done
}

// writeShared writes the queued requests, a shared transaction at a time,
// until none is left.
func (s *Store) writeShared() {
	g := &s.shared
	for {
		g.mu.Lock()
		n := min(len(g.queue), maxShared)
		g.inFlight = n
		if n == 0 {
			g.writing = false
			g.mu.Unlock()
			return
		}
		batch := slices.Clone(g.queue[:n])
		g.queue = slices.Delete(g.queue, 0, n)
		g.mu.Unlock()
		s.writeSharedBatch(batch)
	}
}

// writeSharedBatch writes batch in one transaction, again without each
// request that fails, and answers every request.
func (s *Store) writeSharedBatch(batch []*sharedReq) {
	for len(batch) > 0 {
		failed, failure := -1, error(nil)
		err := s.InTx(context.Background(), func(tx *Tx) error {
			for i, r := range batch {
				err := r.ctx.Err()
				if err == nil {
					err = runShared(r.fn, tx)
				}
				if err != nil {
					failed, failure = i, err
					return errSharedMember
				}
			}
			return nil
		})
		if failed >= 0 {
			batch[failed].done <- failure
			batch = slices.Delete(batch, failed, failed+1)
			continue
		}
		if err != nil && len(batch) > 1 {
			// A failure outside the requests' functions (the counts written
			// before the commit, the commit) may come from one of them: each
			// is written alone, and fails alone.
			for _, r := range batch {
				s.writeSharedBatch([]*sharedReq{r})
			}
			return
		}
		for _, r := range batch {
			r.done <- err
		}
		return
	}
}

// runShared runs a request's function, its panic an error of its own: it
// runs on the shared writer's goroutine, where a panic would stop the
// process instead of failing one request (net/http recovers a handler's).
func runShared(fn func(tx *Tx) error, tx *Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("store: panic in a shared transaction", "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("store: panic in a shared transaction: %v", p)
		}
	}()
	return fn(tx)
}
