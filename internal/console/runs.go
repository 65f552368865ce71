package console

import (
	"net/http"
	"strconv"
	"strings"

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
