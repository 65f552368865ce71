package admin

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

var cveID = regexp.MustCompile(`^CVE-\d{4}-\d{4,}$`)

// CheckCVE normalises a CVE id (CVE-2023-4863) or answers a validation error.
func CheckCVE(s string) (string, error) {
	c := strings.ToUpper(strings.TrimSpace(s))
	if !cveID.MatchString(c) {
		return "", valid.One("cve", "must be a CVE id such as CVE-2023-4863")
	}
	return c, nil
}

// CheckVulnRisk adds to errs the problems of a decision's CVE id, kind and
// reason, and answers the normalised CVE id and reason.
func CheckVulnRisk(errs *valid.Errors, cve, kind, reason string) (string, string) {
	c, err := CheckCVE(cve)
	if err != nil {
		errs.Add("cve", "must be a CVE id such as CVE-2023-4863")
	}
	if kind != store.ExceptionAccepted && kind != store.ExceptionCompensatingControl {
		errs.Add("kind", "must be %s or %s", store.ExceptionAccepted, store.ExceptionCompensatingControl)
	}
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		errs.Add("reason", "is required")
	case len(reason) > 2000:
		errs.Add("reason", "must have at most 2000 characters")
	}
	return c, reason
}

// AcceptVulnRisk records (or replaces) the organization's accepted risk or
// compensating control for a CVE, audited as actor (patchd admin vuln
// accept and the console). validFor 0 means no expiry. Bad input is a
// *valid.Error listing every problem.
func AcceptVulnRisk(ctx context.Context, s *store.Store, actor, orgID, cve, kind, reason string, validFor time.Duration, now time.Time) (*store.VulnException, error) {
	return AcceptVulnRiskAudited(ctx, s, &store.AuditEntry{OrgID: orgID, Actor: actor}, cve, kind, reason, validFor, now)
}

// AcceptVulnRiskAudited is AcceptVulnRisk with the caller's audit entry
// (organization, actor and address; the action is set here): the REST API
// records the caller's address too.
func AcceptVulnRiskAudited(ctx context.Context, s *store.Store, e *store.AuditEntry, cve, kind, reason string, validFor time.Duration, now time.Time) (*store.VulnException, error) {
	var errs valid.Errors
	c, reason := CheckVulnRisk(&errs, cve, kind, reason)
	if validFor < 0 {
		errs.Add("expires", "must be in the future")
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	now = now.UTC()
	x := &store.VulnException{OrgID: e.OrgID, CVEID: c, Kind: kind, Reason: reason, CreatedBy: e.Actor, CreatedAt: now, Active: true}
	if validFor > 0 {
		t := now.Add(validFor)
		x.ExpiresAt = &t
	}
	e.Action = "vulnerability.accept"
	if kind == store.ExceptionCompensatingControl {
		e.Action = "vulnerability.compensating_control"
	}
	if err := s.SetVulnException(ctx, e, x); err != nil {
		return nil, err
	}
	return x, nil
}

// RevokeVulnRisk deletes the organization's exception for a CVE, audited
// as actor; dberr.ErrNotFound when there is none.
func RevokeVulnRisk(ctx context.Context, s *store.Store, actor, orgID, cve string) (string, error) {
	return RevokeVulnRiskAudited(ctx, s, &store.AuditEntry{OrgID: orgID, Actor: actor}, cve)
}

// RevokeVulnRiskAudited is RevokeVulnRisk with the caller's audit entry
// (the action is set here).
func RevokeVulnRiskAudited(ctx context.Context, s *store.Store, e *store.AuditEntry, cve string) (string, error) {
	c, err := CheckCVE(cve)
	if err != nil {
		return "", err
	}
	e.Action = "vulnerability.revoke"
	return c, s.RevokeVulnException(ctx, e, e.OrgID, c)
}
