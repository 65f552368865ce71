package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
)

// listAlertRules is operation 20: every rule, not paginated.
func (a *API) listAlertRules(w http.ResponseWriter, r *http.Request) error {
	rules, err := a.store.ListAlertRules(r.Context(), principal(r).OrgID)
	if err != nil {
		return err
	}
	items := make([]apiv1.AlertRule, len(rules))
	for i, rule := range rules {
		items[i] = alertRuleOut(rule)
	}
	httpx.WriteJSON(w, http.StatusOK, httpx.NewList(items, len(items)))
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
	rule, err := a.store.CreateAlertRule(r.Context(), auditEntry(r, "alert.create", "alert", ""), principal(r).OrgID, in, time.Now())
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
	items := make([]apiv1.FailedDelivery, len(failed))
	for i, f := range failed {
		items[i] = apiv1.FailedDelivery{ID: f.ID, EventID: f.EventID, Channel: f.Channel, Title: f.Title, RaisedAt: f.RaisedAt,
			Attempts: f.Attempts, Error: f.Error, FailedAt: f.FailedAt}
	}
	httpx.WriteJSON(w, http.StatusOK, httpx.NewList(items, len(items)))
	return nil
}

// resendDelivery queues a new delivery of a failed delivery's event,
// audited as alert.resend (patchd addition).
func (a *API) resendDelivery(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	queued, err := a.store.ResendDelivery(r.Context(), auditEntry(r, "alert.resend", "alert", id), principal(r).OrgID, id, r.PathValue("delivery"), time.Now())
	switch {
	case isNotFound(err):
		return httpx.NotFound("failed delivery")
	case errors.Is(err, store.ErrConflict):
		return httpx.Errorf(http.StatusConflict, "delivery_not_failed", "this delivery did not fail or was sent again already")
	case err != nil:
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.DeliveryQueued{OK: true, Delivery: queued})
	return nil
}
