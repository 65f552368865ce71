package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/updates"
	"github.com/patchd/patchd/internal/valid"
)

// ActorPolicy is the Audit Trail actor of automatic approval decisions.
const ActorPolicy = "policy"

// UpdateQuery filters the updates list. Severity and Sources are
// attributes of the update key (its catalog values).
type UpdateQuery struct {
	OrgID      string
	EndpointID string
	Severity   string
	Sources    []string
	// Sort is "key" (the default: by key, then endpoint) or "risk" (the
	// key's risk score, highest first, then key and endpoint).
	Sort   string
	Limit  int
	Offset int
}

// UpdateSorts are the orders of the updates list.
var UpdateSorts = []string{"key", "risk"}

// keyOrder is the ORDER BY of the query's keys (update_keys k).
func (q UpdateQuery) keyOrder() string {
	if q.Sort == "risk" {
		return `k.risk DESC, k.key`
	}
	return `k.key`
}

// updateColumns read one row of the list; severity and source are the
// key's catalog values, so that a row always agrees with the filter.
const updateColumns = `eu.id, eu.key, eu.endpoint_id, COALESCE(e.display_name, e.hostname), eu.title, eu.kb, k.severity, k.source, eu.categories,
	eu.winget_id, eu.installed_version, eu.latest_version, eu.reboot_required, eu.release_date, eu.detected_at, COALESCE(a.status, 'NEW')`

// keyRowColumns are updateColumns with the key's attributes given as
// parameters (severity, source, approval), for the rows of one key.
const keyRowColumns = `eu.id, eu.key, eu.endpoint_id, COALESCE(e.display_name, e.hostname), eu.title, eu.kb, CAST(? AS TEXT), CAST(? AS TEXT),
	eu.categories, eu.winget_id, eu.installed_version, eu.latest_version, eu.reboot_required, eu.release_date, eu.detected_at, CAST(? AS TEXT)`

// keyAttrs is a catalog key with what its rows show of it.
type keyAttrs struct{ key, severity, source, approval string }

const updateFrom = ` FROM endpoint_updates eu JOIN endpoints e ON e.id = eu.endpoint_id
	JOIN update_keys k ON k.org_id = eu.org_id AND k.key = eu.key
	LEFT JOIN update_approvals a ON a.org_id = eu.org_id AND a.key = eu.key`

func scanUpdate(rows rowScanner) (apiv1.Update, error) {
	var u apiv1.Update
	var kb, winget, installed, latest sql.NullString
	var cats string
	var release sql.NullInt64
	var detected int64
	if err := rows.Scan(&u.ID, &u.Key, &u.EndpointID, &u.Endpoint, &u.Title, &kb, &u.Severity, &u.Source, &cats, &winget, &installed, &latest,
		&u.RebootRequired, &release, &detected, &u.Approval); err != nil {
		return u, err
	}
	u.KB, u.WingetID, u.InstalledVersion, u.LatestVersion = nullString(kb), nullString(winget), nullString(installed), nullString(latest)
	u.ReleaseDate = nullTime(release)
	d := fromMillis(detected)
	u.DetectedAt = &d
	u.Categories, u.CVEs = []string{}, []string{}
	if err := json.Unmarshal([]byte(cats), &u.Categories); err != nil {
		return u, fmt.Errorf("categories: %w", err)
	}
	if u.Categories == nil {
		u.Categories = []string{}
	}
	return u, nil
}

// keyFilter is the SQL condition on update_keys k for the query's severity
// and sources.
func (q UpdateQuery) keyFilter() (string, []any) {
	var where string
	var args []any
	if q.Severity != "" {
		where += ` AND k.severity = ?`
		args = append(args, q.Severity)
	}
	if len(q.Sources) > 0 {
		where += ` AND k.source IN (?` + strings.Repeat(", ?", len(q.Sources)-1) + `)`
		for _, src := range q.Sources {
			args = append(args, src)
		}
	}
	return where, args
}

