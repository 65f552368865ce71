package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/patchd/patchd/apiv1"
)

// This file covers patchd's operations beyond the specification (the
// OpenAPI document marks them x-patchd-addition).

// ListScripts reads the organization's script library.
func (c *Client) ListScripts(ctx context.Context) (apiv1.List[apiv1.Script], error) {
	return call[apiv1.List[apiv1.Script]](ctx, c, http.MethodGet, "/api/v1/scripts", nil, nil)
}

// GetScript reads one script, by id or by name.
func (c *Client) GetScript(ctx context.Context, idOrName string) (apiv1.Script, error) {
	return call[apiv1.Script](ctx, c, http.MethodGet, "/api/v1/scripts/"+url.PathEscape(idOrName), nil, nil)
}

// CreateScript adds a script to the library.
func (c *Client) CreateScript(ctx context.Context, body apiv1.ScriptBody) (apiv1.Script, error) {
	return call[apiv1.Script](ctx, c, http.MethodPost, "/api/v1/scripts", nil, body)
}

// UpdateScript changes the fields body gives of a script (by id or name).
func (c *Client) UpdateScript(ctx context.Context, idOrName string, body apiv1.ScriptBody) (apiv1.Script, error) {
	return call[apiv1.Script](ctx, c, http.MethodPatch, "/api/v1/scripts/"+url.PathEscape(idOrName), nil, body)
}

// DeleteScript removes a script (by id or name).
func (c *Client) DeleteScript(ctx context.Context, idOrName string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/scripts/"+url.PathEscape(idOrName), nil, nil, nil)
}

// ListEnrollTokens reads the organization's enrollment tokens (never the
// tokens themselves) with their uses.
func (c *Client) ListEnrollTokens(ctx context.Context) (apiv1.List[apiv1.EnrollToken], error) {
	return call[apiv1.List[apiv1.EnrollToken]](ctx, c, http.MethodGet, "/api/v1/enrollment-tokens", nil, nil)
}

// CreateEnrollToken creates an enrollment token; the answer is the only
// place the token appears.
func (c *Client) CreateEnrollToken(ctx context.Context, body apiv1.EnrollTokenBody) (apiv1.NewEnrollToken, error) {
	return call[apiv1.NewEnrollToken](ctx, c, http.MethodPost, "/api/v1/enrollment-tokens", nil, body)
}

// RevokeEnrollToken revokes an enrollment token.
func (c *Client) RevokeEnrollToken(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodPost, "/api/v1/enrollment-tokens/"+url.PathEscape(id)+"/revoke", nil, nil, nil)
}

// AuditQuery filters GET /api/v1/audit; zero values do not filter.
type AuditQuery struct {
	Actor  string
	Action string
	// Since (inclusive) and Until (exclusive) bound the entries' time.
	Since time.Time
	Until time.Time
	PageQuery
}

func (q AuditQuery) values() url.Values {
	v := q.PageQuery.values()
	set(v, "actor", q.Actor)
	set(v, "action", q.Action)
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.UTC().Format(time.RFC3339Nano))
	}
	return v
}

// ListAudit reads one page of the organization's Audit Trail, newest first.
func (c *Client) ListAudit(ctx context.Context, q AuditQuery) (apiv1.Page[apiv1.AuditEntry], error) {
	return call[apiv1.Page[apiv1.AuditEntry]](ctx, c, http.MethodGet, "/api/v1/audit", q.values(), nil)
}

// Audit walks every entry of the Audit Trail that q matches, page by page.
func (c *Client) Audit(ctx context.Context, q AuditQuery) iter.Seq2[apiv1.AuditEntry, error] {
	return walk(ctx, q.Limit, func(ctx context.Context, p PageQuery) (apiv1.Page[apiv1.AuditEntry], error) {
		q.PageQuery = p
		return c.ListAudit(ctx, q)
	})
}

// GetRun reads one run.
func (c *Client) GetRun(ctx context.Context, id string) (apiv1.Run, error) {
	return call[apiv1.Run](ctx, c, http.MethodGet, "/api/v1/runs/"+url.PathEscape(id), nil, nil)
}

// StopRun stops a running run: commands not started yet are cancelled.
func (c *Client) StopRun(ctx context.Context, id string) (apiv1.Run, error) {
	return call[apiv1.Run](ctx, c, http.MethodPost, "/api/v1/runs/"+url.PathEscape(id)+"/stop", nil, nil)
}

