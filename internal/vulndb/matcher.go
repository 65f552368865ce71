package vulndb

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulns/match"
)

// Defaults of Matcher.
const (
	DefaultMatchInterval = 2 * time.Second
	defaultBatch         = 500
	leaseDuration        = 2 * time.Minute
)

// Matcher keeps the stored vulnerability results up to date. Each replica
// has one; the store's 'match' lease lets one of them write at a time. Its
// index is built from the stored feeds and rebuilt when the feed version
// changes (each replica rebuilds its own).
type Matcher struct {
	Store *store.Store
	// Holder names this replica in the lease.
	Holder string
	// Interval is how often dirty endpoints are looked for (default 2 s):
	// the API reflects an inventory change within about that time.
	Interval time.Duration
	// Batch is how many endpoints one transaction writes (default 500).
	Batch int
	// Now is the clock of first detections (default time.Now).
	Now func() time.Time

	mu      sync.Mutex
	index   *match.Index
	version int64
	// leaseUntil is when the 'match' lease this matcher holds runs out
	// (zero when it holds none). A pass renews the lease only past half of
	// it, and keeps it between passes: claiming and releasing it on every
	// pass were two writes of every inventory change's recompute.
	leaseUntil time.Time
}

// MatchStats says what one pass did.
type MatchStats struct {
	Rebuilt   bool              `json:"rebuilt"`
	Full      bool              `json:"full"`
	Endpoints int               `json:"endpoints"`
	Findings  int               `json:"findings"`
	Changes   store.ResultStats `json:"changes"`
}

func (m *Matcher) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Matcher) batch() int {
	if m.Batch > 0 {
		return m.Batch
	}
	return defaultBatch
}

// Index answers the index of the current feeds and its feed version,
// rebuilding it when the feeds changed since it was built.
func (m *Matcher) Index(ctx context.Context) (*match.Index, int64, bool, error) {
	v, err := m.Store.VulnState(ctx, store.StateFeedVersion)
	if err != nil {
		return nil, 0, false, err
	}
	ix, rebuilt, err := m.indexAt(ctx, v)
	return ix, v, rebuilt, err
}

// indexAt answers the index of feed version v, rebuilt if it is of another.
func (m *Matcher) indexAt(ctx context.Context, v int64) (*match.Index, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.index != nil && m.version == v {
		return m.index, false, nil
	}
	b := match.NewBuilder()
	if err := m.Store.ScanFeeds(ctx, b.AddCVE, b.AddOSV); err != nil {
		return nil, false, err
	}
	if err := m.Store.ScanMSRCFixes(ctx, func(f store.MSRCFix) {
		b.AddMSRCFix(match.MSRCFix{CVEID: f.CVEID, ProductID: f.ProductID, ProductName: f.ProductName, KB: f.KB, FixedBuild: f.FixedBuild,
			Hotpatch: strings.Contains(strings.ToLower(f.SubType), "hotpatch"), Release: f.Release})
	}); err != nil {
		return nil, false, err
	}
	if err := m.Store.ScanOfficeBuilds(ctx, b.AddOfficeBuild); err != nil {
		return nil, false, err
	}
	m.index, m.version = b.Build(nil), v
	return m.index, true, nil
}

// holdLease takes or renews the 'match' lease when less than half of it
// is left; ok is false when another replica holds it.
func (m *Matcher) holdLease(ctx context.Context) (bool, error) {
	now := time.Now()
	if m.leaseUntil.Sub(now) > leaseDuration/2 {
		return true, nil
	}
	ok, err := m.Store.ClaimVulnLease(ctx, store.LeaseMatch, m.Holder, now, leaseDuration)
	if err != nil || !ok {
		m.leaseUntil = time.Time{}
		return false, err
	}
	m.leaseUntil = now.Add(leaseDuration)
	return true, nil
}

// ReleaseLease gives the 'match' lease up, so that another replica takes
// over at once (Run does it when it stops).
func (m *Matcher) ReleaseLease(ctx context.Context) error {
	m.leaseUntil = time.Time{}
	return m.Store.ReleaseVulnLease(ctx, store.LeaseMatch, m.Holder)
}

