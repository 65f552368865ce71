package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/updates"
	"github.com/patchd/patchd/internal/vulns"
)

// ComplianceKeepDays is how many days of compliance history are kept.
const ComplianceKeepDays = 400

// day is the UTC date of t as the history keys it.
func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Compliance answers the organization's fleet now: how many endpoints miss
// no update, a critical one, or only others, how many are compliant (no
// update missing past the compliance policy's deadline), and how many CVEs
// on the fleet are critical or overdue at now (accepted risks and
// compensating controls left out, as the vulnerability list does).
func (s *Store) Compliance(ctx context.Context, orgID string, now time.Time) (apiv1.ComplianceDay, error) {
	d := apiv1.ComplianceDay{Date: day(now), RecordedAt: now.UTC().Truncate(time.Millisecond)}
	err := s.InReadTx(ctx, func(r *ReadTx) error {
		// One pass over the endpoints' counters of missing updates.
		if err := r.queryRow(ctx, `SELECT COUNT(*),
			COALESCE(SUM(CASE WHEN `+missingTotal+` = 0 THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN e.missing_critical > 0 THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN `+missingTotal+` > 0 AND e.missing_critical = 0 THEN 1 ELSE 0 END), 0)
			FROM endpoints e WHERE e.org_id = ?`, orgID).Scan(&d.Endpoints, &d.FullyPatched, &d.MissingCritical, &d.MissingOther); err != nil {
			return fmt.Errorf("store: compliance: %w", err)
		}
		cp, err := readCompliancePolicy(ctx, r.queryRow, orgID)
		if err != nil {
			return err
		}
		cond, args := overdueEndpoint(cp, now)
		var overdue int
		if err := r.queryRow(ctx, `SELECT COUNT(*) FROM endpoints e WHERE e.org_id = ? AND `+cond, append([]any{orgID}, args...)...).Scan(&overdue); err != nil {
			return fmt.Errorf("store: compliance: %w", err)
		}
		compliant := d.Endpoints - overdue
		d.Compliant = &compliant
		policy, err := readPolicy(ctx, r.queryRow, orgID)
		if err != nil {
			return err
		}
		all, err := r.vulnStatuses(ctx, VulnQuery{OrgID: orgID, Now: now}, policy)
		if err != nil {
			return err
		}
		for _, v := range all {
			if v.Severity == "Critical" {
				d.CriticalCVEs++
			}
			if v.Status == vulns.StatusOverdue {
				d.OverdueCVEs++
			}
		}
		return nil
	})
	return d, err
}

