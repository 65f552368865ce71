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

// PageQuery is the paging of a list call; Limit 0 means the server's default.
type PageQuery struct {
	Limit  int
	Offset int
}

func (p PageQuery) values() url.Values {
	v := url.Values{}
	if p.Limit > 0 {
		v.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Offset > 0 {
		v.Set("offset", strconv.Itoa(p.Offset))
	}
	return v
}

func set(v url.Values, key, value string) {
	if value != "" {
		v.Set(key, value)
	}
}

// walk pages through a list with the spec's client loop: until
// offset + len(items) >= total.
func walk[T any](ctx context.Context, limit int, fetch func(ctx context.Context, p PageQuery) (apiv1.Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		p := PageQuery{Limit: limit}
		for {
			page, err := fetch(ctx, p)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range page.Items {
				if !yield(item, nil) {
					return
				}
			}
			p.Offset = page.Offset + len(page.Items)
			if len(page.Items) == 0 || p.Offset >= page.Total {
				return
			}
		}
	}
}

// EndpointQuery filters GET /api/v1/endpoints. Q is the specification's;
// the other filters and the order are patchd additions.
type EndpointQuery struct {
	PageQuery
	Q string
	// Search matches the hostname, display name, an IP address or the
	// operating system.
	Search        string
	Status        string // connected, disconnected
	Platform      string // windows, linux, macos
	OS            string
	GroupID       string
	Missing       string // critical, other (none critical), any, none
	PendingReboot bool
	NotSeenDays   int
	AgentVersion  string
	UpdateKey     string // missing this update
	CVE           string // affected by this CVE
	// Software keeps the endpoints with this software title (exact name);
	// SoftwareVersion, with it, that version.
	Software, SoftwareVersion string
	Sort                      string // name, status, platform, os, type, lastSeen, agentVersion
	Desc                      bool
}

// ListEndpoints reads one page of endpoints.
func (c *Client) ListEndpoints(ctx context.Context, q EndpointQuery) (apiv1.Page[apiv1.Endpoint], error) {
	v := q.values()
	set(v, "q", q.Q)
	set(v, "search", q.Search)
	set(v, "status", q.Status)
	set(v, "platform", q.Platform)
	set(v, "os", q.OS)
	set(v, "groupId", q.GroupID)
	set(v, "missing", q.Missing)
	set(v, "agentVersion", q.AgentVersion)
	set(v, "updateKey", q.UpdateKey)
	set(v, "cve", q.CVE)
	set(v, "software", q.Software)
	set(v, "softwareVersion", q.SoftwareVersion)
	set(v, "sort", q.Sort)
	if q.PendingReboot {
		v.Set("pendingReboot", "1")
	}
	if q.NotSeenDays > 0 {
		v.Set("notSeenDays", strconv.Itoa(q.NotSeenDays))
	}
	if q.Desc {
		v.Set("order", "desc")
	}
	return call[apiv1.Page[apiv1.Endpoint]](ctx, c, http.MethodGet, "/api/v1/endpoints", v, nil)
}

// Endpoints pages through every endpoint matching q.
func (c *Client) Endpoints(ctx context.Context, q EndpointQuery) iter.Seq2[apiv1.Endpoint, error] {
	return walk(ctx, q.Limit, func(ctx context.Context, p PageQuery) (apiv1.Page[apiv1.Endpoint], error) {
		q.PageQuery = p
		return c.ListEndpoints(ctx, q)
	})
}

// GetEndpoint reads one endpoint with its inventory.
func (c *Client) GetEndpoint(ctx context.Context, id string) (apiv1.EndpointDetail, error) {
	return call[apiv1.EndpointDetail](ctx, c, http.MethodGet, "/api/v1/endpoints/"+url.PathEscape(id), nil, nil)
}

// PatchEndpoint renames or annotates an endpoint.
func (c *Client) PatchEndpoint(ctx context.Context, id string, patch apiv1.EndpointPatch) error {
	return c.Do(ctx, http.MethodPatch, "/api/v1/endpoints/"+url.PathEscape(id), nil, patch, nil)
}

// DeleteEndpoint removes an endpoint; its agent uninstalls at its next check-in.
func (c *Client) DeleteEndpoint(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/endpoints/"+url.PathEscape(id), nil, nil, nil)
}

// ScanEndpoint asks the endpoint's agent to refresh its package metadata
// and send its inventory now (POST /api/v1/endpoints/{id}/scan, a patchd
// addition).
func (c *Client) ScanEndpoint(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodPost, "/api/v1/endpoints/"+url.PathEscape(id)+"/scan", nil, nil, nil)
}