// RunOnce does one pass under the lease: a full recompute when the feeds
// changed since the results were computed, then the endpoints marked dirty.
// ok is false when another replica holds the lease. The lease is kept after
// the pass (see leaseUntil); ReleaseLease gives it up. RunOnce is not safe
// for concurrent use.
func (m *Matcher) RunOnce(ctx context.Context) (MatchStats, bool, error) {
	var st MatchStats
	ok, err := m.holdLease(ctx)
	if err != nil || !ok {
		return st, false, err
	}
	states, err := m.Store.VulnStates(ctx, store.StateFeedVersion, store.StateMatchedVersion)
	if err != nil {
		return st, true, err
	}
	version, matched := states[store.StateFeedVersion], states[store.StateMatchedVersion]
	ix, rebuilt, err := m.indexAt(ctx, version)
	if err != nil {
		return st, true, err
	}
	st.Rebuilt = rebuilt
	if matched != version {
		st.Full = true
		if err := m.recomputeAll(ctx, ix, &st); err != nil {
			return st, true, err
		}
		if err := m.Store.SetVulnState(ctx, store.StateMatchedVersion, version); err != nil {
			return st, true, err
		}
	}
	for {
		dirty, err := m.Store.DirtyEndpoints(ctx, m.batch())
		if err != nil {
			return st, true, err
		}
		if len(dirty) == 0 {
			return st, true, nil
		}
		ids := make([]string, len(dirty))
		byID := make(map[string]*store.DirtyEndpoint, len(dirty))
		for i := range dirty {
			ids[i] = dirty[i].ID
			byID[dirty[i].ID] = &dirty[i]
		}
		var results []store.MatchResult
		if ix.Rules() > 0 {
			// Without a feed nothing matches: the marks are only cleared,
			// without reading the inventories (a new fleet enrolling before
			// any feed is imported).
			if results, err = m.match(ctx, ix, ids, &st); err != nil {
				return st, true, err
			}
		}
		for i := range results {
			results[i].Dirty = byID[results[i].EndpointID]
			delete(byID, results[i].EndpointID)
		}
		// Endpoints deleted since they were marked: clear their marks.
		for _, d := range byID {
			results = append(results, store.MatchResult{EndpointID: d.ID, OrgID: d.OrgID, Dirty: d})
		}
		if err := m.save(ctx, results, &st); err != nil {
			return st, true, err
		}
		if len(dirty) < m.batch() {
			return st, true, nil
		}
		if ok, err := m.holdLease(ctx); err != nil || !ok {
			return st, ok, err
		}
	}
}

// recomputeAll matches every endpoint of every organization, in batches.
func (m *Matcher) recomputeAll(ctx context.Context, ix *match.Index, st *MatchStats) error {
	ids, err := m.Store.OrgEndpointIDs(ctx, "")
	if err != nil {
		return err
	}
	for start := 0; start < len(ids); start += m.batch() {
		end := min(start+m.batch(), len(ids))
		results, err := m.match(ctx, ix, ids[start:end], st)
		if err != nil {
			return err
		}
		if err := m.save(ctx, results, st); err != nil {
			return err
		}
		ok, err := m.holdLease(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return errLeaseLost
		}
	}
	return nil
}

// errLeaseLost stops a fleet recompute whose lease another replica took
// (this one stalled past it): that replica recomputes the fleet again.
var errLeaseLost = errors.New("vulndb: the match lease was taken over during a fleet recompute")

// match reads the endpoints' inventories and matches them on every core.
func (m *Matcher) match(ctx context.Context, ix *match.Index, ids []string, st *MatchStats) ([]store.MatchResult, error) {
	inputs, err := m.Store.MatchInputs(ctx, ids)
	if err != nil {
		return nil, err
	}
	results := make([]store.MatchResult, len(inputs))
	workers := min(runtime.GOMAXPROCS(0), len(inputs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(inputs); i += workers {
				in := inputs[i]
				results[i] = store.MatchResult{EndpointID: in.ID, OrgID: in.OrgID, Findings: ix.Match(in.Endpoint)}
			}
		})
	}
	wg.Wait()
	st.Endpoints += len(results)
	for _, r := range results {
		st.Findings += len(r.Findings)
	}
	return results, nil
}

func (m *Matcher) save(ctx context.Context, results []store.MatchResult, st *MatchStats) error {
	c, err := m.Store.SaveMatchResults(ctx, results, m.now())
	if err != nil {
		return err
	}
	st.Changes.Added += c.Added
	st.Changes.Removed += c.Removed
	st.Changes.Changed += c.Changed
	// What the missing updates of these endpoints fix, and so their
	// severity and risk, may have changed with the findings or the
	// inventory.
	byOrg := map[string][]string{}
	var orgs []string
	for _, r := range results {
		if r.OrgID == "" {
			continue
		}
		if _, ok := byOrg[r.OrgID]; !ok {
			orgs = append(orgs, r.OrgID)
		}
		byOrg[r.OrgID] = append(byOrg[r.OrgID], r.EndpointID)
	}
	for _, org := range orgs {
		if _, err := m.Store.RefreshUpdateRisk(ctx, org, byOrg[org]); err != nil {
			return err
		}
	}
	return nil
}

// MatchEndpoint recomputes one endpoint now (whatever its mark), under no
// lease: for tests and benchmarks of the per-endpoint path.
func (m *Matcher) MatchEndpoint(ctx context.Context, endpointID string) (MatchStats, error) {
	var st MatchStats
	ix, _, _, err := m.Index(ctx)
	if err != nil {
		return st, err
	}
	results, err := m.match(ctx, ix, []string{endpointID}, &st)
	if err != nil {
		return st, err
	}
	return st, m.save(ctx, results, &st)
}

// Run does a pass every Interval until ctx ends.
func (m *Matcher) Run(ctx context.Context) {
	interval := m.Interval
	if interval <= 0 {
		interval = DefaultMatchInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	defer func() {
		if err := m.ReleaseLease(context.WithoutCancel(ctx)); err != nil {
			slog.Warn("vulnerability matching: release lease", "err", err)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		st, _, err := m.RunOnce(ctx)
		if err != nil {
			if ctx.Err() == nil {
				slog.Warn("vulnerability matching", "err", err)
			}
			continue
		}
		if st.Full {
			slog.Info("vulnerabilities matched on the whole fleet", "endpoints", st.Endpoints, "findings", st.Findings,
				"added", st.Changes.Added, "removed", st.Changes.Removed)
		}
	}
}
