package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// The alert rules pages. A rule is created through the REST API (POST
// /api/v1/alerts as the user); editing, enabling, disabling, deleting and
// test events use the store functions of patchd admin alert, each audited
// as the user. Viewing needs reports.view and changing reports.manage, the
// permissions of the API's alert operations.

type alertsData struct {
	Rules    []store.AlertRule
	Triggers []alerts.Trigger
	Reports  []string
	// F is the new rule form's values; Refused the server's refusal of
	// them, in the form's words (the form is shown again, as typed).
	F       url.Values
	Refused string
}

func (c *Console) alertList(w http.ResponseWriter, r *http.Request, s *session) error {
	rules, err := c.store.ListAlertRules(r.Context(), s.User.OrgID)
	if err != nil {
		return err
	}
	d := alertsData{Rules: rules, Triggers: alerts.Triggers, Reports: alerts.ReportKeys, F: url.Values{}}
	return c.render(w, r, s, http.StatusOK, "alerts", "", "Alert rules", "alerts", d)
}

// alertFormAgain shows the alert rules page with the new rule form as it
// was posted (the secret is not written back into the page) and why the
// server refused it.
func (c *Console) alertFormAgain(w http.ResponseWriter, r *http.Request, s *session, err error) error {
	text, ok := alertLabels.refusal(err)
	if !ok {
		return err
	}
	rules, lerr := c.store.ListAlertRules(r.Context(), s.User.OrgID)
	if lerr != nil {
		return lerr
	}
	f := url.Values{}
	for k, v := range r.PostForm {
		if k != "webhookSecret" && k != "csrf" {
			f[k] = v
		}
	}
	d := alertsData{Rules: rules, Triggers: alerts.Triggers, Reports: alerts.ReportKeys, F: f, Refused: text}
	return c.render(w, r, s, refusedStatus(err), "alerts", "", "Alert rules", "alerts", d)
}

// alertBody reads the rule form as the API's AlertRuleBody; a blank
// threshold takes the trigger's default.
func alertBody(f url.Values) (apiv1.AlertRuleBody, error) {
	b := apiv1.AlertRuleBody{Name: f.Get("name"), Trigger: f.Get("trigger")}
	if t := strings.TrimSpace(f.Get("threshold")); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil {
			return b, badRequest("Threshold: must be a whole number")
		}
		b.Threshold = &n
	}
	if t := strings.TrimSpace(f.Get("webhookRetryMinutes")); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil {
			return b, badRequest("Retry failed webhooks for: must be a whole number of minutes")
		}
		b.WebhookRetryMinutes = &n
	}
	for p, name := range map[**string]string{&b.EmailTo: "emailTo", &b.WebhookURL: "webhookUrl", &b.WebhookSecret: "webhookSecret"} {
		if v := strings.TrimSpace(f.Get(name)); v != "" {
			*p = &v
		}
	}
	if b.Trigger == alerts.ReportRows {
		if v := f.Get("reportKey"); v != "" {
			b.ReportKey = &v
		}
	}
	return b, nil
}

func (c *Console) alertCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	body, err := alertBody(r.PostForm)
	if err != nil {
		return c.alertFormAgain(w, r, s, err)
	}
	var out apiv1.AlertRuleResult
	if err := c.callAPI(r, s, http.MethodPost, "/api/v1/alerts", body, &out); err != nil {
		return c.alertFormAgain(w, r, s, err)
	}
	return c.done(w, r, "/console/alerts/"+out.Rule.ID, nil, "Alert rule "+out.Rule.Name+" created.")
}

type alertData struct {
	Rule     store.AlertRule
	Trigger  alerts.Trigger
	Events   []store.AlertEvent
	Failed   []store.FailedDelivery
	Reports  []string
	Triggers []alerts.Trigger
	// Pending tells whether a delivery of a shown event has no result yet:
	// the events table then polls for them.
	Pending bool
	// F holds the edit form as posted when the server refused it (shown
	// again as typed), Refused why; F is nil otherwise.
	F       url.Values
	Refused string
}

// alertEvents is how many of a rule's latest events its page shows.
const alertEvents = 50

func (c *Console) alertData(r *http.Request, s *session) (alertData, error) {
	rule, err := c.store.GetAlertRule(r.Context(), s.User.OrgID, r.PathValue("id"))
	if err != nil {
		if isNotFound(err) {
			return alertData{}, notFound("alert rule")
		}
		return alertData{}, err
	}
	evs, err := c.store.ListAlertEvents(r.Context(), s.User.OrgID, rule.ID, alertEvents)
	if err != nil {
		return alertData{}, err
	}
	failed, err := c.store.ListFailedDeliveries(r.Context(), s.User.OrgID, rule.ID, alertEvents)
	if err != nil {
		return alertData{}, err
	}
	t, _ := alerts.Lookup(rule.Trigger)
	d := alertData{Rule: rule, Trigger: t, Events: evs, Failed: failed, Reports: alerts.ReportKeys, Triggers: alerts.Triggers}
	for _, ev := range evs {
		if (rule.EmailTo != nil && ev.EmailOutcome == nil) || (rule.WebhookURL != nil && ev.WebhookOutcome == nil) ||
			(ev.WebhookOutcome != nil && strings.HasSuffix(*ev.WebhookOutcome, "; retrying)")) {
			d.Pending = true
		}
	}
	return d, nil
}

func (c *Console) alertDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := c.alertData(r, s)
	if err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "alert", "", d.Rule.Name, "alerts", d)
}

// alertEventsPart is the rule page's events table, polled by htmx while a
// delivery has no result yet.
func (c *Console) alertEventsPart(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := c.alertData(r, s)
	if err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "alert", "events", "", "", d)
}

