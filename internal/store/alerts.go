package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/dberr"
)

// Alert rules and their events. An event is raised at most once per rule
// and condition (UNIQUE (rule_id, condition_key), inserted with ON CONFLICT
// DO NOTHING), and its deliveries are written to alert_outbox in the same
// transaction; a delivery worker of any replica claims each outbox row.
//
// The webhook secret is sealed (secrets.go): every delivery is signed with
// it, so the server reads it back with the secret key. It never leaves the
// store except to sign: AlertRule has no exported field for it and the API
// answers hasWebhookSecret only.

// AlertRule is a stored alert rule.
type AlertRule struct {
	ID               string  `json:"id"`
	OrgID            string  `json:"orgId"`
	Name             string  `json:"name"`
	Trigger          string  `json:"trigger"`
	Threshold        int     `json:"threshold"`
	Enabled          bool    `json:"enabled"`
	EmailTo          *string `json:"emailTo"`
	WebhookURL       *string `json:"webhookUrl"`
	ReportKey        *string `json:"reportKey"`
	HasWebhookSecret bool    `json:"hasWebhookSecret"`
	// WebhookRetryMinutes: how long failed webhooks are tried again (0: no retry).
	WebhookRetryMinutes int       `json:"webhookRetryMinutes"`
	Events              int       `json:"events"`
	CreatedBy           string    `json:"createdBy"`
	CreatedAt           time.Time `json:"createdAt"`
	UpdatedAt           time.Time `json:"updatedAt"`
	// secret is the webhook secret, read by GetAlertRule only (the lists
	// and the evaluation leave it sealed, in sealed).
	secret, sealed string
	overThreshold  bool
}

const alertRuleColumns = `id, org_id, name, trigger_kind, threshold, enabled, email_to, webhook_url, webhook_secret, report_key,
	over_threshold, events, created_by, created_at, updated_at, webhook_retry_minutes`

func scanAlertRule(row interface{ Scan(...any) error }) (AlertRule, error) {
	var r AlertRule
	var email, hook, secret, report sql.NullString
	var created, updated int64
	if err := row.Scan(&r.ID, &r.OrgID, &r.Name, &r.Trigger, &r.Threshold, &r.Enabled, &email, &hook, &secret, &report,
		&r.overThreshold, &r.Events, &r.CreatedBy, &created, &updated, &r.WebhookRetryMinutes); err != nil {
		return r, err
	}
	r.EmailTo, r.WebhookURL, r.ReportKey = nullString(email), nullString(hook), nullString(report)
	r.sealed, r.HasWebhookSecret = secret.String, secret.String != ""
	r.CreatedAt, r.UpdatedAt = fromMillis(created), fromMillis(updated)
	return r, nil
}

