package store

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// counts are the shared counters a write transaction changes: install
// counts of software titles, endpoint counts of update keys, member counts
// of groups, uses of enrollment tokens. Many transactions change the same popular rows, so a
// transaction only collects its differences and applies them once, just
// before it commits, each kind in key order: on PostgreSQL the row locks
// are then taken late, briefly and in one order by every transaction, which
// is what lets inventories of one organization be stored concurrently
// without deadlocking (and each counter row gets one new version per
// transaction, not one per inventory).
type counts struct {
	titles   map[int64]int
	hosts    map[int64]int        // endpoints of a title
	versions map[titleVersion]int // endpoints of a title's version
	keys     map[[2]string]int    // organization, update key
	members  map[string]int       // group id
	// tokenUses are enrollments by enrollment token id, added to a slot
	// of the token's chosen at random (enroll_token_uses).
	tokenUses map[string]int
}

// titleVersion is a version of a software title.
type titleVersion struct {
	title   int64
	version string
}

func compareTitleVersion(a, b titleVersion) int {
	return cmp.Or(cmp.Compare(a.title, b.title), strings.Compare(a.version, b.version))
}

func (c counts) clone() counts {
	return counts{titles: maps.Clone(c.titles), hosts: maps.Clone(c.hosts), versions: maps.Clone(c.versions),
		keys: maps.Clone(c.keys), members: maps.Clone(c.members), tokenUses: maps.Clone(c.tokenUses)}
}

func (tx *Tx) countTitle(id int64, d int) {
	if tx.counts.titles == nil {
		tx.counts.titles = map[int64]int{}
	}
	tx.counts.titles[id] += d
}

func (tx *Tx) countTitleHost(id int64, d int) {
	if tx.counts.hosts == nil {
		tx.counts.hosts = map[int64]int{}
	}
	tx.counts.hosts[id] += d
}

func (tx *Tx) countVersion(v titleVersion, d int) {
	if tx.counts.versions == nil {
		tx.counts.versions = map[titleVersion]int{}
	}
	tx.counts.versions[v] += d
}

func (tx *Tx) countKey(orgID, key string, d int) {
	if tx.counts.keys == nil {
		tx.counts.keys = map[[2]string]int{}
	}
	tx.counts.keys[[2]string{orgID, key}] += d
}

func (tx *Tx) countMember(groupID string, d int) {
	tx.groupsChanged = true
	if tx.counts.members == nil {
		tx.counts.members = map[string]int{}
	}
	tx.counts.members[groupID] += d
}

func (tx *Tx) countTokenUse(tokenID string) {
	if tx.counts.tokenUses == nil {
		tx.counts.tokenUses = map[string]int{}
	}
	tx.counts.tokenUses[tokenID]++
}

// tokenUseSlots is how many counters an enrollment token's uses are spread
// over: enrollments with one token lock one slot each for the moment of
// their commit, rarely the same one.
const tokenUseSlots = 64

// comparePair orders (organization, name) keys.
func comparePair(a, b [2]string) int {
	return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1]))
}

