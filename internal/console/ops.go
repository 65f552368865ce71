package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/schedule"
	"github.com/patchd/patchd/internal/store"
)

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// ---- groups

type groupsData struct {
	Groups []store.Group
}

func (c *Console) groupList(w http.ResponseWriter, r *http.Request, s *session) error {
	list, err := c.store.ListGroups(r.Context(), s.User.OrgID, c.now())
	if err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "groups", "", "Groups", "groups", groupsData{Groups: list})
}

// ruleRows is how many rule rows the editor offers.
const ruleRows = 6

type groupEdit struct {
	G       store.Group
	New     bool
	Rules   []groups.Rule // padded to ruleRows
	Exclude []groups.Rule
	Fields  []string
	Ops     []string
	Members []store.EndpointName
	Total   int
}

func pad(rules []groups.Rule) []groups.Rule {
	out := append([]groups.Rule(nil), rules...)
	for len(out) < ruleRows {
		out = append(out, groups.Rule{})
	}
	return out
}

var ruleFields = []string{"hostname", "name", "os", "osVersion", "platform", "domain", "adOu", "type", "arch", "antivirus", "reboot",
	"agentVersion", "user", "manufacturer", "model", "attr1", "attr2", "attr3", "attr4", "attr5"}

func (c *Console) groupNew(w http.ResponseWriter, r *http.Request, s *session) error {
	d := groupEdit{New: true, G: store.Group{Kind: groups.Dynamic, MatchAll: true}, Rules: pad(nil), Exclude: pad(nil), Fields: ruleFields, Ops: groups.Ops}
	return c.render(w, r, s, http.StatusOK, "group", "", "New group", "groups", d)
}

func (c *Console) groupDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	g, err := c.store.GetGroup(r.Context(), s.User.OrgID, r.PathValue("id"), c.now())
	if err != nil {
		if isNotFound(err) {
			return notFound("group")
		}
		return err
	}
	ids, err := c.store.GroupMemberIDs(r.Context(), s.User.OrgID, g.ID)
	if err != nil {
		return err
	}
	names, err := c.store.EndpointNames(r.Context(), s.User.OrgID, ids[:min(len(ids), 200)])
	if err != nil {
		return err
	}
	d := groupEdit{G: g, Rules: pad(g.Rules), Exclude: pad(g.ExcludeRules), Fields: ruleFields, Ops: groups.Ops, Members: names, Total: len(ids)}
	return c.render(w, r, s, http.StatusOK, "group", "", g.Name, "groups", d)
}

// formRules reads the rule rows prefix0field, prefix0op, prefix0value, …;
// rows without a field are left out.
func formRules(f url.Values, prefix string) []apiv1.GroupRule {
	out := []apiv1.GroupRule{}
	for i := range ruleRows {
		n := prefix + strconv.Itoa(i)
		field := strings.TrimSpace(f.Get(n + "field"))
		if field == "" {
			continue
		}
		out = append(out, apiv1.GroupRule{Field: field, Op: f.Get(n + "op"), Value: f.Get(n + "value")})
	}
	return out
}

func groupBody(f url.Values) map[string]any {
	b := map[string]any{"name": f.Get("name"), "description": f.Get("description"), "matchAll": f.Get("matchAll") == "true"}
	if f.Get("kind") == groups.Static {
		ids := append([]string{}, strings.FieldsFunc(f.Get("machineIds"), func(r rune) bool { return r == '\n' || r == ',' || r == ' ' || r == '\r' })...)
		b["machineIds"] = ids
	} else {
		b["rules"], b["excludeRules"] = formRules(f, "r"), formRules(f, "x")
	}
	return b
}

