package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/schedule"
	"github.com/patchd/patchd/internal/store"
)

type automationsData struct {
	Items  []store.Automation
	Groups map[string]string
	// TimeZone is the organization's, in which schedules run.
	TimeZone string
}

func (c *Console) automationList(w http.ResponseWriter, r *http.Request, s *session) error {
	list, err := c.store.ListAutomations(r.Context(), s.User.OrgID)
	if err != nil {
		return err
	}
	names, _, err := c.groupNames(r, s)
	if err != nil {
		return err
	}
	o, err := c.store.FindOrg(r.Context(), s.User.OrgID)
	if err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "automations", "", "Automations", "automations", automationsData{Items: list, Groups: names, TimeZone: o.TimeZone})
}

type automationEdit struct {
	// The form (new and edit pages): its values, and the server's refusal
	// of the last submission in the form's words.
	F          url.Values
	Keep       string
	Refused    string
	Actions    [][2]string
	Severities []string
	Languages  []string
	RingRows   []int

	Groups   []store.Group
	Scripts  []store.Script
	Weekdays []string
	TimeZone string
	A        *store.Automation
	// Does says what the action does, in words (the detail page).
	Does     string
	Next     []time.Time
	Runs     []runView
	Skips    []store.Skip
	Payload  string
	GroupMap map[string]string
}

var weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

// Trail puts the automation being edited between Automations and its
// edit form in the breadcrumbs (the automation's own page, which shares
// this type without a form, needs no step between).
func (d automationEdit) Trail() []crumb {
	if d.A == nil || d.F == nil {
		return nil
	}
	return []crumb{{Label: d.A.Name, Href: "/console/automations/" + d.A.ID}}
}

func (c *Console) automationNew(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.automationFormPage(w, r, s, http.StatusOK, nil, newAutomationValues(), "", "")
}

// automationFormPage shows the automation form (new, or editing a), with
// the values f and, after a refusal, what the server refused.
func (c *Console) automationFormPage(w http.ResponseWriter, r *http.Request, s *session, status int, a *store.Automation, f url.Values, keep, refused string) error {
	_, gl, err := c.groupNames(r, s)
	if err != nil {
		return err
	}
	scripts, err := c.store.ListScripts(r.Context(), s.User.OrgID)
	if err != nil {
		return err
	}
	o, err := c.store.FindOrg(r.Context(), s.User.OrgID)
	if err != nil {
		return err
	}
	d := automationEdit{F: f, Keep: keep, Refused: refused, Actions: automationActions, Severities: formSeverities, Languages: formLanguages,
		RingRows: ringRows(f), Groups: gl, Scripts: scripts, Weekdays: weekdays, TimeZone: o.TimeZone, A: a}
	title := "New automation"
	if a != nil {
		title = "Edit " + a.Name
	}
	return c.render(w, r, s, status, "automation_new", "", title, "automations", d)
}

// automationDoes says in plain words what an automation's action does,
// from its payload as the form reads it (f, keep: automationValues).
func automationDoes(action string, f url.Values, keep string) string {
	var out string
	switch action {
	case "DEPLOY_UPDATES":
		which := "every missing update"
		if f.Get("approvalMode") != "notDeclined" {
			which = "the missing updates that are approved"
		}
		var cond []string
		if sev := f["severities"]; len(sev) > 0 {
			cond = append(cond, "of severity "+strings.Join(sev, ", "))
		}
		if f.Get("kev") == "true" {
			cond = append(cond, "that fix a CVE in CISA's KEV catalog")
		}
		if v := f.Get("minCvss"); v != "" {
			cond = append(cond, "that fix a CVE of CVSS "+v+" or more")
		}
		if v := f.Get("minEpss"); v != "" {
			cond = append(cond, "that fix a CVE of EPSS "+v+" or more")
		}
		out = "Deploys " + which
		if len(cond) > 0 {
			out += " " + strings.Join(cond, ", ")
		}
		out += "."
	case "REBOOT":
		out = "Restarts the endpoints"
		if n := f.Get("timeoutSeconds"); n != "" {
			out += " after telling their users (" + durationWords(time.Duration(atoiOr(n))*time.Second) + " notice)"
		}
		out += "."
	case "RUN_SCRIPT":
		if f.Get("scriptId") != "" {
			out = "Runs a script of the library."
		} else {
			out = "Runs its own " + f.Get("language") + " script."
		}
	case "DEPLOY_SOFTWARE":
		out = "Installs " + f.Get("wingetId") + " with winget."
	case "UNINSTALL_SOFTWARE":
		out = "Uninstalls " + f.Get("softwareName") + "."
	}
	if keep != "" {
		out += " Some of its settings were made through the API: the payload below has them all."
	}
	return strings.TrimSpace(out)
}

