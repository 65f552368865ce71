package store

import (
	"context"
	"fmt"
	"github.com/patchd/patchd/internal/dberr"
	"sync"
	"time"
)

// writeHealth remembers how this store's writes went, for readiness: a
// full disk or a read-only database fails every write while a ping (and
// every read) still succeeds.
type writeHealth struct {
	mu      sync.Mutex
	okAt    time.Time // the last write that committed
	failAt  time.Time // the last write the database could not take (dberr.IsUnavailable)
	failErr error
	// probe is the last write probe's outcome, shared by the readiness
	// checks that come within ProbeEvery of it.
	probeAt  time.Time
	probeErr error
	probing  sync.Mutex
}

// noteWrite records a write's outcome: a commit, or a failure of the
// database (a refusal of the request's data, such as a constraint, says
// nothing about the database and is not recorded).
func (s *Store) noteWrite(err error) {
	h := &s.health
	switch {
	case err == nil:
		h.mu.Lock()
		h.okAt = time.Now()
		h.mu.Unlock()
	case dberr.IsUnavailable(err):
		h.mu.Lock()
		h.failAt, h.failErr = time.Now(), err
		h.mu.Unlock()
	}
}

// ProbeEvery bounds how often Writable writes its probe row: readiness
// checks that come sooner share the last probe's answer, so a flood of
// /readyz costs at most one small write per interval.
const ProbeEvery = 2 * time.Second

// Writable tells whether the database takes writes now. A write that
// committed within recent, with no failure of the database since, answers
// yes at once (under load there is nothing to probe, and the probe would
// queue behind the writes it checks); otherwise Writable writes the probe
// row (at most once per ProbeEvery) and answers its outcome.
func (s *Store) Writable(ctx context.Context, recent time.Duration) error {
	h := &s.health
	now := time.Now()
	h.mu.Lock()
	fresh := !h.okAt.IsZero() && now.Sub(h.okAt) < recent && !h.failAt.After(h.okAt)
	h.mu.Unlock()
	if fresh {
		return nil
	}
	h.probing.Lock()
	defer h.probing.Unlock()
	h.mu.Lock()
	if !h.probeAt.IsZero() && time.Since(h.probeAt) < ProbeEvery {
		err := h.probeErr
		h.mu.Unlock()
		return err
	}
	h.mu.Unlock()
	err := s.InTx(ctx, func(tx *Tx) error {
		_, err := tx.exec(ctx, `UPDATE write_probe SET at = ? WHERE id = 1`, millis(now))
		return err
	})
	if err != nil {
		err = fmt.Errorf("store: write probe: %w", err)
	}
	h.mu.Lock()
	h.probeAt, h.probeErr = time.Now(), err
	h.mu.Unlock()
	return err
}
