package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/schedule"
)

// Automation kinds and target modes as stored (the response's words).
const (
	KindSimple      = "SIMPLE"
	KindRing        = "RING"
	TargetGroup     = "GROUP"
	TargetEndpoints = "ENDPOINTS"
)

// Automation is a stored automation with its schedule and ring state.
type Automation struct {
	ID             string
	OrgID          string
	Name           string
	Description    string
	ActionType     string
	Payload        json.RawMessage
	Kind           string
	ScheduleKind   string // NOW, ONCE, RECURRING; "" for RING
	Freq           string
	AtTime         string
	Weekday        *int
	MonthDay       *int
	OffsetDays     int
	WindowMinutes  *int
	RunAt          *time.Time
	Enabled        bool
	TargetMode     string
	GroupID        string
	EndpointIDs    []string
	StartDate      string
	Rings          []apiv1.Ring
	MinSuccessRate *float64
	RingNext       int
	RingRunID      string
	HaltedReason   string
	LastRunAt      *time.Time
	NextRunAt      *time.Time
	CreatedBy      string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

const automationColumns = `id, org_id, name, description, action_type, payload, kind, schedule_kind, freq, at_time, weekday, month_day, offset_days,
	window_minutes, run_at, enabled, target_mode, group_id, endpoint_ids, start_date, rings, min_success_rate, ring_next, ring_run_id, halted_reason,
	last_run_at, next_run_at, created_by, created_at, updated_at`

func scanAutomation(row interface{ Scan(...any) error }) (Automation, error) {
	var a Automation
	var description, scheduleKind, freq, atTime, groupID, startDate, ringRunID, halted, createdBy sql.NullString
	var weekday, monthDay, window sql.NullInt64
	var runAt, lastRun, nextRun sql.NullInt64
	var minRate sql.NullFloat64
	var payload, endpoints, rings string
	var created, updated int64
	if err := row.Scan(&a.ID, &a.OrgID, &a.Name, &description, &a.ActionType, &payload, &a.Kind, &scheduleKind, &freq, &atTime, &weekday, &monthDay,
		&a.OffsetDays, &window, &runAt, &a.Enabled, &a.TargetMode, &groupID, &endpoints, &startDate, &rings, &minRate, &a.RingNext, &ringRunID, &halted,
		&lastRun, &nextRun, &createdBy, &created, &updated); err != nil {
		return a, err
	}
	a.Description, a.ScheduleKind, a.Freq, a.AtTime = description.String, scheduleKind.String, freq.String, atTime.String
	a.GroupID, a.StartDate, a.RingRunID, a.HaltedReason, a.CreatedBy = groupID.String, startDate.String, ringRunID.String, halted.String, createdBy.String
	a.Weekday, a.MonthDay, a.WindowMinutes = nullInt(weekday), nullInt(monthDay), nullInt(window)
	a.RunAt, a.LastRunAt, a.NextRunAt = nullTime(runAt), nullTime(lastRun), nullTime(nextRun)
	if minRate.Valid {
		a.MinSuccessRate = &minRate.Float64
	}
	a.Payload = json.RawMessage(payload)
	if err := json.Unmarshal([]byte(endpoints), &a.EndpointIDs); err != nil {
		return a, fmt.Errorf("automation endpoints: %w", err)
	}
	if err := json.Unmarshal([]byte(rings), &a.Rings); err != nil {
		return a, fmt.Errorf("automation rings: %w", err)
	}
	a.CreatedAt, a.UpdatedAt = fromMillis(created), fromMillis(updated)
	return a, nil
}

func nullInt(v sql.NullInt64) *int {
	if !v.Valid {
		return nil
	}
	n := int(v.Int64)
	return &n
}

// placeholders is "?, ?, …" with n marks.
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

func intOrNil(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func floatOrNil(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// definitionArgs are the values of the columns an automation's definition
// sets, in the order of definitionColumns.
const definitionColumns = `name, description, action_type, payload, kind, schedule_kind, freq, at_time, weekday, month_day, offset_days, window_minutes,
	run_at, enabled, target_mode, group_id, endpoint_ids, start_date, rings, min_success_rate, next_run_at`

func (a *Automation) definitionArgs() []any {
	endpoints, _ := json.Marshal(nonNilSlice(a.EndpointIDs))
	rings, _ := json.Marshal(nonNilSlice(a.Rings))
	return []any{a.Name, nullIfEmpty(a.Description), a.ActionType, string(a.Payload), a.Kind, nullIfEmpty(a.ScheduleKind), nullIfEmpty(a.Freq),
		nullIfEmpty(a.AtTime), intOrNil(a.Weekday), intOrNil(a.MonthDay), a.OffsetDays, intOrNil(a.WindowMinutes), nullMillis(a.RunAt), a.Enabled,
		a.TargetMode, nullIfEmpty(a.GroupID), string(endpoints), nullIfEmpty(a.StartDate), string(rings), floatOrNil(a.MinSuccessRate), nullMillis(a.NextRunAt)}
}

// CreateAutomation stores a new automation in the caller's transaction.
func (tx *Tx) CreateAutomation(ctx context.Context, a *Automation, now time.Time) error {
	a.ID, a.CreatedAt, a.UpdatedAt = NewID(), now.UTC(), now.UTC()
	args := append([]any{a.ID, a.OrgID}, a.definitionArgs()...)
	args = append(args, nullIfEmpty(a.CreatedBy), millis(now), millis(now))
	if _, err := tx.exec(ctx, `INSERT INTO automations (id, org_id, `+definitionColumns+`, created_by, created_at, updated_at)
		VALUES (`+placeholders(len(args))+`)`, args...); err != nil {
		return fmt.Errorf("store: create automation: %w", err)
	}
	return nil
}

// ReplaceAutomation replaces every field of an automation's definition;
// its ring state starts over.
func (tx *Tx) ReplaceAutomation(ctx context.Context, a *Automation, now time.Time) error {
	args := append(a.definitionArgs(), millis(now), a.OrgID, a.ID)
	res, err := tx.exec(ctx, `UPDATE automations SET (`+definitionColumns+`, updated_at) = (`+placeholders(len(args)-2)+`),
		ring_next = 0, ring_run_id = NULL, halted_reason = NULL WHERE org_id = ? AND id = ?`, args...)
	if err != nil {
		return fmt.Errorf("store: replace automation: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: automation %s: %w", a.ID, dberr.ErrNotFound)
	}
	return nil
}

// AutomationChange is a light change of an automation; nil fields stay.
type AutomationChange struct {
	Name        *string
	Description *string
	Enabled     *bool
	// NextRunAt is written when SetNext is true (re-enabling recomputes it).
	SetNext   bool
	NextRunAt *time.Time
}

// ChangeAutomation applies a light change in the caller's transaction.
func (tx *Tx) ChangeAutomation(ctx context.Context, orgID, id string, c AutomationChange, now time.Time) error {
	set, args := `updated_at = ?`, []any{millis(now)}
	if c.Name != nil {
		set += `, name = ?`
		args = append(args, *c.Name)
	}
	if c.Description != nil {
		set += `, description = ?`
		args = append(args, nullIfEmpty(*c.Description))
	}
	if c.Enabled != nil {
		set += `, enabled = ?`
		args = append(args, *c.Enabled)
	}
	if c.SetNext {
		set += `, next_run_at = ?`
		args = append(args, nullMillis(c.NextRunAt))
	}
	res, err := tx.exec(ctx, `UPDATE automations SET `+set+` WHERE org_id = ? AND id = ?`, append(args, orgID, id)...)
	if err != nil {
		return fmt.Errorf("store: change automation: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: automation %s: %w", id, dberr.ErrNotFound)
	}
	return nil
}

// DeleteAutomation removes an automation; its runs stay in the history.
func (tx *Tx) DeleteAutomation(ctx context.Context, orgID, id string) error {
	res, err := tx.exec(ctx, `DELETE FROM automations WHERE org_id = ? AND id = ?`, orgID, id)
	if err != nil {
		return fmt.Errorf("store: delete automation: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: automation %s: %w", id, dberr.ErrNotFound)
	}
	return nil
}

// GetAutomation reads one automation of the organization.
func (s *Store) GetAutomation(ctx context.Context, orgID, id string) (Automation, error) {
	a, err := scanAutomation(s.queryRow(ctx, `SELECT `+automationColumns+` FROM automations WHERE org_id = ? AND id = ?`, orgID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("store: automation %s: %w", id, dberr.ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("store: get automation: %w", err)
	}
	return a, nil
}

// GetAutomation reads one automation in the transaction.
func (tx *Tx) GetAutomation(ctx context.Context, orgID, id string) (Automation, error) {
	a, err := scanAutomation(tx.queryRow(ctx, `SELECT `+automationColumns+` FROM automations WHERE org_id = ? AND id = ?`, orgID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("store: automation %s: %w", id, dberr.ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("store: get automation: %w", err)
	}
	return a, nil
}

// ListAutomations lists the organization's automations by name.
func (s *Store) ListAutomations(ctx context.Context, orgID string) ([]Automation, error) {
	rows, err := s.query(ctx, `SELECT `+automationColumns+` FROM automations WHERE org_id = ? ORDER BY name, id`, orgID)
	out, err := scanRows(rows, err, scanAutomation)
	if err != nil {
		return nil, fmt.Errorf("store: list automations: %w", err)
	}
	return out, nil
}

// DueAutomations lists enabled automations whose next slot is at or before
// now, the most overdue first.
func (s *Store) DueAutomations(ctx context.Context, now time.Time, limit int) ([]Automation, error) {
	rows, err := s.query(ctx, `SELECT `+automationColumns+` FROM automations WHERE enabled AND next_run_at IS NOT NULL AND next_run_at <= ?
		ORDER BY next_run_at, id LIMIT ?`, millis(now), limit)
	out, err := scanRows(rows, err, scanAutomation)
	if err != nil {
		return nil, fmt.Errorf("store: due automations: %w", err)
	}
	return out, nil
}

// Slot is the scheduler's claim on an automation's due slot and what the
// automation becomes once the slot is handled.
type Slot struct {
	OrgID, AutomationID string
	// At is the claimed slot: the stored next_run_at.
	At time.Time
	// Next is the slot after it (nil: none).
	Next *time.Time
	// Ran tells that a run started (last_run_at moves).
	Ran bool
	// RingNext, RingRunID and Halted are the ring state after the slot.
	RingNext     int
	RingRunID    string
	HaltedReason string
}

// ErrSlotTaken answers a claim on a slot another replica (or an edit)
// already moved.
var ErrSlotTaken = errors.New("store: automation slot already claimed")

// ClaimSlot moves an automation from its due slot to the next one, only if
// the slot is still the stored one: a compare-and-swap on next_run_at, so
// that among several replicas exactly one fires a slot. It must be the
// first write of the transaction that starts the slot's run, so that a
// replica that dies before committing leaves the slot due for another.
func (tx *Tx) ClaimSlot(ctx context.Context, sl Slot, now time.Time) error {
	var lastRun any
	if sl.Ran {
		lastRun = millis(now)
	}
	res, err := tx.exec(ctx, `UPDATE automations SET next_run_at = ?, last_run_at = COALESCE(?, last_run_at), ring_next = ?, ring_run_id = ?,
		halted_reason = ? WHERE id = ? AND org_id = ? AND enabled AND next_run_at = ?`,
		nullMillis(sl.Next), lastRun, sl.RingNext, nullIfEmpty(sl.RingRunID), nullIfEmpty(sl.HaltedReason), sl.AutomationID, sl.OrgID, millis(sl.At))
	if err != nil {
		return fmt.Errorf("store: claim automation slot: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrSlotTaken
	}
	return nil
}

// SetRingRun records the run a ring started (in the slot's transaction,
// once the run exists).
func (tx *Tx) SetRingRun(ctx context.Context, automationID, runID string) error {
	if _, err := tx.exec(ctx, `UPDATE automations SET ring_run_id = ? WHERE id = ?`, runID, automationID); err != nil {
		return fmt.Errorf("store: ring run: %w", err)
	}
	return nil
}

// RecordSkip records a slot that did not run, and why.
func (tx *Tx) RecordSkip(ctx context.Context, orgID, automationID string, slot time.Time, reason string, now time.Time) error {
	if _, err := tx.exec(ctx, `INSERT INTO automation_skips (id, org_id, automation_id, slot_at, recorded_at, reason) VALUES (?, ?, ?, ?, ?, ?)`,
		NewID(), orgID, automationID, millis(slot), millis(now), reason); err != nil {
		return fmt.Errorf("store: record skipped slot: %w", err)
	}
	return nil
}

// Skip is a recorded slot that did not run.
type Skip struct {
	SlotAt     time.Time `json:"slotAt"`
	RecordedAt time.Time `json:"recordedAt"`
	Reason     string    `json:"reason"`
}

// ListSkips lists an automation's skipped slots, newest first.
func (s *Store) ListSkips(ctx context.Context, orgID, automationID string, limit int) ([]Skip, error) {
	rows, err := s.query(ctx, `SELECT slot_at, recorded_at, reason FROM automation_skips WHERE org_id = ? AND automation_id = ?
		ORDER BY slot_at DESC, id DESC LIMIT ?`, orgID, automationID, limit)
	out := []Skip{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var sk Skip
		var slot, rec int64
		if err := r.Scan(&slot, &rec, &sk.Reason); err != nil {
			return err
		}
		sk.SlotAt, sk.RecordedAt = fromMillis(slot), fromMillis(rec)
		out = append(out, sk)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: list skipped slots: %w", err)
	}
	return out, nil
}

// RingOutcome reads what a ring's run achieved: commands that had something
// to do (not those cancelled with nothing to install), their successes, and
// whether the run still goes on.
func (s *Store) RingOutcome(ctx context.Context, orgID, runID string) (attempted, succeeded int, running bool, err error) {
	var status string
	var total int
	err = s.queryRow(ctx, `SELECT status, total, succeeded FROM runs WHERE org_id = ? AND id = ?`, orgID, runID).Scan(&status, &total, &succeeded)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, fmt.Errorf("store: run %s: %w", runID, dberr.ErrNotFound)
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("store: ring outcome: %w", err)
	}
	var nothing int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM commands WHERE run_id = ? AND status = 'CANCELLED' AND result LIKE 'Nothing to install%'`,
		runID).Scan(&nothing); err != nil {
		return 0, 0, false, fmt.Errorf("store: ring outcome: %w", err)
	}
	return total - nothing, succeeded, status == RunRunning, nil
}

// Recurring is the automation's recurring schedule (freq RECURRING).
func (a Automation) Recurring() (schedule.Recurring, error) {
	r := schedule.Recurring{Freq: a.Freq, OffsetDays: a.OffsetDays}
	c, err := schedule.ParseClock(a.AtTime)
	if err != nil {
		return r, fmt.Errorf("atTime %w", err)
	}
	r.At = c
	if a.Weekday != nil {
		r.Weekday = time.Weekday(*a.Weekday)
	}
	if a.MonthDay != nil {
		r.MonthDay = *a.MonthDay
	}
	return r, r.Validate()
}

// RingClock is the time of day rings start at: atTime, or midnight.
func (a Automation) RingClock() schedule.Clock {
	c, err := schedule.ParseClock(a.AtTime)
	if err != nil {
		return schedule.Clock{}
	}
	return c
}

// Next is the automation's first slot strictly after the given instant,
// in loc, or nil when none is left: a NOW or past ONCE automation, or a
// ring rollout that finished or halted (rings run at their own dates).
func (a Automation) Next(after time.Time, loc *time.Location) *time.Time {
	var t time.Time
	switch {
	case a.Kind == KindRing:
		if a.HaltedReason != "" || a.RingNext >= len(a.Rings) {
			return nil
		}
		start, err := schedule.ParseDate(a.StartDate)
		if err != nil {
			return nil
		}
		t = schedule.RingSlot(start, a.RingClock(), schedule.Ring{Name: a.Rings[a.RingNext].Name, OffsetDays: a.Rings[a.RingNext].OffsetDays}, loc)
	case a.ScheduleKind == schedule.KindOnce:
		if a.RunAt == nil || !a.RunAt.After(after) {
			return nil
		}
		t = *a.RunAt
	case a.ScheduleKind == schedule.KindRecurring:
		r, err := a.Recurring()
		if err != nil {
			return nil
		}
		t = r.Next(after, loc)
	default:
		return nil
	}
	t = t.UTC().Truncate(time.Millisecond)
	return &t
}

// FirstRun is the slot a new (or re-enabled) automation waits for: a ONCE
// automation's runAt even when it is a moment ago, else Next(now).
func (a Automation) FirstRun(now time.Time, loc *time.Location) *time.Time {
	if a.Kind == KindSimple && a.ScheduleKind == schedule.KindOnce && a.RunAt != nil {
		t := a.RunAt.UTC().Truncate(time.Millisecond)
		return &t
	}
	return a.Next(now, loc)
}

// Location loads an organization's time zone; UTC when it is unknown.
func Location(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return l
}

// MarkAutomationRan sets lastRunAt of an automation run outside its
// schedule (created with NOW, or run on demand).
func (tx *Tx) MarkAutomationRan(ctx context.Context, orgID, id string, now time.Time) error {
	if _, err := tx.exec(ctx, `UPDATE automations SET last_run_at = ? WHERE org_id = ? AND id = ?`, millis(now), orgID, id); err != nil {
		return fmt.Errorf("store: automation last run: %w", err)
	}
	return nil
}
