package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
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

// keyCache remembers the update keys known to exist, by organization. Keys
// are never deleted, so an entry stays right on every replica.
type keyCache struct {
	mu   sync.RWMutex
	keys map[[2]string]bool
}

var updateKeys = keyCache{keys: map[[2]string]bool{}}

func (c *keyCache) has(orgID, key string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.keys[[2]string{orgID, key}]
}

// createUpdateKey adds the update to the organization's catalog of keys
// unless it is there; created says this call added it.
func (tx *Tx) createUpdateKey(ctx context.Context, orgID string, r updRow, now time.Time) (created bool, err error) {
	if updateKeys.has(orgID, r.key) {
		return false, nil
	}
	res, err := tx.exec(ctx, `INSERT INTO update_keys (org_id, key, title, kb, severity, source, categories, winget_id, latest_version,
		reboot_required, release_date, first_seen_at, endpoints) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
		ON CONFLICT (org_id, key) DO NOTHING`,
		orgID, r.key, r.title, r.kb, r.severity, r.source, r.categories, r.winget, r.latest, r.reboot, r.release, millis(now))
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

// publishKeys adds the keys a committed transaction created or found to
// the cache.
func (tx *Tx) publishKeys() {
	if len(tx.newKeys) == 0 {
		return
	}
	updateKeys.mu.Lock()
	for k := range tx.newKeys {
		updateKeys.keys[k] = true
	}
	updateKeys.mu.Unlock()
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
	keys := map[[2]string]keyOf{}
	titles.mu.RLock()
	for _, inv := range invs {
		for _, sw := range inv.n.Doc.Software {
			if _, ok := titles.ids[[2]string{inv.orgID, sw.Name}]; !ok {
				names = append(names, [2]string{inv.orgID, sw.Name})
			}
		}
	}
	titles.mu.RUnlock()
	for _, inv := range invs {
		for _, u := range inv.n.Updates {
			k := [2]string{inv.orgID, u.Key}
			if _, ok := keys[k]; !ok && !updateKeys.has(inv.orgID, u.Key) {
				keys[k] = keyOf{org: inv.orgID, row: updRowOf(u), now: inv.now}
			}
		}
	}
	if len(names) == 0 && len(keys) == 0 {
		return nil
	}
	byKey := func(a, b [2]string) int { return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1])) }
	slices.SortFunc(names, byKey)
	names = slices.Compact(names)
	order := slices.SortedFunc(func(yield func([2]string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}, byKey)
	return s.InTxRetry(ctx, func(tx *Tx) error {
		for _, n := range names {
			if _, err := tx.titleID(ctx, n[0], n[1]); err != nil {
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
