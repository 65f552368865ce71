package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/actions"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
)

// listRuns is operation 23: the most recent runs, or with runId the
// per-endpoint results of one run. limit (1-500, default 100) bounds the
// items; offset (an extension) pages through the commands of a large run.
func (a *API) listRuns(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.ParsePage(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	rq := store.RunQuery{OrgID: principal(r).OrgID, AutomationID: strings.TrimSpace(q.Get("automationId")),
		EndpointID: strings.TrimSpace(q.Get("endpointId")), Limit: page.Limit, Offset: page.Offset}
	// failed, since, status and search are patchd additions.
	if v := q.Get("since"); v != "" {
		if rq.Since, err = parseAuditTime("since", v); err != nil {
			return err
		}
	}
	switch q.Get("failed") {
	case "", "0":
	case "1":
		rq.WithFailures = true
	default:
		return httpx.InvalidRequest("failed must be 1 or 0")
	}
	rq.CommandStatus, rq.Search = q.Get("status"), strings.TrimSpace(q.Get("search"))
	if rq.CommandStatus != "" && !slices.Contains(store.CommandStatuses, rq.CommandStatus) {
		return httpx.InvalidRequest("status must be one of " + strings.Join(store.CommandStatuses, ", "))
	}
	if runID := strings.TrimSpace(q.Get("runId")); runID != "" {
		items, total, err := a.store.ListRunCommands(r.Context(), rq, runID)
		if isNotFound(err) {
			return httpx.NotFound("run")
		}
		if err != nil {
			return err
		}
		httpx.WriteJSON(w, http.StatusOK, httpx.NewList(items, total))
		return nil
	}
	if rq.CommandStatus != "" || rq.Search != "" {
		return httpx.InvalidRequest("status and search filter the results of one run: give runId")
	}
	items, total, err := a.store.ListRuns(r.Context(), rq)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, httpx.NewList(items, total))
	return nil
}

// getRun answers one run (patchd addition).
func (a *API) getRun(w http.ResponseWriter, r *http.Request) error {
	run, err := a.store.GetRun(r.Context(), principal(r).OrgID, r.PathValue("id"))
	if isNotFound(err) {
		return httpx.NotFound("run")
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, run)
	return nil
}

// stopRun stops a running run: commands not started are cancelled, those
// running finish and are counted (patchd addition).
func (a *API) stopRun(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	run, err := a.store.StopRun(r.Context(), a.auditEntry(r, "run.stop", "run", id), principal(r).OrgID, id, time.Now())
	switch {
	case isNotFound(err):
		return httpx.NotFound("run")
	case errors.Is(err, dberr.ErrConflict):
		return httpx.Errorf(http.StatusConflict, "run_not_running", "only a RUNNING run can be stopped; this one has ended")
	case err != nil:
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, run)
	return nil
}

// retryRun starts a new run of a run's action on the endpoints whose
// command failed (patchd addition). The action is resolved anew: updates
// missing now, the stored script as it is now.
func (a *API) retryRun(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	src, err := a.store.RunRetrySource(r.Context(), p.OrgID, r.PathValue("id"))
	if isNotFound(err) {
		return httpx.NotFound("run")
	}
	if err != nil {
		return err
	}
	if len(src.FailedEndpoints) == 0 {
		return httpx.Errorf(http.StatusConflict, "no_failed_endpoints", "no command of this run failed: there is nothing to retry")
	}
	act, err := actions.Parse(src.ActionType, src.Payload, "payload.")
	if err != nil {
		return fmt.Errorf("api: stored payload of run %s: %w", src.RunID, err)
	}
	name := strings.TrimSuffix(src.Name, " (retry)") + " (retry)"
	e := a.auditEntry(r, "run.retry", "run", "")
	e.Summary = map[string]any{"retryOf": src.RunID, "endpoints": len(src.FailedEndpoints)}
	run, err := a.launch(r.Context(), e, store.Launch{
		Run: store.NewRun{OrgID: p.OrgID, Name: name, CreatedBy: p.Actor(), AutomationID: src.AutomationID, AutomationName: src.AutomationName,
			Detail: "Retry of the failed endpoints of run " + src.RunID + "."},
		Action:      act,
		EndpointIDs: src.FailedEndpoints,
	})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.RunStarted{OK: true, RunID: run.RunID, Queued: run.Queued})
	return nil
}
