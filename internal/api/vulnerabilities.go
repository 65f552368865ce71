package api

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulns"
)

// listVulns is operation 8. The list is a query of the results
// the matching worker stores (internal/vulndb), not a computation; the
// remediation status is evaluated at request time. CVEs whose risk the
// organization accepted (or covered by a compensating control) are left
// out unless accepted=1.
func (a *API) listVulns(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.ParsePage(r)
	if err != nil {
		return err
	}
	v := r.URL.Query()
	q := store.VulnQuery{OrgID: principal(r).OrgID, Limit: page.Limit, Offset: page.Offset, Now: time.Now()}
	if s := strings.TrimSpace(v.Get("minCvss")); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 10 {
			return httpx.InvalidRequest("minCvss must be a number from 0 to 10")
		}
		q.MinCVSS = &f
	}
	// minEpss and sort are patchd additions.
	if s := strings.TrimSpace(v.Get("minEpss")); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return httpx.InvalidRequest("minEpss must be a number from 0 to 1")
		}
		q.MinEPSS = &f
	}
	switch q.Sort = strings.TrimSpace(v.Get("sort")); q.Sort {
	case "", "cvss", "risk":
	default:
		return httpx.InvalidRequest("sort must be cvss (the default) or risk")
	}
	if q.KEVOnly, err = flagParam(v.Get("kev"), "kev"); err != nil {
		return err
	}
	if q.IncludeAccepted, err = flagParam(v.Get("accepted"), "accepted"); err != nil {
		return err
	}
	// remediation is a patchd addition.
	switch q.Remediation = strings.TrimSpace(v.Get("remediation")); q.Remediation {
	case "", vulns.StatusOverdue, vulns.StatusDueSoon, vulns.StatusDueLater:
	default:
		return httpx.InvalidRequest("remediation must be one of " + strings.Join(vulns.Statuses, ", "))
	}
	items, total, err := a.store.ListVulnerabilities(r.Context(), q)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, httpx.NewPage(items, total, page))
	return nil
}

// flagParam reads a `1` / `0` query parameter; absent is 0.
func flagParam(s, name string) (bool, error) {
	switch strings.TrimSpace(s) {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, httpx.InvalidRequest(name + " must be 1 or 0")
}