// atoiOr reads a whole number, 0 when it is none.
func atoiOr(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// durationWords writes d in words: "2 hours", "1 hour 30 minutes",
// "45 minutes", "1 day", "30 seconds".
func durationWords(d time.Duration) string {
	if d <= 0 {
		return "no time"
	}
	var parts []string
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if n := int(d / u.d); n > 0 {
			w := strconv.Itoa(n) + " " + u.name
			if n > 1 {
				w += "s"
			}
			parts = append(parts, w)
			d -= time.Duration(n) * u.d
		}
	}
	return strings.Join(parts, " ")
}

// automationOf reads the automation the path names, with its organization
// (whose time zone its schedule is in); an automation of another
// organization is not found.
func (c *Console) automationOf(r *http.Request, s *session) (store.Automation, store.Org, error) {
	au, err := c.store.GetAutomation(r.Context(), s.User.OrgID, r.PathValue("id"))
	if err != nil {
		if isNotFound(err) {
			return au, store.Org{}, notFound("automation")
		}
		return au, store.Org{}, err
	}
	o, err := c.store.FindOrg(r.Context(), s.User.OrgID)
	return au, o, err
}

// automationEditPage is the form of an existing automation.
func (c *Console) automationEditPage(w http.ResponseWriter, r *http.Request, s *session) error {
	au, o, err := c.automationOf(r, s)
	if err != nil {
		return err
	}
	f, keep := automationValues(au, store.Location(o.TimeZone))
	return c.automationFormPage(w, r, s, http.StatusOK, &au, f, keep, "")
}

// automationSave replaces an automation with the form, through the API's
// PATCH with the whole body (as PUT would).
func (c *Console) automationSave(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	au, o, err := c.automationOf(r, s)
	if err != nil {
		return err
	}
	body := automationBody(r.PostForm, store.Location(o.TimeZone))
	if keep := r.PostForm.Get("keepPayload"); keep != "" && r.PostForm.Get("actionType") == au.ActionType && json.Valid([]byte(keep)) {
		body["payload"] = json.RawMessage(keep)
	}
	if err := c.callAPI(r, s, http.MethodPatch, "/api/v1/automations/"+au.ID, body, nil); err != nil {
		text, ok := automationLabels.refusal(err)
		if !ok {
			return err
		}
		return c.automationFormPage(w, r, s, refusedStatus(err), &au, r.PostForm, r.PostForm.Get("keepPayload"), text)
	}
	return c.done(w, r, "/console/automations/"+au.ID, nil, "Automation "+strings.TrimSpace(r.PostForm.Get("name"))+" saved.")
}

func atoiPtr(s string) *int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return nil
	}
	return &n
}

// actionPayload reads the action fields of a form.
func actionPayload(f url.Values) map[string]any {
	p := map[string]any{}
	switch f.Get("actionType") {
	case "RUN_SCRIPT":
		if id := f.Get("scriptId"); id != "" {
			p["scriptId"] = id
		} else {
			p["script"], p["language"] = f.Get("script"), f.Get("language")
		}
	case "DEPLOY_UPDATES":
		p["mode"], p["approvalMode"], p["filterVersion"] = "all", f.Get("approvalMode"), 2
		filters := riskFilters(f)
		if sev := f["severities"]; len(sev) > 0 {
			filters["severities"] = sev
		}
		if len(filters) > 0 {
			// In the shape the API stores (empty lists included), so that
			// the edit form knows the payload as its own.
			for _, k := range []string{"severities", "types", "sources"} {
				if _, ok := filters[k]; !ok {
					filters[k] = []string{}
				}
			}
			p["mode"], p["filters"] = "filters", filters
		}
	case "REBOOT":
		p["message"] = f.Get("message")
		if n := atoiPtr(f.Get("timeoutSeconds")); n != nil {
			p["timeoutSeconds"] = *n
		}
	case "DEPLOY_SOFTWARE":
		p["wingetId"] = f.Get("wingetId")
	case "UNINSTALL_SOFTWARE":
		p["name"] = f.Get("softwareName")
	}
	return p
}

// riskFilters reads the deploy-by-risk fields of a form into DEPLOY_UPDATES
// filters (patchd additions): kev ("true": the updates that fix a CVE in
// CISA's KEV catalog), minCvss and minEpss (the updates that fix a CVE of
// at least that CVSS base score or EPSS probability). An empty field adds
// nothing; the API checks the ranges.
func riskFilters(f url.Values) map[string]any {
	out := map[string]any{}
	if f.Get("kev") == "true" {
		out["kev"] = true
	}
	for _, k := range []string{"minCvss", "minEpss"} {
		if v, err := strconv.ParseFloat(strings.TrimSpace(f.Get(k)), 64); err == nil {
			out[k] = v
		}
	}
	return out
}

