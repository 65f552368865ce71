package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/store"
)

// runView is a run as the console shows it: the spec's run with what
// became of its commands, so that "nothing to install" is its own outcome
// (the API keeps those commands CANCELLED) and a run with some failures
// reads "completed with failures", not a red FAILED.
type runView struct {
	apiv1.Run
	T store.RunTally
	// Reasons are the first failures' reasons, shown in the runs list.
	Reasons []failReason
}

// failReason is why a run failed on one endpoint.
type failReason struct{ Endpoint, Text string }

// shownFailures is how many failures a row of the runs list explains.
const shownFailures = 3

// withReasons reads, through the API, the first failures of each run that
// has some and keeps their reasons (the first line of the result).
func (c *Console) withReasons(r *http.Request, s *session, views []runView) error {
	for i := range views {
		if views[i].Failed == 0 {
			continue
		}
		var list apiv1.List[apiv1.RunCommand]
		q := url.Values{"runId": {views[i].ID}, "status": {store.CmdFailed}, "limit": {strconv.Itoa(shownFailures)}}
		if err := c.callAPI(r, s, http.MethodGet, "/api/v1/runs?"+q.Encode(), nil, &list); err != nil {
			return err
		}
		for _, cmd := range list.Items {
			text, _, _ := strings.Cut(strings.TrimSpace(deref(cmd.Result)), "\n")
			if len([]rune(text)) > 160 {
				text = string([]rune(text)[:159]) + "…"
			}
			if text == "" {
				text = "no reason given"
			}
			views[i].Reasons = append(views[i].Reasons, failReason{Endpoint: cmd.Endpoint, Text: text})
		}
	}
	return nil
}

// Outcome is the run's state in plain words.
func (v runView) Outcome() string {
	switch v.Status {
	case store.RunRunning:
		return "Running"
	case store.RunStopped:
		if v.T.Open() > 0 {
			return "Stopping"
		}
		return "Stopped"
	}
	switch {
	case v.Failed > 0 && v.Succeeded > 0:
		return "Completed with failures"
	case v.Failed > 0:
		return "Failed"
	case v.Succeeded == 0 && v.T.Nothing > 0 && v.T.Cancelled == 0:
		return "Nothing to install"
	}
	return "Completed"
}

// OutcomeClass is the badge class of Outcome.
func (v runView) OutcomeClass() string {
	switch v.Outcome() {
	case "Running", "Stopping":
		return "st-running"
	case "Stopped":
		return "st-stopped"
	case "Completed with failures":
		return "st-partial"
	case "Failed":
		return "st-failed"
	case "Nothing to install":
		return "st-nothing"
	}
	return "st-completed"
}

// Polling tells whether the run page refreshes itself: while the run runs,
// and after a stop while commands already started still run.
func (v runView) Polling() bool { return v.Status == store.RunRunning || v.T.Open() > 0 }

// Width is the run's bar in percent of its commands: succeeded, failed,
// nothing to install, cancelled (the rest is still to do).
func (v runView) Width() [4]int {
	return [4]int{pct(v.Succeeded, v.Total), pct(v.Failed, v.Total), pct(v.T.Nothing, v.Total), pct(v.T.Cancelled, v.Total)}
}

// runViews reads the tallies of runs for their views.
func (c *Console) runViews(r *http.Request, s *session, runs []apiv1.Run) ([]runView, error) {
	ids := make([]string, len(runs))
	for i, run := range runs {
		ids[i] = run.ID
	}
	tallies, err := c.store.RunTallies(r.Context(), s.User.OrgID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]runView, len(runs))
	for i, run := range runs {
		out[i] = runView{Run: run, T: tallies[run.ID]}
	}
	return out, nil
}

// startedText is the message after starting a run: the endpoints it really
// started on, and those with nothing to install apart.
func (c *Console) startedText(r *http.Request, s *session, verb, runID string, queued int) string {
	text := verb + " on " + plural(queued, "endpoint", "endpoints")
	if t, err := c.store.RunTallies(r.Context(), s.User.OrgID, []string{runID}); err == nil {
		if n := t[runID].Nothing; n > 0 {
			text += "; " + plural(n, "endpoint has", "endpoints have") + " nothing to install"
		}
	}
	return text + "."
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// nothingToInstall tells whether a command's result says its endpoint had
// nothing to install (a CANCELLED command the console shows as its own
// outcome).
func nothingToInstall(status string, result *string) bool {
	return status == store.CmdCancelled && result != nil && strings.HasPrefix(*result, "Nothing to install")
}

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
	if err := c.withReasons(r, s, views); err != nil {
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
