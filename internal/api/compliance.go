package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

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
