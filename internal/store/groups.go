package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/valid"
)

// ErrBuiltinGroup answers a change a built-in group does not allow.
var ErrBuiltinGroup = errors.New("built-in group")

// NewEndpointDays is the age limit of the members of "New endpoints".
const NewEndpointDays = 7

// Group is an endpoint group with its criteria and alert settings.
type Group struct {
	ID                  string          `json:"id"`
	OrgID               string          `json:"orgId"`
	Name                string          `json:"name"`
	Description         *string         `json:"description"`
	Kind                string          `json:"kind"`
	System              bool            `json:"system"`
	Builtin             string          `json:"builtin,omitempty"` // groups.BuiltinAll, groups.BuiltinNew or ""
	MatchAll            bool            `json:"matchAll"`
	Rules               []groups.Rule   `json:"rules"`
	ExcludeRules        []groups.Rule   `json:"excludeRules"`
	OfflineAlertMinutes *int            `json:"offlineAlertMinutes"`
	OnlineAlert         bool            `json:"onlineAlert"`
	Members             int             `json:"members"`
	CreatedAt           time.Time       `json:"createdAt"`
	UpdatedAt           time.Time       `json:"updatedAt"`
	criteria            groups.Criteria // parsed Rules and ExcludeRules
}

// GroupChange is a checked GroupBody: nil fields are left as they are (a
// create starts from an empty STATIC group that matches all rules).
type GroupChange struct {
	Name         *string
	Description  *string
	MatchAll     *bool
	Rules        *[]groups.Rule
	ExcludeRules *[]groups.Rule
	MachineIDs   *[]string
	// OfflineAlertSet says OfflineAlertMinutes is given (nil clears it).
	OfflineAlertSet     bool
	OfflineAlertMinutes *int
	OnlineAlert         *bool
}

// touchesCriteria tells whether the change gives a group criteria or
// members, which built-in groups refuse.
func (c GroupChange) touchesCriteria() bool {
	return c.MatchAll != nil || c.Rules != nil || c.ExcludeRules != nil || c.MachineIDs != nil
}

func init() {
	orgCreateHooks = append(orgCreateHooks, createBuiltinGroups)
	endpointChangeHooks = append(endpointChangeHooks, func(ctx context.Context, tx *Tx, orgID string, endpointIDs []string) error {
		return tx.refreshMembership(ctx, orgID, endpointIDs)
	})
	endpointDeleteHooks = append(endpointDeleteHooks, func(ctx context.Context, tx *Tx, orgID, endpointID string) error {
		return tx.dropMemberships(ctx, orgID, endpointID)
	})
}

func createBuiltinGroups(ctx context.Context, tx *Tx, o Org) error {
	for _, b := range []struct{ builtin, name string }{{groups.BuiltinAll, groups.NameAll}, {groups.BuiltinNew, groups.NameNew}} {
		if _, err := tx.exec(ctx, `INSERT INTO endpoint_groups (id, org_id, name, kind, is_system, builtin, created_at, updated_at)
			VALUES (?, ?, ?, ?, TRUE, ?, ?, ?)`, NewID(), o.ID, b.name, groups.Dynamic, b.builtin, millis(o.CreatedAt), millis(o.CreatedAt)); err != nil {
			return fmt.Errorf("store: built-in group %s: %w", b.name, err)
		}
	}
	return nil
}

// lockGroups and shareGroups order the membership changes of one
// organization on PostgreSQL (a transaction-scoped advisory lock) so that a
// group written while an endpoint changes never misses the change: a
// transaction that writes a group's definition or members takes the lock
// alone (lockGroups), while endpoint changes, which re-decide only their own
// endpoint's memberships, share it (shareGroups) and so run side by side.
// Either is taken before any row lock. SQLite serialises every write anyway.
func (tx *Tx) lockGroups(ctx context.Context, orgID string) error {
	tx.groupsChanged = true
	return tx.groupLock(ctx, orgID, `SELECT pg_advisory_xact_lock(7202, hashtext(?))`)
}

