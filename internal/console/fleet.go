package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/updates"
)

type sevCount struct {
	Severity        string
	Missing, Hosts  int
	Width           int
	EndpointsMissed int
}

type dashData struct {
	Fleet        store.FleetSummary
	Disconnected int
	ConnPct      int
	Severities   []sevCount
	Runs         []runView
	Platforms    []sevCount
	// Compliance is the fleet now; Donut its two parts (compliant under
	// the compliance policy, which Policy says in a sentence, and not).
	Compliance     apiv1.ComplianceDay
	Policy         string
	ShowCompliance bool
	Donut          []donutPart
	// Trend is the recorded days of the last TrendDays (30 or 90).
	Trend     trendChart
	TrendDays int
	// NotSeen counts the endpoints not seen for notSeenDays days.
	NotSeen, NotSeenDays int
	// FailedRuns counts the runs with a failed command started in the last
	// week.
	FailedRuns   int
	Agents       []sevCount
	OverdueKnown bool
	FeedLoaded   bool
}

// donutPart is one arc of the compliance ring: its share in percent of the
// circumference and where it starts, as a rotation in degrees.
type donutPart struct {
	Class, Label, Href string
	N, Pct             int
	Rotate             float64
}

// notSeenDays is the dashboard's "not seen for" threshold.
const notSeenDays = 7

func (c *Console) dashboard(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	now := c.now()
	d := dashData{TrendDays: 30, NotSeenDays: notSeenDays}
	switch r.URL.Query().Get("trend") {
	case "", "30":
	case "90":
		d.TrendDays = 90
	default:
		return badRequest("The trend covers 30 or 90 days.")
	}
	if s.can(perm.EndpointsView) {
		f, err := c.store.FleetSummary(ctx, s.User.OrgID, c.connectedSince())
		if err != nil {
			return err
		}
		d.Fleet, d.Disconnected, d.ConnPct = f, f.Endpoints-f.Connected, pct(f.Connected, f.Endpoints)
		top := 0
		for _, n := range f.UpdatesBySeverity {
			top = max(top, n)
		}
		for _, sev := range updates.Severities {
			d.Severities = append(d.Severities, sevCount{Severity: sev, Missing: f.UpdatesBySeverity[sev], Hosts: f.EndpointsBySeverity[sev],
				Width: pct(f.UpdatesBySeverity[sev], top)})
		}
		for p, n := range f.Platforms {
			d.Platforms = append(d.Platforms, sevCount{Severity: p, Missing: n, Width: pct(n, f.Endpoints)})
		}
		sort.Slice(d.Platforms, func(i, j int) bool { return d.Platforms[i].Severity < d.Platforms[j].Severity })
		_, d.NotSeen, err = c.store.FindEndpoints(ctx, store.EndpointQuery{OrgID: s.User.OrgID, NotSeenSince: now.AddDate(0, 0, -notSeenDays), Limit: 1})
		if err != nil {
			return err
		}
		if d.Agents, err = c.agentVersionCounts(r, s); err != nil {
			return err
		}
		if s.can(perm.UpdatesView) {
			if d.Compliance, err = c.store.Compliance(ctx, s.User.OrgID, now); err != nil {
				return err
			}
			d.ShowCompliance = d.Compliance.Endpoints > 0
			d.Donut = donut(d.Compliance)
			policy, err := c.store.CompliancePolicy(ctx, s.User.OrgID)
			if err != nil {
				return err
			}
			d.Policy = policy.Describe()
			hist, err := c.store.ComplianceHistory(ctx, s.User.OrgID, now.AddDate(0, 0, 1-d.TrendDays), now)
			if err != nil {
				return err
			}
			// Today as it is now, not as last recorded.
			if n := len(hist); n > 0 && hist[n-1].Date == d.Compliance.Date {
				hist = hist[:n-1]
			}
			d.Trend = newTrend(append(hist, d.Compliance), now, d.TrendDays, s.can(perm.VulnerabilitiesView))
		}
	}
	if s.can(perm.AutomationsView) {
		runs, _, err := c.store.ListRuns(ctx, store.RunQuery{OrgID: s.User.OrgID, Limit: 8})
		if err != nil {
			return err
		}
		if d.Runs, err = c.runViews(r, s, runs); err != nil {
			return err
		}
		if _, d.FailedRuns, err = c.store.ListRuns(ctx, store.RunQuery{OrgID: s.User.OrgID, WithFailures: true, Since: now.AddDate(0, 0, -7), Limit: 1}); err != nil {
			return err
		}
	}
	if s.can(perm.VulnerabilitiesView) {
		if !d.ShowCompliance {
			cd, err := c.store.Compliance(ctx, s.User.OrgID, now)
			if err != nil {
				return err
			}
			d.Compliance.CriticalCVEs, d.Compliance.OverdueCVEs = cd.CriticalCVEs, cd.OverdueCVEs
		}
		d.OverdueKnown = true
		// Before any feed was loaded "0 overdue" would be a false all-clear.
		fv, err := c.store.VulnState(ctx, store.StateFeedVersion)
		if err != nil {
			return err
		}
		d.FeedLoaded = fv > 0
	}
	return c.render(w, r, s, http.StatusOK, "dashboard", "", "Dashboard", "dashboard", d)
}

