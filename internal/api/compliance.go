package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
)

// DefaultComplianceDays is the history GET /api/v1/compliance/history
// answers without days.
const DefaultComplianceDays = 30

// complianceHistory (a patchd addition) answers the organization's
// recorded compliance of the last days (today included), oldest first.
// A day the server did not run has no entry.
func (a *API) complianceHistory(w http.ResponseWriter, r *http.Request) error {
	days, err := ComplianceDays(r.URL.Query().Get("days"))
	if err != nil {
		return err
	}
	now := time.Now()
	items, err := a.store.ComplianceHistory(r.Context(), principal(r).OrgID, now.AddDate(0, 0, 1-days), now)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, httpx.NewList(items, len(items)))
	return nil
}

// ComplianceDays reads the days parameter: 1 to store.ComplianceKeepDays,
// DefaultComplianceDays when empty.
func ComplianceDays(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultComplianceDays, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > store.ComplianceKeepDays {
		return 0, httpx.InvalidRequest(fmt.Sprintf("days must be a whole number from 1 to %d", store.ComplianceKeepDays))
	}
	return n, nil
}

// complianceByGroup answers every group with its members' compliance now
// under the organization's compliance policy.
func (a *API) complianceByGroup(w http.ResponseWriter, r *http.Request) error {
	gs, p, err := a.store.ComplianceByGroup(r.Context(), principal(r).OrgID, time.Now())
	if err != nil {
		return err
	}
	out := apiv1.ComplianceByGroup{Policy: compliancePolicyOut(p), Items: make([]apiv1.GroupCompliance, 0, len(gs)), Total: len(gs)}
	for _, g := range gs {
		out.Items = append(out.Items, apiv1.GroupCompliance{GroupID: g.GroupID, Name: g.Name, Endpoints: g.Endpoints, Compliant: g.Compliant,
			MissingCritical: g.MissingCritical})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}