// groupPreview answers the members dynamic rules would have now, without
// saving anything (the editor's live preview, an htmx fragment).
func (c *Console) groupPreview(w http.ResponseWriter, r *http.Request, s *session) error {
	f := r.URL.Query()
	crit := groups.Criteria{MatchAll: f.Get("matchAll") == "true"}
	var problems []string
	for _, pr := range []struct {
		prefix string
		into   *[]groups.Rule
	}{{"r", &crit.Rules}, {"x", &crit.Exclude}} {
		for _, in := range formRules(f, pr.prefix) {
			rule, probs := groups.CheckRule(in.Field, in.Op, in.Value)
			for _, p := range probs {
				problems = append(problems, in.Field+" "+p.Path+": "+p.Message)
			}
			*pr.into = append(*pr.into, rule)
		}
	}
	d := map[string]any{"Problems": problems}
	if len(problems) == 0 {
		n, sample, err := c.store.PreviewGroup(r.Context(), s.User.OrgID, crit, 25)
		if err != nil {
			return err
		}
		d["Total"], d["Sample"] = n, sample
	}
	return c.render(w, r, s, http.StatusOK, "group", "preview", "", "", d)
}

func (c *Console) groupCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	var out apiv1.GroupResult
	if err := c.callAPI(r, s, http.MethodPost, "/api/v1/groups", groupBody(r.PostForm), &out); err != nil {
		return c.done(w, r, "/console/groups/new", err, "")
	}
	return c.done(w, r, "/console/groups/"+out.Group.ID, nil, "Group "+out.Group.Name+" created.")
}

func (c *Console) groupSave(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	id := r.PathValue("id")
	err := c.callAPI(r, s, http.MethodPatch, "/api/v1/groups/"+id, groupBody(r.PostForm), nil)
	return c.done(w, r, "/console/groups/"+id, err, "Group saved.")
}

func (c *Console) groupDelete(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	if err := c.callAPI(r, s, http.MethodDelete, "/api/v1/groups/"+id, nil, nil); err != nil {
		return c.done(w, r, "/console/groups/"+id, err, "")
	}
	return c.done(w, r, "/console/groups", nil, "Group deleted.")
}

// ---- automations

type automationsData struct {
	Items  []store.Automation
	Groups map[string]string
	// TimeZone is the organization's, in which schedules run.
	TimeZone string
}