// donut divides the compliance ring: compliant under the compliance policy
// and out of compliance; each arc starts where the last ended, from the
// top.
func donut(cd apiv1.ComplianceDay) []donutPart {
	compliant := 0
	if cd.Compliant != nil {
		compliant = *cd.Compliant
	}
	parts := []donutPart{
		{Class: "seg-ok", Label: "Compliant", Href: "/console/endpoints?compliance=compliant", N: compliant},
		{Class: "seg-crit", Label: "Out of compliance", Href: "/console/endpoints?compliance=overdue", N: cd.Endpoints - compliant},
	}
	at := 0.0
	for i := range parts {
		parts[i].Pct = pct(parts[i].N, cd.Endpoints)
		parts[i].Rotate = -90 + at*3.6
		if cd.Endpoints > 0 {
			at += float64(parts[i].N) * 100 / float64(cd.Endpoints)
		}
	}
	return parts
}

// agentVersionCounts are the organization's endpoints by agent version
// (platforms together), most endpoints first.
func (c *Console) agentVersionCounts(r *http.Request, s *session) ([]sevCount, error) {
	f, err := c.store.AgentFleetOf(r.Context(), s.User.OrgID)
	if err != nil {
		return nil, err
	}
	by := map[string]int{}
	total := 0
	for _, v := range f.Versions {
		by[v.AgentVersion] += v.Endpoints
		total += v.Endpoints
	}
	out := make([]sevCount, 0, len(by))
	for v, n := range by {
		out = append(out, sevCount{Severity: v, Missing: n, Width: pct(n, total)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Missing != out[j].Missing {
			return out[i].Missing > out[j].Missing
		}
		return out[i].Severity > out[j].Severity
	})
	return out, nil
}

type attrRow struct{ Key, Value string }

type endpointData struct {
	E       apiv1.EndpointDetail
	Attrs   []attrRow
	Runs    []runView
	Scripts []store.Script
	// Keys are the update keys of the missing updates, by their id.
	Keys map[string]string
	// Findings are the endpoint's CVEs (with vulnerabilities.view).
	Findings     []store.EndpointFinding
	ShowFindings bool
	// Risk is the endpoint's risk score (the highest of its CVEs') and
	// RiskReason how it is made.
	Risk       float64
	RiskReason string
}

func (c *Console) endpointDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	e, err := c.store.GetEndpoint(r.Context(), s.User.OrgID, r.PathValue("id"), c.connectedSince())
	if err != nil {
		if isNotFound(err) {
			return notFound("endpoint")
		}
		return err
	}
	d := endpointData{E: e}
	for i := 1; i <= 30; i++ {
		k := "attr" + strconv.Itoa(i)
		d.Attrs = append(d.Attrs, attrRow{Key: k, Value: e.Attributes[k]})
	}
	if d.Keys, err = c.store.EndpointUpdateKeys(r.Context(), s.User.OrgID, e.ID); err != nil {
		return err
	}
	if s.can(perm.VulnerabilitiesView) {
		d.ShowFindings = true
		if d.Findings, err = c.store.EndpointFindings(r.Context(), s.User.OrgID, e.ID); err != nil {
			return err
		}
		if d.Risk, d.RiskReason, err = c.store.EndpointRisk(r.Context(), s.User.OrgID, e.ID); err != nil {
			return err
		}
	}
	if s.can(perm.AutomationsView) {
		runs, _, err := c.store.ListRuns(r.Context(), store.RunQuery{OrgID: s.User.OrgID, EndpointID: e.ID, Limit: 20})
		if err != nil {
			return err
		}
		if d.Runs, err = c.runViews(r, s, runs); err != nil {
			return err
		}
		if d.Scripts, err = c.store.ListScripts(r.Context(), s.User.OrgID); err != nil {
			return err
		}
	}
	return c.render(w, r, s, http.StatusOK, "endpoint", "", e.Name, "endpoints", d)
}