// ListUpdates pages the missing updates, one row per endpoint × update,
// ordered by key then endpoint. Filters apply before paging, in the query:
// severity and source select entries of the organization's key catalog,
// whose endpoint counts give the total and the page's place without a scan
// of every row; an endpoint's rows are few and are read directly.
func (s *Store) ListUpdates(ctx context.Context, q UpdateQuery) ([]apiv1.Update, int, error) {
	out := make([]apiv1.Update, 0, min(q.Limit, 500))
	total := 0
	keyWhere, keyArgs := q.keyFilter()
	err := s.InReadTx(ctx, func(r *ReadTx) error {
		if q.EndpointID != "" {
			args := append([]any{q.OrgID, q.EndpointID}, keyArgs...)
			if err := r.queryRow(ctx, `SELECT COUNT(*) FROM endpoint_updates eu JOIN update_keys k ON k.org_id = eu.org_id AND k.key = eu.key
				WHERE eu.org_id = ? AND eu.endpoint_id = ?`+keyWhere, args...).Scan(&total); err != nil {
				return fmt.Errorf("store: count updates: %w", err)
			}
			rows, err := r.query(ctx, `SELECT `+updateColumns+updateFrom+` WHERE eu.org_id = ? AND eu.endpoint_id = ?`+keyWhere+`
				ORDER BY `+q.keyOrder()+` LIMIT ? OFFSET ?`, append(args, q.Limit, q.Offset)...)
			if err := appendRows(&out, rows, err, scanUpdate); err != nil {
				return fmt.Errorf("store: list updates: %w", err)
			}
			return r.fillAllUpdateCVEs(ctx, q.OrgID, out)
		}
		// The key's severity, source and approval are read once here and
		// given to its rows, instead of being joined on every row.
		rows, err := r.query(ctx, `SELECT k.key, k.endpoints, k.severity, k.source, COALESCE(a.status, 'NEW') FROM update_keys k
			LEFT JOIN update_approvals a ON a.org_id = k.org_id AND a.key = k.key
			WHERE k.org_id = ? AND k.endpoints > 0`+keyWhere+` ORDER BY `+q.keyOrder(), append([]any{q.OrgID}, keyArgs...)...)
		var entries []countedKey[keyAttrs]
		if err := eachRow(rows, err, func(row *sql.Rows) error {
			var e countedKey[keyAttrs]
			if err := row.Scan(&e.key.key, &e.n, &e.key.severity, &e.key.source, &e.key.approval); err != nil {
				return err
			}
			entries = append(entries, e)
			return nil
		}); err != nil {
			return fmt.Errorf("store: update keys: %w", err)
		}
		start, local, sum := window(entries, q.Offset)
		total = sum
		for i := start; i < len(entries) && len(out) < q.Limit; i++ {
			k := entries[i].key
			rows, err := r.query(ctx, `SELECT `+keyRowColumns+` FROM endpoint_updates eu JOIN endpoints e ON e.id = eu.endpoint_id
				WHERE eu.org_id = ? AND eu.key = ? ORDER BY eu.endpoint_id LIMIT ? OFFSET ?`,
				k.severity, k.source, k.approval, q.OrgID, k.key, q.Limit-len(out), local)
			if err := appendRows(&out, rows, err, scanUpdate); err != nil {
				return fmt.Errorf("store: list updates: %w", err)
			}
			local = 0
		}
		return r.fillAllUpdateCVEs(ctx, q.OrgID, out)
	})
	return out, total, err
}

// ApprovalInput is one key of an approval request.
type ApprovalInput struct {
	Key   string
	Title string
}

// ApprovalOutcome says what an approval request did.
type ApprovalOutcome struct {
	// Keys are the keys the decisions were stored (or deleted) under.
	Keys []string
	// Changed counts decisions written (an unchanged one is not), or for
	// NEW the decisions deleted.
	Changed int
	// DeclinedOlder lists the older versions declined by the
	// organization's decline-older setting.
	DeclinedOlder []string
}

