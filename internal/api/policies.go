package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/updates"
	"github.com/patchd/patchd/internal/valid"
	"github.com/patchd/patchd/internal/vulns"
)

// The organization's policies (patchd additions): the automatic approval
// policy that patchd admin approval-policy and the console's Updates page
// set (rules checked by updates.CheckPolicyRule, stored by
// Store.SetApprovalPolicy), and the remediation periods that patchd admin
// vuln policy sets (Store.VulnPolicy, Store.SetVulnPolicy).

func approvalPolicyOut(p store.ApprovalPolicy) apiv1.ApprovalPolicy {
	out := apiv1.ApprovalPolicy{DeclineOlder: p.DeclineOlder, Rules: make([]apiv1.ApprovalPolicyRule, 0, len(p.Rules))}
	for _, r := range p.Rules {
		out.Rules = append(out.Rules, apiv1.ApprovalPolicyRule{Severity: r.Severity, Source: r.Source, DelayDays: r.DelayDays})
	}
	return out
}

func (a *API) getApprovalPolicy(w http.ResponseWriter, r *http.Request) error {
	p, err := a.store.GetApprovalPolicy(r.Context(), principal(r).OrgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, approvalPolicyOut(p))
	return nil
}

// setApprovalPolicy replaces the organization's approval policy: every
// rule and declineOlder, in one audited transaction.
func (a *API) setApprovalPolicy(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.ApprovalPolicyBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	rules, err := checkApprovalPolicy(body)
	if err != nil {
		return err
	}
	orgID := principal(r).OrgID
	p, err := a.store.SetApprovalPolicy(r.Context(), a.auditEntry(r, "approval_policy.set", "approval_policy", orgID), orgID,
		store.PolicyChange{ReplaceRules: true, Rules: rules, DeclineOlder: body.DeclineOlder})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, approvalPolicyOut(p))
	return nil
}

// checkApprovalPolicy answers the body's rules normalised, or every
// problem: both fields are required, each rule passes
// updates.CheckPolicyRule, and no two rules have the same severity and
// source.
func checkApprovalPolicy(body apiv1.ApprovalPolicyBody) ([]updates.PolicyRule, error) {
	var errs valid.Errors
	if body.DeclineOlder == nil {
		errs.Add("declineOlder", "is required (true or false)")
	}
	if body.Rules == nil {
		errs.Add("rules", "is required (an empty list for none)")
		return nil, errs.Err()
	}
	if len(*body.Rules) > 100 {
		errs.Add("rules", "must have at most 100 rules")
		return nil, errs.Err()
	}
	rules := make([]updates.PolicyRule, 0, len(*body.Rules))
	seen := map[[2]string]bool{}
	for i, in := range *body.Rules {
		field := "rules[" + strconv.Itoa(i) + "]"
		// Each part alone, so that the problem names its field.
		sev, sevErr := updates.CheckPolicyRule(updates.PolicyRule{Severity: in.Severity, Source: updates.Any})
		src, srcErr := updates.CheckPolicyRule(updates.PolicyRule{Severity: updates.Any, Source: in.Source})
		_, delayErr := updates.CheckPolicyRule(updates.PolicyRule{Severity: updates.Any, Source: updates.Any, DelayDays: in.DelayDays})
		for _, p := range []struct {
			name string
			err  error
		}{{"severity", sevErr}, {"source", srcErr}, {"delayDays", delayErr}} {
			if p.err != nil {
				errs.Add(field+"."+p.name, "%s", p.err)
			}
		}
		if sevErr != nil || srcErr != nil || delayErr != nil {
			continue
		}
		rule := updates.PolicyRule{Severity: sev.Severity, Source: src.Source, DelayDays: in.DelayDays}
		key := [2]string{rule.Severity, rule.Source}
		if seen[key] {
			errs.Add(field, "repeats severity %s and source %s: one rule each", rule.Severity, rule.Source)
			continue
		}
		seen[key] = true
		rules = append(rules, rule)
	}
	return rules, errs.Err()
}

// Remediation periods, whole days.
const (
	maxRemediationDays = 3650
	day                = 24 * time.Hour
)

