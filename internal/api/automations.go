package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/actions"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/schedule"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// Limits of an AutomationBody.
const (
	maxAutomationName = 255
	maxDescription    = 4096
	maxWindowMinutes  = 7 * 24 * 60
	maxRings          = 20
	maxRingOffset     = 366
	// onceGrace is how far in the past a ONCE runAt may be (clock skew
	// between a client and the server).
	onceGrace = time.Minute
)

// toWire is the response schema of an automation; the single read carries
// its payload and ring fields.
func toWire(a store.Automation, detail bool) apiv1.Automation {
	out := apiv1.Automation{ID: a.ID, Name: a.Name, Action: a.ActionType, ActionLabel: actions.Label(a.ActionType), Kind: a.Kind,
		OffsetDays: a.OffsetDays, Weekday: a.Weekday, MonthDay: a.MonthDay, WindowMinutes: a.WindowMinutes, RunAt: a.RunAt,
		Enabled: a.Enabled, TargetMode: a.TargetMode, EndpointIDs: a.EndpointIDs, LastRunAt: a.LastRunAt, NextRunAt: a.NextRunAt}
	if out.EndpointIDs == nil {
		out.EndpointIDs = []string{}
	}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	out.ScheduleKind, out.Freq, out.AtTime, out.GroupID, out.CreatedBy = opt(a.ScheduleKind), opt(a.Freq), opt(a.AtTime), opt(a.GroupID), opt(a.CreatedBy)
	if !a.Enabled {
		out.NextRunAt = nil
	}
	if detail {
		out.Description = opt(a.Description)
		out.Payload = a.Payload
		if a.Kind == store.KindRing {
			out.StartDate, out.Rings = opt(a.StartDate), a.Rings
		}
	}
	return out
}

// listAutomations is operation 13.
func (a *API) listAutomations(w http.ResponseWriter, r *http.Request) error {
	list, err := a.store.ListAutomations(r.Context(), principal(r).OrgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, listOf(list, func(au store.Automation) apiv1.Automation { return toWire(au, false) }))
	return nil
}

// getAutomation is operation 15.
func (a *API) getAutomation(w http.ResponseWriter, r *http.Request) error {
	au, err := a.store.GetAutomation(r.Context(), principal(r).OrgID, r.PathValue("id"))
	if err != nil {
		return automationNotFound(err)
	}
	httpx.WriteJSON(w, http.StatusOK, toWire(au, true))
	return nil
}

func automationNotFound(err error) error {
	if isNotFound(err) {
		return httpx.NotFound("automation")
	}
	return err
}

// orgLocation is the organization's time zone, in which schedules run.
func (a *API) orgLocation(ctx context.Context, orgID string) (*time.Location, error) {
	o, err := a.store.FindOrg(ctx, orgID)
	if err != nil {
		return nil, err
	}
	return store.Location(o.TimeZone), nil
}