func (tx *Tx) shareGroups(ctx context.Context, orgID string) error {
	return tx.groupLock(ctx, orgID, `SELECT pg_advisory_xact_lock_shared(7202, hashtext(?))`)
}

func (tx *Tx) groupLock(ctx context.Context, orgID, query string) error {
	if tx.s.engine != Postgres {
		return nil
	}
	if _, err := tx.exec(ctx, query, orgID); err != nil {
		return fmt.Errorf("store: lock groups: %w", err)
	}
	return nil
}

const groupColumns = `id, org_id, name, description, kind, is_system, builtin, match_all, rules, exclude_rules, offline_alert_minutes,
	online_alert, members, created_at, updated_at`

func scanGroup(row interface{ Scan(...any) error }) (Group, error) {
	var g Group
	var desc, builtin sql.NullString
	var rules, exclude string
	var offline sql.NullInt64
	var created, updated int64
	if err := row.Scan(&g.ID, &g.OrgID, &g.Name, &desc, &g.Kind, &g.System, &builtin, &g.MatchAll, &rules, &exclude, &offline,
		&g.OnlineAlert, &g.Members, &created, &updated); err != nil {
		return g, err
	}
	g.Description, g.Builtin = nullString(desc), builtin.String
	if offline.Valid {
		n := int(offline.Int64)
		g.OfflineAlertMinutes = &n
	}
	g.CreatedAt, g.UpdatedAt = fromMillis(created), fromMillis(updated)
	c, err := parseCriteria(g.MatchAll, rules, exclude)
	if err != nil {
		return g, err
	}
	g.criteria, g.Rules, g.ExcludeRules = c, c.Rules, c.Exclude
	return g, nil
}

// criteriaCache keeps parsed rules by their stored text: membership is
// re-evaluated on every endpoint change, and rules change rarely.
var criteriaCache sync.Map // [2]string{rules, exclude} -> [2][]groups.Rule

func parseCriteria(matchAll bool, rules, exclude string) (groups.Criteria, error) {
	k := [2]string{rules, exclude}
	if v, ok := criteriaCache.Load(k); ok {
		p := v.([2][]groups.Rule)
		return groups.Criteria{MatchAll: matchAll, Rules: p[0], Exclude: p[1]}, nil
	}
	var p [2][]groups.Rule
	if err := json.Unmarshal([]byte(rules), &p[0]); err != nil {
		return groups.Criteria{}, fmt.Errorf("group rules: %w", err)
	}
	if err := json.Unmarshal([]byte(exclude), &p[1]); err != nil {
		return groups.Criteria{}, fmt.Errorf("group exclude rules: %w", err)
	}
	for i := range p {
		if p[i] == nil {
			p[i] = []groups.Rule{}
		}
	}
	criteriaCache.Store(k, p)
	return groups.Criteria{MatchAll: matchAll, Rules: p[0], Exclude: p[1]}, nil
}

// builtinCounts fills in the members of the built-in groups, which are
// counted when read: every endpoint, and those enrolled in the last 7 days.
func (s *Store) builtinCounts(ctx context.Context, r *ReadTx, orgID string, now time.Time) (all, recent int, err error) {
	if err := r.queryRow(ctx, `SELECT COUNT(*) FROM endpoints WHERE org_id = ?`, orgID).Scan(&all); err != nil {
		return 0, 0, fmt.Errorf("store: count endpoints: %w", err)
	}
	if err := r.queryRow(ctx, `SELECT COUNT(*) FROM endpoints WHERE org_id = ? AND enrolled_at >= ?`, orgID,
		millis(now.AddDate(0, 0, -NewEndpointDays))).Scan(&recent); err != nil {
		return 0, 0, fmt.Errorf("store: count new endpoints: %w", err)
	}
	return all, recent, nil
}