func (c *Console) groupNames(r *http.Request, s *session) (map[string]string, []store.Group, error) {
	list, err := c.store.ListGroups(r.Context(), s.User.OrgID, c.now())
	if err != nil {
		return nil, nil, err
	}
	m := map[string]string{}
	for _, g := range list {
		m[g.ID] = g.Name
	}
	return m, list, nil
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

// automationEditPage is the form of an existing automation.
func (c *Console) automationEditPage(w http.ResponseWriter, r *http.Request, s *session) error {
	au, err := c.store.GetAutomation(r.Context(), s.User.OrgID, r.PathValue("id"))
	if err != nil {
		if isNotFound(err) {
			return notFound("automation")
		}
		return err
	}
	o, err := c.store.FindOrg(r.Context(), s.User.OrgID)
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
	au, err := c.store.GetAutomation(r.Context(), s.User.OrgID, r.PathValue("id"))
	if err != nil {
		if isNotFound(err) {
			return notFound("automation")
		}
		return err
	}
	o, err := c.store.FindOrg(r.Context(), s.User.OrgID)
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
		if sev := f["severities"]; len(sev) > 0 {
			p["mode"], p["filters"] = "filters", map[string]any{"severities": sev}
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
	au, err := c.store.GetAutomation(r.Context(), s.User.OrgID, r.PathValue("id"))
	if err != nil {
		if isNotFound(err) {
			return notFound("automation")
		}
		return err
	}
	o, err := c.store.FindOrg(r.Context(), s.User.OrgID)
	if err != nil {
		return err
	}
	names, _, err := c.groupNames(r, s)
	if err != nil {
		return err
	}
	d := automationEdit{A: &au, TimeZone: o.TimeZone, Weekdays: weekdays, GroupMap: names}
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
	if err := c.callAPI(r, s, http.MethodDelete, "/api/v1/automations/"+id, nil, nil); err != nil {
		return c.done(w, r, "/console/automations/"+id, err, "")
	}
	return c.done(w, r, "/console/automations", nil, "Automation deleted; its runs stay in the history.")
}

// ---- runs

type runsData struct {
	Items  []runView
	Page   pager
	Failed bool
	Days   int // started in the last Days days; 0 for any time
	// DayChoices are the periods offered.
	DayChoices []int
}

// runDays are the "started in the last" choices of the runs list.
var runDays = []int{1, 7, 30, 90}

// runList pages the runs, newest first; failed=1 keeps those with a
// failed command.
func (c *Console) runList(w http.ResponseWriter, r *http.Request, s *session) error {
	p, err := newPager(r, 50)
	if err != nil {
		return err
	}
	v := url.Values{"limit": {strconv.Itoa(p.Limit)}, "offset": {strconv.Itoa(p.Offset)}}
	failed := r.URL.Query().Get("failed") == "1"
	if failed {
		v.Set("failed", "1")
	}
	days := 0
	if d := r.URL.Query().Get("days"); d != "" {
		if days, err = strconv.Atoi(d); err != nil || !slices.Contains(runDays, days) {
			return badRequest("Choose a period the list offers.")
		}
		v.Set("since", c.now().AddDate(0, 0, -days).UTC().Format(time.RFC3339))
	}
	var list apiv1.List[apiv1.Run]
	if err := c.callAPI(r, s, http.MethodGet, "/api/v1/runs?"+v.Encode(), nil, &list); err != nil {
		return err
	}
	views, err := c.runViews(r, s, list.Items)
	if err != nil {
		return err
	}
	p.Total = list.Total
	return c.render(w, r, s, http.StatusOK, "runs", "", "Runs", "runs", runsData{Items: views, Page: p, Failed: failed, Days: days, DayChoices: runDays})
}

type runData struct {
	Run      runView
	Commands []apiv1.RunCommand
	Page     pager
	Status   string // the results shown: one status, or all
	Search   string
	Statuses []string
}

// runData reads the run and the page of its results the filters select
// (status, search in endpoint names and logs), through the API.
func (c *Console) runData(r *http.Request, s *session) (runData, error) {
	var d runData
	p, err := newPager(r, 100)
	if err != nil {
		return d, err
	}
	var run apiv1.Run
	if err := c.callAPI(r, s, http.MethodGet, "/api/v1/runs/"+url.PathEscape(r.PathValue("id")), nil, &run); err != nil {
		return d, err
	}
	var list apiv1.List[apiv1.RunCommand]
	status, search := r.URL.Query().Get("status"), strings.TrimSpace(r.URL.Query().Get("search"))
	q := url.Values{"runId": {run.ID}, "limit": {strconv.Itoa(p.Limit)}, "offset": {strconv.Itoa(p.Offset)}}
	if status != "" {
		q.Set("status", status)
	}
	if search != "" {
		q.Set("search", search)
	}
	if err := c.callAPI(r, s, http.MethodGet, "/api/v1/runs?"+q.Encode(), nil, &list); err != nil {
		return d, err
	}
	cmds, total := list.Items, list.Total
	p.Total = total
	views, err := c.runViews(r, s, []apiv1.Run{run})
	if err != nil {
		return d, err
	}
	return runData{Run: views[0], Commands: cmds, Page: p, Status: status, Search: search, Statuses: store.CommandStatuses}, nil
}

func (c *Console) runDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := c.runData(r, s)
	if err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "run", "", d.Run.Name, "runs", d)
}

// runProgress is the run page's live part, polled by htmx while it runs.
func (c *Console) runProgress(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := c.runData(r, s)
	if err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "run", "progress", "", "", d)
}

func (c *Console) runStop(w http.ResponseWriter, r *http.Request, s *session) error {
	id := url.PathEscape(r.PathValue("id"))
	err := c.callAPI(r, s, http.MethodPost, "/api/v1/runs/"+id+"/stop", nil, nil)
	return c.done(w, r, "/console/runs/"+id, err, "Run stopped: commands not started yet were cancelled.")
}