func (c *Console) endpointPatch(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	body := map[string]any{}
	if _, ok := r.PostForm["name"]; ok {
		body["name"] = r.PostFormValue("name")
	}
	if _, ok := r.PostForm["comment"]; ok {
		body["comment"] = r.PostFormValue("comment")
	}
	attrs := map[string]string{}
	for k, v := range r.PostForm {
		if strings.HasPrefix(k, "attr") && len(v) == 1 {
			attrs[k] = v[0]
		}
	}
	if len(attrs) > 0 {
		body["attributes"] = attrs
	}
	back := "/console/endpoints/" + id
	err := c.callAPI(r, s, http.MethodPatch, "/api/v1/endpoints/"+id, body, nil)
	return c.done(w, r, back, err, "Endpoint saved.")
}

func (c *Console) endpointDelete(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	return c.deleted(w, r, s, deletion{api: "/api/v1/endpoints/" + id, page: "/console/endpoints/" + id, list: "/console/endpoints",
		ok: "Endpoint removed; its agent uninstalls itself at its next check-in."})
}

// endpointScan asks the endpoint's agent to refresh its package lists and
// send its inventory (POST /api/v1/endpoints/{id}/scan).
func (c *Console) endpointScan(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	err := c.callAPI(r, s, http.MethodPost, "/api/v1/endpoints/"+url.PathEscape(id)+"/scan", nil, nil)
	return c.done(w, r, "/console/endpoints/"+url.PathEscape(id), err, "Scan requested: the agent refreshes its package lists and sends its inventory.")
}

// actionRun queues a one-off action (POST /api/v1/actions) on the endpoints
// of the form and opens its run.
func (c *Console) actionRun(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	back := safeNext(r.PostFormValue("back"))
	typ := r.PostFormValue("type")
	approvalMode := r.PostFormValue("approvalMode")
	// The endpoints list's action menu names the approval mode with the
	// action ("DEPLOY_UPDATES/notDeclined").
	if t, mode, ok := strings.Cut(typ, "/"); ok && t == "DEPLOY_UPDATES" {
		typ, approvalMode = t, mode
	}
	payload := map[string]any{}
	switch typ {
	case "REBOOT":
		payload["message"] = r.PostFormValue("message")
		if t, err := strconv.Atoi(r.PostFormValue("timeoutSeconds")); err == nil {
			payload["timeoutSeconds"] = t
		}
	case "RUN_SCRIPT":
		if id := r.PostFormValue("scriptId"); id != "" {
			payload["scriptId"] = id
		} else {
			payload["script"], payload["language"] = r.PostFormValue("script"), r.PostFormValue("language")
		}
	case "DEPLOY_UPDATES":
		payload["mode"] = "all"
		if keys := r.PostForm["keys"]; len(keys) > 0 {
			payload["mode"], payload["keys"] = "selected", keys
		}
		filters := riskFilters(r.PostForm)
		if cves := r.PostForm["cves"]; len(cves) > 0 {
			// The updates that fix these CVEs, on each endpoint its own.
			filters["cves"] = cves
		}
		if len(filters) > 0 {
			payload["mode"], payload["filters"] = "filters", filters
		}
		payload["approvalMode"] = approvalMode
	case "DEPLOY_SOFTWARE":
		payload["wingetId"] = r.PostFormValue("wingetId")
	case "UNINSTALL_SOFTWARE":
		payload["name"] = r.PostFormValue("name")
	}
	ids, err := c.selectedEndpoints(r, s)
	if err != nil {
		return c.done(w, r, back, err, "")
	}
	raw, _ := json.Marshal(payload)
	var out apiv1.RunStarted
	err = c.callAPI(r, s, http.MethodPost, "/api/v1/actions", map[string]any{"endpointIds": ids, "type": typ,
		"label": r.PostFormValue("label"), "payload": json.RawMessage(raw)}, &out)
	if err != nil {
		return c.done(w, r, back, err, "")
	}
	return c.done(w, r, "/console/runs/"+out.RunID, nil, c.startedText(r, s, "Action queued", out.RunID, out.Queued))
}