// groupList is a cached ListGroups answer.
type groupList struct {
	gen    uint64    // groupsGen when read
	read   time.Time // when read (wall clock)
	now    time.Time // the now it was read for
	groups []Group
	// encoded is the list as the API answers it (GroupListEncoded).
	encoded atomic.Pointer[[]byte]
}

// groupListTTL bounds how long a cached group list is used: changes made
// through this store are seen at once (groupsGen), those of other replicas
// and the passing of time (the "New endpoints" window) within it.
const groupListTTL = time.Second

// ListGroups lists the organization's groups: the built-in ones first, then
// by name. The answer is cached for up to groupListTTL per organization and
// dropped as soon as this store commits a change to a group or a membership:
// the list is read on every console page and by automation polling, and
// without the cache each read costs a transaction and three queries.
func (s *Store) ListGroups(ctx context.Context, orgID string, now time.Time) ([]Group, error) {
	c, err := s.groupList(ctx, orgID, now)
	if err != nil {
		return nil, err
	}
	return slices.Clone(c.groups), nil
}

// GroupListEncoded is ListGroups encoded by encode, kept with the cached
// list: encode runs once per reading of the list, not on every request.
func (s *Store) GroupListEncoded(ctx context.Context, orgID string, now time.Time, encode func([]Group) ([]byte, error)) ([]byte, error) {
	c, err := s.groupList(ctx, orgID, now)
	if err != nil {
		return nil, err
	}
	if b := c.encoded.Load(); b != nil {
		return *b, nil
	}
	b, err := encode(slices.Clone(c.groups))
	if err != nil {
		return nil, err
	}
	c.encoded.Store(&b)
	return b, nil
}

func (s *Store) groupList(ctx context.Context, orgID string, now time.Time) (*groupList, error) {
	gen := s.groupsGen.Load()
	if v, ok := s.groupLists.Load(orgID); ok {
		c := v.(*groupList)
		if c.gen == gen && time.Since(c.read) < groupListTTL && now.Sub(c.now).Abs() < groupListTTL {
			return c, nil
		}
	}
	read := time.Now()
	out, err := s.listGroups(ctx, orgID, now)
	if err != nil {
		return nil, err
	}
	c := &groupList{gen: gen, read: read, now: now, groups: out}
	if r := s.repl; r == nil || len(r.standbys) == 0 || !lagTolerated(ctx) {
		// A standby's answer may predate this store's last change: it is
		// not kept for the readers that must see it.
		s.groupLists.Store(orgID, c)
	}
	return c, nil
}

func (s *Store) listGroups(ctx context.Context, orgID string, now time.Time) ([]Group, error) {
	var out []Group
	err := s.InReadTx(ctx, func(r *ReadTx) error {
		rows, err := r.query(ctx, `SELECT `+groupColumns+` FROM endpoint_groups WHERE org_id = ?
			ORDER BY is_system DESC, builtin, lower(name), id`, orgID)
		if err := appendRows(&out, rows, err, scanGroup); err != nil {
			return fmt.Errorf("store: list groups: %w", err)
		}
		all, recent, err := s.builtinCounts(ctx, r, orgID, now)
		if err != nil {
			return err
		}
		for i := range out {
			switch out[i].Builtin {
			case groups.BuiltinAll:
				out[i].Members = all
			case groups.BuiltinNew:
				out[i].Members = recent
			}
		}
		return nil
	})
	return out, err
}

// GetGroup reads one group of the organization.
func (s *Store) GetGroup(ctx context.Context, orgID, id string, now time.Time) (Group, error) {
	var g Group
	err := s.InReadTx(ctx, func(r *ReadTx) error {
		var err error
		g, err = scanGroup(r.queryRow(ctx, `SELECT `+groupColumns+` FROM endpoint_groups WHERE org_id = ? AND id = ?`, orgID, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: group %s: %w", id, dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: get group: %w", err)
		}
		if g.Builtin != "" {
			all, recent, err := s.builtinCounts(ctx, r, orgID, now)
			if err != nil {
				return err
			}
			g.Members = all
			if g.Builtin == groups.BuiltinNew {
				g.Members = recent
			}
		}
		return nil
	})
	return g, err
}