// SoftwareQuery filters GET /api/v1/software.
type SoftwareQuery struct {
	PageQuery
	Q          string
	EndpointID string
}

// ListSoftware reads one page of installed software.
func (c *Client) ListSoftware(ctx context.Context, q SoftwareQuery) (apiv1.Page[apiv1.SoftwareRow], error) {
	v := q.values()
	set(v, "q", q.Q)
	set(v, "endpointId", q.EndpointID)
	return call[apiv1.Page[apiv1.SoftwareRow]](ctx, c, http.MethodGet, "/api/v1/software", v, nil)
}

// Software pages through every software row matching q.
func (c *Client) Software(ctx context.Context, q SoftwareQuery) iter.Seq2[apiv1.SoftwareRow, error] {
	return walk(ctx, q.Limit, func(ctx context.Context, p PageQuery) (apiv1.Page[apiv1.SoftwareRow], error) {
		q.PageQuery = p
		return c.ListSoftware(ctx, q)
	})
}

// SoftwareTitleQuery filters GET /api/v1/software/titles (a patchd
// addition).
type SoftwareTitleQuery struct {
	PageQuery
	Q         string
	Publisher string
	Sort      string // "hosts" (the default) or "name"
}

// ListSoftwareTitles reads one page of the software by title, with the
// endpoint counts of each title and of its versions.
func (c *Client) ListSoftwareTitles(ctx context.Context, q SoftwareTitleQuery) (apiv1.Page[apiv1.SoftwareTitle], error) {
	v := q.values()
	set(v, "q", q.Q)
	set(v, "publisher", q.Publisher)
	set(v, "sort", q.Sort)
	return call[apiv1.Page[apiv1.SoftwareTitle]](ctx, c, http.MethodGet, "/api/v1/software/titles", v, nil)
}

// SoftwareTitles pages through every software title matching q.
func (c *Client) SoftwareTitles(ctx context.Context, q SoftwareTitleQuery) iter.Seq2[apiv1.SoftwareTitle, error] {
	return walk(ctx, q.Limit, func(ctx context.Context, p PageQuery) (apiv1.Page[apiv1.SoftwareTitle], error) {
		q.PageQuery = p
		return c.ListSoftwareTitles(ctx, q)
	})
}

// UpdateQuery filters GET /api/v1/updates.
type UpdateQuery struct {
	PageQuery
	EndpointID string
	Severity   string
	Source     string // OS or THIRD_PARTY
	Sort       string // key (the default) or risk (highest first); patchd addition
}

// ListUpdates reads one page of missing updates.
func (c *Client) ListUpdates(ctx context.Context, q UpdateQuery) (apiv1.Page[apiv1.Update], error) {
	v := q.values()
	set(v, "endpointId", q.EndpointID)
	set(v, "severity", q.Severity)
	set(v, "source", q.Source)
	set(v, "sort", q.Sort)
	return call[apiv1.Page[apiv1.Update]](ctx, c, http.MethodGet, "/api/v1/updates", v, nil)
}

// Updates pages through every missing update matching q.
func (c *Client) Updates(ctx context.Context, q UpdateQuery) iter.Seq2[apiv1.Update, error] {
	return walk(ctx, q.Limit, func(ctx context.Context, p PageQuery) (apiv1.Page[apiv1.Update], error) {
		q.PageQuery = p
		return c.ListUpdates(ctx, q)
	})
}

// SetApproval approves, declines or resets (status NEW) update keys.
func (c *Client) SetApproval(ctx context.Context, body apiv1.ApprovalBody) (apiv1.ApprovalResult, error) {
	return call[apiv1.ApprovalResult](ctx, c, http.MethodPost, "/api/v1/updates/approvals", nil, body)
}

