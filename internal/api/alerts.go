package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
)

// listAlertRules is operation 20: every rule, not paginated.
func (a *API) listAlertRules(w http.ResponseWriter, r *http.Request) error {
	rules, err := a.store.ListAlertRules(r.Context(), principal(r).OrgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, listOf(rules, alertRuleOut))
	return nil
}

// createAlertRule is operation 21. The webhook secret is stored to sign
// deliveries and never answered, logged or audited (only whether there is one).
func (a *API) createAlertRule(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.AlertRuleBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	in := alerts.Rule{Name: body.Name, Trigger: body.Trigger, Threshold: body.Threshold}
	for p, v := range map[*string]*string{&in.EmailTo: body.EmailTo, &in.WebhookURL: body.WebhookURL,
		&in.WebhookSecret: body.WebhookSecret, &in.ReportKey: body.ReportKey} {
		if v != nil {
			*p = *v
		}
	}
	if body.WebhookRetryMinutes != nil {
		in.WebhookRetryMinutes = *body.WebhookRetryMinutes
	}
	if err := in.Check(); err != nil {
		return err
	}
	rule, err := a.store.CreateAlertRule(r.Context(), a.auditEntry(r, "alert.create", "alert", ""), principal(r).OrgID, in, time.Now())
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.AlertRuleResult{OK: true, Rule: apiv1.Ref{ID: rule.ID, Name: rule.Name}})
	return nil
}

func alertRuleOut(r store.AlertRule) apiv1.AlertRule {
	created := r.CreatedAt
	return apiv1.AlertRule{ID: r.ID, Name: r.Name, Trigger: r.Trigger, Threshold: r.Threshold, Enabled: r.Enabled, EmailTo: r.EmailTo,
		WebhookURL: r.WebhookURL, ReportKey: r.ReportKey, HasWebhookSecret: r.HasWebhookSecret, WebhookRetryMinutes: r.WebhookRetryMinutes,
		Events: r.Events, CreatedAt: &created}
}

// listFailedDeliveries answers a rule's deliveries that failed for good,
// latest first (patchd addition).
func (a *API) listFailedDeliveries(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	rule, err := a.store.GetAlertRule(r.Context(), p.OrgID, r.PathValue("id"))
	if isNotFound(err) {
		return httpx.NotFound("alert rule")
	}
	if err != nil {
		return err
	}
	failed, err := a.store.ListFailedDeliveries(r.Context(), p.OrgID, rule.ID, 100)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, listOf(failed, func(f store.FailedDelivery) apiv1.FailedDelivery {
		return apiv1.FailedDelivery{ID: f.ID, EventID: f.EventID, Channel: f.Channel, Title: f.Title, RaisedAt: f.RaisedAt,
			Attempts: f.Attempts, Error: f.Error, FailedAt: f.FailedAt}
	}))
	return nil
}

// resendDelivery queues a new delivery of a failed delivery's event,
// audited as alert.resend (patchd addition).
func (a *API) resendDelivery(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	queued, err := a.store.ResendDelivery(r.Context(), a.auditEntry(r, "alert.resend", "alert", id), principal(r).OrgID, id, r.PathValue("delivery"), time.Now())
	switch {
	case isNotFound(err):
		return httpx.NotFound("failed delivery")
	case errors.Is(err, dberr.ErrConflict):
		return httpx.Errorf(http.StatusConflict, "delivery_not_failed", "this delivery did not fail or was sent again already")
	case err != nil:
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.DeliveryQueued{OK: true, Delivery: queued})
	return nil
}

func alertRuleError(err error) error {
	if isNotFound(err) {
		return httpx.NotFound("alert rule")
	}
	return err
}

// getAlertRule answers one rule (patchd addition).
func (a *API) getAlertRule(w http.ResponseWriter, r *http.Request) error {
	rule, err := a.store.GetAlertRule(r.Context(), principal(r).OrgID, r.PathValue("id"))
	if err != nil {
		return alertRuleError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, alertRuleOut(rule))
	return nil
}

