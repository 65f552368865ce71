package api

import (
	"net/http"
	"strings"

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
	items, total, err := a.store.ListRuns(r.Context(), rq)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, httpx.NewList(items, total))
	return nil
}