// ListGroups reads every group.
func (c *Client) ListGroups(ctx context.Context) (apiv1.List[apiv1.Group], error) {
	return call[apiv1.List[apiv1.Group]](ctx, c, http.MethodGet, "/api/v1/groups", nil, nil)
}

// CreateGroup creates a group.
func (c *Client) CreateGroup(ctx context.Context, body apiv1.GroupBody) (apiv1.GroupResult, error) {
	return call[apiv1.GroupResult](ctx, c, http.MethodPost, "/api/v1/groups", nil, body)
}

// PatchGroup changes a group.
func (c *Client) PatchGroup(ctx context.Context, id string, body apiv1.GroupBody) (apiv1.GroupResult, error) {
	return call[apiv1.GroupResult](ctx, c, http.MethodPatch, "/api/v1/groups/"+url.PathEscape(id), nil, body)
}

// DeleteGroup deletes a group.
func (c *Client) DeleteGroup(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/groups/"+url.PathEscape(id), nil, nil, nil)
}

// VulnerabilityQuery filters GET /api/v1/vulnerabilities.
type VulnerabilityQuery struct {
	PageQuery
	MinCVSS string
	KEV     bool
	// Remediation keeps one remediation status: Overdue, Due soon, Due
	// later (a patchd addition).
	Remediation string
	// MinEPSS keeps the CVEs of at least this EPSS probability (0-1);
	// Sort "risk" lists the highest risk score first (patchd additions).
	MinEPSS string
	Sort    string
}

// ListVulnerabilities reads one page of vulnerabilities.
func (c *Client) ListVulnerabilities(ctx context.Context, q VulnerabilityQuery) (apiv1.Page[apiv1.Vulnerability], error) {
	v := q.values()
	set(v, "minCvss", q.MinCVSS)
	set(v, "remediation", q.Remediation)
	set(v, "minEpss", q.MinEPSS)
	set(v, "sort", q.Sort)
	if q.KEV {
		v.Set("kev", "1")
	}
	return call[apiv1.Page[apiv1.Vulnerability]](ctx, c, http.MethodGet, "/api/v1/vulnerabilities", v, nil)
}

// Vulnerabilities pages through every vulnerability matching q.
func (c *Client) Vulnerabilities(ctx context.Context, q VulnerabilityQuery) iter.Seq2[apiv1.Vulnerability, error] {
	return walk(ctx, q.Limit, func(ctx context.Context, p PageQuery) (apiv1.Page[apiv1.Vulnerability], error) {
		q.PageQuery = p
		return c.ListVulnerabilities(ctx, q)
	})
}

// ListAutomations reads every automation.
func (c *Client) ListAutomations(ctx context.Context) (apiv1.List[apiv1.Automation], error) {
	return call[apiv1.List[apiv1.Automation]](ctx, c, http.MethodGet, "/api/v1/automations", nil, nil)
}

// GetAutomation reads one automation with its payload.
func (c *Client) GetAutomation(ctx context.Context, id string) (apiv1.Automation, error) {
	return call[apiv1.Automation](ctx, c, http.MethodGet, "/api/v1/automations/"+url.PathEscape(id), nil, nil)
}

// CreateAutomation creates an automation (scheduleKind NOW runs it at once).
func (c *Client) CreateAutomation(ctx context.Context, body apiv1.AutomationBody) (apiv1.AutomationCreated, error) {
	return call[apiv1.AutomationCreated](ctx, c, http.MethodPost, "/api/v1/automations", nil, body)
}

// PatchAutomation makes a light change (AutomationPatch) or a full replace
// (AutomationBody).
func (c *Client) PatchAutomation(ctx context.Context, id string, body any) (apiv1.AutomationResult, error) {
	return call[apiv1.AutomationResult](ctx, c, http.MethodPatch, "/api/v1/automations/"+url.PathEscape(id), nil, body)
}

// DeleteAutomation deletes an automation.
func (c *Client) DeleteAutomation(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/automations/"+url.PathEscape(id), nil, nil, nil)
}

// RunAutomation runs an automation now.
func (c *Client) RunAutomation(ctx context.Context, id string) (apiv1.RunStarted, error) {
	return call[apiv1.RunStarted](ctx, c, http.MethodPost, "/api/v1/automations/"+url.PathEscape(id)+"/run", nil, nil)
}