// BuiltinGroupID answers the id of the organization's built-in group
// "all" (All endpoints) or "new" (New endpoints).
func (s *Store) BuiltinGroupID(ctx context.Context, orgID, builtin string) (string, error) {
	var id string
	err := s.queryRow(ctx, `SELECT id FROM endpoint_groups WHERE org_id = ? AND builtin = ?`, orgID, builtin).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("store: built-in group %q: %w", builtin, dberr.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: built-in group: %w", err)
	}
	return id, nil
}

// GroupMemberIDs answers the ids of the endpoints that are members of a
// group now, in id order (built-in groups included); dberr.ErrNotFound for a
// group that is not the organization's.
func (s *Store) GroupMemberIDs(ctx context.Context, orgID, groupID string) ([]string, error) {
	out := []string{}
	err := s.InReadTx(ctx, func(r *ReadTx) error {
		var builtin sql.NullString
		err := r.queryRow(ctx, `SELECT builtin FROM endpoint_groups WHERE org_id = ? AND id = ?`, orgID, groupID).Scan(&builtin)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: group %s: %w", groupID, dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: group members: %w", err)
		}
		var rows *sql.Rows
		switch builtin.String {
		case groups.BuiltinAll:
			rows, err = r.query(ctx, `SELECT id FROM endpoints WHERE org_id = ? ORDER BY id`, orgID)
		case groups.BuiltinNew:
			rows, err = r.query(ctx, `SELECT id FROM endpoints WHERE org_id = ? AND enrolled_at >= ? ORDER BY id`, orgID,
				millis(time.Now().AddDate(0, 0, -NewEndpointDays)))
		default:
			rows, err = r.query(ctx, `SELECT endpoint_id FROM group_members WHERE group_id = ? ORDER BY endpoint_id`, groupID)
		}
		if err := eachRow(rows, err, func(row *sql.Rows) error {
			var id string
			if err := row.Scan(&id); err != nil {
				return err
			}
			out = append(out, id)
			return nil
		}); err != nil {
			return fmt.Errorf("store: group members: %w", err)
		}
		return nil
	})
	return out, err
}

// CreateGroup creates a group and computes its members.
func (s *Store) CreateGroup(ctx context.Context, e *AuditEntry, orgID string, c GroupChange, now time.Time) (Group, error) {
	g := Group{ID: NewID(), OrgID: orgID, Kind: groups.Static, MatchAll: true, Rules: []groups.Rule{}, ExcludeRules: []groups.Rule{},
		CreatedAt: now.UTC(), UpdatedAt: now.UTC()}
	err := s.Audited(ctx, e, func(tx *Tx) error {
		if err := tx.lockGroups(ctx, orgID); err != nil {
			return err
		}
		machines := applyGroupChange(&g, c)
		if _, err := tx.exec(ctx, `INSERT INTO endpoint_groups (id, org_id, name, kind, match_all, rules, exclude_rules, created_at, updated_at)
			VALUES (?, ?, ?, ?, TRUE, '[]', '[]', ?, ?)`, g.ID, orgID, g.Name, g.Kind, millis(now), millis(now)); err != nil {
			if isUniqueViolation(err) {
				return valid.One("name", "another group of the organization has this name")
			}
			return fmt.Errorf("store: create group: %w", err)
		}
		e.TargetID = g.ID
		return tx.saveGroup(ctx, &g, machines, true)
	})
	return g, err
}