// RetryRun starts a new run of a run's action on the endpoints whose
// command failed.
func (c *Client) RetryRun(ctx context.Context, id string) (apiv1.RunStarted, error) {
	return call[apiv1.RunStarted](ctx, c, http.MethodPost, "/api/v1/runs/"+url.PathEscape(id)+"/retry", nil, nil)
}

// GetAlertRule reads one alert rule.
func (c *Client) GetAlertRule(ctx context.Context, id string) (apiv1.AlertRule, error) {
	return call[apiv1.AlertRule](ctx, c, http.MethodGet, "/api/v1/alerts/"+url.PathEscape(id), nil, nil)
}

// UpdateAlertRule changes the fields body gives of an alert rule.
func (c *Client) UpdateAlertRule(ctx context.Context, id string, body apiv1.AlertRulePatch) (apiv1.AlertRule, error) {
	return call[apiv1.AlertRule](ctx, c, http.MethodPatch, "/api/v1/alerts/"+url.PathEscape(id), nil, body)
}

// DeleteAlertRule deletes an alert rule with its events.
func (c *Client) DeleteAlertRule(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/alerts/"+url.PathEscape(id), nil, nil, nil)
}

// SetAlertRuleEnabled enables or disables an alert rule.
func (c *Client) SetAlertRuleEnabled(ctx context.Context, id string, enabled bool) (apiv1.AlertRule, error) {
	op := "/disable"
	if enabled {
		op = "/enable"
	}
	return call[apiv1.AlertRule](ctx, c, http.MethodPost, "/api/v1/alerts/"+url.PathEscape(id)+op, nil, nil)
}

// TestAlertRule raises a TEST event of an alert rule, delivered like any other.
func (c *Client) TestAlertRule(ctx context.Context, id string) (apiv1.AlertEvent, error) {
	return call[apiv1.AlertEvent](ctx, c, http.MethodPost, "/api/v1/alerts/"+url.PathEscape(id)+"/test", nil, nil)
}

// ListAlertEvents reads one page of an alert rule's events, newest first,
// with the outcome of their deliveries.
func (c *Client) ListAlertEvents(ctx context.Context, id string, q PageQuery) (apiv1.Page[apiv1.AlertEvent], error) {
	return call[apiv1.Page[apiv1.AlertEvent]](ctx, c, http.MethodGet, "/api/v1/alerts/"+url.PathEscape(id)+"/events", q.values(), nil)
}

// GetGroup reads one endpoint group.
func (c *Client) GetGroup(ctx context.Context, id string) (apiv1.Group, error) {
	return call[apiv1.Group](ctx, c, http.MethodGet, "/api/v1/groups/"+url.PathEscape(id), nil, nil)
}

// AgentVersions reads the organization's agent versions, the published
// releases, its update policy, who is behind and the recent failures.
func (c *Client) AgentVersions(ctx context.Context) (apiv1.AgentVersions, error) {
	return call[apiv1.AgentVersions](ctx, c, http.MethodGet, "/api/v1/agent-versions", nil, nil)
}

// SetAgentPolicy sets the organization's agent update policy (latest,
// pinned with a version, or none) and answers the agent versions under it.
func (c *Client) SetAgentPolicy(ctx context.Context, body apiv1.AgentPolicyBody) (apiv1.AgentVersions, error) {
	return call[apiv1.AgentVersions](ctx, c, http.MethodPut, "/api/v1/agent-policy", nil, body)
}

// ComplianceHistory reads the organization's recorded compliance of the
// last days (1 to 400; 0 for the server's default, 30), oldest first.
func (c *Client) ComplianceHistory(ctx context.Context, days int) (apiv1.List[apiv1.ComplianceDay], error) {
	var out apiv1.List[apiv1.ComplianceDay]
	v := url.Values{}
	if days != 0 {
		v.Set("days", strconv.Itoa(days))
	}
	err := c.Do(ctx, http.MethodGet, "/api/v1/compliance/history", v, nil, &out)
	return out, err
}

// ApprovalPolicy reads the organization's automatic approval policy.
func (c *Client) ApprovalPolicy(ctx context.Context) (apiv1.ApprovalPolicy, error) {
	return call[apiv1.ApprovalPolicy](ctx, c, http.MethodGet, "/api/v1/approval-policy", nil, nil)
}