// RunAction queues a one-off action.
func (c *Client) RunAction(ctx context.Context, body apiv1.ActionBody) (apiv1.RunStarted, error) {
	return call[apiv1.RunStarted](ctx, c, http.MethodPost, "/api/v1/actions", nil, body)
}

// RunQuery filters GET /api/v1/runs. Failed (runs), Status and Search (a
// run's results) are patchd additions.
type RunQuery struct {
	AutomationID string
	EndpointID   string
	Limit        int
	// Failed keeps the runs with a failed command; Since those started at
	// or after it.
	Failed bool
	Since  time.Time
	// Status keeps a run's results of that status (FAILED…); Search those
	// whose endpoint name or log contains the text.
	Status string
	Search string
}

// ListRuns reads the most recent runs.
func (c *Client) ListRuns(ctx context.Context, q RunQuery) (apiv1.List[apiv1.Run], error) {
	v := url.Values{}
	set(v, "automationId", q.AutomationID)
	set(v, "endpointId", q.EndpointID)
	if q.Failed {
		v.Set("failed", "1")
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return call[apiv1.List[apiv1.Run]](ctx, c, http.MethodGet, "/api/v1/runs", v, nil)
}

// RunCommands reads the per-endpoint results of a run.
func (c *Client) RunCommands(ctx context.Context, runID string, q RunQuery) (apiv1.List[apiv1.RunCommand], error) {
	v := url.Values{"runId": {runID}}
	set(v, "endpointId", q.EndpointID)
	set(v, "status", q.Status)
	set(v, "search", q.Search)
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return call[apiv1.List[apiv1.RunCommand]](ctx, c, http.MethodGet, "/api/v1/runs", v, nil)
}

// ListAlertRules reads every alert rule.
func (c *Client) ListAlertRules(ctx context.Context) (apiv1.List[apiv1.AlertRule], error) {
	return call[apiv1.List[apiv1.AlertRule]](ctx, c, http.MethodGet, "/api/v1/alerts", nil, nil)
}

// CreateAlertRule creates an alert rule.
func (c *Client) CreateAlertRule(ctx context.Context, body apiv1.AlertRuleBody) (apiv1.AlertRuleResult, error) {
	return call[apiv1.AlertRuleResult](ctx, c, http.MethodPost, "/api/v1/alerts", nil, body)
}

// FailedDeliveries lists an alert rule's failed deliveries (patchd addition).
func (c *Client) FailedDeliveries(ctx context.Context, ruleID string) (apiv1.List[apiv1.FailedDelivery], error) {
	return call[apiv1.List[apiv1.FailedDelivery]](ctx, c, http.MethodGet, "/api/v1/alerts/"+url.PathEscape(ruleID)+"/failed-deliveries", nil, nil)
}

// ResendDelivery queues a failed delivery's event again (patchd addition).
func (c *Client) ResendDelivery(ctx context.Context, ruleID, deliveryID string) (apiv1.DeliveryQueued, error) {
	return call[apiv1.DeliveryQueued](ctx, c, http.MethodPost, "/api/v1/alerts/"+url.PathEscape(ruleID)+"/failed-deliveries/"+url.PathEscape(deliveryID)+"/resend", nil, nil)
}

// ReportCatalog lists the built-in reports.
func (c *Client) ReportCatalog(ctx context.Context) (apiv1.List[apiv1.ReportMeta], error) {
	return call[apiv1.List[apiv1.ReportMeta]](ctx, c, http.MethodGet, "/api/v1/reports/_list", nil, nil)
}

// Report reads a built-in report as JSON.
func (c *Client) Report(ctx context.Context, key string) (apiv1.Report, error) {
	return call[apiv1.Report](ctx, c, http.MethodGet, "/api/v1/reports/"+url.PathEscape(key), nil, nil)
}

// ReportCSV opens a report as a CSV stream; the caller closes the body.
func (c *Client) ReportCSV(ctx context.Context, key string) (*http.Response, error) {
	return c.Raw(ctx, "/api/v1/reports/"+url.PathEscape(key), url.Values{"format": {"csv"}})
}