// patchAlertRule changes the fields the body gives (patchd addition), as
// patchd admin alert update does: the trigger stays, an empty string
// removes an optional field, and the result is checked whole.
func (a *API) patchAlertRule(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.AlertRulePatch
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	orgID := principal(r).OrgID
	rule, err := a.store.GetAlertRule(r.Context(), orgID, r.PathValue("id"))
	if err != nil {
		return alertRuleError(err)
	}
	in := rule.Rule()
	if body.Name != nil {
		in.Name = *body.Name
	}
	if body.Threshold != nil {
		in.Threshold = body.Threshold
	}
	if body.WebhookRetryMinutes != nil {
		in.WebhookRetryMinutes = *body.WebhookRetryMinutes
	}
	for p, v := range map[*string]*string{&in.EmailTo: body.EmailTo, &in.WebhookURL: body.WebhookURL,
		&in.WebhookSecret: body.WebhookSecret, &in.ReportKey: body.ReportKey} {
		if v != nil {
			*p = *v
		}
	}
	if err := in.Check(); err != nil {
		return err
	}
	updated, err := a.store.UpdateAlertRule(r.Context(), a.auditEntry(r, "alert.update", "alert", rule.ID), orgID, rule.ID, in, nil, time.Now())
	if err != nil {
		return alertRuleError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, alertRuleOut(updated))
	return nil
}

// enableAlertRule and disableAlertRule switch a rule on or off (patchd
// addition); a disabled rule raises no events.
func (a *API) enableAlertRule(w http.ResponseWriter, r *http.Request) error {
	return a.switchAlertRule(w, r, true)
}

func (a *API) disableAlertRule(w http.ResponseWriter, r *http.Request) error {
	return a.switchAlertRule(w, r, false)
}

func (a *API) switchAlertRule(w http.ResponseWriter, r *http.Request, on bool) error {
	orgID := principal(r).OrgID
	rule, err := a.store.GetAlertRule(r.Context(), orgID, r.PathValue("id"))
	if err != nil {
		return alertRuleError(err)
	}
	action := "alert.disable"
	if on {
		action = "alert.enable"
	}
	in := rule.Rule()
	if err := in.Check(); err != nil {
		return err
	}
	updated, err := a.store.UpdateAlertRule(r.Context(), a.auditEntry(r, action, "alert", rule.ID), orgID, rule.ID, in, &on, time.Now())
	if err != nil {
		return alertRuleError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, alertRuleOut(updated))
	return nil
}

// deleteAlertRule deletes a rule with its events and pending deliveries
// (patchd addition).
func (a *API) deleteAlertRule(w http.ResponseWriter, r *http.Request) error {
	orgID := principal(r).OrgID
	rule, err := a.store.GetAlertRule(r.Context(), orgID, r.PathValue("id"))
	if err != nil {
		return alertRuleError(err)
	}
	if err := a.store.DeleteAlertRule(r.Context(), a.auditEntry(r, "alert.delete", "alert", rule.ID), orgID, rule.ID); err != nil {
		return alertRuleError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}

// testAlertRule raises a TEST event of the rule, delivered like any other
// (patchd addition); its outcomes appear in the rule's events.
func (a *API) testAlertRule(w http.ResponseWriter, r *http.Request) error {
	orgID := principal(r).OrgID
	ev, err := a.store.TestAlertRuleAudited(r.Context(), a.auditEntry(r, "alert.test", "alert", ""), orgID, r.PathValue("id"), time.Now())
	if err != nil {
		return alertRuleError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, alertEventOut(ev))
	return nil
}

// listAlertEvents answers a page of the rule's events, newest first, with
// the outcome of their deliveries (patchd addition).
func (a *API) listAlertEvents(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.ParsePage(r)
	if err != nil {
		return err
	}
	orgID := principal(r).OrgID
	rule, err := a.store.GetAlertRule(r.Context(), orgID, r.PathValue("id"))
	if err != nil {
		return alertRuleError(err)
	}
	evs, total, err := a.store.PageAlertEvents(r.Context(), orgID, rule.ID, page.Limit, page.Offset)
	if err != nil {
		return err
	}
	items := make([]apiv1.AlertEvent, len(evs))
	for i, ev := range evs {
		items[i] = alertEventOut(ev)
	}
	httpx.WriteJSON(w, http.StatusOK, httpx.NewPage(items, total, page))
	return nil
}

func alertEventOut(ev store.AlertEvent) apiv1.AlertEvent {
	return apiv1.AlertEvent{ID: ev.ID, RuleID: ev.RuleID, Event: ev.Event, Severity: ev.Severity, Title: ev.Title, Detail: ev.Detail,
		EndpointID: ev.EndpointID, RaisedAt: ev.RaisedAt, EmailOutcome: ev.EmailOutcome, WebhookOutcome: ev.WebhookOutcome}
}
