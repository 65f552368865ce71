package api

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/updates"
	"github.com/patchd/patchd/internal/valid"
)

// maxApprovalKeys bounds the keys of one approval request.
const maxApprovalKeys = 5000

// listUpdates is operation 6. The severity and source filters are applied
// in the query, before paging (docs/design/api-contract.md), so total
// counts matching rows; unknown values are 400, as the OpenAPI document
// declares enums.
func (a *API) listUpdates(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.ParsePage(r)
	if err != nil {
		return err
	}
	v := r.URL.Query()
	q := store.UpdateQuery{OrgID: principal(r).OrgID, EndpointID: strings.TrimSpace(v.Get("endpointId")), Limit: page.Limit, Offset: page.Offset}
	if s := strings.TrimSpace(v.Get("severity")); s != "" {
		sev, ok := updates.NormalizeSeverity(s)
		if !ok {
			return httpx.InvalidRequest("severity must be one of " + strings.Join(updates.Severities, ", "))
		}
		q.Severity = sev
	}
	if s := strings.TrimSpace(v.Get("source")); s != "" {
		sources, ok := updates.SourcesOf(strings.ToUpper(s))
		if !ok {
			return httpx.InvalidRequest("source must be OS or THIRD_PARTY")
		}
		q.Sources = sources
	}
	if s := strings.TrimSpace(v.Get("sort")); s != "" {
		if !slices.Contains(store.UpdateSorts, s) {
			return httpx.InvalidRequest("sort must be one of " + strings.Join(store.UpdateSorts, ", "))
		}
		q.Sort = s
	}
	items, total, err := a.store.ListUpdates(r.Context(), q)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, httpx.NewPage(items, total, page))
	return nil
}

// approvalActions are the Audit Trail actions of each decision.
var approvalActions = map[string]string{
	updates.StatusApproved: "update.approve",
	updates.StatusDeclined: "update.decline",
	updates.StatusNew:      "update.reset",
}

// setApprovals is operation 19 (rule 4 of the specification).
func (a *API) setApprovals(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.ApprovalBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	var errs valid.Errors
	status := strings.ToUpper(strings.TrimSpace(body.Status))
	if !updates.ValidStatus(status) {
		errs.Add("status", "must be APPROVED, DECLINED or NEW")
	}
	switch {
	case len(body.Keys) == 0:
		errs.Add("keys", "at least one key is required")
	case len(body.Keys) > maxApprovalKeys:
		errs.Add("keys", "at most %d keys per request", maxApprovalKeys)
	}
	if err := errs.Err(); err != nil {
		return err
	}
	in := make([]store.ApprovalInput, len(body.Keys))
	for i, k := range body.Keys {
		in[i] = store.ApprovalInput{Key: k.Key, Title: strings.TrimSpace(k.Title)}
	}
	e := a.auditEntry(r, approvalActions[status], "update", "")
	out, err := a.store.SetApprovals(r.Context(), e, principal(r).OrgID, status, in, time.Now())
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.ApprovalResult{OK: true, Count: len(body.Keys), Status: status, Changed: out.Changed})
	return nil
}
