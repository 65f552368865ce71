package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// Vulnerability decisions (patchd additions): the organization's accepted
// risks and compensating controls. Recording and revoking one is what the
// console and patchd admin vuln accept and revoke do
// (admin.AcceptVulnRiskAudited, admin.RevokeVulnRiskAudited); as in the
// console they belong to roles holding every permission, since the spec
// has no permission for them. Reading them takes vulnerabilities.view.

// maxValidDays bounds validDays (ten years).
const maxValidDays = 3650

func vulnExceptionOut(x store.VulnException) apiv1.VulnException {
	return apiv1.VulnException{ID: x.ID, CVEID: x.CVEID, Kind: x.Kind, Reason: x.Reason, ExpiresAt: x.ExpiresAt,
		CreatedBy: x.CreatedBy, CreatedAt: x.CreatedAt, Active: x.Active, Endpoints: x.Endpoints}
}

func (a *API) listVulnExceptions(w http.ResponseWriter, r *http.Request) error {
	kind := r.URL.Query().Get("kind")
	if kind != "" && kind != store.ExceptionAccepted && kind != store.ExceptionCompensatingControl {
		return httpx.Errorf(http.StatusBadRequest, "invalid_request", "kind must be accepted or compensating_control")
	}
	list, err := a.store.ListVulnExceptions(r.Context(), principal(r).OrgID, kind, time.Now())
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, listOf(list, vulnExceptionOut))
	return nil
}

// acceptVulnRisk records (or replaces) the decision about a CVE.
func (a *API) acceptVulnRisk(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "accepting a vulnerability's risk"); err != nil {
		return err
	}
	var body apiv1.VulnExceptionBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	now := time.Now()
	var errs valid.Errors
	admin.CheckVulnRisk(&errs, r.PathValue("cve"), body.Kind, body.Reason)
	var validFor time.Duration
	switch {
	case body.ExpiresAt != nil && body.ValidDays != nil:
		errs.Add("validDays", "give expiresAt or validDays, not both")
	case body.ExpiresAt != nil:
		validFor = body.ExpiresAt.Sub(now)
		if validFor <= 0 {
			errs.Add("expiresAt", "must be in the future")
		} else if validFor > maxValidDays*day {
			errs.Add("expiresAt", "must be within %d days", maxValidDays)
		}
	case body.ValidDays != nil:
		if *body.ValidDays < 1 || *body.ValidDays > maxValidDays {
			errs.Add("validDays", "must be between 1 and %d", maxValidDays)
		}
		validFor = time.Duration(*body.ValidDays) * day
	}
	if err := errs.Err(); err != nil {
		return err
	}
	orgID := principal(r).OrgID
	x, err := admin.AcceptVulnRiskAudited(r.Context(), a.store, a.auditEntry(r, "", "", ""), r.PathValue("cve"), body.Kind, body.Reason, validFor, now)
	if err != nil {
		return err
	}
	// Answer the decision as the list shows it (with its endpoints).
	list, err := a.store.ListVulnExceptions(r.Context(), orgID, "", now)
	if err != nil {
		return err
	}
	out := vulnExceptionOut(*x)
	for _, y := range list {
		if y.CVEID == x.CVEID {
			out = vulnExceptionOut(y)
		}
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// revokeVulnRisk deletes the decision about a CVE: the CVE counts again.
func (a *API) revokeVulnRisk(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "revoking a vulnerability's accepted risk"); err != nil {
		return err
	}
	_, err := admin.RevokeVulnRiskAudited(r.Context(), a.store, a.auditEntry(r, "", "", ""), r.PathValue("cve"))
	if errors.Is(err, dberr.ErrNotFound) {
		return httpx.Errorf(http.StatusNotFound, "not_found", "no accepted risk or compensating control for this CVE")
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}