// automationFromBody validates an AutomationBody (create or full replace)
// and builds the stored automation, its action and, for RING, nothing to
// run now. Every field problem is reported at once.
func (a *API) automationFromBody(ctx context.Context, orgID string, b apiv1.AutomationBody, raw []byte, now time.Time) (store.Automation, actions.Action, error) {
	var errs valid.Errors
	au := store.Automation{OrgID: orgID, Enabled: true}
	au.Name = strings.TrimSpace(b.Name)
	switch n := utf8.RuneCountInString(au.Name); {
	case n == 0:
		errs.Add("name", "is required")
	case n > maxAutomationName:
		errs.Add("name", "must have at most %d characters", maxAutomationName)
	}
	if b.Description != nil {
		au.Description = strings.TrimSpace(*b.Description)
		if utf8.RuneCountInString(au.Description) > maxDescription {
			errs.Add("description", "must have at most %d characters", maxDescription)
		}
	}
	if b.Enabled != nil {
		au.Enabled = *b.Enabled
	}
	au.ActionType = strings.ToUpper(strings.TrimSpace(b.ActionType))
	var act actions.Action
	if _, ok := actions.Types[au.ActionType]; !ok {
		errs.Add("actionType", "must be RUN_SCRIPT, DEPLOY_UPDATES, REBOOT, DEPLOY_SOFTWARE or UNINSTALL_SOFTWARE")
	} else {
		var err error
		act, err = actions.Parse(au.ActionType, b.Payload, "payload.")
		if err == nil {
			err = a.checkScript(ctx, orgID, act)
		}
		if err != nil {
			var v *valid.Error
			if !errors.As(err, &v) {
				return au, act, err
			}
			errs.Problems = append(errs.Problems, v.Problems...)
		}
		au.Payload = act.Payload
	}
	kind := ""
	if b.Kind != nil {
		kind = strings.ToUpper(strings.TrimSpace(*b.Kind))
	}
	switch kind {
	case "", "SCHEDULED", store.KindSimple:
		au.Kind = store.KindSimple
	case store.KindRing:
		au.Kind = store.KindRing
	default:
		errs.Add("kind", "must be SCHEDULED or RING")
	}
	if b.WindowMinutes != nil {
		if *b.WindowMinutes < 1 || *b.WindowMinutes > maxWindowMinutes {
			errs.Add("windowMinutes", "must be 1 to %d, or null for no limit", maxWindowMinutes)
		}
		au.WindowMinutes = b.WindowMinutes
	}
	if b.AtTime != nil && strings.TrimSpace(*b.AtTime) != "" {
		c, err := schedule.ParseClock(*b.AtTime)
		if err != nil {
			errs.Add("atTime", "%s", err.Error())
		}
		au.AtTime = c.String()
	}
	if au.Kind == store.KindRing {
		if err := a.ringFromBody(ctx, &au, b, raw, &errs); err != nil {
			return au, act, err
		}
	} else {
		if err := a.targetFromBody(ctx, &au, b, &errs); err != nil {
			return au, act, err
		}
		scheduleFromBody(&au, b, now, &errs)
	}
	if err := errs.Err(); err != nil {
		return au, act, err
	}
	if au.Kind == store.KindRing {
		au.TargetMode = store.TargetGroup
		if au.MinSuccessRate != nil {
			var p map[string]any
			json.Unmarshal(au.Payload, &p)
			p["minSuccessRate"] = *au.MinSuccessRate
			au.Payload, _ = json.Marshal(p)
		}
	}
	return au, act, nil
}

// targetFromBody maps targetMode all/group/endpoints to GROUP (all = the
// built-in All endpoints group) or ENDPOINTS, and checks the targets exist.
// Field problems go to errs; the error it answers is the database failing
// to check them, which is no problem of the request's.
func (a *API) targetFromBody(ctx context.Context, au *store.Automation, b apiv1.AutomationBody, errs *valid.Errors) error {
	mode := ""
	if b.TargetMode != nil {
		mode = strings.ToLower(strings.TrimSpace(*b.TargetMode))
	}
	if mode == "" {
		switch {
		case b.GroupID != nil && *b.GroupID != "":
			mode = "group"
		case len(b.EndpointIDs) > 0:
			mode = "endpoints"
		}
	}
	switch mode {
	case "all":
		id, err := a.store.BuiltinGroupID(ctx, au.OrgID, "all")
		if isNotFound(err) {
			errs.Add("targetMode", "the organization has no All endpoints group")
			return nil
		}
		if err != nil {
			return err
		}
		au.TargetMode, au.GroupID = store.TargetGroup, id
	case "group":
		au.TargetMode = store.TargetGroup
		if b.GroupID == nil || strings.TrimSpace(*b.GroupID) == "" {
			errs.Add("groupId", "is required when targetMode is group")
			return nil
		}
		au.GroupID = strings.TrimSpace(*b.GroupID)
		if _, err := a.store.GroupMemberIDs(ctx, au.OrgID, au.GroupID); isNotFound(err) {
			errs.Add("groupId", "no such group in the organization")
		} else if err != nil {
			return err
		}
	case "endpoints":
		au.TargetMode = store.TargetEndpoints
		seen := map[string]bool{}
		for _, id := range b.EndpointIDs {
			if id = strings.TrimSpace(id); id != "" && !seen[id] {
				seen[id] = true
				au.EndpointIDs = append(au.EndpointIDs, id)
			}
		}
		if len(au.EndpointIDs) == 0 {
			errs.Add("endpointIds", "must list at least one endpoint when targetMode is endpoints")
			return nil
		}
		if len(au.EndpointIDs) > maxActionEndpoints {
			errs.Add("endpointIds", "must list at most %d endpoints", maxActionEndpoints)
			return nil
		}
		known, err := a.store.ExistingEndpoints(ctx, au.OrgID, au.EndpointIDs)
		if err != nil {
			return err
		}
		for i, id := range au.EndpointIDs {
			if !known[id] {
				errs.Add(fmt.Sprintf("endpointIds[%d]", i), "no such endpoint in the organization")
			}
		}
	case "":
		errs.Add("targetMode", "is required: all, group (with groupId) or endpoints (with endpointIds)")
	default:
		errs.Add("targetMode", "must be all, group or endpoints")
	}
	return nil
}