// PatchGroup changes the fields of a group that c sets. Built-in groups
// take only a description and alert settings (ErrBuiltinGroup otherwise).
func (s *Store) PatchGroup(ctx context.Context, e *AuditEntry, orgID, id string, c GroupChange, now time.Time) (Group, error) {
	var g Group
	err := s.Audited(ctx, e, func(tx *Tx) error {
		if err := tx.lockGroups(ctx, orgID); err != nil {
			return err
		}
		var err error
		g, err = scanGroup(tx.queryRow(ctx, `SELECT `+groupColumns+` FROM endpoint_groups WHERE org_id = ? AND id = ?`, orgID, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: group %s: %w", id, dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: patch group: %w", err)
		}
		if g.System && (c.touchesCriteria() || (c.Name != nil && *c.Name != g.Name)) {
			return fmt.Errorf("store: group %s: %w", id, ErrBuiltinGroup)
		}
		kind := g.Kind
		machines := applyGroupChange(&g, c)
		g.UpdatedAt = now.UTC()
		if g.Kind == groups.Static && kind == groups.Dynamic && machines == nil {
			// A dynamic group made static without a member list keeps
			// its current members as its manual ones.
			machines = &[]string{}
			if err := tx.currentMembers(ctx, g.ID, machines); err != nil {
				return err
			}
		}
		return tx.saveGroup(ctx, &g, machines, c.touchesCriteria())
	})
	return g, err
}

// applyGroupChange applies c to g and answers the manual member list to
// store (nil: unchanged or not a static group). Rules make a group
// DYNAMIC, machineIds make it STATIC.
func applyGroupChange(g *Group, c GroupChange) *[]string {
	if c.Name != nil {
		g.Name = *c.Name
	}
	if c.Description != nil {
		g.Description = c.Description
		if *c.Description == "" {
			g.Description = nil
		}
	}
	if c.MatchAll != nil {
		g.MatchAll = *c.MatchAll
	}
	if c.Rules != nil {
		g.Rules = *c.Rules
	}
	if c.ExcludeRules != nil {
		g.ExcludeRules = *c.ExcludeRules
	}
	if c.OfflineAlertSet {
		g.OfflineAlertMinutes = c.OfflineAlertMinutes
	}
	if c.OnlineAlert != nil {
		g.OnlineAlert = *c.OnlineAlert
	}
	if g.Builtin != "" {
		return nil
	}
	switch {
	case c.MachineIDs != nil:
		g.Kind, g.Rules, g.ExcludeRules = groups.Static, []groups.Rule{}, []groups.Rule{}
		return c.MachineIDs
	case len(g.Rules) > 0 || len(g.ExcludeRules) > 0:
		g.Kind = groups.Dynamic
	case c.Rules != nil || c.ExcludeRules != nil:
		// Every rule removed: the group is static and keeps its members.
		g.Kind = groups.Static
	}
	g.criteria = groups.Criteria{MatchAll: g.MatchAll, Rules: g.Rules, Exclude: g.ExcludeRules}
	return nil
}

func (tx *Tx) currentMembers(ctx context.Context, groupID string, into *[]string) error {
	rows, err := tx.query(ctx, `SELECT endpoint_id FROM group_members WHERE group_id = ?`, groupID)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id string
		if err := r.Scan(&id); err != nil {
			return err
		}
		*into = append(*into, id)
		return nil
	}); err != nil {
		return fmt.Errorf("store: group members: %w", err)
	}
	return nil
}