// SetApprovalPolicy replaces the organization's automatic approval policy
// (every rule and declineOlder) and answers it as stored.
func (c *Client) SetApprovalPolicy(ctx context.Context, p apiv1.ApprovalPolicy) (apiv1.ApprovalPolicy, error) {
	rules := p.Rules
	if rules == nil {
		rules = []apiv1.ApprovalPolicyRule{}
	}
	return call[apiv1.ApprovalPolicy](ctx, c, http.MethodPut, "/api/v1/approval-policy", nil, apiv1.ApprovalPolicyBody{DeclineOlder: &p.DeclineOlder, Rules: &rules})
}

// VulnExceptions lists the organization's accepted risks and compensating
// controls (kind "" for both), expired ones included (active false).
func (c *Client) VulnExceptions(ctx context.Context, kind string) (apiv1.List[apiv1.VulnException], error) {
	var out apiv1.List[apiv1.VulnException]
	v := url.Values{}
	if kind != "" {
		v.Set("kind", kind)
	}
	err := c.Do(ctx, http.MethodGet, "/api/v1/vulnerability-exceptions", v, nil, &out)
	return out, err
}

// AcceptVulnRisk records (or replaces) the organization's decision about a
// CVE: its risk accepted or a compensating control in place.
func (c *Client) AcceptVulnRisk(ctx context.Context, cve string, body apiv1.VulnExceptionBody) (apiv1.VulnException, error) {
	return call[apiv1.VulnException](ctx, c, http.MethodPost, "/api/v1/vulnerabilities/"+url.PathEscape(cve)+"/exception", nil, body)
}

// RevokeVulnRisk deletes the organization's decision about a CVE.
func (c *Client) RevokeVulnRisk(ctx context.Context, cve string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/vulnerabilities/"+url.PathEscape(cve)+"/exception", nil, nil, nil)
}

// RemediationPolicy reads the organization's remediation periods.
func (c *Client) RemediationPolicy(ctx context.Context) (apiv1.RemediationPolicy, error) {
	return call[apiv1.RemediationPolicy](ctx, c, http.MethodGet, "/api/v1/remediation-policy", nil, nil)
}

// SetRemediationPolicy sets the organization's four remediation periods.
func (c *Client) SetRemediationPolicy(ctx context.Context, p apiv1.RemediationPolicy) (apiv1.RemediationPolicy, error) {
	return call[apiv1.RemediationPolicy](ctx, c, http.MethodPut, "/api/v1/remediation-policy", nil, p)
}

// CompliancePolicy reads the organization's compliance policy.
func (c *Client) CompliancePolicy(ctx context.Context) (apiv1.CompliancePolicy, error) {
	return call[apiv1.CompliancePolicy](ctx, c, http.MethodGet, "/api/v1/compliance-policy", nil, nil)
}

// SetCompliancePolicy sets the organization's five compliance periods.
func (c *Client) SetCompliancePolicy(ctx context.Context, p apiv1.CompliancePolicy) (apiv1.CompliancePolicy, error) {
	return call[apiv1.CompliancePolicy](ctx, c, http.MethodPut, "/api/v1/compliance-policy", nil, p)
}

// ComplianceByGroup reads every group's compliance under the
// organization's compliance policy.
func (c *Client) ComplianceByGroup(ctx context.Context) (apiv1.ComplianceByGroup, error) {
	return call[apiv1.ComplianceByGroup](ctx, c, http.MethodGet, "/api/v1/compliance/groups", nil, nil)
}

// SSO reads the organization's single sign-on provider (roles holding
// every permission); a 404 when none is set up.
func (c *Client) SSO(ctx context.Context) (apiv1.SSO, error) {
	return call[apiv1.SSO](ctx, c, http.MethodGet, "/api/v1/sso", nil, nil)
}

// SetSSO sets the organization's single sign-on provider.
func (c *Client) SetSSO(ctx context.Context, body apiv1.SSOBody) (apiv1.SSO, error) {
	return call[apiv1.SSO](ctx, c, http.MethodPut, "/api/v1/sso", nil, body)
}

// DeleteSSO removes the organization's single sign-on provider.
func (c *Client) DeleteSSO(ctx context.Context) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/sso", nil, nil, nil)
}