// catalogKey is a key of the organization's catalog with its source.
type catalogKey struct {
	key, source, title string
}

// resolveKey finds the key the updates list shows for a key spelled by a
// client: the catalog key equal to it case-insensitively (raw, then
// normalised); ok is false when the catalog does not know it.
func (tx *Tx) resolveKey(ctx context.Context, orgID, raw string, k updates.ApprovalKey) (catalogKey, bool, error) {
	for _, spelling := range []string{strings.TrimSpace(raw), k.Normalized} {
		var c catalogKey
		err := tx.queryRow(ctx, `SELECT key, source, title FROM update_keys WHERE org_id = ? AND lower(key) = lower(?) ORDER BY key LIMIT 1`,
			orgID, spelling).Scan(&c.key, &c.source, &c.title)
		if err == nil {
			return c, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return c, false, fmt.Errorf("store: resolve update key: %w", err)
		}
	}
	return catalogKey{}, false, nil
}

// knownProduct tells whether the catalog holds third-party keys of the
// product id (so a key spelled without @<version> is a third-party key
// that lacks its version).
func (tx *Tx) knownProduct(ctx context.Context, orgID, product string) (bool, error) {
	var n int
	err := tx.queryRow(ctx, `SELECT COUNT(*) FROM update_keys WHERE org_id = ? AND source = ? AND lower(key) LIKE ? ESCAPE '\'`,
		orgID, updates.SourceApps, likePrefix(product)+"@%").Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: known product: %w", err)
	}
	return n > 0, nil
}

func likePrefix(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.ToLower(s))
}

// SetApprovals stores (APPROVED, DECLINED) or deletes (NEW) the decisions
// of update keys, in one transaction with its audit entry. Each key is
// stored under the key the updates list shows for it; a key the catalog
// does not know yet is stored as normalised. APPROVED and DECLINED refuse
// a third-party key without its @<version> with a validation error, and
// then nothing is stored.
func (s *Store) SetApprovals(ctx context.Context, e *AuditEntry, orgID, status string, keys []ApprovalInput, now time.Time) (ApprovalOutcome, error) {
	var out ApprovalOutcome
	err := s.Audited(ctx, e, func(tx *Tx) error {
		out = ApprovalOutcome{}
		type resolved struct {
			key, title string
			thirdParty bool
		}
		list := make([]resolved, 0, len(keys))
		var errs valid.Errors
		for i, in := range keys {
			field := fmt.Sprintf("keys[%d].key", i)
			k, err := updates.ParseApprovalKey(in.Key)
			if err != nil {
				errs.Add(field, "is required")
				continue
			}
			c, known, err := tx.resolveKey(ctx, orgID, in.Key, k)
			if err != nil {
				return err
			}
			r := resolved{key: k.Normalized, title: in.Title}
			if known {
				r.key, r.thirdParty = c.key, updates.ThirdParty(c.source)
				if r.title == "" {
					r.title = c.title
				}
			} else {
				r.thirdParty = k.Kind == updates.KindThirdParty
				if !r.thirdParty && k.MaybeThirdParty {
					if r.thirdParty, err = tx.knownProduct(ctx, orgID, k.Product); err != nil {
						return err
					}
					if !r.thirdParty && status != updates.StatusNew {
						// Shaped like a winget id (Publisher.Package):
						// most likely an application without its version.
						r.thirdParty = true
					}
				}
			}
			if status != updates.StatusNew && r.thirdParty {
				if _, _, ok := updates.SplitThirdParty(r.key); !ok {
					errs.Add(field, "a third-party key must end in @<version> (for example Mozilla.Firefox@133.0.3); %q has none", in.Key)
					continue
				}
			}
			list = append(list, r)
		}
		if err := errs.Err(); err != nil {
			return err
		}
		by := e.Actor
		for _, r := range list {
			out.Keys = append(out.Keys, r.key)
			if status == updates.StatusNew {
				res, err := tx.exec(ctx, `DELETE FROM update_approvals WHERE org_id = ? AND key = ?`, orgID, r.key)
				if err != nil {
					return fmt.Errorf("store: reset approval: %w", err)
				}
				n, _ := res.RowsAffected()
				out.Changed += int(n)
				continue
			}
			changed, err := tx.decide(ctx, orgID, r.key, status, r.title, by, now, true)
			if err != nil {
				return err
			}
			if changed {
				out.Changed++
			}
			if status == updates.StatusApproved && r.thirdParty {
				declined, err := tx.declineOlderIfSet(ctx, orgID, r.key, by, now)
				if err != nil {
					return err
				}
				out.DeclinedOlder = append(out.DeclinedOlder, declined...)
			}
		}
		summary := map[string]any{"status": status, "keys": out.Keys, "changed": out.Changed}
		if len(out.DeclinedOlder) > 0 {
			summary["declinedOlder"] = out.DeclinedOlder
		}
		e.Summary = summary
		return nil
	})
	return out, err
}

