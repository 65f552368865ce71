package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/groups"
)

// The conditions of the alert triggers. NEW_ENDPOINT is raised in the
// enrollment's transaction; the others are found by EvaluateAlerts, which
// the alert worker calls periodically with its clock. A condition that holds
// already when a rule is created is not news: time-based conditions raise
// only when they came true after the rule existed.

// raiseNewEndpoint raises NEW_ENDPOINT for the organization's enabled rules,
// in the transaction that created the endpoint.
func (tx *Tx) raiseNewEndpoint(ctx context.Context, en Enrollment, endpointID string, now time.Time) error {
	rules, err := tx.enabledRules(ctx, en.OrgID, alerts.NewEndpoint)
	if err != nil || len(rules) == 0 {
		return err
	}
	detail := fmt.Sprintf("Platform %s", en.Platform)
	if en.OS != "" {
		detail += ", " + en.OS
		if en.OSVersion != "" {
			detail += " " + en.OSVersion
		}
	}
	if en.AgentVersion != "" {
		detail += ", agent " + en.AgentVersion
	}
	detail += ". Endpoint id " + endpointID + "."
	for _, r := range rules {
		if _, err := tx.raiseAlert(ctx, r, NewAlertEvent{Key: "endpoint:" + endpointID, Event: alerts.NewEndpoint, Severity: alerts.Info,
			Title: "New endpoint " + en.Hostname + " enrolled", Detail: detail, EndpointID: endpointID}, now); err != nil {
			return err
		}
	}
	return nil
}

// raiseReenrolled raises ENDPOINT_REENROLLED for the organization's
// enabled rules, in the enrollment's transaction: every re-enrollment is an
// event of its own (a new condition key each time).
func (tx *Tx) raiseReenrolled(ctx context.Context, en Enrollment, endpointID, oldHostname string, pending int, now time.Time) error {
	rules, err := tx.enabledRules(ctx, en.OrgID, alerts.EndpointReenrolled)
	if err != nil || len(rules) == 0 {
		return err
	}
	detail := fmt.Sprintf("Machine id %s enrolled again", en.MachineUID)
	if en.TokenID != "" {
		detail += " with enrollment token " + en.TokenID
	}
	if en.ClientAddr != "" {
		detail += " from " + en.ClientAddr
	}
	detail += fmt.Sprintf("; the endpoint (was %s) now answers to the new agent, with its %d pending commands. If no agent was reinstalled there, revoke the token and remove the endpoint. Endpoint id %s.",
		oldHostname, pending, endpointID)
	key := "reenroll:" + endpointID + ":" + NewID()
	for _, r := range rules {
		if _, err := tx.raiseAlert(ctx, r, NewAlertEvent{Key: key, Event: alerts.EndpointReenrolled, Severity: alerts.Warning,
			Title: "Endpoint " + en.Hostname + " enrolled again", Detail: detail, EndpointID: endpointID}, now); err != nil {
			return err
		}
	}
	return nil
}

func (tx *Tx) enabledRules(ctx context.Context, orgID, trigger string) ([]AlertRule, error) {
	rows, err := tx.query(ctx, `SELECT `+alertRuleColumns+` FROM alert_rules WHERE org_id = ? AND trigger_kind = ? AND enabled = TRUE`, orgID, trigger)
	out, err := scanRows(rows, err, scanAlertRule)
	if err != nil {
		return nil, fmt.Errorf("store: alert rules: %w", err)
	}
	return out, nil
}

// AlertEvaluation counts what one EvaluateAlerts pass raised.
type AlertEvaluation struct {
	Rules  int `json:"rules"`
	Raised int `json:"raised"`
	// OfflineAt is the time the offline conditions were evaluated at: now,
	// or earlier while a replica has accepted check-ins it has not written
	// yet (its presence watermark).
	OfflineAt time.Time `json:"offlineAt"`
}

// maxCandidates bounds the events one rule raises per pass; the rest are
// raised by the next passes.
const maxCandidates = 500

