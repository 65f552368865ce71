package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// The organization's catalogs, software titles and update keys, gain a row
// the first time any endpoint reports a name or key. On PostgreSQL two
// transactions creating the same new rows in different orders wait for each
// other (the second insert of a key waits for the first transaction's
// outcome) and one is aborted as a deadlock victim; at the start of a fleet
// every inventory batch of every replica creates hundreds of them. So a
// batch first creates the rows it lacks in a short transaction of its own,
// in key order, and commits it: the inventories' transaction then finds
// them all and creates nothing.

// catalogCache remembers the catalog rows known to exist (software titles
// with their ids, update keys) by organization and name. Catalog rows are
// never deleted (their counts may fall to zero), so an entry stays right on
// every replica; a transaction's new rows are added once it commits (a
// rolled-back row must not stay in the cache).
type catalogCache[V any] struct {
	mu sync.RWMutex
	m  map[[2]string]V
}

func newCatalogCache[V any]() *catalogCache[V] { return &catalogCache[V]{m: map[[2]string]V{}} }

func (c *catalogCache[V]) get(k [2]string) (V, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[k]
	return v, ok
}

// publish adds a committed transaction's rows.
func (c *catalogCache[V]) publish(rows map[[2]string]V) {
	if len(rows) == 0 {
		return
	}
	c.mu.Lock()
	maps.Copy(c.m, rows)
	c.mu.Unlock()
}

// updateKeys remembers the update keys known to exist.
var updateKeys = newCatalogCache[bool]()

// createUpdateKey adds the update to the organization's catalog of keys
// unless it is there; created says this call added it.
func (tx *Tx) createUpdateKey(ctx context.Context, orgID string, r updRow, now time.Time) (created bool, err error) {
	if _, ok := updateKeys.get([2]string{orgID, r.key}); ok {
		return false, nil
	}
	res, err := tx.exec(ctx, `INSERT INTO update_keys (org_id, key, title, kb, severity, vendor_severity, source, categories, winget_id, latest_version,
		reboot_required, release_date, first_seen_at, endpoints) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
		ON CONFLICT (org_id, key) DO NOTHING`,
		orgID, r.key, r.title, r.kb, r.severity, r.severity, r.source, r.categories, r.winget, r.latest, r.reboot, r.release, millis(now))
	if err != nil {
		return false, fmt.Errorf("store: update key: %w", err)
	}
	n, _ := res.RowsAffected()
	if tx.newKeys == nil {
		tx.newKeys = map[[2]string]bool{}
	}
	tx.newKeys[[2]string{orgID, r.key}] = true
	return n > 0, nil
}

// ensureCatalog creates the software titles and update keys the inventories
// need and the catalogs lack, titles then keys, each in key order, in a
// transaction committed before the inventories are stored. New update keys
// get the organization's approval policy there (afterNewUpdateKeys).
func (s *Store) ensureCatalog(ctx context.Context, invs []*preparedInventory) error {
	type keyOf struct {
		org string
		row updRow
		now time.Time
	}
	var names [][2]string
	publishers := map[[2]string]*string{} // the first reported
	keys := map[[2]string]keyOf{}
	for _, inv := range invs {
		for _, sw := range inv.n.Doc.Software {
			k := [2]string{inv.orgID, sw.Name}
			if _, ok := titles.get(k); !ok {
				names = append(names, k)
				if p := publishers[k]; p == nil || *p == "" {
					publishers[k] = sw.Publisher
				}
			}
		}
		for _, u := range inv.n.Updates {
			k := [2]string{inv.orgID, u.Key}
			if _, ok := keys[k]; ok {
				continue
			}
			if _, ok := updateKeys.get(k); !ok {
				keys[k] = keyOf{org: inv.orgID, row: updRowOf(u), now: inv.now}
			}
		}
	}
	if len(names) == 0 && len(keys) == 0 {
		return nil
	}
	slices.SortFunc(names, comparePair)
	names = slices.Compact(names)
	order := slices.SortedFunc(maps.Keys(keys), comparePair)
	return s.InTxRetry(ctx, func(tx *Tx) error {
		for _, n := range names {
			if _, err := tx.titleID(ctx, n[0], n[1], publishers[n]); err != nil {
				return err
			}
		}
		fresh := map[string][]newUpdateKey{}
		at := map[string]time.Time{}
		var orgs []string
		for _, k := range order {
			ko := keys[k]
			created, err := tx.createUpdateKey(ctx, ko.org, ko.row, ko.now)
			if err != nil {
				return err
			}
			if created {
				if len(fresh[ko.org]) == 0 {
					orgs = append(orgs, ko.org)
					at[ko.org] = ko.now
				}
				fresh[ko.org] = append(fresh[ko.org], newUpdateKey{key: ko.row.key, severity: ko.row.severity, source: ko.row.source, title: ko.row.title})
			}
		}
		for _, org := range orgs {
			if err := tx.afterNewUpdateKeys(ctx, org, fresh[org], at[org]); err != nil {
				return err
			}
		}
		return nil
	})
}