// RecordCompliance stores every organization's state now as its entry of
// today (replacing one recorded earlier today) and forgets the days older
// than ComplianceKeepDays (today counted); it answers how many organizations it recorded.
// Replicas may run it at once: each write is one organization's whole day.
func (s *Store) RecordCompliance(ctx context.Context, now time.Time) (int, error) {
	orgs, err := s.ListOrgs(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range orgs {
		d, err := s.Compliance(ctx, o.ID, now)
		if err != nil {
			return n, err
		}
		if _, err := s.exec(ctx, `INSERT INTO compliance_days (org_id, day, endpoints, fully_patched, missing_critical, missing_other,
			critical_cves, overdue_cves, recorded_at, compliant) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (org_id, day) DO UPDATE SET endpoints = excluded.endpoints, fully_patched = excluded.fully_patched,
			missing_critical = excluded.missing_critical, missing_other = excluded.missing_other, critical_cves = excluded.critical_cves,
			overdue_cves = excluded.overdue_cves, recorded_at = excluded.recorded_at, compliant = excluded.compliant WHERE compliance_days.recorded_at <= excluded.recorded_at`,
			o.ID, d.Date, d.Endpoints, d.FullyPatched, d.MissingCritical, d.MissingOther, d.CriticalCVEs, d.OverdueCVEs, millis(now), d.Compliant); err != nil {
			return n, fmt.Errorf("store: record compliance: %w", err)
		}
		n++
	}
	if _, err := s.exec(ctx, `DELETE FROM compliance_days WHERE day <= ?`, day(now.AddDate(0, 0, -ComplianceKeepDays))); err != nil {
		return n, fmt.Errorf("store: forget old compliance: %w", err)
	}
	return n, nil
}

// ComplianceHistory answers the organization's recorded days from the
// UTC date of since to that of until, oldest first.
func (s *Store) ComplianceHistory(ctx context.Context, orgID string, since, until time.Time) ([]apiv1.ComplianceDay, error) {
	rows, err := s.query(ctx, `SELECT day, endpoints, fully_patched, missing_critical, missing_other, critical_cves, overdue_cves, recorded_at, compliant
		FROM compliance_days WHERE org_id = ? AND day >= ? AND day <= ? ORDER BY day`, orgID, day(since), day(until))
	out := []apiv1.ComplianceDay{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var d apiv1.ComplianceDay
		var at int64
		var compliant sql.NullInt64
		if err := r.Scan(&d.Date, &d.Endpoints, &d.FullyPatched, &d.MissingCritical, &d.MissingOther, &d.CriticalCVEs, &d.OverdueCVEs, &at, &compliant); err != nil {
			return err
		}
		if compliant.Valid {
			n := int(compliant.Int64)
			d.Compliant = &n
		}
		d.RecordedAt = fromMillis(at)
		out = append(out, d)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: compliance history: %w", err)
	}
	return out, nil
}

// CompliancePolicy answers the organization's compliance policy (the
// defaults when none was set).
func (s *Store) CompliancePolicy(ctx context.Context, orgID string) (updates.CompliancePolicy, error) {
	return readCompliancePolicy(ctx, s.queryRow, orgID)
}

func readCompliancePolicy(ctx context.Context, queryRow func(ctx context.Context, q string, args ...any) *sql.Row, orgID string) (updates.CompliancePolicy, error) {
	var d [6]int
	var kev sql.NullInt64
	err := queryRow(ctx, `SELECT critical_days, important_days, moderate_days, low_days, unspecified_days, kev_days FROM compliance_policies WHERE org_id = ?`,
		orgID).Scan(&d[0], &d[1], &d[2], &d[3], &d[4], &kev)
	d[5] = updates.DefaultKEVDays
	if kev.Valid {
		d[5] = int(kev.Int64)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return updates.DefaultCompliancePolicy(), nil
	}
	if err != nil {
		return updates.CompliancePolicy{}, fmt.Errorf("store: compliance policy: %w", err)
	}
	return updates.CompliancePolicyOf(d), nil
}

// SetCompliancePolicy stores the organization's compliance policy, audited.
func (s *Store) SetCompliancePolicy(ctx context.Context, e *AuditEntry, orgID string, p updates.CompliancePolicy) error {
	e.TargetType, e.TargetID = "compliance-policy", orgID
	e.Summary = map[string]any{}
	for i, n := range p.Periods() {
		e.Summary[updates.ComplianceFields[i]] = n
	}
	return s.Audited(ctx, e, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `INSERT INTO compliance_policies (org_id, critical_days, important_days, moderate_days, low_days, unspecified_days, kev_days)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (org_id) DO UPDATE SET critical_days = excluded.critical_days,
			important_days = excluded.important_days, moderate_days = excluded.moderate_days, low_days = excluded.low_days,
			unspecified_days = excluded.unspecified_days, kev_days = excluded.kev_days`, orgID, p.Critical, p.Important, p.Moderate, p.Low, p.Unspecified, p.KEV); err != nil {
			return fmt.Errorf("store: compliance policy: %w", err)
		}
		return nil
	})
}

// overdueUpdates is the condition on endpoint_updates u of an update missing
// past the policy's deadline at now (declined updates left out), with its
// arguments: its derived severity's period, or the KEV deadline when it
// fixes a KEV CVE and that is shorter.
func overdueUpdates(p updates.CompliancePolicy, now time.Time) (string, []any) {
	c := p.Cutoffs(now)
	return `(u.detected_at < CASE u.derived_severity WHEN 'Critical' THEN CAST(? AS BIGINT) WHEN 'Important' THEN CAST(? AS BIGINT)
		WHEN 'Moderate' THEN CAST(? AS BIGINT) WHEN 'Low' THEN CAST(? AS BIGINT) ELSE CAST(? AS BIGINT) END
		OR u.kev AND u.detected_at < CAST(? AS BIGINT))
		AND NOT EXISTS (SELECT 1 FROM update_approvals a WHERE a.org_id = u.org_id AND a.key = u.key AND a.status = 'DECLINED')`,
		[]any{millis(c[0]), millis(c[1]), millis(c[2]), millis(c[3]), millis(c[4]), millis(p.KEVCutoff(now))}
}

// overdueEndpoint is the condition on endpoints e of an endpoint out of
// compliance at now, with its arguments.
func overdueEndpoint(p updates.CompliancePolicy, now time.Time) (string, []any) {
	cond, args := overdueUpdates(p, now)
	return `EXISTS (SELECT 1 FROM endpoint_updates u WHERE u.endpoint_id = e.id AND ` + cond + `)`, args
}