type updatesData struct {
	sorter
	Items    []store.UpdateKeyRow
	Page     pager
	Q        string
	Severity string
	Source   string
	Approval string
	Policy   store.ApprovalPolicy
	Sevs     []string
}

func (c *Console) updateList(w http.ResponseWriter, r *http.Request, s *session) error {
	p, err := newPager(r, 50)
	if err != nil {
		return err
	}
	v := r.URL.Query()
	d := updatesData{Q: strings.TrimSpace(v.Get("q")), Severity: v.Get("severity"), Source: v.Get("source"), Approval: v.Get("approval"),
		Sevs: updates.Severities}
	q, err := updateKeyQuery(v, s.User.OrgID)
	if err != nil {
		return err
	}
	q.Limit, q.Offset = p.Limit, p.Offset
	d.sorter = newSorter("/console/updates", v, []string{"q", "severity", "source", "approval"}, "endpoints", true)
	if d.Key != "" && !slices.Contains(store.UpdateKeySorts, d.Key) {
		return badRequest("Sort by endpoints, severity, released or title.")
	}
	if o := v.Get("order"); o != "" && o != "asc" && o != "desc" {
		return badRequest("The order is asc or desc.")
	}
	q.Sort, q.Desc = d.Key, d.Desc
	items, total, err := c.store.ListUpdateKeys(r.Context(), q)
	if err != nil {
		return err
	}
	p.Total = total
	d.Items, d.Page = items, p
	if d.Policy, err = c.store.GetApprovalPolicy(r.Context(), s.User.OrgID); err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "updates", "", "Updates", "updates", d)
}

// updateKeyQuery reads the updates list's filters (q, severity, source,
// approval) from v.
func updateKeyQuery(v url.Values, orgID string) (store.UpdateKeyQuery, error) {
	q := store.UpdateKeyQuery{OrgID: orgID, Q: strings.TrimSpace(v.Get("q"))}
	if s := v.Get("severity"); s != "" {
		sev, ok := updates.NormalizeSeverity(s)
		if !ok {
			return q, badRequest("Unknown severity.")
		}
		q.Severity = sev
	}
	if s := v.Get("source"); s != "" {
		src, ok := updates.SourcesOf(s)
		if !ok {
			return q, badRequest("Unknown source.")
		}
		q.Sources = src
	}
	switch a := v.Get("approval"); a {
	case "", updates.StatusNew, updates.StatusApproved, updates.StatusDeclined:
		q.Approval = a
	default:
		return q, badRequest("Unknown approval status.")
	}
	return q, nil
}

// maxBulkKeys bounds "all matching" in the updates list's bulk actions
// (the API's approvals take as many).
const maxBulkKeys = 5000

// bulkKeys are the update keys a bulk action of the updates list works on,
// and the page to go back to: the ticked ones, or with allMatching every
// update the list's filters (in back) match.
func (c *Console) bulkKeys(r *http.Request, s *session) (keys []string, back string, err error) {
	if err := r.ParseForm(); err != nil {
		return nil, "/console/updates", badRequest("The form could not be read.")
	}
	back = "/console/updates"
	if q := r.PostFormValue("back"); strings.HasPrefix(q, "?") {
		back += q
	} else if strings.HasPrefix(q, "/console/updates/") {
		return r.PostForm["key"], safeNext(q), nil // an update's own page
	}
	if r.PostFormValue("allMatching") != "1" {
		if len(r.PostForm["key"]) == 0 {
			return nil, back, badRequest("Tick at least one update, or all that match.")
		}
		return r.PostForm["key"], back, nil
	}
	v, err := url.ParseQuery(strings.TrimPrefix(r.PostFormValue("back"), "?"))
	if err != nil {
		return nil, back, badRequest("The list's filters could not be read.")
	}
	q, err := updateKeyQuery(v, s.User.OrgID)
	if err != nil {
		return nil, back, err
	}
	q.Limit = maxBulkKeys
	rows, total, err := c.store.ListUpdateKeys(r.Context(), q)
	if err != nil {
		return nil, back, err
	}
	if total > maxBulkKeys {
		return nil, back, badRequest(fmt.Sprintf("%d updates match: narrow the filters to %d at most.", total, maxBulkKeys))
	}
	for _, row := range rows {
		keys = append(keys, row.Key)
	}
	if len(keys) == 0 {
		return nil, back, badRequest("No update matches the filters.")
	}
	return keys, back, nil
}

