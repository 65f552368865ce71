package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
)

// The alert rules pages. A rule is created through the REST API (POST
// /api/v1/alerts as the user), and so are enabling, disabling, deleting and
// test events and editing (the patchd additions on /api/v1/alerts/{id}),
// each audited as the user. Viewing needs reports.view and changing reports.manage, the
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

// alertSave applies the edit form to the rule through PATCH
// /api/v1/alerts/{id} as the user, like patchd admin alert update: the
// trigger stays; a blank threshold is the trigger's default; a blank
// address removes it; a blank secret field keeps the secret unless
// "remove" is ticked.
func (c *Console) alertSave(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	back := "/console/alerts/" + id
	path := "/api/v1/alerts/" + url.PathEscape(id)
	var rule apiv1.AlertRule
	if err := c.callAPI(r, s, http.MethodGet, path, nil, &rule); err != nil {
		return c.done(w, r, back, alertAPIRefusal(err), "")
	}
	body, err := alertBody(r.PostForm)
	if err != nil {
		return c.alertEditAgain(w, r, s, err)
	}
	empty, retry := "", 0
	if body.WebhookRetryMinutes != nil {
		retry = *body.WebhookRetryMinutes
	}
	patch := apiv1.AlertRulePatch{Name: &body.Name, Threshold: body.Threshold, EmailTo: &empty, WebhookURL: &empty, WebhookRetryMinutes: &retry}
	if patch.Threshold == nil {
		t, _ := alerts.Lookup(rule.Trigger)
		n := t.DefaultThreshold
		patch.Threshold = &n
	}
	if body.EmailTo != nil {
		patch.EmailTo = body.EmailTo
	}
	if body.WebhookURL != nil {
		patch.WebhookURL = body.WebhookURL
	}
	if rule.Trigger == alerts.ReportRows {
		v := r.PostFormValue("reportKey")
		patch.ReportKey = &v
	}
	switch {
	case body.WebhookSecret != nil:
		patch.WebhookSecret = body.WebhookSecret
	case r.PostFormValue("removeSecret") == "1":
		patch.WebhookSecret = &empty
	}
	err = c.callAPI(r, s, http.MethodPatch, path, patch, nil)
	var ae *apiError
	if errors.As(err, &ae) && (ae.Status == http.StatusUnprocessableEntity || ae.Status == http.StatusBadRequest) {
		return c.alertEditAgain(w, r, s, err)
	}
	return c.done(w, r, back, alertAPIRefusal(err), "Alert rule saved.")
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

// alertToggle, alertDelete and alertTest call the API's operations on one
// rule (POST /api/v1/alerts/{id}/enable|disable, DELETE, POST .../test) as
// the user, in the process.
func (c *Console) alertToggle(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	back := "/console/alerts/" + id
	on := r.PostFormValue("enabled") == "true"
	op, text := "/disable", "Alert rule disabled: it raises no events until enabled again."
	if on {
		op, text = "/enable", "Alert rule enabled."
	}
	err := c.callAPI(r, s, http.MethodPost, "/api/v1/alerts/"+url.PathEscape(id)+op, nil, nil)
	return c.done(w, r, back, alertAPIRefusal(err), text)
}

func (c *Console) alertDelete(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	return c.deleted(w, r, s, deletion{api: "/api/v1/alerts/" + url.PathEscape(id), page: "/console/alerts/" + id, list: "/console/alerts",
		ok: "Alert rule deleted with its events.", refusal: alertAPIRefusal})
}

// alertTest raises a TEST event of the rule, delivered like any other, and
// records in the Audit Trail who sent it (POST /api/v1/alerts/{id}/test).
func (c *Console) alertTest(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	back := "/console/alerts/" + id
	if err := c.callAPI(r, s, http.MethodPost, "/api/v1/alerts/"+url.PathEscape(id)+"/test", nil, nil); err != nil {
		return c.done(w, r, back, alertAPIRefusal(err), "")
	}
	return c.done(w, r, back, nil, "Test event raised: its delivery results appear below as they come.")
}

// alertAPIRefusal turns the API's refusal into the console's: a rule of no
// concern to the user is not found.
func alertAPIRefusal(err error) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return notFound("alert rule")
	}
	return err
}

// alertResend queues a new delivery of a failed delivery's event (the
// "Send again" button), audited as the user ("alert.resend").
func (c *Console) alertResend(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	back := "/console/alerts/" + id
	_, err := c.store.ResendDelivery(r.Context(), s.audit("alert.resend", "alert", id), s.User.OrgID, id, r.PathValue("delivery"), c.now())
	switch {
	case errors.Is(err, dberr.ErrNotFound):
		return c.done(w, r, back, notFound("failed delivery"), "")
	case errors.Is(err, dberr.ErrConflict):
		return c.done(w, r, back, badRequest("That delivery was sent again already."), "")
	case err != nil:
		return err
	}
	return c.done(w, r, back, nil, "Delivery queued again: its result appears in the events below.")
}
