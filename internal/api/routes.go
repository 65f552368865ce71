package api

import (
	"net/http"

	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"

	"github.com/patchd/patchd/internal/perm"
)

// mayLag serves a read that tolerates a standby's lag (a list, a report):
// its store reads may go to a --db-read standby (store.MayLag). A read
// that must show what the caller just wrote (a single resource after its
// change) stays on the primary.
func mayLag(h httpx.HandlerFunc) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		return h(w, r.WithContext(store.MayLag(r.Context())))
	}
}

// routes is the route table: every operation of the REST API v1, numbered
// as in section 4 of the specification, then patchd's additions, each with
// the permission it needs.
func (a *API) routes() {
	a.public("POST /api/oauth/token", a.issueToken)                                        // 1
	a.route("GET /api/v1/endpoints", perm.EndpointsView, mayLag(a.listEndpoints))          // 2
	a.route("GET /api/v1/endpoints/{id}", perm.EndpointsView, a.getEndpoint)               // 3
	a.route("PATCH /api/v1/endpoints/{id}", perm.EndpointsManage, a.patchEndpoint)         // 4
	a.route("DELETE /api/v1/endpoints/{id}", perm.EndpointsManage, a.deleteEndpoint)       // 5
	a.route("GET /api/v1/updates", perm.UpdatesView, mayLag(a.listUpdates))                // 6
	a.route("GET /api/v1/software", perm.EndpointsView, mayLag(a.listSoftware))            // 7
	a.route("GET /api/v1/vulnerabilities", perm.VulnerabilitiesView, mayLag(a.listVulns))  // 8
	a.route("GET /api/v1/groups", perm.EndpointsView, mayLag(a.listGroups))                // 9
	a.route("POST /api/v1/groups", perm.EndpointsManage, a.createGroup)                    // 10
	a.route("PATCH /api/v1/groups/{id}", perm.EndpointsManage, a.patchGroup)               // 11
	a.route("DELETE /api/v1/groups/{id}", perm.EndpointsManage, a.deleteGroup)             // 12
	a.route("GET /api/v1/automations", perm.AutomationsView, mayLag(a.listAutomations))    // 13
	a.route("POST /api/v1/automations", perm.AutomationsManage, a.createAutomation)        // 14
	a.route("GET /api/v1/automations/{id}", perm.AutomationsView, a.getAutomation)         // 15
	a.route("PATCH /api/v1/automations/{id}", perm.AutomationsManage, a.patchAutomation)   // 16
	a.route("DELETE /api/v1/automations/{id}", perm.AutomationsManage, a.deleteAutomation) // 17
	a.route("POST /api/v1/actions", perm.AutomationsRun, a.createAction)                   // 18
	a.route("POST /api/v1/updates/approvals", perm.UpdatesManage, a.setApprovals)          // 19
	a.route("GET /api/v1/alerts", perm.ReportsView, mayLag(a.listAlertRules))              // 20
	a.route("POST /api/v1/alerts", perm.ReportsManage, a.createAlertRule)                  // 21
	a.route("POST /api/v1/automations/{id}/run", perm.AutomationsRun, a.runAutomation)     // 22
	a.route("GET /api/v1/runs", perm.AutomationsView, mayLag(a.listRuns))                  // 23
	a.route("GET /api/v1/reports/{key}", perm.ReportsView, mayLag(a.getReport))            // 24
	a.public("GET /api/v1/openapi.json", a.openAPIDocument)                                // 25

	// patchd additions (docs/design/notes.md, "Extensions of the REST API").
	a.route("GET /api/v1/scripts", perm.AutomationsView, mayLag(a.listScripts))
	a.route("POST /api/v1/scripts", perm.AutomationsManage, a.createScript)
	a.route("GET /api/v1/scripts/{id}", perm.AutomationsView, a.getScript)
	a.route("PATCH /api/v1/scripts/{id}", perm.AutomationsManage, a.updateScript)
	a.route("DELETE /api/v1/scripts/{id}", perm.AutomationsManage, a.deleteScript)
	a.route("GET /api/v1/enrollment-tokens", perm.EndpointsManage, a.listEnrollTokens)
	a.route("POST /api/v1/enrollment-tokens", perm.EndpointsManage, a.createEnrollToken)
	a.route("POST /api/v1/enrollment-tokens/{id}/revoke", perm.EndpointsManage, a.revokeEnrollToken)
	a.route("GET /api/v1/audit", perm.ReportsView, mayLag(a.listAudit))
	a.route("GET /api/v1/runs/{id}", perm.AutomationsView, a.getRun)
	a.route("POST /api/v1/runs/{id}/stop", perm.AutomationsRun, a.stopRun)
	a.route("POST /api/v1/runs/{id}/retry", perm.AutomationsRun, a.retryRun)
	a.route("GET /api/v1/software/titles", perm.EndpointsView, mayLag(a.listSoftwareTitles))
	a.route("POST /api/v1/endpoints/{id}/scan", perm.EndpointsManage, a.scanEndpoint)
	a.route("GET /api/v1/groups/{id}", perm.EndpointsView, a.getGroup)
	a.route("GET /api/v1/alerts/{id}", perm.ReportsView, a.getAlertRule)
	a.route("PATCH /api/v1/alerts/{id}", perm.ReportsManage, a.patchAlertRule)
	a.route("DELETE /api/v1/alerts/{id}", perm.ReportsManage, a.deleteAlertRule)
	a.route("POST /api/v1/alerts/{id}/enable", perm.ReportsManage, a.enableAlertRule)
	a.route("POST /api/v1/alerts/{id}/disable", perm.ReportsManage, a.disableAlertRule)
	a.route("POST /api/v1/alerts/{id}/test", perm.ReportsManage, a.testAlertRule)
	a.route("GET /api/v1/alerts/{id}/events", perm.ReportsView, mayLag(a.listAlertEvents))
	a.route("GET /api/v1/alerts/{id}/failed-deliveries", perm.ReportsView, a.listFailedDeliveries)
	a.route("POST /api/v1/alerts/{id}/failed-deliveries/{delivery}/resend", perm.ReportsManage, a.resendDelivery)
	a.route("GET /api/v1/agent-versions", perm.EndpointsView, mayLag(a.getAgentVersions))
	a.route("PUT /api/v1/agent-policy", perm.EndpointsManage, a.setAgentPolicy)
	a.route("GET /api/v1/compliance/history", perm.EndpointsView, mayLag(a.complianceHistory))
	a.route("GET /api/v1/compliance/groups", perm.EndpointsView, mayLag(a.complianceByGroup))
	a.route("GET /api/v1/compliance-policy", perm.EndpointsView, a.getCompliancePolicy)
	// The single sign-on provider, for roles holding every permission
	// (checked by the handlers).
	a.route("GET /api/v1/sso", perm.APIAccess, a.getSSO)
	a.route("PUT /api/v1/sso", perm.APIAccess, a.setSSO)
	a.route("DELETE /api/v1/sso", perm.APIAccess, a.deleteSSO)
	a.route("GET /api/v1/approval-policy", perm.UpdatesView, a.getApprovalPolicy)
	a.route("PUT /api/v1/approval-policy", perm.UpdatesManage, a.setApprovalPolicy)
	a.route("GET /api/v1/vulnerability-exceptions", perm.VulnerabilitiesView, mayLag(a.listVulnExceptions))
	a.route("GET /api/v1/remediation-policy", perm.VulnerabilitiesView, a.getRemediationPolicy)
	// People, for roles holding every permission (checked by the handlers).
	a.route("GET /api/v1/users", perm.APIAccess, a.listUsers)
	a.route("POST /api/v1/users", perm.APIAccess, a.createUser)
	a.route("DELETE /api/v1/users/{id}", perm.APIAccess, a.deleteUser)
	a.route("PATCH /api/v1/users/{id}", perm.APIAccess, a.patchUser)
	a.route("POST /api/v1/users/{id}/password", perm.APIAccess, a.resetUserPassword)
	a.route("DELETE /api/v1/users/{id}/second-factor", perm.APIAccess, a.resetUserSecondFactor)
	a.route("GET /api/v1/roles", perm.APIAccess, a.listRoles)
	a.route("POST /api/v1/roles", perm.APIAccess, a.createRole)
	a.route("PATCH /api/v1/roles/{id}", perm.APIAccess, a.patchRole)
	a.route("DELETE /api/v1/roles/{id}", perm.APIAccess, a.deleteRole)
	a.route("GET /api/v1/credentials", perm.APIAccess, a.listCredentials)
	a.route("POST /api/v1/credentials", perm.APIAccess, a.createCredential)
	a.route("PATCH /api/v1/credentials/{id}", perm.APIAccess, a.patchCredential)
	a.route("DELETE /api/v1/credentials/{id}", perm.APIAccess, a.deleteCredential)
	a.route("GET /api/v1/sign-in-policy", perm.APIAccess, a.getSignInPolicy)
	a.route("PUT /api/v1/sign-in-policy", perm.APIAccess, a.putSignInPolicy)
	// New organizations, for a person holding the create-organizations
	// permission through a role holding every permission.
	a.route("POST /api/v1/organizations", perm.APIAccess, a.createOrganization)
	// Vulnerability decisions and remediation periods, for the same roles.
	a.route("POST /api/v1/vulnerabilities/{cve}/exception", perm.APIAccess, a.acceptVulnRisk)
	a.route("DELETE /api/v1/vulnerabilities/{cve}/exception", perm.APIAccess, a.revokeVulnRisk)
	a.route("PUT /api/v1/remediation-policy", perm.APIAccess, a.setRemediationPolicy)
	a.route("PUT /api/v1/compliance-policy", perm.APIAccess, a.setCompliancePolicy)

	a.mux.Handle("/api/", httpx.Handle(a.notFound))
}
