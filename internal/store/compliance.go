package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/vulns"
)

// ComplianceKeepDays is how many days of compliance history are kept.
const ComplianceKeepDays = 400

// day is the UTC date of t as the history keys it.
func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Compliance answers the organization's fleet now: how many endpoints miss
// no update, a critical one, or only others, and how many CVEs on the
// fleet are critical or overdue at now (accepted risks and compensating
// controls left out, as the vulnerability list does).
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
			critical_cves, overdue_cves, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (org_id, day) DO UPDATE SET endpoints = excluded.endpoints, fully_patched = excluded.fully_patched,
			missing_critical = excluded.missing_critical, missing_other = excluded.missing_other, critical_cves = excluded.critical_cves,
			overdue_cves = excluded.overdue_cves, recorded_at = excluded.recorded_at WHERE compliance_days.recorded_at <= excluded.recorded_at`,
			o.ID, d.Date, d.Endpoints, d.FullyPatched, d.MissingCritical, d.MissingOther, d.CriticalCVEs, d.OverdueCVEs, millis(now)); err != nil {
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
	rows, err := s.query(ctx, `SELECT day, endpoints, fully_patched, missing_critical, missing_other, critical_cves, overdue_cves, recorded_at
		FROM compliance_days WHERE org_id = ? AND day >= ? AND day <= ? ORDER BY day`, orgID, day(since), day(until))
	out := []apiv1.ComplianceDay{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var d apiv1.ComplianceDay
		var at int64
		if err := r.Scan(&d.Date, &d.Endpoints, &d.FullyPatched, &d.MissingCritical, &d.MissingOther, &d.CriticalCVEs, &d.OverdueCVEs, &at); err != nil {
			return err
		}
		d.RecordedAt = fromMillis(at)
		out = append(out, d)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: compliance history: %w", err)
	}
	return out, nil
}