// automationBody turns the editor's form into an AutomationBody. A ONCE
// date-time is read in the organization's time zone.
func automationBody(f url.Values, loc *time.Location) map[string]any {
	b := map[string]any{"name": f.Get("name"), "actionType": f.Get("actionType"), "description": f.Get("description"),
		"payload": actionPayload(f), "enabled": f.Get("enabled") != "false"}
	if f.Has("enabledShown") { // the edit form's checkbox: absent when unticked
		b["enabled"] = f.Get("enabled") == "true"
	}
	if n := atoiPtr(f.Get("windowMinutes")); n != nil {
		b["windowMinutes"] = *n
	}
	if f.Get("kind") == "RING" {
		b["kind"], b["startDate"], b["atTime"] = "RING", f.Get("startDate"), f.Get("atTime")
		rings := []apiv1.Ring{}
		for i := range maxRingRows {
			n := strconv.Itoa(i)
			if g := f.Get("ring" + n + "group"); g != "" {
				off := 0
				if p := atoiPtr(f.Get("ring" + n + "offset")); p != nil {
					off = *p
				}
				rings = append(rings, apiv1.Ring{Name: f.Get("ring" + n + "name"), GroupID: g, OffsetDays: off})
			}
		}
		b["rings"] = rings
		return b
	}
	b["kind"] = "SCHEDULED"
	b["targetMode"] = f.Get("targetMode")
	if g := f.Get("groupId"); g != "" {
		b["groupId"] = g
	}
	if ids := strings.Fields(strings.ReplaceAll(f.Get("endpointIds"), ",", " ")); len(ids) > 0 {
		b["endpointIds"] = ids
	}
	kind := f.Get("scheduleKind")
	b["scheduleKind"] = kind
	switch kind {
	case "ONCE":
		if t, err := time.ParseInLocation("2006-01-02T15:04", f.Get("runAt"), loc); err == nil {
			b["runAt"] = t.UTC().Format(time.RFC3339)
		} else {
			b["runAt"] = f.Get("runAt")
		}
	case "RECURRING":
		b["freq"], b["atTime"] = f.Get("freq"), f.Get("atTime")
		switch f.Get("freq") {
		case "WEEKLY":
			b["weekday"] = atoiPtr(f.Get("weekday"))
		case "MONTHLY":
			b["monthDay"] = atoiPtr(f.Get("monthDay"))
		case "PATCH_TUESDAY":
			b["offsetDays"] = atoiPtr(f.Get("offsetDays"))
		}
	}
	return b
}

// automationPreview shows the next five run times of the schedule in the
// form (an htmx fragment), computed by the scheduler's own code.
func (c *Console) automationPreview(w http.ResponseWriter, r *http.Request, s *session) error {
	f := r.URL.Query()
	o, err := c.store.FindOrg(r.Context(), s.User.OrgID)
	if err != nil {
		return err
	}
	loc := store.Location(o.TimeZone)
	au := store.Automation{Kind: store.KindSimple, ScheduleKind: f.Get("scheduleKind"), Freq: f.Get("freq"), Weekday: atoiPtr(f.Get("weekday")),
		MonthDay: atoiPtr(f.Get("monthDay"))}
	if p := atoiPtr(f.Get("offsetDays")); p != nil {
		au.OffsetDays = *p
	}
	d := map[string]any{"TimeZone": o.TimeZone}
	if at := strings.TrimSpace(f.Get("atTime")); at != "" {
		clock, err := schedule.ParseClock(at)
		if err != nil {
			d["Problem"] = "Time: " + err.Error()
			return c.render(w, r, s, http.StatusOK, "automation_new", "nextruns", "", "", d)
		}
		au.AtTime = clock.String()
	}
	if f.Get("kind") == "RING" {
		au.Kind, au.StartDate = store.KindRing, f.Get("startDate")
		for i := range maxRingRows {
			n := strconv.Itoa(i)
			if g := f.Get("ring" + n + "group"); g != "" {
				off := 0
				if p := atoiPtr(f.Get("ring" + n + "offset")); p != nil {
					off = *p
				}
				au.Rings = append(au.Rings, apiv1.Ring{Name: f.Get("ring" + n + "name"), GroupID: g, OffsetDays: off})
			}
		}
	}
	if au.ScheduleKind == "ONCE" {
		if t, err := time.ParseInLocation("2006-01-02T15:04", f.Get("runAt"), loc); err == nil {
			// The server refuses a past date: say so, as it will.
			if t.Before(c.now().Add(-time.Minute)) {
				d["Problem"] = "Date and time: " + t.Format("Mon 2 Jan 2006, 15:04") + " is in the past; choose a later one."
				return c.render(w, r, s, http.StatusOK, "automation_new", "nextruns", "", "", d)
			}
			au.RunAt = &t
		}
	}
	d["Next"] = nextRuns(au, c.now(), loc, 5)
	return c.render(w, r, s, http.StatusOK, "automation_new", "nextruns", "", "", d)
}