// alertRefusal turns a rule's field problems into a message for the user.
func alertRefusal(err error) error {
	var ve *valid.Error
	switch {
	case errors.As(err, &ve):
		return badRequest(alertLabels.lines(ve.Problems))
	case errors.Is(err, store.ErrNotFound):
		return notFound("alert rule")
	}
	return err
}

// alertSave applies the edit form to the rule, like patchd admin alert
// update: the trigger stays; a blank secret field keeps the secret unless
// "remove" is ticked.
func (c *Console) alertSave(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	back := "/console/alerts/" + id
	rule, err := c.store.GetAlertRule(r.Context(), s.User.OrgID, id)
	if err != nil {
		return c.done(w, r, back, alertRefusal(err), "")
	}
	body, err := alertBody(r.PostForm)
	if err != nil {
		return c.alertEditAgain(w, r, s, err)
	}
	in := rule.Rule()
	in.Name, in.Threshold, in.EmailTo, in.WebhookURL, in.ReportKey = body.Name, body.Threshold, "", "", ""
	in.WebhookRetryMinutes = 0
	if body.WebhookRetryMinutes != nil {
		in.WebhookRetryMinutes = *body.WebhookRetryMinutes
	}
	if body.EmailTo != nil {
		in.EmailTo = *body.EmailTo
	}
	if body.WebhookURL != nil {
		in.WebhookURL = *body.WebhookURL
	}
	if v := r.PostFormValue("reportKey"); rule.Trigger == alerts.ReportRows {
		in.ReportKey = v
	}
	switch {
	case body.WebhookSecret != nil:
		in.WebhookSecret = *body.WebhookSecret
	case r.PostFormValue("removeSecret") == "1":
		in.WebhookSecret = ""
	}
	if err := in.Check(); err != nil {
		return c.alertEditAgain(w, r, s, alertRefusal(err))
	}
	_, err = c.store.UpdateAlertRule(r.Context(), s.audit("alert.update", "alert", id), s.User.OrgID, id, in, nil, c.now())
	var ve *valid.Error
	if errors.As(err, &ve) {
		return c.alertEditAgain(w, r, s, alertRefusal(err))
	}
	return c.done(w, r, back, alertRefusal(err), "Alert rule saved.")
}

// alertEditAgain shows the rule's page with its edit form as posted and
// why it was refused.
func (c *Console) alertEditAgain(w http.ResponseWriter, r *http.Request, s *session, err error) error {
	text, ok := alertLabels.refusal(err)
	if !ok {
		return err
	}
	d, derr := c.alertData(r, s)
	if derr != nil {
		return derr
	}
	d.F, d.Refused = url.Values{}, text
	for k, v := range r.PostForm {
		if k != "webhookSecret" && k != "csrf" {
			d.F[k] = v
		}
	}
	return c.render(w, r, s, refusedStatus(err), "alert", "", d.Rule.Name, "alerts", d)
}

func (c *Console) alertToggle(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	back := "/console/alerts/" + id
	rule, err := c.store.GetAlertRule(r.Context(), s.User.OrgID, id)
	if err != nil {
		return c.done(w, r, back, alertRefusal(err), "")
	}
	on := r.PostFormValue("enabled") == "true"
	action := "alert.disable"
	if on {
		action = "alert.enable"
	}
	in := rule.Rule()
	if err := in.Check(); err != nil {
		return c.done(w, r, back, alertRefusal(err), "")
	}
	_, err = c.store.UpdateAlertRule(r.Context(), s.audit(action, "alert", id), s.User.OrgID, id, in, &on, c.now())
	text := "Alert rule disabled: it raises no events until enabled again."
	if on {
		text = "Alert rule enabled."
	}
	return c.done(w, r, back, alertRefusal(err), text)
}

func (c *Console) alertDelete(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	if err := c.store.DeleteAlertRule(r.Context(), s.audit("alert.delete", "alert", id), s.User.OrgID, id); err != nil {
		return c.done(w, r, "/console/alerts/"+id, alertRefusal(err), "")
	}
	return c.done(w, r, "/console/alerts", nil, "Alert rule deleted with its events.")
}

// alertTest raises a TEST event of the rule, delivered like any other
// (patchd admin alert test), and records in the Audit Trail who sent it.
func (c *Console) alertTest(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	back := "/console/alerts/" + id
	ev, err := c.store.TestAlertRule(r.Context(), s.User.OrgID, id, c.now())
	if err != nil {
		return c.done(w, r, back, alertRefusal(err), "")
	}
	e := s.audit("alert.test", "alert", id)
	e.Summary = map[string]any{"event": ev.ID}
	if err := c.store.Audited(r.Context(), e, func(*store.Tx) error { return nil }); err != nil {
		return err
	}
	return c.done(w, r, back, nil, "Test event raised: its delivery results appear below as they come.")
}

// alertResend queues a new delivery of a failed delivery's event (the
// "Send again" button), audited as the user ("alert.resend").
func (c *Console) alertResend(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	back := "/console/alerts/" + id
	_, err := c.store.ResendDelivery(r.Context(), s.audit("alert.resend", "alert", id), s.User.OrgID, id, r.PathValue("delivery"), c.now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return c.done(w, r, back, notFound("failed delivery"), "")
	case errors.Is(err, store.ErrConflict):
		return c.done(w, r, back, badRequest("That delivery was sent again already."), "")
	case err != nil:
		return err
	}
	return c.done(w, r, back, nil, "Delivery queued again: its result appears in the events below.")
}