// decide stores a decision under key. With overwrite unset an existing
// decision is kept. It answers whether anything changed.
func (tx *Tx) decide(ctx context.Context, orgID, key, status, title, by string, now time.Time, overwrite bool) (bool, error) {
	var current string
	err := tx.queryRow(ctx, `SELECT status FROM update_approvals WHERE org_id = ? AND key = ?`, orgID, key).Scan(&current)
	switch {
	case err == nil && (current == status || !overwrite):
		return false, nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return false, fmt.Errorf("store: read approval: %w", err)
	}
	var t any
	if title != "" {
		t = title
	}
	if _, err := tx.exec(ctx, `INSERT INTO update_approvals (org_id, key, status, title, decided_at, decided_by) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (org_id, key) DO UPDATE SET status = excluded.status, title = COALESCE(excluded.title, update_approvals.title),
		decided_at = excluded.decided_at, decided_by = excluded.decided_by`, orgID, key, status, t, millis(now), by); err != nil {
		return false, fmt.Errorf("store: write approval: %w", err)
	}
	return true, nil
}

// declineOlderIfSet declines the versions of a third-party product older
// than the approved key, when the organization asks for it; it answers the
// keys it declined.
func (tx *Tx) declineOlderIfSet(ctx context.Context, orgID, approvedKey, by string, now time.Time) ([]string, error) {
	on, err := tx.declineOlder(ctx, orgID)
	if err != nil || !on {
		return nil, err
	}
	product, ver, ok := updates.SplitThirdParty(approvedKey)
	if !ok {
		return nil, nil
	}
	candidates := map[string]bool{}
	for _, q := range []string{
		`SELECT key FROM update_keys WHERE org_id = ? AND lower(key) LIKE ? ESCAPE '\'`,
		`SELECT key FROM update_approvals WHERE org_id = ? AND lower(key) LIKE ? ESCAPE '\' AND status <> 'DECLINED'`,
	} {
		rows, err := tx.query(ctx, q, orgID, likePrefix(product)+"@%")
		keys, err := scanRows(rows, err, scanString)
		if err != nil {
			return nil, fmt.Errorf("store: older versions: %w", err)
		}
		for _, k := range keys {
			candidates[k] = true
		}
	}
	var keys []string
	for k := range candidates {
		p, v, ok := updates.SplitThirdParty(k)
		if ok && strings.EqualFold(p, product) && updates.CompareVersions(v, ver) < 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var declined []string
	for _, k := range keys {
		changed, err := tx.decide(ctx, orgID, k, updates.StatusDeclined, "", by, now, true)
		if err != nil {
			return nil, err
		}
		if changed {
			declined = append(declined, k)
		}
	}
	return declined, nil
}

func (tx *Tx) declineOlder(ctx context.Context, orgID string) (bool, error) {
	var on bool
	err := tx.queryRow(ctx, `SELECT decline_older FROM approval_settings WHERE org_id = ?`, orgID).Scan(&on)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("store: approval settings: %w", err)
	}
	return on, nil
}