// scheduleFromBody reads scheduleKind and the fields of its kind.
func scheduleFromBody(au *store.Automation, b apiv1.AutomationBody, now time.Time, errs *valid.Errors) {
	kind := ""
	if b.ScheduleKind != nil {
		kind = strings.ToUpper(strings.TrimSpace(*b.ScheduleKind))
	}
	if kind == "" {
		switch {
		case b.Freq != nil && *b.Freq != "":
			kind = schedule.KindRecurring
		case b.RunAt != nil && *b.RunAt != "":
			kind = schedule.KindOnce
		}
	}
	au.ScheduleKind = kind
	switch kind {
	case schedule.KindNow:
	case schedule.KindOnce:
		if b.RunAt == nil || strings.TrimSpace(*b.RunAt) == "" {
			errs.Add("runAt", "is required when scheduleKind is ONCE")
			return
		}
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(*b.RunAt))
		if err != nil {
			errs.Add("runAt", "must be an ISO 8601 date-time with a time zone, for example 2026-11-20T22:00:00Z")
			return
		}
		if t.Before(now.Add(-onceGrace)) {
			errs.Add("runAt", "is in the past")
		}
		t = t.UTC()
		au.RunAt = &t
	case schedule.KindRecurring:
		if b.Freq == nil || *b.Freq == "" {
			errs.Add("freq", "is required when scheduleKind is RECURRING: DAILY, WEEKLY, MONTHLY or PATCH_TUESDAY")
			return
		}
		au.Freq = strings.ToUpper(strings.TrimSpace(*b.Freq))
		if au.AtTime == "" {
			if b.AtTime == nil || strings.TrimSpace(*b.AtTime) == "" {
				errs.Add("atTime", "is required for a recurring schedule (HH:MM)")
			}
		}
		switch au.Freq {
		case schedule.Daily:
		case schedule.Weekly:
			if b.Weekday == nil {
				errs.Add("weekday", "is required when freq is WEEKLY (0 = Sunday … 6)")
			} else if *b.Weekday < 0 || *b.Weekday > 6 {
				errs.Add("weekday", "must be 0 (Sunday) to 6 (Saturday)")
			}
			au.Weekday = b.Weekday
		case schedule.Monthly:
			if b.MonthDay == nil {
				errs.Add("monthDay", "is required when freq is MONTHLY (1 to 28)")
			} else if *b.MonthDay < 1 || *b.MonthDay > schedule.MaxMonthDay {
				errs.Add("monthDay", "must be 1 to %d", schedule.MaxMonthDay)
			}
			au.MonthDay = b.MonthDay
		case schedule.PatchTuesday:
			if b.OffsetDays != nil {
				if *b.OffsetDays < 0 || *b.OffsetDays > schedule.MaxOffsetDays {
					errs.Add("offsetDays", "must be 0 to %d", schedule.MaxOffsetDays)
				}
				au.OffsetDays = *b.OffsetDays
			}
		default:
			errs.Add("freq", "must be DAILY, WEEKLY, MONTHLY or PATCH_TUESDAY")
		}
	case "":
		errs.Add("scheduleKind", "is required: NOW, ONCE (with runAt) or RECURRING (with freq)")
	default:
		errs.Add("scheduleKind", "must be NOW, ONCE or RECURRING")
	}
}

