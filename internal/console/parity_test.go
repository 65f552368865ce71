package console_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/apitest"
)

// consoleForms maps every form of the console (each route that changes
// something) to the REST API operation behind it, which the handler calls
// in the process (or, for users, the internal/admin function that the API
// operation calls too), so an API client can do what a console user does.
var consoleForms = map[string]string{
	"POST /console/endpoints/{id}":                           "PATCH /api/v1/endpoints/{id}",
	"POST /console/endpoints/{id}/delete":                    "DELETE /api/v1/endpoints/{id}",
	"POST /console/endpoints/{id}/scan":                      "POST /api/v1/endpoints/{id}/scan",
	"POST /console/actions":                                  "POST /api/v1/actions",
	"POST /console/agents/policy":                            "PUT /api/v1/agent-policy",
	"POST /console/updates/approvals":                        "POST /api/v1/updates/approvals",
	"POST /console/updates/deploy":                           "POST /api/v1/actions",
	"POST /console/updates/policy":                           "PUT /api/v1/approval-policy",
	"POST /console/groups":                                   "POST /api/v1/groups",
	"POST /console/groups/{id}":                              "PATCH /api/v1/groups/{id}",
	"POST /console/groups/{id}/delete":                       "DELETE /api/v1/groups/{id}",
	"POST /console/automations":                              "POST /api/v1/automations",
	"POST /console/automations/{id}":                         "PATCH /api/v1/automations/{id}",
	"POST /console/automations/{id}/enabled":                 "PATCH /api/v1/automations/{id}",
	"POST /console/automations/{id}/run":                     "POST /api/v1/automations/{id}/run",
	"POST /console/automations/{id}/delete":                  "DELETE /api/v1/automations/{id}",
	"POST /console/runs/{id}/stop":                           "POST /api/v1/runs/{id}/stop",
	"POST /console/runs/{id}/retry":                          "POST /api/v1/runs/{id}/retry",
	"POST /console/scripts":                                  "POST /api/v1/scripts",
	"POST /console/scripts/{id}/delete":                      "DELETE /api/v1/scripts/{id}",
	"POST /console/users":                                    "POST /api/v1/users",
	"POST /console/roles":                                    "POST /api/v1/roles",
	"POST /console/credentials":                              "POST /api/v1/credentials",
	"POST /console/credentials/{id}/{op}":                    "PATCH /api/v1/credentials/{id}",
	"POST /console/settings/second-factor":                   "PUT /api/v1/sign-in-policy",
	"POST /console/roles/{id}/{op}":                          "PATCH /api/v1/roles/{id}",
	"POST /console/users/{id}/{op}":                          "PATCH /api/v1/users/{id}",
	"POST /console/enrollment":                               "POST /api/v1/enrollment-tokens",
	"POST /console/enrollment/{id}/revoke":                   "POST /api/v1/enrollment-tokens/{id}/revoke",
	"POST /console/vulnerabilities/{cve}/exception":          "POST /api/v1/vulnerabilities/{cve}/exception",
	"POST /console/vulnerabilities/{cve}/revoke":             "DELETE /api/v1/vulnerabilities/{cve}/exception",
	"POST /console/vulnerabilities/policy":                   "PUT /api/v1/remediation-policy",
	"POST /console/compliance/policy":                        "PUT /api/v1/compliance-policy",
	"POST /console/alerts":                                   "POST /api/v1/alerts",
	"POST /console/alerts/{id}":                              "PATCH /api/v1/alerts/{id}",
	"POST /console/alerts/{id}/enabled":                      "POST /api/v1/alerts/{id}/enable",
	"POST /console/alerts/{id}/delete":                       "DELETE /api/v1/alerts/{id}",
	"POST /console/alerts/{id}/test":                         "POST /api/v1/alerts/{id}/test",
	"POST /console/alerts/{id}/deliveries/{delivery}/resend": "POST /api/v1/alerts/{id}/failed-deliveries/{delivery}/resend",
	"POST /console/settings/sso":                             "PUT /api/v1/sso",
	"POST /console/settings/sso/delete":                      "DELETE /api/v1/sso",
	"POST /console/organizations":                            "POST /api/v1/organizations",
}

// consoleOwn are the console's forms that are not an operation on the
// organization's data: signing in and the signed-in user's own account,
// which a session has and an API credential has not.
var consoleOwn = []string{
	"POST /console/login", "POST /console/setup", "POST /console/invitation", "POST /console/logout", "POST /console/sso",
	// Accepting an invitation as the signed-in person.
	"POST /console/invitation/accept",
	"POST /console/signin/code", "POST /console/signin/password", "POST /console/signin/enroll",
	"POST /console/signin/enroll/passkey/options", "POST /console/signin/enroll/passkey",
	"POST /console/signin/passkey/options", "POST /console/signin/passkey",
	"POST /console/login/passkey/options", "POST /console/login/passkey",
	"POST /console/account/password", "POST /console/account/totp", "POST /console/account/totp/confirm", "POST /console/account/totp/remove",
	"POST /console/account/recovery-codes", "POST /console/account/sessions/{id}/revoke", "POST /console/account/sessions/revoke",
	"POST /console/account/passkeys/options", "POST /console/account/passkeys",
	"POST /console/account/passkeys/{id}/rename", "POST /console/account/passkeys/{id}/remove",
	// The person's own organizations: switching the session, joining an
	// account (an API credential belongs to one organization).
	"POST /console/org", "POST /console/account/join", "POST /console/account/join/passkey/options", "POST /console/account/join/passkey",
	// The instance operator's feed upload is server-wide, not an
	// organization's (patchd admin feeds import; the feeds sync by
	// themselves).
	"POST /console/feeds",
	// The instance operator's memberships across organizations are
	// server-wide too (patchd admin user member-add and member-remove; an
	// API credential belongs to one organization).
	"POST /console/instance/people/{id}/memberships", "POST /console/instance/people/{id}/memberships/{org}/remove",
}

// consoleGaps are forms without an API operation yet, each with what is
// missing (none today: the last ones, people and sign-in settings, have
// theirs). The test fails when one gets its operation, to move it to
// consoleForms.
var consoleGaps = map[string]string{}

// TestEveryConsoleFormHasAnAPIOperation compares the console's route
// table with the REST API's: every route of the console that changes
// something is an API operation's form, the console's own sign-in and
// account, or a gap listed with the operation it needs.
func TestEveryConsoleFormHasAnAPIOperation(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	api := e.Server.API().Routes()
	seen := map[string]bool{}
	for _, route := range e.Server.Console().Routes() {
		method, _, _ := strings.Cut(route, " ")
		if method == "GET" || method == "HEAD" || !strings.Contains(route, " ") {
			continue
		}
		seen[route] = true
		op, isForm := consoleForms[route]
		switch {
		case isForm && !slices.Contains(api, op):
			t.Errorf("%s calls %s, which the API does not route", route, op)
		case isForm:
		case slices.Contains(consoleOwn, route):
		case consoleGaps[route] != "":
			want := strings.SplitN(consoleGaps[route], " ", 3)
			if slices.Contains(api, want[0]+" "+want[1]) {
				t.Errorf("%s: the API now has %s %s: move it to consoleForms", route, want[0], want[1])
			}
		default:
			t.Errorf("the console's %s has no API operation behind it (map it in consoleForms, or say why in consoleOwn or consoleGaps)", route)
		}
	}
	for _, list := range [][]string{keys(consoleForms), consoleOwn, keys(consoleGaps)} {
		for _, route := range list {
			if !seen[route] {
				t.Errorf("%s is listed but the console has no such route", route)
			}
		}
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