// nextRuns lists an automation's next n slots, in loc.
func nextRuns(au store.Automation, now time.Time, loc *time.Location, n int) []time.Time {
	var out []time.Time
	t := au.FirstRun(now, loc)
	for t != nil && len(out) < n {
		// A ONCE automation's runAt that has passed is no next run (rings
		// keep a past slot: the scheduler starts it at once).
		if au.Kind == store.KindRing || !t.Before(now) {
			out = append(out, t.In(loc))
		}
		if au.Kind == store.KindRing {
			au.RingNext++
		}
		t = au.Next(*t, loc)
	}
	return out
}

func (c *Console) automationCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	o, err := c.store.FindOrg(r.Context(), s.User.OrgID)
	if err != nil {
		return err
	}
	var out apiv1.AutomationCreated
	if err := c.callAPI(r, s, http.MethodPost, "/api/v1/automations", automationBody(r.PostForm, store.Location(o.TimeZone)), &out); err != nil {
		// Refused: the form again, with everything typed and the problems
		// in its own words.
		text, ok := automationLabels.refusal(err)
		if !ok {
			return err
		}
		return c.automationFormPage(w, r, s, refusedStatus(err), nil, r.PostForm, "", text)
	}
	if out.Automation.RunID != nil {
		return c.done(w, r, "/console/runs/"+*out.Automation.RunID, nil, c.startedText(r, s, "Automation "+out.Automation.Name+" created and started",
			*out.Automation.RunID, out.Automation.Queued))
	}
	return c.done(w, r, "/console/automations/"+out.Automation.ID, nil, "Automation "+out.Automation.Name+" created.")
}

func (c *Console) automationDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	au, o, err := c.automationOf(r, s)
	if err != nil {
		return err
	}
	names, _, err := c.groupNames(r, s)
	if err != nil {
		return err
	}
	d := automationEdit{A: &au, TimeZone: o.TimeZone, Weekdays: weekdays, GroupMap: names}
	f, keep := automationValues(au, store.Location(o.TimeZone))
	d.Does = automationDoes(au.ActionType, f, keep)
	if au.Enabled {
		d.Next = nextRuns(au, c.now(), store.Location(o.TimeZone), 5)
	}
	runs, _, err := c.store.ListRuns(r.Context(), store.RunQuery{OrgID: s.User.OrgID, AutomationID: au.ID, Limit: 20})
	if err != nil {
		return err
	}
	if d.Runs, err = c.runViews(r, s, runs); err != nil {
		return err
	}
	if d.Skips, err = c.store.ListSkips(r.Context(), s.User.OrgID, au.ID, 10); err != nil {
		return err
	}
	var pretty []byte
	if len(au.Payload) > 0 {
		var v any
		if json.Unmarshal(au.Payload, &v) == nil {
			pretty, _ = json.MarshalIndent(v, "", "  ")
		}
	}
	d.Payload = string(pretty)
	return c.render(w, r, s, http.StatusOK, "automation", "", au.Name, "automations", d)
}

func (c *Console) automationToggle(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	on := r.PostFormValue("enabled") == "true"
	err := c.callAPI(r, s, http.MethodPatch, "/api/v1/automations/"+id, map[string]any{"enabled": on}, nil)
	text := "Automation disabled."
	if on {
		text = "Automation enabled."
	}
	return c.done(w, r, "/console/automations/"+id, err, text)
}

func (c *Console) automationRun(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	var out apiv1.RunStarted
	if err := c.callAPI(r, s, http.MethodPost, "/api/v1/automations/"+id+"/run", nil, &out); err != nil {
		return c.done(w, r, "/console/automations/"+id, err, "")
	}
	return c.done(w, r, "/console/runs/"+out.RunID, nil, c.startedText(r, s, "Run started", out.RunID, out.Queued))
}

func (c *Console) automationDelete(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	return c.deleted(w, r, s, deletion{api: "/api/v1/automations/" + id, page: "/console/automations/" + id, list: "/console/automations",
		ok: "Automation deleted; its runs stay in the history."})
}