// CreateAlertRule stores a checked rule (alerts.Rule.Check) and its audit
// entry in one transaction.
func (s *Store) CreateAlertRule(ctx context.Context, e *AuditEntry, orgID string, in alerts.Rule, now time.Time) (AlertRule, error) {
	id := NewID()
	e.TargetID = id
	secret, err := s.seal(secretWebhook, id, in.WebhookSecret)
	if err != nil {
		return AlertRule{}, fmt.Errorf("store: create alert rule: %w", err)
	}
	e.Summary = map[string]any{"name": in.Name, "trigger": in.Trigger, "threshold": *in.Threshold,
		"email": in.EmailTo != "", "webhook": in.WebhookURL != "", "signed": in.WebhookSecret != "",
		"webhookRetryMinutes": in.WebhookRetryMinutes}
	err = s.Audited(ctx, e, func(tx *Tx) error {
		_, err := tx.exec(ctx, `INSERT INTO alert_rules (id, org_id, name, trigger_kind, threshold, enabled, email_to, webhook_url, webhook_secret,
			report_key, created_by, created_at, updated_at, webhook_retry_minutes) VALUES (?, ?, ?, ?, ?, TRUE, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, orgID, in.Name, in.Trigger, *in.Threshold, nullIfEmpty(in.EmailTo), nullIfEmpty(in.WebhookURL), nullIfEmpty(secret),
			nullIfEmpty(in.ReportKey), e.Actor, millis(now), millis(now), in.WebhookRetryMinutes)
		if err != nil {
			return fmt.Errorf("store: create alert rule: %w", err)
		}
		return nil
	})
	if err != nil {
		return AlertRule{}, err
	}
	return s.GetAlertRule(ctx, orgID, id)
}

// ListAlertRules answers every rule of the organization, oldest first,
// without their webhook secrets (change a rule GetAlertRule read).
func (s *Store) ListAlertRules(ctx context.Context, orgID string) ([]AlertRule, error) {
	rows, err := s.query(ctx, `SELECT `+alertRuleColumns+` FROM alert_rules WHERE org_id = ? ORDER BY created_at, id`, orgID)
	out, err := scanRows(rows, err, scanAlertRule)
	if err != nil {
		return nil, fmt.Errorf("store: list alert rules: %w", err)
	}
	return out, nil
}

// GetAlertRule reads one rule of the organization.
func (s *Store) GetAlertRule(ctx context.Context, orgID, id string) (AlertRule, error) {
	r, err := scanAlertRule(s.queryRow(ctx, `SELECT `+alertRuleColumns+` FROM alert_rules WHERE org_id = ? AND id = ?`, orgID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("store: alert rule %s: %w", id, dberr.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("store: alert rule: %w", err)
	}
	if r.secret, err = s.open(secretWebhook, r.ID, r.sealed); err != nil {
		return r, err
	}
	return r, nil
}

// Rule answers the rule's settings for a change (patchd admin alert update
// applies its flags to it and checks the result).
func (r AlertRule) Rule() alerts.Rule {
	th := r.Threshold
	out := alerts.Rule{Name: r.Name, Trigger: r.Trigger, Threshold: &th, WebhookSecret: r.secret, WebhookRetryMinutes: r.WebhookRetryMinutes}
	if r.EmailTo != nil {
		out.EmailTo = *r.EmailTo
	}
	if r.WebhookURL != nil {
		out.WebhookURL = *r.WebhookURL
	}
	if r.ReportKey != nil {
		out.ReportKey = *r.ReportKey
	}
	return out
}

// UpdateAlertRule replaces a rule's settings with a checked in; enabled,
// when not nil, enables or disables it.
func (s *Store) UpdateAlertRule(ctx context.Context, e *AuditEntry, orgID, id string, in alerts.Rule, enabled *bool, now time.Time) (AlertRule, error) {
	e.TargetID = id
	e.Summary = map[string]any{"name": in.Name, "threshold": *in.Threshold, "email": in.EmailTo != "", "webhook": in.WebhookURL != "",
		"signed": in.WebhookSecret != "", "webhookRetryMinutes": in.WebhookRetryMinutes}
	if enabled != nil {
		e.Summary["enabled"] = *enabled
	}
	secret, err := s.seal(secretWebhook, id, in.WebhookSecret)
	if err != nil {
		return AlertRule{}, fmt.Errorf("store: update alert rule: %w", err)
	}
	err = s.Audited(ctx, e, func(tx *Tx) error {
		res, err := tx.exec(ctx, `UPDATE alert_rules SET name = ?, threshold = ?, email_to = ?, webhook_url = ?, webhook_secret = ?, report_key = ?,
			webhook_retry_minutes = ?, enabled = COALESCE(?, enabled), updated_at = ? WHERE org_id = ? AND id = ?`,
			in.Name, *in.Threshold, nullIfEmpty(in.EmailTo), nullIfEmpty(in.WebhookURL), nullIfEmpty(secret), nullIfEmpty(in.ReportKey),
			in.WebhookRetryMinutes, enabled, millis(now), orgID, id)
		if err != nil {
			return fmt.Errorf("store: update alert rule: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: alert rule %s: %w", id, dberr.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return AlertRule{}, err
	}
	return s.GetAlertRule(ctx, orgID, id)
}

// DeleteAlertRule deletes a rule with its events and pending deliveries.
func (s *Store) DeleteAlertRule(ctx context.Context, e *AuditEntry, orgID, id string) error {
	e.TargetID = id
	return s.Audited(ctx, e, func(tx *Tx) error {
		var name string
		err := tx.queryRow(ctx, `SELECT name FROM alert_rules WHERE org_id = ? AND id = ?`, orgID, id).Scan(&name)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: alert rule %s: %w", id, dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: delete alert rule: %w", err)
		}
		e.Summary = map[string]any{"name": name}
		// Deliveries and events go with the rule (also by cascade; explicit
		// for SQLite databases opened without foreign keys).
		if _, err := tx.exec(ctx, `DELETE FROM alert_outbox WHERE event_id IN (SELECT id FROM alert_events WHERE rule_id = ?)`, id); err != nil {
			return fmt.Errorf("store: delete alert rule: %w", err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM alert_events WHERE rule_id = ?`, id); err != nil {
			return fmt.Errorf("store: delete alert rule: %w", err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM alert_rules WHERE id = ?`, id); err != nil {
			return fmt.Errorf("store: delete alert rule: %w", err)
		}
		return nil
	})
}

// AlertEvent is a raised event with the outcome of its deliveries.
type AlertEvent struct {
	ID             string    `json:"id"`
	RuleID         string    `json:"ruleId"`
	Event          string    `json:"event"`
	Severity       string    `json:"severity"`
	Title          string    `json:"title"`
	Detail         string    `json:"detail"`
	EndpointID     *string   `json:"endpointId"`
	RaisedAt       time.Time `json:"raisedAt"`
	EmailOutcome   *string   `json:"emailOutcome"`
	WebhookOutcome *string   `json:"webhookOutcome"`
}

// ListAlertEvents answers a rule's latest events, newest first.
func (s *Store) ListAlertEvents(ctx context.Context, orgID, ruleID string, limit int) ([]AlertEvent, error) {
	evs, _, err := s.PageAlertEvents(ctx, orgID, ruleID, limit, 0)
	return evs, err
}

// PageAlertEvents answers a page of a rule's events, newest first, with
// the delivery outcomes, and how many events the rule has in all.
func (s *Store) PageAlertEvents(ctx context.Context, orgID, ruleID string, limit, offset int) ([]AlertEvent, int, error) {
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM alert_events WHERE org_id = ? AND rule_id = ?`, orgID, ruleID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count alert events: %w", err)
	}
	rows, err := s.query(ctx, `SELECT id, rule_id, event, severity, title, detail, endpoint_id, raised_at, email_outcome, webhook_outcome
		FROM alert_events WHERE org_id = ? AND rule_id = ? ORDER BY raised_at DESC, id DESC LIMIT ? OFFSET ?`, orgID, ruleID, limit, offset)
	out := []AlertEvent{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var ev AlertEvent
		var endpoint, email, hook sql.NullString
		var raised int64
		if err := r.Scan(&ev.ID, &ev.RuleID, &ev.Event, &ev.Severity, &ev.Title, &ev.Detail, &endpoint, &raised, &email, &hook); err != nil {
			return err
		}
		ev.EndpointID, ev.EmailOutcome, ev.WebhookOutcome = nullString(endpoint), nullString(email), nullString(hook)
		ev.RaisedAt = fromMillis(raised)
		out = append(out, ev)
		return nil
	}); err != nil {
		return nil, 0, fmt.Errorf("store: list alert events: %w", err)
	}
	return out, total, nil
}

// NewAlertEvent is an event to raise for a rule.
type NewAlertEvent struct {
	// Key names the condition: a second event with the same key is not raised.
	Key        string
	Event      string
	Severity   string
	Title      string
	Detail     string
	EndpointID string
	GroupID    string
	// Since is the start of the condition (an offline episode's last check-in).
	Since *time.Time
}

// raiseAlert inserts the event unless the rule raised its condition before,
// counts it on the rule, and queues its deliveries, all in tx. It answers
// whether the event was new.
func (tx *Tx) raiseAlert(ctx context.Context, r AlertRule, ev NewAlertEvent, now time.Time) (bool, error) {
	id := NewID()
	res, err := tx.exec(ctx, `INSERT INTO alert_events (id, org_id, rule_id, condition_key, event, severity, title, detail, endpoint_id, group_id, since, raised_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (rule_id, condition_key) DO NOTHING`,
		id, r.OrgID, r.ID, ev.Key, ev.Event, ev.Severity, ev.Title, ev.Detail, nullIfEmpty(ev.EndpointID), nullIfEmpty(ev.GroupID), nullMillis(ev.Since), millis(now))
	if err != nil {
		return false, fmt.Errorf("store: raise alert: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	if _, err := tx.exec(ctx, `UPDATE alert_rules SET events = events + 1 WHERE id = ?`, r.ID); err != nil {
		return false, fmt.Errorf("store: count alert event: %w", err)
	}
	for _, ch := range []struct {
		name string
		set  bool
	}{{ChannelEmail, r.EmailTo != nil}, {ChannelWebhook, r.WebhookURL != nil}} {
		if !ch.set {
			continue
		}
		if _, err := tx.exec(ctx, `INSERT INTO alert_outbox (id, event_id, channel, created_at) VALUES (?, ?, ?, ?)`,
			NewID(), id, ch.name, millis(now)); err != nil {
			return false, fmt.Errorf("store: queue alert delivery: %w", err)
		}
	}
	return true, nil
}

// TestAlertRule raises a TEST event of the rule (patchd admin alert test),
// delivered like any other.
func (s *Store) TestAlertRule(ctx context.Context, orgID, id string, now time.Time) (AlertEvent, error) {
	return s.TestAlertRuleAudited(ctx, nil, orgID, id, now)
}

// TestAlertRuleAudited is TestAlertRule that, when e is not nil, records
// who sent the test in the same transaction (the API and the console).
func (s *Store) TestAlertRuleAudited(ctx context.Context, e *AuditEntry, orgID, id string, now time.Time) (AlertEvent, error) {
	r, err := s.GetAlertRule(ctx, orgID, id)
	if err != nil {
		return AlertEvent{}, err
	}
	key := "test:" + NewID()
	err = s.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.raiseAlert(ctx, r, NewAlertEvent{Key: key, Event: alerts.EventTest, Severity: alerts.Info,
			Title: "Test of alert rule " + r.Name, Detail: "patchd admin alert test: if you read this, deliveries of this rule arrive."}, now); err != nil {
			return err
		}
		if e == nil {
			return nil
		}
		e.TargetID = r.ID
		e.Summary = map[string]any{"name": r.Name, "condition": key}
		return tx.insertAudit(ctx, e)
	})
	if err != nil {
		return AlertEvent{}, err
	}
	var ev AlertEvent
	var raised int64
	err = s.queryRow(ctx, `SELECT id, rule_id, event, severity, title, detail, raised_at FROM alert_events WHERE rule_id = ? AND condition_key = ?`, r.ID, key).
		Scan(&ev.ID, &ev.RuleID, &ev.Event, &ev.Severity, &ev.Title, &ev.Detail, &raised)
	if err != nil {
		return ev, fmt.Errorf("store: test alert: %w", err)
	}
	ev.RaisedAt = fromMillis(raised)
	return ev, nil
}

// Delivery channels of the outbox.
const (
	ChannelEmail   = "email"
	ChannelWebhook = "webhook"
)

// Delivery is a claimed outbox row with what it takes to deliver it.
type Delivery struct {
	ID      string
	Channel string
	Message alerts.Message
	EmailTo string
	Webhook string
	Secret  string
	// Attempts made before this one.
	Attempts int
	// RetryUntil is the last time a failed webhook may be tried again
	// (zero: the rule does not retry).
	RetryUntil time.Time
	// QueuedAt is when the row entered the outbox (e-mail retries count
	// their window from it).
	QueuedAt time.Time
}

// PendingDeliveries answers outbox rows nobody delivered or holds a claim on.
func (s *Store) PendingDeliveries(ctx context.Context, now time.Time, limit int) ([]string, error) {
	rows, err := s.query(ctx, `SELECT id FROM alert_outbox WHERE done_at IS NULL AND (claimed_until IS NULL OR claimed_until < ?)
		AND (next_at IS NULL OR next_at <= ?) ORDER BY created_at, id LIMIT ?`, millis(now), millis(now), limit)
	out, err := scanRows(rows, err, scanString)
	if err != nil {
		return nil, fmt.Errorf("store: pending deliveries: %w", err)
	}
	return out, nil
}

// ClaimDelivery claims an outbox row for holder until until, with a
// compare-and-swap on the claim: of several replicas one wins. ok is false
// when another holds it or it was delivered.
func (s *Store) ClaimDelivery(ctx context.Context, id, holder string, now, until time.Time) (d Delivery, ok bool, err error) {
	res, err := s.exec(ctx, `UPDATE alert_outbox SET claimed_by = ?, claimed_until = ? WHERE id = ? AND done_at IS NULL
		AND (claimed_until IS NULL OR claimed_until < ?) AND (next_at IS NULL OR next_at <= ?)`, holder, millis(until), id, millis(now), millis(now))
	if err != nil {
		return d, false, fmt.Errorf("store: claim delivery: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return d, false, nil
	}
	var email, hook, secret sql.NullString
	var raised, queued int64
	var retryMinutes int
	var evID, event, severity, title, detail, orgName string
	var rule alerts.RuleRef
	err = s.write.QueryRowContext(ctx, s.q(`SELECT o.channel, ev.id, ev.event, ev.severity, ev.title, ev.detail, ev.raised_at, org.name,
		r.id, r.name, r.trigger_kind, r.email_to, r.webhook_url, r.webhook_secret, o.attempts, o.created_at, r.webhook_retry_minutes
		FROM alert_outbox o JOIN alert_events ev ON ev.id = o.event_id JOIN alert_rules r ON r.id = ev.rule_id JOIN orgs org ON org.id = r.org_id
		WHERE o.id = ?`), id).Scan(&d.Channel, &evID, &event, &severity, &title, &detail, &raised, &orgName,
		&rule.ID, &rule.Name, &rule.Trigger, &email, &hook, &secret, &d.Attempts, &queued, &retryMinutes)
	if errors.Is(err, sql.ErrNoRows) {
		return d, false, nil // deleted with its rule meanwhile
	}
	if err != nil {
		return d, false, fmt.Errorf("store: read delivery: %w", err)
	}
	d.ID, d.EmailTo, d.Webhook, d.QueuedAt = id, email.String, hook.String, fromMillis(queued)
	if d.Secret, err = s.open(secretWebhook, rule.ID, secret.String); err != nil {
		return d, false, err
	}
	if retryMinutes > 0 && d.Channel == ChannelWebhook {
		d.RetryUntil = fromMillis(queued).Add(time.Duration(retryMinutes) * time.Minute)
	}
	d.Message = alerts.NewMessage(evID, event, fromMillis(raised), orgName, rule, severity, title, detail)
	return d, true, nil
}

// ExtendDeliveryClaim pushes holder's claim on an outbox row to until, so
// that no other replica takes the row over while holder is still recording
// the outcome of a delivery it made. ours is false when the row is done
// (the outcome was recorded after all), deleted, or claimed by another.
func (s *Store) ExtendDeliveryClaim(ctx context.Context, id, holder string, until time.Time) (ours bool, err error) {
	res, err := s.exec(ctx, `UPDATE alert_outbox SET claimed_until = ? WHERE id = ? AND claimed_by = ? AND done_at IS NULL`, millis(until), id, holder)
	if err != nil {
		return false, fmt.Errorf("store: extend delivery claim: %w", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// FinishDelivery records the outcome of a delivery on its event ("sent",
// "HTTP 200", or the error) and closes the outbox row; failed marks it
// failed for good (the console lists it with "Send again").
func (s *Store) FinishDelivery(ctx context.Context, id, holder, outcome string, failed bool, now time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		var eventID, channel string
		err := tx.queryRow(ctx, `SELECT event_id, channel FROM alert_outbox WHERE id = ? AND claimed_by = ? AND done_at IS NULL`, id, holder).Scan(&eventID, &channel)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // deleted with its rule, or taken over after the claim expired
		}
		if err != nil {
			return fmt.Errorf("store: finish delivery: %w", err)
		}
		if len(outcome) > 1000 {
			outcome = outcome[:1000]
		}
		var lastError any
		if failed {
			lastError = outcome
		}
		if _, err := tx.exec(ctx, `UPDATE alert_outbox SET done_at = ?, failed = ?, last_error = COALESCE(?, last_error), attempts = attempts + 1 WHERE id = ?`,
			millis(now), failed, lastError, id); err != nil {
			return fmt.Errorf("store: finish delivery: %w", err)
		}
		column := "email_outcome"
		if channel == ChannelWebhook {
			column = "webhook_outcome"
		}
		if _, err := tx.exec(ctx, `UPDATE alert_events SET `+column+` = ? WHERE id = ?`, outcome, eventID); err != nil {
			return fmt.Errorf("store: record delivery outcome: %w", err)
		}
		return nil
	})
}

// RetryDelivery records a failed attempt of holder's claimed delivery and
// gives the row back to the outbox for another attempt at next (by any
// replica: the claim ends here, and next_at keeps every replica off it
// until then). The event's outcome says the delivery is being retried.
// It answers false when the row is not holder's any more.
func (s *Store) RetryDelivery(ctx context.Context, id, holder, outcome string, next time.Time) (bool, error) {
	ours := false
	err := s.InTx(ctx, func(tx *Tx) error {
		var eventID, channel string
		var attempts int
		err := tx.queryRow(ctx, `SELECT event_id, channel, attempts FROM alert_outbox WHERE id = ? AND claimed_by = ? AND done_at IS NULL`, id, holder).
			Scan(&eventID, &channel, &attempts)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: retry delivery: %w", err)
		}
		if len(outcome) > 1000 {
			outcome = outcome[:1000]
		}
		if _, err := tx.exec(ctx, `UPDATE alert_outbox SET attempts = attempts + 1, next_at = ?, last_error = ?, claimed_by = NULL, claimed_until = NULL
			WHERE id = ?`, millis(next), outcome, id); err != nil {
			return fmt.Errorf("store: retry delivery: %w", err)
		}
		column := "email_outcome"
		if channel == ChannelWebhook {
			column = "webhook_outcome"
		}
		note := fmt.Sprintf("%s (attempt %d; retrying)", outcome, attempts+1)
		if _, err := tx.exec(ctx, `UPDATE alert_events SET `+column+` = ? WHERE id = ?`, note, eventID); err != nil {
			return fmt.Errorf("store: record delivery outcome: %w", err)
		}
		ours = true
		return nil
	})
	return ours, err
}

// FailedDelivery is a delivery that ended failed.
type FailedDelivery struct {
	ID       string    `json:"id"`
	EventID  string    `json:"eventId"`
	Channel  string    `json:"channel"`
	Title    string    `json:"title"`
	RaisedAt time.Time `json:"raisedAt"`
	Attempts int       `json:"attempts"`
	Error    string    `json:"error"`
	FailedAt time.Time `json:"failedAt"`
}

// ListFailedDeliveries answers a rule's failed deliveries, latest first.
func (s *Store) ListFailedDeliveries(ctx context.Context, orgID, ruleID string, limit int) ([]FailedDelivery, error) {
	rows, err := s.query(ctx, `SELECT o.id, ev.id, o.channel, ev.title, ev.raised_at, o.attempts, COALESCE(o.last_error, ''), o.done_at
		FROM alert_outbox o JOIN alert_events ev ON ev.id = o.event_id
		WHERE ev.org_id = ? AND ev.rule_id = ? AND o.failed AND o.done_at IS NOT NULL
		ORDER BY o.done_at DESC, o.id DESC LIMIT ?`, orgID, ruleID, limit)
	out := []FailedDelivery{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var f FailedDelivery
		var raised, done int64
		if err := r.Scan(&f.ID, &f.EventID, &f.Channel, &f.Title, &raised, &f.Attempts, &f.Error, &done); err != nil {
			return err
		}
		f.RaisedAt, f.FailedAt = fromMillis(raised), fromMillis(done)
		out = append(out, f)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: list failed deliveries: %w", err)
	}
	return out, nil
}

// ResendDelivery queues a new delivery of a failed delivery's event on the
// same channel, audited ("alert.resend"); the event keeps its id, so a
// receiver that got it after all can drop the copy. It answers the new
// outbox row's id.
func (s *Store) ResendDelivery(ctx context.Context, e *AuditEntry, orgID, ruleID, deliveryID string, now time.Time) (string, error) {
	newID := NewID()
	e.TargetID = ruleID
	err := s.Audited(ctx, e, func(tx *Tx) error {
		var eventID, channel string
		var failed bool
		err := tx.queryRow(ctx, `SELECT o.event_id, o.channel, o.failed FROM alert_outbox o JOIN alert_events ev ON ev.id = o.event_id
			WHERE o.id = ? AND ev.org_id = ? AND ev.rule_id = ?`, deliveryID, orgID, ruleID).Scan(&eventID, &channel, &failed)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: delivery %s: %w", deliveryID, dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: resend delivery: %w", err)
		}
		if !failed {
			return fmt.Errorf("store: delivery %s did not fail: %w", deliveryID, dberr.ErrConflict)
		}
		e.Summary = map[string]any{"event": eventID, "channel": channel, "delivery": deliveryID, "newDelivery": newID}
		if _, err := tx.exec(ctx, `INSERT INTO alert_outbox (id, event_id, channel, created_at) VALUES (?, ?, ?, ?)`,
			newID, eventID, channel, millis(now)); err != nil {
			return fmt.Errorf("store: resend delivery: %w", err)
		}
		// The failed row is answered for once: it leaves the failed list.
		if _, err := tx.exec(ctx, `UPDATE alert_outbox SET failed = FALSE WHERE id = ?`, deliveryID); err != nil {
			return fmt.Errorf("store: resend delivery: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return newID, nil
}

// PendingRetries counts the deliveries waiting for another attempt (the
// patchd_alert_pending_retries gauge).
func (s *Store) PendingRetries(ctx context.Context) (int, error) {
	var n int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM alert_outbox WHERE done_at IS NULL AND attempts > 0`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: pending retries: %w", err)
	}
	return n, nil
}