// newUpdateKey is a key that an inventory brought into the organization's
// catalog for the first time.
type newUpdateKey struct {
	key, severity, source, title string
}

// afterNewUpdateKeys runs in the inventory's transaction for the keys it
// added to the catalog: a decision stored earlier under another spelling
// moves to the catalog's key, the automatic approval policy approves the
// key (or schedules it, with a delay), and with decline-older a version
// older than an approved one is declined. It costs nothing when no key is
// new, which is the common case once a fleet is known.
func (tx *Tx) afterNewUpdateKeys(ctx context.Context, orgID string, fresh []newUpdateKey, now time.Time) error {
	if len(fresh) == 0 {
		return nil
	}
	for _, k := range fresh {
		if _, err := tx.exec(ctx, `UPDATE update_approvals SET key = ? WHERE org_id = ? AND lower(key) = lower(?) AND key <> ?
			AND NOT EXISTS (SELECT 1 FROM update_approvals x WHERE x.org_id = ? AND x.key = ?)`, k.key, orgID, k.key, k.key, orgID, k.key); err != nil {
			return fmt.Errorf("store: adopt approval: %w", err)
		}
	}
	rules, err := tx.policyRules(ctx, orgID)
	if err != nil {
		return err
	}
	declineOlder, err := tx.declineOlder(ctx, orgID)
	if err != nil {
		return err
	}
	var approved, declined []string
	for _, k := range fresh {
		days, ok := updates.Delay(rules, k.severity, k.source)
		switch {
		case ok && days == 0:
			changed, err := tx.decide(ctx, orgID, k.key, updates.StatusApproved, k.title, ActorPolicy, now, false)
			if err != nil {
				return err
			}
			if changed {
				approved = append(approved, k.key)
				if updates.ThirdParty(k.source) {
					older, err := tx.declineOlderIfSet(ctx, orgID, k.key, ActorPolicy, now)
					if err != nil {
						return err
					}
					declined = append(declined, older...)
				}
				continue
			}
		case ok:
			if _, err := tx.exec(ctx, `UPDATE update_keys SET auto_due_at = ? WHERE org_id = ? AND key = ?`,
				millis(now.AddDate(0, 0, days)), orgID, k.key); err != nil {
				return fmt.Errorf("store: schedule approval: %w", err)
			}
		}
		if declineOlder && updates.ThirdParty(k.source) {
			newer, err := tx.newerApproved(ctx, orgID, k.key)
			if err != nil {
				return err
			}
			if newer {
				changed, err := tx.decide(ctx, orgID, k.key, updates.StatusDeclined, k.title, ActorPolicy, now, false)
				if err != nil {
					return err
				}
				if changed {
					declined = append(declined, k.key)
				}
			}
		}
	}
	return tx.auditPolicy(ctx, orgID, approved, declined, now)
}

// newerApproved tells whether a newer version of a third-party key's
// product is approved.
func (tx *Tx) newerApproved(ctx context.Context, orgID, key string) (bool, error) {
	product, ver, ok := updates.SplitThirdParty(key)
	if !ok {
		return false, nil
	}
	rows, err := tx.query(ctx, `SELECT key FROM update_approvals WHERE org_id = ? AND status = 'APPROVED' AND lower(key) LIKE ? ESCAPE '\'`,
		orgID, likePrefix(product)+"@%")
	newer := false
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		k, err := scanString(r)
		if err != nil {
			return err
		}
		if p, v, ok := updates.SplitThirdParty(k); ok && strings.EqualFold(p, product) && updates.CompareVersions(v, ver) > 0 {
			newer = true
			return errStopRows
		}
		return nil
	}); err != nil {
		return false, fmt.Errorf("store: newer approved: %w", err)
	}
	return newer, nil
}