// ringFromBody reads startDate, rings and the ring gate of the payload;
// like targetFromBody it answers only the database failing.
func (a *API) ringFromBody(ctx context.Context, au *store.Automation, b apiv1.AutomationBody, raw []byte, errs *valid.Errors) error {
	if b.StartDate == nil || strings.TrimSpace(*b.StartDate) == "" {
		errs.Add("startDate", "is required for a RING automation (YYYY-MM-DD)")
	} else if d, err := schedule.ParseDate(*b.StartDate); err != nil {
		errs.Add("startDate", "%s", err.Error())
	} else {
		au.StartDate = d.String()
	}
	if len(b.Rings) == 0 {
		errs.Add("rings", "must list at least one ring {name, groupId, offsetDays}")
	}
	if len(b.Rings) > maxRings {
		errs.Add("rings", "must list at most %d rings", maxRings)
	}
	prev := 0
	for i, ring := range b.Rings {
		f := fmt.Sprintf("rings[%d].", i)
		ring.Name, ring.GroupID = strings.TrimSpace(ring.Name), strings.TrimSpace(ring.GroupID)
		if ring.Name == "" {
			ring.Name = fmt.Sprintf("Ring %d", i+1)
		}
		if ring.GroupID == "" {
			errs.Add(f+"groupId", "is required")
		} else if _, err := a.store.GroupMemberIDs(ctx, au.OrgID, ring.GroupID); isNotFound(err) {
			errs.Add(f+"groupId", "no such group in the organization")
		} else if err != nil {
			return err
		}
		if ring.OffsetDays < 0 || ring.OffsetDays > maxRingOffset {
			errs.Add(f+"offsetDays", "must be 0 to %d", maxRingOffset)
		} else if ring.OffsetDays < prev {
			errs.Add(f+"offsetDays", "must not be before the previous ring's (%d)", prev)
		}
		prev = max(prev, ring.OffsetDays)
		au.Rings = append(au.Rings, ring)
	}
	if b.ScheduleKind != nil && *b.ScheduleKind != "" {
		errs.Add("scheduleKind", "does not apply to a RING automation: rings run at startDate + offsetDays")
	}
	// The gate is configurable in the payload: minSuccessRate as a share
	// (0.7) or a percentage (70).
	var gate struct {
		MinSuccessRate *float64 `json:"minSuccessRate"`
	}
	var body struct {
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(raw, &body) == nil && len(bytes.TrimSpace(body.Payload)) > 0 && json.Unmarshal(body.Payload, &gate) == nil && gate.MinSuccessRate != nil {
		rate := *gate.MinSuccessRate
		if rate > 1 {
			rate /= 100
		}
		if rate < 0 || rate > 1 || math.IsNaN(rate) {
			errs.Add("payload.minSuccessRate", "must be a share 0 to 1 or a percentage 0 to 100")
		}
		au.MinSuccessRate = &rate
	}
	return nil
}

// createAutomation is operation 14; scheduleKind NOW runs it at once, in
// the transaction that creates it.
func (a *API) createAutomation(w http.ResponseWriter, r *http.Request) error {
	raw, b, err := decodeAutomationBody(w, r)
	if err != nil {
		return err
	}
	p := principal(r)
	now := time.Now()
	au, act, err := a.automationFromBody(r.Context(), p.OrgID, b, raw, now)
	if err != nil {
		return err
	}
	loc, err := a.orgLocation(r.Context(), p.OrgID)
	if err != nil {
		return err
	}
	au.CreatedBy = p.Actor()
	au.NextRunAt = au.FirstRun(now, loc)
	var targets []string
	runNow := au.Kind == store.KindSimple && au.ScheduleKind == schedule.KindNow
	if runNow {
		if targets, err = a.automationTargets(r.Context(), au); err != nil {
			return err
		}
	}
	var run store.CreatedRun
	e := a.auditEntry(r, "automation.create", "automation", "")
	e.Summary = map[string]any{"name": au.Name, "actionType": au.ActionType, "kind": au.Kind}
	err = a.store.Audited(r.Context(), e, func(tx *store.Tx) error {
		if err := tx.CreateAutomation(r.Context(), &au, now); err != nil {
			return err
		}
		e.TargetID = au.ID
		if !runNow {
			return nil
		}
		var err error
		run, err = tx.LaunchRun(r.Context(), store.Launch{Run: runOf(au, p.Actor()), Action: act, EndpointIDs: targets}, now)
		if err != nil {
			return err
		}
		e.Summary["runId"], e.Summary["queued"] = run.RunID, run.Queued
		return tx.MarkAutomationRan(r.Context(), au.OrgID, au.ID, now)
	})
	switch {
	case errors.Is(err, store.ErrNoEndpoints):
		return valid.One("targetMode", "the target holds no endpoint to run on now")
	case errors.Is(err, store.ErrNothingToInstall):
		return errNothingToInstall
	case err != nil:
		return err
	}
	var out apiv1.AutomationCreated
	out.OK = true
	out.Automation.ID, out.Automation.Name = au.ID, au.Name
	if runNow {
		out.Automation.RunID, out.Automation.Queued = &run.RunID, run.Queued
		a.queued(r.Context(), run.Endpoints)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func decodeAutomationBody(w http.ResponseWriter, r *http.Request) ([]byte, apiv1.AutomationBody, error) {
	var raw json.RawMessage
	var b apiv1.AutomationBody
	if err := httpx.DecodeJSON(w, r, &raw); err != nil {
		return nil, b, err
	}
	if err := httpx.UnmarshalBody(raw, &b); err != nil {
		return nil, b, err
	}
	return raw, b, nil
}

// runOf names a run of an automation.
func runOf(au store.Automation, createdBy string) store.NewRun {
	return store.NewRun{OrgID: au.OrgID, Name: au.Name, CreatedBy: createdBy, AutomationID: au.ID, AutomationName: au.Name}
}

// automationTargets resolves an automation's endpoints now (a dynamic
// group's members at this moment). A RING automation targets the group of
// its next ring (its last once the rollout is over).
func (a *API) automationTargets(ctx context.Context, au store.Automation) ([]string, error) {
	group := au.GroupID
	if au.Kind == store.KindRing && len(au.Rings) > 0 {
		group = au.Rings[min(au.RingNext, len(au.Rings)-1)].GroupID
	} else if au.TargetMode == store.TargetEndpoints {
		return au.EndpointIDs, nil
	}
	ids, err := a.store.GroupMemberIDs(ctx, au.OrgID, group)
	if isNotFound(err) {
		return nil, nil // the group went away: no endpoint to run on
	}
	return ids, err
}

// patchAutomation is operation 16: a light change (enabled, name,
// description), or a full replace when the body has actionType.
func (a *API) patchAutomation(w http.ResponseWriter, r *http.Request) error {
	raw, b, err := decodeAutomationBody(w, r)
	if err != nil {
		return err
	}
	p := principal(r)
	id := r.PathValue("id")
	now := time.Now()
	cur, err := a.store.GetAutomation(r.Context(), p.OrgID, id)
	if err != nil {
		return automationNotFound(err)
	}
	loc, err := a.orgLocation(r.Context(), p.OrgID)
	if err != nil {
		return err
	}
	var probe map[string]json.RawMessage
	json.Unmarshal(raw, &probe)
	if _, full := probe["actionType"]; full {
		au, _, err := a.automationFromBody(r.Context(), p.OrgID, b, raw, now)
		if err != nil {
			return err
		}
		if au.Kind == store.KindSimple && au.ScheduleKind == schedule.KindNow {
			return valid.One("scheduleKind", "NOW only applies when creating; run an automation with POST /api/v1/automations/{id}/run")
		}
		au.ID, au.CreatedBy = id, cur.CreatedBy
		au.NextRunAt = au.FirstRun(now, loc)
		e := a.auditEntry(r, "automation.replace", "automation", id)
		e.Summary = map[string]any{"name": au.Name, "actionType": au.ActionType, "kind": au.Kind}
		if err := a.store.Audited(r.Context(), e, func(tx *store.Tx) error { return tx.ReplaceAutomation(r.Context(), &au, now) }); err != nil {
			return automationNotFound(err)
		}
		httpx.WriteJSON(w, http.StatusOK, apiv1.AutomationResult{OK: true, Automation: apiv1.Ref{ID: id, Name: au.Name}})
		return nil
	}
	var patch apiv1.AutomationPatch
	if err := httpx.UnmarshalBody(raw, &patch); err != nil {
		return err
	}
	var errs valid.Errors
	c := store.AutomationChange{Enabled: patch.Enabled}
	name := cur.Name
	if patch.Name != nil {
		name = strings.TrimSpace(*patch.Name)
		switch n := utf8.RuneCountInString(name); {
		case n == 0:
			errs.Add("name", "must not be empty")
		case n > maxAutomationName:
			errs.Add("name", "must have at most %d characters", maxAutomationName)
		}
		c.Name = &name
	}
	if patch.Description != nil {
		d := strings.TrimSpace(*patch.Description)
		if utf8.RuneCountInString(d) > maxDescription {
			errs.Add("description", "must have at most %d characters", maxDescription)
		}
		c.Description = &d
	}
	if err := errs.Err(); err != nil {
		return err
	}
	if patch.Enabled != nil && *patch.Enabled && !cur.Enabled {
		// Slots that passed while disabled are not missed: start from now.
		c.SetNext, c.NextRunAt = true, cur.FirstRun(now, loc)
		if cur.ScheduleKind == schedule.KindOnce && cur.RunAt != nil && cur.RunAt.Before(now) {
			c.NextRunAt = nil
		}
	}
	e := a.auditEntry(r, "automation.update", "automation", id)
	e.Summary = map[string]any{}
	if c.Name != nil {
		e.Summary["name"] = *c.Name
	}
	if c.Description != nil {
		e.Summary["description"] = *c.Description
	}
	if c.Enabled != nil {
		e.Summary["enabled"] = *c.Enabled
	}
	if err := a.store.Audited(r.Context(), e, func(tx *store.Tx) error { return tx.ChangeAutomation(r.Context(), p.OrgID, id, c, now) }); err != nil {
		return automationNotFound(err)
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.AutomationResult{OK: true, Automation: apiv1.Ref{ID: id, Name: name}})
	return nil
}

// deleteAutomation is operation 17; the automation's runs stay in the history.
func (a *API) deleteAutomation(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	e := a.auditEntry(r, "automation.delete", "automation", id)
	if err := a.store.Audited(r.Context(), e, func(tx *store.Tx) error { return tx.DeleteAutomation(r.Context(), principal(r).OrgID, id) }); err != nil {
		return automationNotFound(err)
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}

// runAutomation is operation 22: the automation's action now, on its
// targets as they are now, whether it is enabled or not. A DEPLOY_UPDATES
// automation with nothing to install anywhere still records its run (every
// command CANCELLED, "Nothing to install"); a target without endpoints is 404.
func (a *API) runAutomation(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	au, err := a.store.GetAutomation(r.Context(), p.OrgID, r.PathValue("id"))
	if err != nil {
		return automationNotFound(err)
	}
	act, err := actions.Parse(au.ActionType, au.Payload, "payload.")
	if err != nil {
		return fmt.Errorf("api: stored payload of automation %s: %w", au.ID, err)
	}
	targets, err := a.automationTargets(r.Context(), au)
	if err != nil {
		return err
	}
	now := time.Now()
	e := a.auditEntry(r, "automation.run", "run", "")
	e.Summary = map[string]any{"automationId": au.ID, "name": au.Name}
	run, err := a.store.LaunchRun(r.Context(), e, store.Launch{Run: runOf(au, p.Actor()), Action: act, EndpointIDs: targets, RecordEmpty: true}, now)
	switch {
	case errors.Is(err, store.ErrNoEndpoints):
		return httpx.Errorf(http.StatusNotFound, "not_found", "no valid endpoints: the automation's target holds no endpoint now")
	case errors.Is(err, dberr.ErrNotFound):
		return httpx.Errorf(http.StatusNotFound, "not_found", "the automation's stored script no longer exists")
	case err != nil:
		return err
	}
	if err := a.store.InTx(r.Context(), func(tx *store.Tx) error { return tx.MarkAutomationRan(r.Context(), au.OrgID, au.ID, now) }); err != nil {
		return err
	}
	a.queued(r.Context(), run.Endpoints)
	httpx.WriteJSON(w, http.StatusOK, apiv1.RunStarted{OK: true, RunID: run.RunID, Queued: run.Queued})
	return nil
}