func remediationOut(p vulns.Policy) apiv1.RemediationPolicy {
	return apiv1.RemediationPolicy{CriticalDays: int(p.Critical / day), HighDays: int(p.High / day), MediumDays: int(p.Medium / day), LowDays: int(p.Low / day)}
}

func (a *API) getRemediationPolicy(w http.ResponseWriter, r *http.Request) error {
	p, err := a.store.VulnPolicy(r.Context(), principal(r).OrgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, remediationOut(p))
	return nil
}

// setRemediationPolicy sets the four periods, audited as
// vulnerability.policy like patchd admin vuln policy. As accepted risks,
// it is for roles holding every permission.
func (a *API) setRemediationPolicy(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "setting the remediation policy"); err != nil {
		return err
	}
	var body struct {
		CriticalDays *int `json:"criticalDays"`
		HighDays     *int `json:"highDays"`
		MediumDays   *int `json:"mediumDays"`
		LowDays      *int `json:"lowDays"`
	}
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	var p vulns.Policy
	var errs valid.Errors
	for _, f := range []struct {
		name string
		days *int
		dst  *time.Duration
	}{{"criticalDays", body.CriticalDays, &p.Critical}, {"highDays", body.HighDays, &p.High},
		{"mediumDays", body.MediumDays, &p.Medium}, {"lowDays", body.LowDays, &p.Low}} {
		switch {
		case f.days == nil:
			errs.Add(f.name, "is required")
		case *f.days < 1 || *f.days > maxRemediationDays:
			errs.Add(f.name, "must be between 1 and %d days", maxRemediationDays)
		default:
			*f.dst = time.Duration(*f.days) * day
		}
	}
	if err := errs.Err(); err != nil {
		return err
	}
	orgID := principal(r).OrgID
	if err := a.store.SetVulnPolicy(r.Context(), a.auditEntry(r, "vulnerability.policy", "", ""), orgID, p); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, remediationOut(p))
	return nil
}

func compliancePolicyOut(p updates.CompliancePolicy) apiv1.CompliancePolicy {
	return apiv1.CompliancePolicy{CriticalDays: p.Critical, ImportantDays: p.Important, ModerateDays: p.Moderate, LowDays: p.Low,
		UnspecifiedDays: p.Unspecified, KEVDays: p.KEV, Description: p.Describe()}
}

func (a *API) getCompliancePolicy(w http.ResponseWriter, r *http.Request) error {
	p, err := a.store.CompliancePolicy(r.Context(), principal(r).OrgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, compliancePolicyOut(p))
	return nil
}

// setCompliancePolicy sets the five periods and the KEV deadline
// (optional, updates.DefaultKEVDays when left out), audited as
// compliance_policy.set. Like the remediation periods, it is for roles
// holding every permission: it decides what the fleet's compliance means.
func (a *API) setCompliancePolicy(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "setting the compliance policy"); err != nil {
		return err
	}
	var body struct {
		CriticalDays    *int `json:"criticalDays"`
		ImportantDays   *int `json:"importantDays"`
		ModerateDays    *int `json:"moderateDays"`
		LowDays         *int `json:"lowDays"`
		UnspecifiedDays *int `json:"unspecifiedDays"`
		KEVDays         *int `json:"kevDays"`
	}
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	if body.KEVDays == nil {
		kev := updates.DefaultKEVDays
		body.KEVDays = &kev
	}
	var days [6]int
	var errs valid.Errors
	for i, v := range []*int{body.CriticalDays, body.ImportantDays, body.ModerateDays, body.LowDays, body.UnspecifiedDays, body.KEVDays} {
		name := updates.ComplianceFields[i]
		switch {
		case v == nil:
			errs.Add(name, "is required")
		case updates.CheckComplianceDays(*v) != nil:
			errs.Add(name, "%s", updates.CheckComplianceDays(*v))
		default:
			days[i] = *v
		}
	}
	if err := errs.Err(); err != nil {
		return err
	}
	p := updates.CompliancePolicyOf(days)
	orgID := principal(r).OrgID
	if err := a.store.SetCompliancePolicy(r.Context(), a.auditEntry(r, "compliance_policy.set", "", ""), orgID, p); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, compliancePolicyOut(p))
	return nil
}