// saveGroup writes g's fields and, when recompute is set, brings its
// members up to date: the manual list of a static group (every id must be
// an endpoint of the organization), or the endpoints its rules match.
func (tx *Tx) saveGroup(ctx context.Context, g *Group, machines *[]string, recompute bool) error {
	rules, _ := json.Marshal(g.Rules)
	exclude, _ := json.Marshal(g.ExcludeRules)
	var offline any
	if g.OfflineAlertMinutes != nil {
		offline = *g.OfflineAlertMinutes
	}
	if _, err := tx.exec(ctx, `UPDATE endpoint_groups SET name = ?, description = ?, kind = ?, match_all = ?, rules = ?, exclude_rules = ?,
		offline_alert_minutes = ?, online_alert = ?, updated_at = ? WHERE id = ?`,
		g.Name, g.Description, g.Kind, g.MatchAll, string(rules), string(exclude), offline, g.OnlineAlert, millis(g.UpdatedAt), g.ID); err != nil {
		if isUniqueViolation(err) {
			return valid.One("name", "another group of the organization has this name")
		}
		return fmt.Errorf("store: save group: %w", err)
	}
	if g.Builtin != "" || !recompute {
		return nil
	}
	want := map[string]bool{}
	switch {
	case machines != nil:
		if err := tx.checkMachines(ctx, g.OrgID, *machines); err != nil {
			return err
		}
		for _, id := range *machines {
			want[id] = true
		}
	case g.Kind == groups.Dynamic:
		if err := tx.matchAll(ctx, g.OrgID, g.criteria, want); err != nil {
			return err
		}
	default:
		return nil // a static group whose list is unchanged
	}
	return tx.setMembers(ctx, g, want)
}

// checkMachines answers a validation error naming every id that is not an
// endpoint of the organization.
func (tx *Tx) checkMachines(ctx context.Context, orgID string, ids []string) error {
	var errs valid.Errors
	known, err := endpointsAmong(ctx, tx.query, orgID, ids)
	if err != nil {
		return fmt.Errorf("store: check machine ids: %w", err)
	}
	for i, id := range ids {
		if !known[id] {
			errs.Add(fmt.Sprintf("machineIds[%d]", i), "no endpoint %q in this organization", id)
		}
	}
	return errs.Err()
}

// matchAll adds to want every endpoint of the organization that c admits.
func (tx *Tx) matchAll(ctx context.Context, orgID string, c groups.Criteria, want map[string]bool) error {
	rows, err := tx.query(ctx, `SELECT e.id, `+factColumns+` FROM endpoints e WHERE e.org_id = ?`, orgID)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id string
		f, err := scanFacts(r, &id)
		if err != nil {
			return err
		}
		if c.Member(f) {
			want[id] = true
		}
		return nil
	}); err != nil {
		return fmt.Errorf("store: match group: %w", err)
	}
	return nil
}