// updateDeploy deploys the ticked updates (or all that match) to every
// endpoint missing one of them (POST /api/v1/actions, DEPLOY_UPDATES with
// those keys; each endpoint installs those of them it misses).
func (c *Console) updateDeploy(w http.ResponseWriter, r *http.Request, s *session) error {
	keys, back, err := c.bulkKeys(r, s)
	if err != nil {
		return c.done(w, r, back, err, "")
	}
	ids, err := c.store.EndpointsMissing(r.Context(), s.User.OrgID, keys)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return c.done(w, r, back, badRequest("No endpoint misses these updates."), "")
	}
	mode := r.PostFormValue("approvalMode")
	if mode != "approved" {
		mode = "notDeclined"
	}
	raw, _ := json.Marshal(map[string]any{"mode": "selected", "keys": keys, "approvalMode": mode})
	var out apiv1.RunStarted
	err = c.callAPI(r, s, http.MethodPost, "/api/v1/actions", map[string]any{"endpointIds": ids, "type": "DEPLOY_UPDATES",
		"label": fmt.Sprintf("Deploy %d selected update(s)", len(keys)), "payload": json.RawMessage(raw)}, &out)
	if err != nil {
		return c.done(w, r, back, err, "")
	}
	return c.done(w, r, "/console/runs/"+out.RunID, nil, c.startedText(r, s, "Deployment queued", out.RunID, out.Queued))
}

// updateApprove approves, declines or resets the checked keys, or all that
// match the list's filters (POST /api/v1/updates/approvals).
func (c *Console) updateApprove(w http.ResponseWriter, r *http.Request, s *session) error {
	keys, back, err := c.bulkKeys(r, s)
	if err != nil {
		return c.done(w, r, back, err, "")
	}
	if len(keys) == 0 {
		return c.done(w, r, back, badRequest("Tick at least one update."), "")
	}
	body := apiv1.ApprovalBody{Status: r.PostFormValue("status")}
	for _, k := range keys {
		body.Keys = append(body.Keys, apiv1.ApprovalKey{Key: k})
	}
	var out apiv1.ApprovalResult
	err = c.callAPI(r, s, http.MethodPost, "/api/v1/updates/approvals", body, &out)
	return c.done(w, r, back, err, strconv.Itoa(out.Count)+" update(s) set to "+out.Status+".")
}

// policySet adds or removes a rule of the automatic approval policy, with
// the same code as patchd admin approval-policy.
func (c *Console) policySet(w http.ResponseWriter, r *http.Request, s *session) error {
	const back = "/console/updates"
	// The form changes one rule or the declineOlder setting; the API's PUT
	// replaces the policy: read it, change it, put it back.
	var cur apiv1.ApprovalPolicy
	if err := c.callAPI(r, s, http.MethodGet, "/api/v1/approval-policy", nil, &cur); err != nil {
		return c.done(w, r, back, err, "")
	}
	severity, source := r.PostFormValue("severity"), r.PostFormValue("source")
	same := func(x apiv1.ApprovalPolicyRule) bool {
		return strings.EqualFold(x.Severity, severity) && strings.EqualFold(x.Source, source)
	}
	rules := slices.DeleteFunc(slices.Clone(cur.Rules), same)
	declineOlder := cur.DeclineOlder
	switch r.PostFormValue("op") {
	case "set":
		delay, err := strconv.Atoi(r.PostFormValue("delayDays"))
		if err != nil {
			return c.done(w, r, back, badRequest("The delay must be a number of days."), "")
		}
		rules = append(rules, apiv1.ApprovalPolicyRule{Severity: severity, Source: source, DelayDays: delay})
	case "delete":
		if len(rules) == len(cur.Rules) {
			return c.done(w, r, back, notFound("rule"), "")
		}
	case "decline-older":
		declineOlder = r.PostFormValue("on") == "true"
	default:
		return notFound("operation")
	}
	err := c.callAPI(r, s, http.MethodPut, "/api/v1/approval-policy", apiv1.ApprovalPolicyBody{DeclineOlder: &declineOlder, Rules: &rules}, nil)
	return c.done(w, r, back, err, "Approval policy saved.")
}