// EvaluateAlerts finds the conditions of the time-based triggers at now and
// raises their events. An endpoint not seen for disconnectedAfter is
// disconnected. Several replicas may evaluate at once: an event is raised
// once per condition whoever finds it.
//
// countReport counts the rows of a report of the catalog for REPORT_ROWS
// (the catalog lives above the store); nil leaves REPORT_ROWS rules alone.
func (s *Store) EvaluateAlerts(ctx context.Context, now time.Time, disconnectedAfter time.Duration, countReport ReportCounter) (AlertEvaluation, error) {
	var st AlertEvaluation
	if err := s.trackReboots(ctx, now); err != nil {
		return st, err
	}
	// Offline means no replica heard from the endpoint within the
	// threshold: a check-in a replica accepted but has not written yet
	// counts. The offline conditions are evaluated as of the lowest
	// watermark of the live replicas, before which everything accepted is
	// written; a replica whose writes lag delays offline alerts instead of
	// raising false ones.
	offlineAt := now
	if through, ok, err := s.PresenceWatermark(ctx, now); err != nil {
		return st, err
	} else if ok && through.Before(now) {
		offlineAt = through
	}
	st.OfflineAt = offlineAt
	rows, err := s.query(ctx, `SELECT `+alertRuleColumns+` FROM alert_rules WHERE enabled = TRUE AND trigger_kind NOT IN (?, ?, ?) ORDER BY org_id, id`,
		alerts.NewEndpoint, alerts.EndpointReenrolled, alerts.AgentUpdateFailed)
	rules, err := scanRows(rows, err, scanAlertRule)
	if err != nil {
		return st, fmt.Errorf("store: evaluate alerts: %w", err)
	}
	for _, r := range rules {
		st.Rules++
		var found []NewAlertEvent
		var err error
		switch r.Trigger {
		case alerts.EndpointOffline:
			found, err = s.offlineConditions(ctx, r, now, offlineAt, disconnectedAfter)
		case alerts.GroupUptime:
			found, err = s.groupConditions(ctx, r, now, offlineAt, disconnectedAfter)
		case alerts.RebootRequired:
			found, err = s.rebootConditions(ctx, r, now)
		case alerts.MissingCriticalUpdate:
			found, err = s.missingUpdateConditions(ctx, r, now)
		case alerts.CriticalVuln:
			found, err = s.vulnConditions(ctx, r)
		case alerts.ReportRows:
			if countReport == nil {
				continue
			}
			n, err := s.reportRowsCondition(ctx, r, now, countReport)
			if err != nil {
				return st, err
			}
			st.Raised += n
			continue
		default:
			continue
		}
		if err != nil {
			return st, err
		}
		if len(found) == 0 {
			continue
		}
		err = s.InTx(ctx, func(tx *Tx) error {
			for _, ev := range found {
				raised, err := tx.raiseAlert(ctx, r, ev, now)
				if err != nil {
					return err
				}
				if raised {
					st.Raised++
				}
			}
			return nil
		})
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

// trackReboots records when each endpoint was first seen with a pending
// reboot, and forgets those that rebooted. It reads the endpoints with a
// pending reboot through their partial index (migration 039) and the
// tracked ones, never the whole fleet's rows.
//
// On PostgreSQL each inserted row's foreign-key check takes FOR KEY SHARE
// on its endpoint, in the order the rows are inserted, and holds it to the
// commit. The rows go in id order, the order every other writer locks
// endpoint rows in (the matcher, check-in flushes, the ingester, the status
// sweep), so that even a writer whose lock conflicts with the key share
// (an endpoint's deletion, FOR UPDATE) waits in the same order instead of
// in a circle; the matcher's lock no longer conflicts at all (see
// lockFindings).
func (s *Store) trackReboots(ctx context.Context, now time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `INSERT INTO alert_reboots (endpoint_id, org_id, since)
			SELECT id, org_id, ? FROM endpoints WHERE pending_reboot = TRUE ORDER BY id ON CONFLICT (endpoint_id) DO NOTHING`, millis(now)); err != nil {
			return fmt.Errorf("store: track reboots: %w", err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM alert_reboots
			WHERE NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.id = alert_reboots.endpoint_id AND e.pending_reboot = TRUE)`); err != nil {
			return fmt.Errorf("store: track reboots: %w", err)
		}
		return nil
	})
}

// collect reads rows of (endpoint id, name, since) into events made by mk.
func (s *Store) collect(ctx context.Context, mk func(id, name string, since time.Time) NewAlertEvent, query string, args ...any) ([]NewAlertEvent, error) {
	rows, err := s.query(ctx, query, args...)
	var out []NewAlertEvent
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id, name string
		var since int64
		if err := r.Scan(&id, &name, &since); err != nil {
			return err
		}
		out = append(out, mk(id, name, fromMillis(since)))
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: alert conditions: %w", err)
	}
	return out, nil
}

func ago(now, since time.Time) string {
	d := now.Sub(since).Round(time.Minute)
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	case d >= 2*time.Hour:
		return fmt.Sprintf("%d hours", int(d.Hours()))
	default:
		return fmt.Sprintf("%d minutes", int(d.Minutes()))
	}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// offlineFor is how long an endpoint must be unseen for a threshold in
// minutes: at least until it counts as disconnected.
func offlineFor(minutes int, disconnectedAfter time.Duration) time.Duration {
	return max(time.Duration(minutes)*time.Minute, disconnectedAfter)
}

// stoppedFor is offlineFor for an endpoint whose agent said it stops after
// its last check-in: it counts as disconnected at once, so the threshold
// alone.
func stoppedFor(minutes int) time.Duration { return time.Duration(minutes) * time.Minute }

// offlineCutoff is the latest last check-in of an endpoint offline long
// enough, with two arguments: the cutoff for an endpoint whose agent said
// it stops after its last check-in (stoppedFor), then for any other
// (offlineFor).
const offlineCutoff = `(CASE WHEN p.stopped_at >= p.last_seen_at THEN CAST(? AS BIGINT) ELSE CAST(? AS BIGINT) END)`

// ENDPOINT_OFFLINE: one event per offline episode (the episode is named by
// the last check-in before it). The endpoints unseen for the threshold are
// found as of offlineAt (the presence watermark, at most now).
func (s *Store) offlineConditions(ctx context.Context, r AlertRule, now, offlineAt time.Time, disconnectedAfter time.Duration) ([]NewAlertEvent, error) {
	wait := offlineFor(r.Threshold, disconnectedAfter)
	return s.collect(ctx, func(id, name string, since time.Time) NewAlertEvent {
		t := since
		return NewAlertEvent{Key: fmt.Sprintf("offline:%s:%d", id, millis(since)), Event: alerts.EndpointOffline, Severity: alerts.Warning,
			Title: "Endpoint " + name + " is offline", Detail: fmt.Sprintf("Last check-in %s (%s ago). Endpoint id %s.", stamp(since), ago(now, since), id),
			EndpointID: id, Since: &t}
	}, `SELECT e.id, COALESCE(e.display_name, e.hostname), COALESCE(p.last_seen_at, e.enrolled_at) FROM `+endpointsSeen+`
		WHERE e.org_id = ? AND COALESCE(p.last_seen_at, e.enrolled_at) <= `+offlineCutoff+` AND COALESCE(p.last_seen_at, e.enrolled_at) >= ?
		AND NOT EXISTS (SELECT 1 FROM alert_events ev WHERE ev.rule_id = ? AND ev.endpoint_id = e.id AND ev.since = COALESCE(p.last_seen_at, e.enrolled_at))
		ORDER BY e.id LIMIT ?`,
		r.OrgID, millis(offlineAt.Add(-stoppedFor(r.Threshold))), millis(offlineAt.Add(-wait)), millis(r.CreatedAt.Add(-wait)), r.ID, maxCandidates)
}

// GROUP_UPTIME: a member of a group with offlineAlertMinutes unseen that
// long (one event per group, member and episode), and, for a group with
// onlineAlert, the same member back online after such an event. Members
// unseen are found as of offlineAt, as in offlineConditions.
func (s *Store) groupConditions(ctx context.Context, r AlertRule, now, offlineAt time.Time, disconnectedAfter time.Duration) ([]NewAlertEvent, error) {
	rows, err := s.query(ctx, `SELECT id, name, offline_alert_minutes, online_alert, COALESCE(builtin, '') FROM endpoint_groups
		WHERE org_id = ? AND offline_alert_minutes IS NOT NULL ORDER BY id`, r.OrgID)
	type group struct {
		id, name, builtin string
		minutes           int
		online            bool
	}
	var list []group
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var g group
		if err := row.Scan(&g.id, &g.name, &g.minutes, &g.online, &g.builtin); err != nil {
			return err
		}
		list = append(list, g)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: uptime groups: %w", err)
	}
	var out []NewAlertEvent
	for _, g := range list {
		member, args := `e.id IN (SELECT endpoint_id FROM group_members WHERE group_id = ?)`, []any{g.id}
		switch g.builtin {
		case groups.BuiltinAll:
			member, args = `TRUE`, nil
		case groups.BuiltinNew:
			member, args = `e.enrolled_at >= ?`, []any{millis(now.AddDate(0, 0, -NewEndpointDays))}
		}
		wait := offlineFor(g.minutes, disconnectedAfter)
		offline, err := s.collect(ctx, func(id, name string, since time.Time) NewAlertEvent {
			t := since
			return NewAlertEvent{Key: fmt.Sprintf("group:%s:offline:%s:%d", g.id, id, millis(since)), Event: alerts.GroupUptime, Severity: alerts.Warning,
				Title:      fmt.Sprintf("Endpoint %s of group %s is offline", name, g.name),
				Detail:     fmt.Sprintf("Last check-in %s (%s ago); the group alerts after %d minutes offline. Endpoint id %s.", stamp(since), ago(now, since), g.minutes, id),
				EndpointID: id, GroupID: g.id, Since: &t}
		}, `SELECT e.id, COALESCE(e.display_name, e.hostname), COALESCE(p.last_seen_at, e.enrolled_at) FROM `+endpointsSeen+`
			WHERE e.org_id = ? AND `+member+` AND COALESCE(p.last_seen_at, e.enrolled_at) <= `+offlineCutoff+` AND COALESCE(p.last_seen_at, e.enrolled_at) >= ?
			AND NOT EXISTS (SELECT 1 FROM alert_events ev WHERE ev.rule_id = ? AND ev.endpoint_id = e.id AND ev.group_id = ? AND ev.event = ?
				AND ev.since = COALESCE(p.last_seen_at, e.enrolled_at))
			ORDER BY e.id LIMIT ?`,
			append(append([]any{r.OrgID}, args...), millis(offlineAt.Add(-stoppedFor(g.minutes))), millis(offlineAt.Add(-wait)), millis(r.CreatedAt.Add(-wait)), r.ID, g.id, alerts.GroupUptime, maxCandidates)...)
		if err != nil {
			return nil, err
		}
		out = append(out, offline...)
		if !g.online {
			continue
		}
		// Back online: seen again after the episode the offline event named,
		// and recently enough to count as connected.
		online, err := s.collect(ctx, func(id, name string, since time.Time) NewAlertEvent {
			t := since
			return NewAlertEvent{Key: fmt.Sprintf("group:%s:online:%s:%d", g.id, id, millis(since)), Event: alerts.EventEndpointOnline, Severity: alerts.Info,
				Title:  fmt.Sprintf("Endpoint %s of group %s is back online", name, g.name),
				Detail: fmt.Sprintf("It had been offline since %s. Endpoint id %s.", stamp(since), id), EndpointID: id, GroupID: g.id, Since: &t}
		}, `SELECT e.id, COALESCE(e.display_name, e.hostname), ev.since FROM alert_events ev JOIN endpoints e ON e.id = ev.endpoint_id JOIN endpoint_presence p ON p.endpoint_id = e.id
			WHERE ev.rule_id = ? AND ev.group_id = ? AND ev.event = ? AND p.last_seen_at > ev.since AND `+seenConnected+`
			AND NOT EXISTS (SELECT 1 FROM alert_events back WHERE back.rule_id = ev.rule_id AND back.endpoint_id = ev.endpoint_id
				AND back.group_id = ev.group_id AND back.event = ? AND back.since = ev.since)
			ORDER BY e.id LIMIT ?`,
			r.ID, g.id, alerts.GroupUptime, millis(now.Add(-disconnectedAfter)), alerts.EventEndpointOnline, maxCandidates)
		if err != nil {
			return nil, err
		}
		out = append(out, online...)
	}
	return out, nil
}

// REBOOT_REQUIRED: pending reboot for threshold hours, once per episode.
func (s *Store) rebootConditions(ctx context.Context, r AlertRule, now time.Time) ([]NewAlertEvent, error) {
	wait := time.Duration(r.Threshold) * time.Hour
	return s.collect(ctx, func(id, name string, since time.Time) NewAlertEvent {
		t := since
		return NewAlertEvent{Key: fmt.Sprintf("reboot:%s:%d", id, millis(since)), Event: alerts.RebootRequired, Severity: alerts.Warning,
			Title:  "Endpoint " + name + " needs a reboot",
			Detail: fmt.Sprintf("A reboot has been pending since %s (%s). Endpoint id %s.", stamp(since), ago(now, since), id), EndpointID: id, Since: &t}
	}, `SELECT e.id, COALESCE(e.display_name, e.hostname), rb.since FROM alert_reboots rb JOIN endpoints e ON e.id = rb.endpoint_id
		WHERE rb.org_id = ? AND e.pending_reboot = TRUE AND rb.since <= ? AND rb.since >= ?
		AND NOT EXISTS (SELECT 1 FROM alert_events ev WHERE ev.rule_id = ? AND ev.endpoint_id = e.id AND ev.since = rb.since)
		ORDER BY e.id LIMIT ?`,
		r.OrgID, millis(now.Add(-wait)), millis(r.CreatedAt.Add(-wait)), r.ID, maxCandidates)
}

// MISSING_CRITICAL_UPDATE: one event per endpoint and Critical update
// missing for threshold days.
func (s *Store) missingUpdateConditions(ctx context.Context, r AlertRule, now time.Time) ([]NewAlertEvent, error) {
	wait := time.Duration(r.Threshold) * 24 * time.Hour
	rows, err := s.query(ctx, `SELECT u.endpoint_id, COALESCE(e.display_name, e.hostname), u.key, u.title, u.detected_at
		FROM endpoint_updates u JOIN endpoints e ON e.id = u.endpoint_id
		WHERE u.org_id = ? AND u.derived_severity = 'Critical' AND u.detected_at <= ? AND u.detected_at >= ?
		AND NOT EXISTS (SELECT 1 FROM alert_events ev WHERE ev.rule_id = ? AND ev.condition_key = 'update:' || u.endpoint_id || ':' || u.key)
		ORDER BY u.endpoint_id, u.key LIMIT ?`,
		r.OrgID, millis(now.Add(-wait)), millis(r.CreatedAt.Add(-wait)), r.ID, maxCandidates)
	var out []NewAlertEvent
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var id, name, key, title string
		var detected int64
		if err := row.Scan(&id, &name, &key, &title, &detected); err != nil {
			return err
		}
		since := fromMillis(detected)
		out = append(out, NewAlertEvent{Key: "update:" + id + ":" + key, Event: alerts.MissingCriticalUpdate, Severity: alerts.Warning,
			Title:  fmt.Sprintf("Endpoint %s is missing a Critical update", name),
			Detail: fmt.Sprintf("%s (%s), missing since %s (%s). Endpoint id %s.", title, key, stamp(since), ago(now, since), id), EndpointID: id, Since: &since})
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: missing critical updates: %w", err)
	}
	return out, nil
}

// CRITICAL_VULN: a CVE present on the fleet, detected (again) since the
// rule exists, with CVSS >= threshold or listed in the KEV catalog; once
// per CVE.
func (s *Store) vulnConditions(ctx context.Context, r AlertRule) ([]NewAlertEvent, error) {
	rows, err := s.query(ctx, `SELECT ov.cve_id, c.cvss, k.cve_id IS NOT NULL, ov.endpoints_count, COALESCE(c.description, '')
		FROM org_vulns ov LEFT JOIN vuln_cves c ON c.id = ov.cve_id LEFT JOIN vuln_kev k ON k.cve_id = ov.cve_id
		WHERE ov.org_id = ? AND ov.endpoints_count > 0 AND ov.last_detected_at >= ? AND (c.cvss >= ? OR k.cve_id IS NOT NULL)
		AND NOT EXISTS (SELECT 1 FROM alert_events ev WHERE ev.rule_id = ? AND ev.condition_key = 'cve:' || ov.cve_id)
		ORDER BY ov.cve_id LIMIT ?`, r.OrgID, millis(r.CreatedAt), r.Threshold, r.ID, maxCandidates)
	var out []NewAlertEvent
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var cve, desc string
		var cvss *float64
		var kev bool
		var count int
		if err := row.Scan(&cve, &cvss, &kev, &count, &desc); err != nil {
			return err
		}
		score := "no CVSS score"
		if cvss != nil {
			score = fmt.Sprintf("CVSS %.1f", *cvss)
		}
		if kev {
			score += ", in the CISA KEV catalog (exploited in the wild)"
		}
		detail := fmt.Sprintf("%s; found on %d endpoint(s).", score, count)
		if desc != "" {
			if len(desc) > 300 {
				desc = desc[:300] + "…"
			}
			detail += " " + desc
		}
		out = append(out, NewAlertEvent{Key: "cve:" + cve, Event: alerts.CriticalVuln, Severity: alerts.Critical,
			Title: "Critical vulnerability " + cve + " found on the fleet", Detail: detail})
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: critical vulnerabilities: %w", err)
	}
	return out, nil
}

// reportRowsCondition raises REPORT_ROWS when the report reaches the
// threshold, and re-arms the rule when it falls below.
func (s *Store) reportRowsCondition(ctx context.Context, r AlertRule, now time.Time, countReport ReportCounter) (int, error) {
	if r.ReportKey == nil {
		return 0, nil
	}
	n, err := countReport(ctx, r.OrgID, *r.ReportKey, now)
	if err != nil {
		return 0, err
	}
	over := n >= r.Threshold
	if over == r.overThreshold {
		return 0, nil
	}
	raised := 0
	err = s.InTx(ctx, func(tx *Tx) error {
		// Compare-and-swap on the flag: of replicas evaluating together, one
		// raises the event.
		res, err := tx.exec(ctx, `UPDATE alert_rules SET over_threshold = ? WHERE id = ? AND over_threshold = ?`, over, r.ID, !over)
		if err != nil {
			return fmt.Errorf("store: report rows alert: %w", err)
		}
		if k, _ := res.RowsAffected(); k == 0 || !over {
			return nil
		}
		ok, err := tx.raiseAlert(ctx, r, NewAlertEvent{Key: fmt.Sprintf("rows:%d", millis(now)), Event: alerts.ReportRows, Severity: alerts.Warning,
			Title:  fmt.Sprintf("Report %s has %d rows", *r.ReportKey, n),
			Detail: fmt.Sprintf("The report %s has %d rows, at or over the rule's threshold of %d.", *r.ReportKey, n, r.Threshold)}, now)
		if ok {
			raised++
		}
		return err
	})
	return raised, err
}

// ReportCounter counts the rows a report of the catalog shows for an
// organization at a time.
type ReportCounter func(ctx context.Context, orgID, key string, now time.Time) (int, error)