// setMembers makes want the members of g.
func (tx *Tx) setMembers(ctx context.Context, g *Group, want map[string]bool) error {
	var have []string
	if err := tx.currentMembers(ctx, g.ID, &have); err != nil {
		return err
	}
	var gone []string
	for _, id := range have {
		if want[id] {
			delete(want, id)
		} else {
			gone = append(gone, id)
		}
	}
	kept := len(have) - len(gone)
	if len(gone) > 500 && len(gone) > kept {
		// Cheaper to start over than to delete row by row.
		if _, err := tx.exec(ctx, `DELETE FROM group_members WHERE group_id = ?`, g.ID); err != nil {
			return fmt.Errorf("store: group members: %w", err)
		}
		goneSet := make(map[string]bool, len(gone))
		for _, id := range gone {
			goneSet[id] = true
		}
		for _, id := range have {
			if !goneSet[id] {
				want[id] = true
			}
		}
		kept = 0
	} else {
		for _, id := range gone {
			if _, err := tx.exec(ctx, `DELETE FROM group_members WHERE group_id = ? AND endpoint_id = ?`, g.ID, id); err != nil {
				return fmt.Errorf("store: group members: %w", err)
			}
		}
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	rows := make([][]any, len(ids))
	for i, id := range ids {
		rows[i] = []any{g.ID, id}
	}
	if err := tx.insertRows(ctx, "group_members", []string{"group_id", "endpoint_id"}, rows); err != nil {
		return err
	}
	g.Members = kept + len(ids)
	if _, err := tx.exec(ctx, `UPDATE endpoint_groups SET members = ? WHERE id = ?`, g.Members, g.ID); err != nil {
		return fmt.Errorf("store: group member count: %w", err)
	}
	return nil
}

// DeleteGroup deletes a group (ErrBuiltinGroup for a built-in one).
func (s *Store) DeleteGroup(ctx context.Context, e *AuditEntry, orgID, id string) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		if err := tx.lockGroups(ctx, orgID); err != nil {
			return err
		}
		var name string
		var system bool
		err := tx.queryRow(ctx, `SELECT name, is_system FROM endpoint_groups WHERE org_id = ? AND id = ?`, orgID, id).Scan(&name, &system)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: group %s: %w", id, dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: delete group: %w", err)
		}
		if system {
			return fmt.Errorf("store: group %s: %w", id, ErrBuiltinGroup)
		}
		e.Summary = map[string]any{"name": name}
		for _, h := range groupDeleteHooks {
			if err := h(ctx, tx, orgID, id); err != nil {
				return err
			}
		}
		if _, err := tx.exec(ctx, `DELETE FROM group_members WHERE group_id = ?`, id); err != nil {
			return fmt.Errorf("store: delete group members: %w", err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM endpoint_groups WHERE id = ?`, id); err != nil {
			return fmt.Errorf("store: delete group: %w", err)
		}
		return nil
	})
}

// groupDeleteHooks run in the transaction that deletes a group, before it
// goes (automations and alert rules that target it can react).
var groupDeleteHooks []func(ctx context.Context, tx *Tx, orgID, groupID string) error

// factColumns are the endpoint columns that group rules test, in the order
// scanFacts reads them.
const factColumns = `e.hostname, COALESCE(e.display_name, e.hostname), e.os, e.os_version, e.os_build, e.platform, e.domain, e.ad_ou, e.type,
	e.arch, e.distro, e.antivirus, e.pending_reboot, e.agent_version, e.logged_user, e.manufacturer, e.model, e.serial_number, e.cpu,
	e.ip_addresses, e.mac_addresses, e.time_zone, e.comment, e.attributes`

func scanFacts(row interface{ Scan(...any) error }, id *string) (groups.Facts, error) {
	var hostname, name, platform, typ string
	var os, osVersion, osBuild, domain, adOU, arch, distro, antivirus, agent, user, manufacturer, model, serial, cpu, tz, comment sql.NullString
	var reboot bool
	var ips, macs, attrs string
	if err := row.Scan(id, &hostname, &name, &os, &osVersion, &osBuild, &platform, &domain, &adOU, &typ, &arch, &distro, &antivirus, &reboot,
		&agent, &user, &manufacturer, &model, &serial, &cpu, &ips, &macs, &tz, &comment, &attrs); err != nil {
		return nil, err
	}
	f := groups.Facts{"hostname": {hostname}, "name": {name}, "platform": {platform}, "type": {typ}, "reboot": {fmt.Sprint(reboot)}}
	for field, v := range map[string]sql.NullString{"os": os, "osVersion": osVersion, "osBuild": osBuild, "domain": domain, "adOu": adOU,
		"arch": arch, "distro": distro, "antivirus": antivirus, "agentVersion": agent, "user": user, "manufacturer": manufacturer,
		"model": model, "serialNumber": serial, "cpu": cpu, "timeZone": tz, "comment": comment} {
		f.Set(field, nullString(v))
	}
	var list []string
	if json.Unmarshal([]byte(ips), &list) == nil {
		f["ipAddresses"] = list
	}
	list = nil
	if json.Unmarshal([]byte(macs), &list) == nil {
		f["macAddresses"] = list
	}
	attributes := map[string]string{}
	if json.Unmarshal([]byte(attrs), &attributes) == nil {
		for k, v := range attributes {
			f[k] = []string{v}
		}
	}
	return f, nil
}

// refreshMembership re-decides endpoints' membership in the
// organization's dynamic groups after their records or inventories
// changed: the groups are read once.
func (tx *Tx) refreshMembership(ctx context.Context, orgID string, endpointIDs []string) error {
	if err := tx.shareGroups(ctx, orgID); err != nil {
		return err
	}
	rows, err := tx.query(ctx, `SELECT id, match_all, rules, exclude_rules FROM endpoint_groups
		WHERE org_id = ? AND kind = ? AND builtin IS NULL ORDER BY id`, orgID, groups.Dynamic)
	var dyns []dynamicGroup
	var invalid error // a group's criteria that do not parse
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var d dynamicGroup
		var matchAll bool
		var rules, exclude string
		if err := r.Scan(&d.id, &matchAll, &rules, &exclude); err != nil {
			return err
		}
		var err error
		if d.c, err = parseCriteria(matchAll, rules, exclude); err != nil {
			invalid = fmt.Errorf("store: dynamic group %s: %w", d.id, err)
			return errStopRows
		}
		dyns = append(dyns, d)
		return nil
	}); err != nil {
		return fmt.Errorf("store: dynamic groups: %w", err)
	}
	if invalid != nil {
		return invalid
	}
	if len(dyns) == 0 {
		return nil
	}
	for _, id := range endpointIDs {
		if err := tx.refreshOneMembership(ctx, orgID, dyns, id); err != nil {
			return err
		}
	}
	return nil
}

// dynamicGroup is a dynamic group's criteria.
type dynamicGroup struct {
	id string
	c  groups.Criteria
}

// refreshOneMembership re-decides one endpoint's membership in dyns, the
// dynamic groups of its organization.
func (tx *Tx) refreshOneMembership(ctx context.Context, orgID string, dyns []dynamicGroup, endpointID string) error {
	var id string
	f, err := scanFacts(tx.queryRow(ctx, `SELECT e.id, `+factColumns+` FROM endpoints e WHERE e.id = ? AND e.org_id = ?`, endpointID, orgID), &id)
	if err != nil {
		return fmt.Errorf("store: endpoint facts: %w", err)
	}
	ids, err := tx.queryStrings(ctx, `SELECT group_id FROM group_members WHERE endpoint_id = ?`, endpointID)
	if err != nil {
		return fmt.Errorf("store: endpoint groups: %w", err)
	}
	have := map[string]bool{}
	for _, g := range ids {
		have[g] = true
	}
	for _, d := range dyns {
		in := d.c.Member(f)
		switch {
		case in && !have[d.id]:
			if _, err := tx.exec(ctx, `INSERT INTO group_members (group_id, endpoint_id) VALUES (?, ?)`, d.id, endpointID); err != nil {
				return fmt.Errorf("store: join group: %w", err)
			}
			tx.countMember(d.id, 1)
		case !in && have[d.id]:
			if _, err := tx.exec(ctx, `DELETE FROM group_members WHERE group_id = ? AND endpoint_id = ?`, d.id, endpointID); err != nil {
				return fmt.Errorf("store: leave group: %w", err)
			}
			tx.countMember(d.id, -1)
		}
	}
	return nil
}

// dropMemberships takes a removed endpoint out of every group.
func (tx *Tx) dropMemberships(ctx context.Context, orgID, endpointID string) error {
	tx.groupsChanged = true // the built-in groups count one endpoint less
	if err := tx.shareGroups(ctx, orgID); err != nil {
		return err
	}
	ids, err := tx.queryStrings(ctx, `SELECT group_id FROM group_members WHERE endpoint_id = ?`, endpointID)
	if err != nil {
		return fmt.Errorf("store: endpoint groups: %w", err)
	}
	for _, g := range ids {
		tx.countMember(g, -1)
	}
	if _, err := tx.exec(ctx, `DELETE FROM group_members WHERE endpoint_id = ?`, endpointID); err != nil {
		return fmt.Errorf("store: leave groups: %w", err)
	}
	return nil
}