// nonZero answers the keys of m whose difference is not zero, in order.
func nonZero[K cmp.Ordered](m map[K]int) []K {
	out := make([]K, 0, len(m))
	for k, d := range m {
		if d != 0 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// applyCounts writes the collected differences: titles (installs and
// hosts in one statement), then their versions, then update keys, then
// groups, then enrollment tokens' uses, each in key order, several rows
// per statement.
func (tx *Tx) applyCounts(ctx context.Context) error {
	ids := map[int64]int{}
	for id, d := range tx.counts.titles {
		ids[id] += abs(d)
	}
	for id, d := range tx.counts.hosts {
		ids[id] += abs(d)
	}
	var titles [][]any
	for _, id := range nonZero(ids) {
		titles = append(titles, []any{id, tx.counts.titles[id], tx.counts.hosts[id]})
	}
	if err := tx.execRows(ctx, "software title count", `UPDATE software_titles SET installs = installs + d.column2, hosts = hosts + d.column3
		FROM (VALUES %s) AS d WHERE software_titles.id = d.column1`, "(CAST(? AS BIGINT), CAST(? AS INTEGER), CAST(? AS INTEGER))", titles); err != nil {
		return err
	}
	versions := make([]titleVersion, 0, len(tx.counts.versions))
	for v, d := range tx.counts.versions {
		if d != 0 {
			versions = append(versions, v)
		}
	}
	slices.SortFunc(versions, compareTitleVersion)
	versionRows := make([][]any, len(versions))
	for i, v := range versions {
		versionRows[i] = []any{v.title, v.version, tx.counts.versions[v]}
	}
	// An upsert: a version's row is made by its first endpoint. WHERE true:
	// SQLite needs it to parse an upsert whose rows come from a SELECT.
	if err := tx.execRows(ctx, "software version count", `INSERT INTO software_versions (title_id, version_key, hosts)
		SELECT d.column1, d.column2, d.column3 FROM (VALUES %s) AS d WHERE true
		ON CONFLICT (title_id, version_key) DO UPDATE SET hosts = software_versions.hosts + excluded.hosts`,
		"(CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS INTEGER))", versionRows); err != nil {
		return err
	}
	keys := make([][2]string, 0, len(tx.counts.keys))
	for k, d := range tx.counts.keys {
		if d != 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, comparePair)
	keyRows := make([][]any, len(keys))
	for i, k := range keys {
		keyRows[i] = []any{k[0], k[1], tx.counts.keys[k]}
	}
	if err := tx.execRows(ctx, "update key count", `UPDATE update_keys SET endpoints = endpoints + d.column3 FROM (VALUES %s) AS d
		WHERE update_keys.org_id = d.column1 AND update_keys.key = d.column2`, "(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS INTEGER))", keyRows); err != nil {
		return err
	}
	var groups [][]any
	for _, id := range nonZero(tx.counts.members) {
		groups = append(groups, []any{id, tx.counts.members[id]})
	}
	if err := tx.execRows(ctx, "group member count", `UPDATE endpoint_groups SET members = members + d.column2 FROM (VALUES %s) AS d
		WHERE endpoint_groups.id = d.column1`, "(CAST(? AS TEXT), CAST(? AS INTEGER))", groups); err != nil {
		return err
	}
	var uses [][]any
	for _, id := range nonZero(tx.counts.tokenUses) {
		uses = append(uses, []any{id, rand.IntN(tokenUseSlots), tx.counts.tokenUses[id]})
	}
	if err := tx.execRows(ctx, "enroll token use count", `INSERT INTO enroll_token_uses (token_id, slot, uses)
		SELECT d.column1, d.column2, d.column3 FROM (VALUES %s) AS d WHERE true
		ON CONFLICT (token_id, slot) DO UPDATE SET uses = enroll_token_uses.uses + excluded.uses`,
		"(CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS BIGINT))", uses); err != nil {
		return err
	}
	tx.counts = counts{}
	return nil
}

func abs(d int) int {
	if d < 0 {
		return -d
	}
	return d
}

// maxTxAttempts bounds InTxRetry.
const maxTxAttempts = 5

// InTxRetry is InTx for the hot concurrent writers (inventory batches,
// check-in flushes, enrollments): on PostgreSQL a transaction the server
// aborted as a deadlock victim or a serialization failure is run again,
// after a short random pause, up to maxTxAttempts times. Counters and
// endpoint rows are locked in one order everywhere, so this is rare: it
// covers two transactions creating the same new software titles or update
// keys in different orders. fn must be safe to run again: it may not keep
// anything from an aborted attempt.
func (s *Store) InTxRetry(ctx context.Context, fn func(tx *Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.InTx(ctx, fn)
		if err == nil || attempt == maxTxAttempts || !retryable(err) {
			return err
		}
		pause := time.Duration(attempt) * time.Duration(5+rand.IntN(20)) * time.Millisecond
		slog.Warn("store: transaction aborted by a conflict, running it again", "attempt", attempt, "pause", pause, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// retryable tells whether PostgreSQL aborted the transaction for a
// conflict with another one (deadlock_detected, serialization_failure).
func retryable(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "40P01" || pg.Code == "40001")
}
