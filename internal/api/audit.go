package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
)

// parseAuditTime reads a time bound: an RFC 3339 date-time, or a date
// (YYYY-MM-DD, midnight UTC).
func parseAuditTime(name, v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, httpx.InvalidRequest(name + " must be an RFC 3339 date-time (2026-11-24T09:00:00Z) or a date (2026-11-24)")
}

// listAudit answers the organization's Audit Trail, newest first, filtered
// by actor, action and a time range, in pages (patchd addition).
func (a *API) listAudit(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.ParsePage(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := store.AuditFilter{Actor: strings.TrimSpace(q.Get("actor")), Action: strings.TrimSpace(q.Get("action")), Limit: page.Limit, Offset: page.Offset}
	if v := q.Get("since"); v != "" {
		if f.Since, err = parseAuditTime("since", v); err != nil {
			return err
		}
	}
	if v := q.Get("until"); v != "" {
		if f.Until, err = parseAuditTime("until", v); err != nil {
			return err
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return httpx.InvalidRequest("since must be before until")
	}
	entries, total, err := a.store.PageAudit(r.Context(), principal(r).OrgID, f)
	if err != nil {
		return err
	}
	items := make([]apiv1.AuditEntry, len(entries))
	for i, e := range entries {
		items[i] = apiv1.AuditEntry{ID: e.ID, At: e.At, Actor: e.Actor, Action: e.Action, TargetType: e.TargetType, Summary: e.Summary, Address: e.Address}
		if e.TargetID != "" {
			items[i].TargetID = &e.TargetID
		}
		if items[i].Summary == nil {
			items[i].Summary = map[string]any{}
		}
	}
	httpx.WriteJSON(w, http.StatusOK, httpx.NewPage(items, total, page))
	return nil
}