// OverdueCounts answers how many updates each of the organization's
// endpoints ids misses past the policy's deadline at now (endpoints with
// none left out).
func (s *Store) OverdueCounts(ctx context.Context, orgID string, ids []string, p updates.CompliancePolicy, now time.Time) (map[string]int, error) {
	out := map[string]int{}
	if len(ids) == 0 {
		return out, nil
	}
	cond, args := overdueUpdates(p, now)
	args = append([]any{orgID}, args...)
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.query(ctx, `SELECT u.endpoint_id, COUNT(*) FROM endpoint_updates u WHERE u.org_id = ? AND `+cond+`
		AND u.endpoint_id IN (`+placeholders(len(ids))+`) GROUP BY u.endpoint_id`, args...)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id string
		var n int
		if err := r.Scan(&id, &n); err != nil {
			return err
		}
		out[id] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: overdue updates: %w", err)
	}
	return out, nil
}

// GroupCompliance is one group's line of the compliance-by-group report.
type GroupCompliance struct {
	GroupID, Name string
	// Endpoints are the group's members; Compliant those with no update
	// missing past its deadline; MissingCritical those missing a critical
	// update.
	Endpoints, Compliant, MissingCritical int
}

// ComplianceByGroup answers every group of the organization with its
// members' compliance at now under the organization's policy, by name.
func (s *Store) ComplianceByGroup(ctx context.Context, orgID string, now time.Time) ([]GroupCompliance, updates.CompliancePolicy, error) {
	var out []GroupCompliance
	var p updates.CompliancePolicy
	err := s.InReadTx(ctx, func(r *ReadTx) error {
		var err error
		if p, err = readCompliancePolicy(ctx, r.queryRow, orgID); err != nil {
			return err
		}
		cond, args := overdueEndpoint(p, now)
		// Members: those stored, and those of the built-in groups, which
		// are counted when read (every endpoint; those enrolled lately).
		rows, err := r.query(ctx, `WITH mem (group_id, endpoint_id) AS (
				SELECT m.group_id, m.endpoint_id FROM group_members m JOIN endpoint_groups g ON g.id = m.group_id WHERE g.org_id = ?
				UNION ALL SELECT g.id, e.id FROM endpoint_groups g JOIN endpoints e ON e.org_id = g.org_id WHERE g.org_id = ? AND g.builtin = ?
				UNION ALL SELECT g.id, e.id FROM endpoint_groups g JOIN endpoints e ON e.org_id = g.org_id
					WHERE g.org_id = ? AND g.builtin = ? AND e.enrolled_at >= ?)
			SELECT g.id, g.name, COUNT(e.id),
			COALESCE(SUM(CASE WHEN e.id IS NOT NULL AND NOT `+cond+` THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN e.missing_critical > 0 THEN 1 ELSE 0 END), 0)
			FROM endpoint_groups g LEFT JOIN mem ON mem.group_id = g.id LEFT JOIN endpoints e ON e.id = mem.endpoint_id
			WHERE g.org_id = ? GROUP BY g.id, g.name, g.is_system, g.builtin ORDER BY g.is_system DESC, g.builtin, lower(g.name), g.id`,
			append(append([]any{orgID, orgID, groups.BuiltinAll, orgID, groups.BuiltinNew, millis(now.AddDate(0, 0, -NewEndpointDays))}, args...), orgID)...)
		out = []GroupCompliance{}
		return eachRow(rows, err, func(row *sql.Rows) error {
			var g GroupCompliance
			if err := row.Scan(&g.GroupID, &g.Name, &g.Endpoints, &g.Compliant, &g.MissingCritical); err != nil {
				return err
			}
			out = append(out, g)
			return nil
		})
	})
	if err != nil {
		return nil, p, fmt.Errorf("store: compliance by group: %w", err)
	}
	return out, p, nil
}

// PatchState is an endpoint's patch state as the endpoints list shows it:
// the critical updates and all updates it misses, and those missing past
// the compliance policy's deadline.
type PatchState struct {
	MissingCritical, MissingTotal, Overdue int
}

// PatchStates answers the patch state at now of each of the organization's
// endpoints ids (those not found left out).
func (s *Store) PatchStates(ctx context.Context, orgID string, ids []string, now time.Time) (map[string]PatchState, error) {
	out := map[string]PatchState{}
	if len(ids) == 0 {
		return out, nil
	}
	p, err := s.CompliancePolicy(ctx, orgID)
	if err != nil {
		return nil, err
	}
	args := []any{orgID}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.query(ctx, `SELECT e.id, e.missing_critical, `+missingTotal+` FROM endpoints e WHERE e.org_id = ? AND e.id IN (`+placeholders(len(ids))+`)`, args...)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id string
		var st PatchState
		if err := r.Scan(&id, &st.MissingCritical, &st.MissingTotal); err != nil {
			return err
		}
		out[id] = st
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: patch states: %w", err)
	}
	overdue, err := s.OverdueCounts(ctx, orgID, ids, p, now)
	if err != nil {
		return nil, err
	}
	for id, n := range overdue {
		st := out[id]
		st.Overdue = n
		out[id] = st
	}
	return out, nil
}
