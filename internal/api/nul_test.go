package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestNULIsRefusedEverywhere sends the NUL character to every operation of
// the REST API (taken from the route table, so a new operation is covered
// or this test fails) and of the agent protocol: in a JSON body (\u0000),
// in a path id (%00), in a query filter, in a form. Each answers 400 in the
// Error shape and changes nothing, on SQLite and on PostgreSQL alike.
func TestNULIsRefusedEverywhere(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	ag := e.EnrollSample("uid-nul", "web-nul", "linux")
	grp, err := e.Admin.CreateGroup(ctx, apiv1.GroupBody{Name: ptr("Nul group"), MachineIDs: &[]string{ag.ID}})
	if err != nil {
		t.Fatal(err)
	}
	au, err := e.Admin.CreateAutomation(ctx, apiv1.AutomationBody{Name: "Nul reboot", ActionType: "REBOOT",
		Payload: json.RawMessage(`{"message":"bye","timeoutSeconds":60}`), TargetMode: ptr("all"), ScheduleKind: ptr("RECURRING"),
		Kind: ptr("SCHEDULED"), Freq: ptr("DAILY"), AtTime: ptr("23:30"), WindowMinutes: ptr(60)})
	if err != nil {
		t.Fatal(err)
	}
	rule, err := e.Admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "nul rule", Trigger: "NEW_ENDPOINT", EmailTo: ptr("ops@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := e.Admin.CreateScript(ctx, scriptBody("nul-script"))
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := e.Admin.ListEnrollTokens(ctx)
	if err != nil || len(tokens.Items) != 1 {
		t.Fatalf("enrollment tokens: %+v %v", tokens, err)
	}
	run := e.Queue(e.Org, agentproto.TypeReboot, agentproto.RebootPayload{Message: "m", TimeoutSeconds: 60}, ag)
	resp, _ := ag.Checkin(0, agentproto.CheckinRequest{})
	if len(resp.Commands) != 1 {
		t.Fatalf("commands: %+v", resp.Commands)
	}
	cmdID := resp.Commands[0].ID
	token := tokenOf(t, e.Admin)
	if err := e.Server.FlushCheckins(ctx); err != nil {
		t.Fatal(err)
	}

	// What "nothing changed" compares: every list an administrator reads,
	// the command, and the Audit Trail.
	snapshot := func() string {
		var b strings.Builder
		for _, p := range []string{"/api/v1/endpoints", "/api/v1/endpoints/" + ag.ID, "/api/v1/groups", "/api/v1/automations",
			"/api/v1/automations/" + au.Automation.ID, "/api/v1/alerts", "/api/v1/updates", "/api/v1/software",
			"/api/v1/runs", "/api/v1/runs?runId=" + run.RunID, "/api/v1/scripts", "/api/v1/enrollment-tokens",
			"/api/v1/alerts/" + rule.Rule.ID + "/events"} {
			ans := rawCall(t, e, http.MethodGet, p, token, nil)
			if ans.status != http.StatusOK {
				t.Fatalf("snapshot %s: %d %s", p, ans.status, ans.body)
			}
			b.WriteString(p + " " + ans.body + "\n")
		}
		audit, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(strings.Repeat("a", len(audit)))
		return b.String()
	}
	person, err := admin.CreateUser(ctx, e.Store, "test", e.Org.ID, "nul@example.com", store.RoleReadOnly, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot()

	const nulJSON = `"x\u0000y"`
	ids := map[string]string{"/api/v1/users/{id}": person.ID, "/api/v1/users/{id}/password": person.ID, "/api/v1/users/{id}/second-factor": person.ID,
		"/api/v1/roles/{id}": store.RoleReadOnly, "/api/v1/credentials/{id}": "nul-probe-credential",
		"/api/v1/endpoints/{id}": ag.ID, "/api/v1/groups/{id}": grp.Group.ID,
		"/api/v1/automations/{id}": au.Automation.ID, "/api/v1/automations/{id}/run": au.Automation.ID,
		"/api/v1/endpoints/{id}/scan": ag.ID,
		"/api/v1/reports/{key}":       "endpoints", "/api/v1/scripts/{id}": sc.ID, "/api/v1/enrollment-tokens/{id}/revoke": tokens.Items[0].ID,
		"/api/v1/runs/{id}": run.RunID, "/api/v1/runs/{id}/stop": run.RunID, "/api/v1/runs/{id}/retry": run.RunID,
		"/api/v1/alerts/{id}": rule.Rule.ID, "/api/v1/alerts/{id}/enable": rule.Rule.ID, "/api/v1/alerts/{id}/disable": rule.Rule.ID,
		"/api/v1/alerts/{id}/test": rule.Rule.ID, "/api/v1/alerts/{id}/events": rule.Rule.ID,
		"/api/v1/alerts/{id}/failed-deliveries": rule.Rule.ID, "/api/v1/alerts/{id}/failed-deliveries/{delivery}/resend": rule.Rule.ID,
		"/api/v1/vulnerabilities/{cve}/exception": "CVE-2023-4863"}
	// A body for each operation that takes one, valid but for the NUL.
	bodies := map[string]string{
		"POST /api/oauth/token":                                        `{"grant_type":"client_credentials","client_id":` + nulJSON + `,"client_secret":"s"}`,
		"PATCH /api/v1/endpoints/{id}":                                 `{"displayName":` + nulJSON + `}`,
		"POST /api/v1/groups":                                          `{"name":` + nulJSON + `}`,
		"PATCH /api/v1/groups/{id}":                                    `{"name":` + nulJSON + `}`,
		"POST /api/v1/automations":                                     `{"name":` + nulJSON + `,"actionType":"REBOOT","payload":{"message":"m","timeoutSeconds":60},"targetMode":"all","scheduleKind":"NOW"}`,
		"PATCH /api/v1/automations/{id}":                               `{"name":` + nulJSON + `}`,
		"POST /api/v1/actions":                                         `{"actionType":"REBOOT","payload":{"message":` + nulJSON + `,"timeoutSeconds":60},"targetMode":"all"}`,
		"POST /api/v1/updates/approvals":                               `{"keys":[` + nulJSON + `],"status":"APPROVED"}`,
		"POST /api/v1/alerts":                                          `{"name":` + nulJSON + `,"trigger":"NEW_ENDPOINT","emailTo":"ops@example.com"}`,
		"POST /api/v1/automations/{id}/run":                            "", // takes no body
		"POST /api/v1/scripts":                                         `{"name":` + nulJSON + `,"language":"sh","code":"true"}`,
		"PATCH /api/v1/scripts/{id}":                                   `{"code":` + nulJSON + `}`,
		"POST /api/v1/enrollment-tokens":                               `{"expiresInHours":1,"note":` + nulJSON + `}`,
		"POST /api/v1/enrollment-tokens/{id}/revoke":                   "",
		"POST /api/v1/runs/{id}/stop":                                  "",
		"PATCH /api/v1/alerts/{id}":                                    `{"name":` + nulJSON + `}`,
		"POST /api/v1/alerts/{id}/enable":                              "",
		"POST /api/v1/alerts/{id}/disable":                             "",
		"POST /api/v1/alerts/{id}/test":                                "",
		"POST /api/v1/alerts/{id}/failed-deliveries/{delivery}/resend": "",
		"POST /api/v1/runs/{id}/retry":                                 "",
		"POST /api/v1/endpoints/{id}/scan":                             "", // takes no body
		"PATCH /api/v1/users/{id}":                                     `{"role":` + nulJSON + `}`,
		"POST /api/v1/users":                                           `{"email":"new@example.com","role":` + nulJSON + `,"invite":true}`,
		"POST /api/v1/roles":                                           `{"name":` + nulJSON + `,"permissions":["api.access"]}`,
		"PATCH /api/v1/roles/{id}":                                     `{"name":` + nulJSON + `}`,
		"POST /api/v1/credentials":                                     `{"name":` + nulJSON + `,"role":"Read-only"}`,
		"PATCH /api/v1/credentials/{id}":                               `{"disabled":true,"x":` + nulJSON + `}`,
		"PUT /api/v1/sign-in-policy":                                   `{"requireSecondFactor":true,"x":` + nulJSON + `}`,
		"POST /api/v1/users/{id}/password":                             `{"password":"a long password \u0000 with NUL"}`,
		"PUT /api/v1/agent-policy":                                     `{"policy":"pinned","version":` + nulJSON + `}`,
		"PUT /api/v1/approval-policy":                                  `{"declineOlder":false,"rules":[{"severity":` + nulJSON + `,"source":"OS","delayDays":0}]}`,
		"POST /api/v1/vulnerabilities/{cve}/exception":                 `{"kind":"accepted","reason":` + nulJSON + `}`,
		"PUT /api/v1/remediation-policy":                               `{"criticalDays":1,"highDays":2,"mediumDays":3,"lowDays":4,"x":` + nulJSON + `}`,
		"PUT /api/v1/compliance-policy":                                `{"criticalDays":1,"importantDays":2,"moderateDays":3,"lowDays":4,"unspecifiedDays":5,"x":` + nulJSON + `}`,
		"PUT /api/v1/sso":                                              `{"providerName":` + nulJSON + `,"issuer":"https://id.example.com","clientId":"patchd"}`,
		"POST /api/v1/organizations":                                   `{"name":"Nul client","template":` + nulJSON + `}`,
	}
	// A query filter for each list.
	queries := map[string]string{
		"GET /api/v1/endpoints":                "q=web%00",
		"GET /api/v1/updates":                  "severity=Critical%00",
		"GET /api/v1/software":                 "q=bash%00",
		"GET /api/v1/software/titles":          "publisher=gnu%00",
		"GET /api/v1/vulnerabilities":          "endpointId=" + ag.ID + "%00",
		"GET /api/v1/groups":                   "q=%00",
		"GET /api/v1/automations":              "q=%00",
		"GET /api/v1/alerts":                   "q=%00",
		"GET /api/v1/runs":                     "runId=" + run.RunID + "%00",
		"GET /api/v1/reports/{key}":            "groupId=%00",
		"GET /api/v1/openapi.json":             "x=%00",
		"GET /api/v1/scripts":                  "q=%00",
		"GET /api/v1/enrollment-tokens":        "q=%00",
		"GET /api/v1/audit":                    "actor=api%00",
		"GET /api/v1/users":                    "q=%00",
		"GET /api/v1/roles":                    "q=%00",
		"GET /api/v1/credentials":              "q=%00",
		"GET /api/v1/sign-in-policy":           "x=%00",
		"GET /api/v1/agent-versions":           "x=%00",
		"GET /api/v1/compliance/history":       "days=%00",
		"GET /api/v1/compliance/groups":        "x=%00",
		"GET /api/v1/compliance-policy":        "x=%00",
		"GET /api/v1/approval-policy":          "x=%00",
		"GET /api/v1/remediation-policy":       "x=%00",
		"GET /api/v1/vulnerability-exceptions": "kind=accepted%00",
		"GET /api/v1/sso":                      "x=%00",
	}
	type probe struct{ name, method, path, body string }
	routeOf := map[string]string{} // probe name: its route, for the declared statuses
	var probes []probe
	for _, route := range e.Server.API().Routes() {
		method, pattern, _ := strings.Cut(route, " ")
		path := pattern
		if id, ok := ids[pattern]; ok {
			for _, param := range []string{"{id}", "{key}", "{delivery}", "{cve}"} {
				path = strings.Replace(path, param, id, 1)
			}
			bad := strings.Replace(strings.Replace(strings.Replace(pattern, "{id}", id+"%00", 1), "{key}", "endpoints%00", 1), "{delivery}", id, 1)
			bad = strings.Replace(bad, "{cve}", id+"%00", 1)
			probes = append(probes, probe{route + " id", method, bad, bodies[route]})
			routeOf[route+" id"] = route
		} else if strings.Contains(pattern, "{") {
			t.Fatalf("%s: give this test an id for it", route)
		}
		if method == http.MethodPost || method == http.MethodPatch || method == http.MethodPut {
			body, ok := bodies[route]
			if !ok {
				t.Fatalf("%s: give this test a body for it", route)
			}
			if body != "" {
				probes = append(probes, probe{route + " body", method, path, body})
				routeOf[route+" body"] = route
			}
		}
		if q, ok := queries[route]; ok {
			probes = append(probes, probe{route + " query", method, path + "?" + q, bodies[route]})
			routeOf[route+" query"] = route
		} else if method == http.MethodGet && !strings.Contains(pattern, "{") {
			t.Fatalf("%s: give this test a query for it", route)
		}
	}
	probes = append(probes,
		probe{"token form", http.MethodPost, "/api/oauth/token", "form:grant_type=client_credentials&client_id=a%00&client_secret=b"},
		probe{"DELETE endpoint id", http.MethodDelete, "/api/v1/endpoints/" + ag.ID + "%00", ""},
		probe{"DELETE script id", http.MethodDelete, "/api/v1/scripts/" + sc.ID + "%00", ""},
		probe{"DELETE alert id", http.MethodDelete, "/api/v1/alerts/" + rule.Rule.ID + "%00", ""},
		probe{"DELETE exception cve", http.MethodDelete, "/api/v1/vulnerabilities/CVE-2023-4863%00/exception", ""},
	)
	for route, name := range map[string]string{"POST /api/oauth/token": "token form", "DELETE /api/v1/endpoints/{id}": "DELETE endpoint id",
		"DELETE /api/v1/scripts/{id}": "DELETE script id", "DELETE /api/v1/alerts/{id}": "DELETE alert id",
		"DELETE /api/v1/vulnerabilities/{cve}/exception": "DELETE exception cve"} {
		routeOf[name] = route
	}
	// Each 400 is declared for its operation in the served document
	// (TestEveryAnsweredStatusIsDeclared checks the other refusals).
	doc := servedDocument(t, e)
	for _, p := range probes {
		ans := rawCall(t, e, p.method, p.path, token, []byte(p.body))
		if ans.status != http.StatusBadRequest || (ans.code != "invalid_json" && ans.code != "invalid_request") || ans.desc == "" {
			t.Errorf("%s: %d %s, want 400 invalid_json or invalid_request", p.name, ans.status, ans.body)
		}
		if route, ok := routeOf[p.name]; !ok {
			t.Errorf("%s: no route", p.name)
		} else if msg := undeclared(doc, route, ans.status); msg != "" {
			t.Error(msg)
		}
	}

	// The agent protocol: every call, NUL in each kind of text it carries.
	user := "CORP\\al\x00ice"
	agentProbes := []struct {
		name, method, path, secret string
		body                       any
	}{
		{"enroll machineUid", http.MethodPost, agentproto.PathEnroll, "",
			[]byte(`{"enrollToken":"` + e.EnrollToken + `","machineUid":"uid-nul\u0000","hostname":"h","platform":"linux"}`)},
		{"enroll hostname", http.MethodPost, agentproto.PathEnroll, "",
			[]byte(`{"enrollToken":"` + e.EnrollToken + `","machineUid":"uid-new","hostname":"h\u0000","platform":"linux"}`)},
		{"check-in user", http.MethodPost, agentproto.PathCheckin, ag.Secret, agentproto.CheckinRequest{User: &user}},
		{"check-in ipAddresses", http.MethodPost, agentproto.PathCheckin, ag.Secret, agentproto.CheckinRequest{IPAddresses: []string{"10.0.0.1\x00"}}},
		{"check-in agentVersion", http.MethodPost, agentproto.PathCheckin, ag.Secret, agentproto.CheckinRequest{AgentVersion: "1.0\x00"}},
		{"check-in wait", http.MethodPost, agentproto.PathCheckin + "?wait=1%00", ag.Secret, agentproto.CheckinRequest{}},
		{"inventory software", http.MethodPut, agentproto.PathInventory, ag.Secret, func() agentproto.Inventory {
			inv := apitest.Sample("web-nul", "linux")
			inv.Software[0].Name = "bash\x00"
			return inv
		}()},
		{"inventory disk", http.MethodPut, agentproto.PathInventory, ag.Secret, func() agentproto.Inventory {
			inv := apitest.Sample("web-nul", "linux")
			inv.Disks = []agentproto.Disk{{Drive: "/mnt/\x00"}}
			return inv
		}()},
		{"inventory dataset", http.MethodPut, agentproto.PathInventory, ag.Secret, func() agentproto.Inventory {
			inv := apitest.Sample("web-nul", "linux")
			inv.Datasets = map[string][]map[string]any{"services": {{"name": "ss\x00hd"}}}
			return inv
		}()},
		{"command status result", http.MethodPost, "/agent/v1/commands/" + cmdID + "/status", ag.Secret,
			agentproto.CommandStatus{Status: "RUNNING", Result: "out\x00put"}},
		{"command status id", http.MethodPost, "/agent/v1/commands/" + cmdID + "%00/status", ag.Secret,
			agentproto.CommandStatus{Status: "RUNNING"}},
	}
	for _, p := range agentProbes {
		ans := e.Call(p.method, p.path, p.secret, p.body, false)
		if ans.Status != http.StatusBadRequest || (ans.Error() != "invalid_json" && ans.Error() != "invalid_request") {
			t.Errorf("agent %s: %d %s, want 400", p.name, ans.Status, ans.Body)
		}
	}
	if err := e.Server.FlushCheckins(ctx); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(); after != before {
		t.Fatalf("a refused request changed something:\nbefore %s\nafter  %s", before, after)
	}
}

// rawCase is one raw API call and what it must answer (a code "" takes any
// error code): the table of a test that tries requests of one shape.
type rawCase struct {
	method, path, body string
	status             int
	code               string
}

// expectCalls makes each call with token and reports every answer that
// differs from what the case wants.
func expectCalls(t *testing.T, e *apitest.Env, token string, calls ...rawCase) {
	t.Helper()
	for _, c := range calls {
		a := rawCall(t, e, c.method, c.path, token, []byte(c.body))
		if a.status != c.status || c.code != "" && a.code != c.code {
			t.Errorf("%s %s %s: %d %q, want %d %q (%s)", c.method, c.path, c.body, a.status, a.code, c.status, c.code, a.body)
		}
	}
}

type rawAnswer struct {
	status     int
	body       string
	code, desc string
}

// rawCall makes a raw API call through the Env's HTTP client (which
// trusts the server's own CA); a body starting with "form:" is sent as a
// form.
func rawCall(t *testing.T, e *apitest.Env, method, path, token string, body []byte) rawAnswer {
	t.Helper()
	var rd io.Reader
	ct := "application/json"
	if s, ok := strings.CutPrefix(string(body), "form:"); ok {
		rd, ct = strings.NewReader(s), "application/x-www-form-urlencoded"
	} else if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	u, err := url.Parse(e.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, u.String(), rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	if token != "" && !strings.HasPrefix(path, "/api/oauth/") {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := e.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var e2 struct {
		Error string  `json:"error"`
		Desc  *string `json:"error_description"`
	}
	json.Unmarshal(b, &e2)
	a := rawAnswer{status: res.StatusCode, body: string(b), code: e2.Error}
	if e2.Desc != nil {
		a.desc = *e2.Desc
	}
	return a
}
