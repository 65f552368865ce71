package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/patchd/patchd/internal/inventory"
)

// Ingester stores inventories in batches: the inventories that arrive while
// one batch is written are written together in the next transaction, each
// in a savepoint of its own, so that one bad inventory fails alone. On
// SQLite's single writer this shares the cost of a commit (a third of the
// cost of one inventory) across a batch; an inventory is acknowledged only
// once its batch committed.
type Ingester struct {
	s    *Store
	reqs chan *ingestReq
	stop chan struct{}
	done chan struct{}
	once sync.Once

	// mu orders Submit and Close: nothing is queued after the stop.
	mu     sync.RWMutex
	closed bool
	// waiting counts the inventories submitted and not yet committed.
	waiting atomic.Int64
}

// Waiting answers how many inventories are queued or being written (the
// agents' uploads waiting for their answer).
func (g *Ingester) Waiting() int { return int(g.waiting.Load()) }

type ingestReq struct {
	inv *preparedInventory
	err chan error
}

// maxBatch bounds how many inventories share one transaction.
const maxBatch = 32

// NewIngester starts the batching writers; Close stops them. SQLite has
// one writer. On PostgreSQL two batches are written at once: a batch's
// writer waits on the database for most of its time, the database works
// on one batch while the replica prepares the next statement of the
// other, and batches take their locks in one order (see write), as the
// ingesters of several replicas already do.
func (s *Store) NewIngester() *Ingester {
	g := &Ingester{s: s, reqs: make(chan *ingestReq, 4*maxBatch), stop: make(chan struct{}), done: make(chan struct{})}
	writers := 1
	if s.engine == Postgres {
		writers = 2
	}
	var wg sync.WaitGroup
	for range writers {
		wg.Go(g.run)
	}
	go func() {
		wg.Wait()
		close(g.done)
	}()
	return g
}

// ErrIngesterClosed answers inventories submitted after Close.
var ErrIngesterClosed = errors.New("store: ingester closed")

// Submit stores an inventory (as ReplaceInventory does) and returns once it
// is committed, or with its own error.
func (g *Ingester) Submit(ctx context.Context, orgID, endpointID string, n inventory.Normalized, hash string, now time.Time) error {
	inv, err := prepareInventory(orgID, endpointID, n, hash, now)
	if err != nil {
		return err
	}
	r := &ingestReq{inv: inv, err: make(chan error, 1)}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return ErrIngesterClosed
	}
	select {
	case g.reqs <- r:
	case <-ctx.Done():
		g.mu.RUnlock()
		return ctx.Err()
	}
	g.mu.RUnlock()
	// Once queued, the inventory is written even if the caller goes away:
	// wait for the outcome so that an acknowledged write is a committed one.
	return <-r.err
}

// Close writes what is queued and stops the writer.
func (g *Ingester) Close() {
	g.once.Do(func() {
		g.mu.Lock()
		g.closed = true
		g.mu.Unlock()
		close(g.stop)
	})
	<-g.done
}

func (g *Ingester) run() {
	for {
		var batch []*ingestReq
		select {
		case r := <-g.reqs:
			batch = append(batch, r)
		case <-g.stop:
			// Drain what was queued before the stop.
			for {
				select {
				case r := <-g.reqs:
					g.write([]*ingestReq{r})
				default:
					return
				}
			}
		}
	collect:
		for len(batch) < maxBatch {
			select {
			case r := <-g.reqs:
				batch = append(batch, r)
			default:
				break collect
			}
		}
		g.write(batch)
	}
}

// write stores a batch in one transaction, one savepoint per inventory.
func (g *Ingester) write(batch []*ingestReq) {
	ctx := context.Background()
	results := make([]error, len(batch))
	// Locks in one order everywhere, so that replicas' ingesters, check-in
	// flushes and enrollments on PostgreSQL run side by side instead of
	// deadlocking: the organizations' group locks first, shared (the
	// membership hooks would take them after the first inventory's rows
	// otherwise), then the endpoint rows by id, as RecordCheckins updates
	// them, and the shared counters last, in key order (see counts).
	order := make([]int, len(batch))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(batch[a].inv.endpointID, batch[b].inv.endpointID) })
	orgs := make([]string, 0, 1)
	for _, r := range batch {
		orgs = append(orgs, r.inv.orgID)
	}
	slices.Sort(orgs)
	orgs = slices.Compact(orgs)
	invs := make([]*preparedInventory, len(batch))
	for i, r := range batch {
		invs[i] = r.inv
	}
	err := g.s.ensureCatalog(ctx, invs)
	if err == nil {
		// First without savepoints (each page an inventory changes would
		// be copied to its savepoint's journal first, work the single
		// writer does for nothing while a fleet enrolls; SQLite's own
		// statement journals stay); if
		// an inventory fails, that transaction is rolled back and the
		// batch written again, one savepoint each.
		err = g.s.InTxRetry(ctx, func(tx *Tx) error {
			return g.writeBatch(ctx, tx, batch, order, orgs, results, false)
		})
		if errors.Is(err, errInventoryFailed) {
			err = nil
			if len(batch) > 1 {
				err = g.s.InTxRetry(ctx, func(tx *Tx) error {
					return g.writeBatch(ctx, tx, batch, order, orgs, results, true)
				})
			}
		}
	}
	if err != nil && len(batch) > 1 && rowFault(err) {
		// What fails the whole batch outside an inventory's savepoint (the
		// catalog of new titles and keys is written for the batch) may come
		// from one inventory: each is written alone, and fails alone.
		for _, r := range batch {
			g.write([]*ingestReq{r})
		}
		return
	}
	for i, r := range batch {
		if err != nil {
			r.err <- err
		} else {
			r.err <- results[i]
		}
	}
}

// errInventoryFailed ends a batch's transaction written without
// savepoints when one of its inventories fails (its error in results).
var errInventoryFailed = errors.New("store: an inventory of the batch failed")

// writeBatch stores the batch's inventories in tx and keeps each one's own
// error in results. With savepoints, each inventory is written in one and
// a failing one is undone alone; without, the first failure ends the
// transaction with errInventoryFailed.
func (g *Ingester) writeBatch(ctx context.Context, tx *Tx, batch []*ingestReq, order []int, orgs []string, results []error, savepoints bool) error {
	clear(results)
	for _, org := range orgs {
		if err := tx.shareGroups(ctx, org); err != nil {
			return err
		}
	}
	for _, i := range order {
		r := batch[i]
		if !savepoints {
			if err := tx.replaceInventory(ctx, r.inv); err != nil {
				if retryable(err) {
					return err
				}
				results[i] = err
				return errInventoryFailed
			}
			continue
		}
		if _, err := tx.tx.ExecContext(ctx, "SAVEPOINT inventory"); err != nil {
			return fmt.Errorf("store: savepoint: %w", err)
		}
		titles, keys, counts := maps.Clone(tx.newTitles), maps.Clone(tx.newKeys), tx.counts.clone()
		if err := tx.replaceInventory(ctx, r.inv); err != nil {
			if retryable(err) {
				return err // the whole batch again (InTxRetry)
			}
			results[i] = err
			tx.newTitles, tx.newKeys, tx.counts = titles, keys, counts
			if _, err := tx.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT inventory"); err != nil {
				return fmt.Errorf("store: rollback to savepoint: %w", err)
			}
		}
		if _, err := tx.tx.ExecContext(ctx, "RELEASE SAVEPOINT inventory"); err != nil {
			return fmt.Errorf("store: release savepoint: %w", err)
		}
	}
	return nil
}