func (tx *Tx) auditPolicy(ctx context.Context, orgID string, approved, declined []string, now time.Time) error {
	if len(approved) == 0 && len(declined) == 0 {
		return nil
	}
	summary := map[string]any{}
	if len(approved) > 0 {
		summary["approved"] = approved
	}
	if len(declined) > 0 {
		summary["declined"] = declined
	}
	return tx.insertAudit(ctx, &AuditEntry{OrgID: orgID, At: now.UTC(), Actor: ActorPolicy, Action: "update.auto_approve", TargetType: "update", Summary: summary})
}

// ApplyDueApprovals approves the keys whose delayed automatic approval has
// fallen due, on every organization; a decision taken in the meantime is
// kept. Any number of replicas may run it: each key is taken once.
func (s *Store) ApplyDueApprovals(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := s.InTx(ctx, func(tx *Tx) error {
		rows, err := tx.query(ctx, `SELECT org_id, key, source, title FROM update_keys WHERE auto_due_at IS NOT NULL AND auto_due_at <= ?
			ORDER BY org_id, key LIMIT 1000`, millis(now))
		type due struct{ org, key, source, title string }
		list, err := scanRows(rows, err, func(r rowScanner) (due, error) {
			var d due
			err := r.Scan(&d.org, &d.key, &d.source, &d.title)
			return d, err
		})
		if err != nil {
			return fmt.Errorf("store: due approvals: %w", err)
		}
		byOrg := map[string][2][]string{}
		for _, d := range list {
			res, err := tx.exec(ctx, `UPDATE update_keys SET auto_due_at = NULL WHERE org_id = ? AND key = ? AND auto_due_at IS NOT NULL`, d.org, d.key)
			if err != nil {
				return fmt.Errorf("store: due approvals: %w", err)
			}
			if c, _ := res.RowsAffected(); c == 0 {
				continue // another replica took it
			}
			changed, err := tx.decide(ctx, d.org, d.key, updates.StatusApproved, d.title, ActorPolicy, now, false)
			if err != nil {
				return err
			}
			if !changed {
				continue
			}
			n++
			entry := byOrg[d.org]
			entry[0] = append(entry[0], d.key)
			if updates.ThirdParty(d.source) {
				older, err := tx.declineOlderIfSet(ctx, d.org, d.key, ActorPolicy, now)
				if err != nil {
					return err
				}
				entry[1] = append(entry[1], older...)
			}
			byOrg[d.org] = entry
		}
		for org, e := range byOrg {
			if err := tx.auditPolicy(ctx, org, e[0], e[1], now); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// ApprovalPolicy is an organization's automatic approval policy.
type ApprovalPolicy struct {
	OrgID        string               `json:"orgId"`
	DeclineOlder bool                 `json:"declineOlder"`
	Rules        []updates.PolicyRule `json:"rules"`
}

func (tx *Tx) policyRules(ctx context.Context, orgID string) ([]updates.PolicyRule, error) {
	rows, err := tx.query(ctx, `SELECT severity, source, delay_days FROM approval_policies WHERE org_id = ? ORDER BY severity, source`, orgID)
	rules := []updates.PolicyRule{}
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var r updates.PolicyRule
		if err := row.Scan(&r.Severity, &r.Source, &r.DelayDays); err != nil {
			return err
		}
		rules = append(rules, r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: approval policy: %w", err)
	}
	return rules, nil
}

// GetApprovalPolicy reads an organization's policy.
func (s *Store) GetApprovalPolicy(ctx context.Context, orgID string) (ApprovalPolicy, error) {
	p := ApprovalPolicy{OrgID: orgID}
	err := s.InTx(ctx, func(tx *Tx) error {
		var err error
		if p.Rules, err = tx.policyRules(ctx, orgID); err != nil {
			return err
		}
		p.DeclineOlder, err = tx.declineOlder(ctx, orgID)
		return err
	})
	return p, err
}

// PolicyChange changes an organization's policy: Rule, when set, is added
// or replaces the rule of its severity and source; with ReplaceRules,
// Rules (checked, one per severity and source) replace every rule instead;
// DeclineOlder, when set, turns that setting on or off.
type PolicyChange struct {
	Rule         *updates.PolicyRule
	ReplaceRules bool
	Rules        []updates.PolicyRule
	DeclineOlder *bool
}

// SetApprovalPolicy applies a checked change and answers the policy.
func (s *Store) SetApprovalPolicy(ctx context.Context, e *AuditEntry, orgID string, c PolicyChange) (ApprovalPolicy, error) {
	p := ApprovalPolicy{OrgID: orgID}
	err := s.Audited(ctx, e, func(tx *Tx) error {
		summary := map[string]any{}
		if c.ReplaceRules {
			if _, err := tx.exec(ctx, `DELETE FROM approval_policies WHERE org_id = ?`, orgID); err != nil {
				return fmt.Errorf("store: replace approval policy: %w", err)
			}
			for _, r := range c.Rules {
				if _, err := tx.exec(ctx, `INSERT INTO approval_policies (id, org_id, severity, source, delay_days, action, created_at)
					VALUES (?, ?, ?, ?, ?, 'APPROVE', ?)`, NewID(), orgID, r.Severity, r.Source, r.DelayDays, millis(time.Now())); err != nil {
					return fmt.Errorf("store: replace approval policy: %w", err)
				}
			}
			summary["rules"] = append([]updates.PolicyRule{}, c.Rules...)
		}
		if c.Rule != nil {
			if _, err := tx.exec(ctx, `INSERT INTO approval_policies (id, org_id, severity, source, delay_days, action, created_at)
				VALUES (?, ?, ?, ?, ?, 'APPROVE', ?) ON CONFLICT (org_id, severity, source) DO UPDATE SET delay_days = excluded.delay_days`,
				NewID(), orgID, c.Rule.Severity, c.Rule.Source, c.Rule.DelayDays, millis(time.Now())); err != nil {
				return fmt.Errorf("store: set approval policy: %w", err)
			}
			summary["rule"] = *c.Rule
		}
		if c.DeclineOlder != nil {
			if _, err := tx.exec(ctx, `INSERT INTO approval_settings (org_id, decline_older) VALUES (?, ?)
				ON CONFLICT (org_id) DO UPDATE SET decline_older = excluded.decline_older`, orgID, *c.DeclineOlder); err != nil {
				return fmt.Errorf("store: set decline older: %w", err)
			}
			summary["declineOlder"] = *c.DeclineOlder
		}
		e.Summary = summary
		var err error
		if p.Rules, err = tx.policyRules(ctx, orgID); err != nil {
			return err
		}
		p.DeclineOlder, err = tx.declineOlder(ctx, orgID)
		return err
	})
	return p, err
}

// DeleteApprovalPolicyRule removes the rule of a severity and source
// (dberr.ErrNotFound when there is none) and answers the policy.
func (s *Store) DeleteApprovalPolicyRule(ctx context.Context, e *AuditEntry, orgID, severity, source string) (ApprovalPolicy, error) {
	p := ApprovalPolicy{OrgID: orgID}
	err := s.Audited(ctx, e, func(tx *Tx) error {
		res, err := tx.exec(ctx, `DELETE FROM approval_policies WHERE org_id = ? AND severity = ? AND source = ?`, orgID, severity, source)
		if err != nil {
			return fmt.Errorf("store: delete approval policy: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: approval policy rule %s/%s: %w", severity, source, dberr.ErrNotFound)
		}
		e.Summary = map[string]any{"severity": severity, "source": source}
		if p.Rules, err = tx.policyRules(ctx, orgID); err != nil {
			return err
		}
		p.DeclineOlder, err = tx.declineOlder(ctx, orgID)
		return err
	})
	return p, err
}