// runRetry starts a new run on the endpoints whose command failed, and
// shows it.
func (c *Console) runRetry(w http.ResponseWriter, r *http.Request, s *session) error {
	id := url.PathEscape(r.PathValue("id"))
	var started apiv1.RunStarted
	if err := c.callAPI(r, s, http.MethodPost, "/api/v1/runs/"+id+"/retry", nil, &started); err != nil {
		return c.done(w, r, "/console/runs/"+id, err, "")
	}
	return c.done(w, r, "/console/runs/"+url.PathEscape(started.RunID), nil, fmt.Sprintf("Retrying on %d endpoint(s).", started.Queued))
}

// ---- scripts

type scriptsData struct {
	Items []apiv1.Script
	// F is the new script form's values; Refused why they were refused
	// (the form is shown again as typed).
	F         url.Values
	Refused   string
	Languages []string
}

func (c *Console) scriptList(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.scriptsPage(w, r, s, http.StatusOK, url.Values{"language": {"powershell"}}, "")
}

func (c *Console) scriptsPage(w http.ResponseWriter, r *http.Request, s *session, status int, f url.Values, refused string) error {
	var list apiv1.List[apiv1.Script]
	if err := c.callAPI(r, s, http.MethodGet, "/api/v1/scripts", nil, &list); err != nil {
		return err
	}
	return c.render(w, r, s, status, "scripts", "", "Scripts", "scripts", scriptsData{Items: list.Items, F: f, Refused: refused, Languages: formLanguages})
}

// scriptAgain shows the scripts page with the refused form as typed.
func (c *Console) scriptAgain(w http.ResponseWriter, r *http.Request, s *session, err error) error {
	text, ok := scriptLabels.refusal(err)
	if !ok {
		return err
	}
	return c.scriptsPage(w, r, s, refusedStatus(err), r.PostForm, text)
}

// scriptBody reads the script form: parameters one a line as NAME=DEFAULT
// (NAME!= for a required one), reboot exit codes comma-separated.
func scriptBody(f url.Values) (apiv1.ScriptBody, error) {
	b := apiv1.ScriptBody{Name: ptr(f.Get("name")), Language: ptr(f.Get("language")), Code: ptr(f.Get("code"))}
	params := []apiv1.ScriptParameter{}
	for _, line := range strings.Split(f.Get("parameters"), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		name, def, _ := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		required := strings.HasSuffix(name, "!")
		params = append(params, apiv1.ScriptParameter{Name: strings.TrimSuffix(name, "!"), Default: def, Required: required})
	}
	b.Parameters = &params
	codes := []int{}
	for _, field := range strings.Split(f.Get("rebootExitCodes"), ",") {
		if field = strings.TrimSpace(field); field == "" {
			continue
		}
		n, err := strconv.Atoi(field)
		if err != nil {
			return b, badRequest("Reboot exit codes: " + field + " is not an integer.")
		}
		codes = append(codes, n)
	}
	b.RebootExitCodes = &codes
	if t := strings.TrimSpace(f.Get("timeoutSeconds")); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil {
			return b, badRequest("The time limit must be a number of seconds.")
		}
		b.TimeoutSeconds = &n
	}
	return b, nil
}

// scriptCreate stores a script through the REST API's operation; a
// refused form comes back as typed, its problems in the form's words.
func (c *Console) scriptCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	body, err := scriptBody(r.PostForm)
	if err == nil {
		err = c.callAPI(r, s, http.MethodPost, "/api/v1/scripts", body, nil)
	}
	if err != nil {
		return c.scriptAgain(w, r, s, err)
	}
	return c.done(w, r, "/console/scripts", nil, "Script "+strings.TrimSpace(r.PostFormValue("name"))+" saved.")
}

func (c *Console) scriptDelete(w http.ResponseWriter, r *http.Request, s *session) error {
	err := c.callAPI(r, s, http.MethodDelete, "/api/v1/scripts/"+url.PathEscape(r.PathValue("id")), nil, nil)
	return c.done(w, r, "/console/scripts", err, "Script deleted.")
}

func ptr[T any](v T) *T { return &v }
