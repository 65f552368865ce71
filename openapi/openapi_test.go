package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// operations is section 4 of the specification: every operation with the
// permission it needs ("" for the two public ones).
var operations = []struct {
	method, path, permission string
}{
	{"POST", "/api/oauth/token", ""},
	{"GET", "/api/v1/endpoints", "endpoints.view"},
	{"GET", "/api/v1/endpoints/{id}", "endpoints.view"},
	{"PATCH", "/api/v1/endpoints/{id}", "endpoints.manage"},
	{"DELETE", "/api/v1/endpoints/{id}", "endpoints.manage"},
	{"GET", "/api/v1/updates", "updates.view"},
	{"GET", "/api/v1/software", "endpoints.view"},
	{"GET", "/api/v1/vulnerabilities", "vulnerabilities.view"},
	{"GET", "/api/v1/groups", "endpoints.view"},
	{"POST", "/api/v1/groups", "endpoints.manage"},
	{"PATCH", "/api/v1/groups/{id}", "endpoints.manage"},
	{"DELETE", "/api/v1/groups/{id}", "endpoints.manage"},
	{"GET", "/api/v1/automations", "automations.view"},
	{"POST", "/api/v1/automations", "automations.manage"},
	{"GET", "/api/v1/automations/{id}", "automations.view"},
	{"PATCH", "/api/v1/automations/{id}", "automations.manage"},
	{"DELETE", "/api/v1/automations/{id}", "automations.manage"},
	{"POST", "/api/v1/actions", "automations.run"},
	{"POST", "/api/v1/updates/approvals", "updates.manage"},
	{"GET", "/api/v1/alerts", "reports.view"},
	{"POST", "/api/v1/alerts", "reports.manage"},
	{"POST", "/api/v1/automations/{id}/run", "automations.run"},
	{"GET", "/api/v1/runs", "automations.view"},
	{"GET", "/api/v1/reports/{key}", "reports.view"},
	{"GET", "/api/v1/openapi.json", ""},
}

// additions are patchd's operations beyond the specification, each marked
// x-patchd-addition in the document, with the permission it needs.
var additions = []struct {
	method, path, permission string
}{
	{"GET", "/api/v1/scripts", "automations.view"},
	{"POST", "/api/v1/scripts", "automations.manage"},
	{"GET", "/api/v1/scripts/{id}", "automations.view"},
	{"PATCH", "/api/v1/scripts/{id}", "automations.manage"},
	{"DELETE", "/api/v1/scripts/{id}", "automations.manage"},
	{"GET", "/api/v1/enrollment-tokens", "endpoints.manage"},
	{"POST", "/api/v1/enrollment-tokens", "endpoints.manage"},
	{"POST", "/api/v1/enrollment-tokens/{id}/revoke", "endpoints.manage"},
	{"GET", "/api/v1/audit", "reports.view"},
	{"GET", "/api/v1/runs/{id}", "automations.view"},
	{"POST", "/api/v1/runs/{id}/stop", "automations.run"},
	{"POST", "/api/v1/runs/{id}/retry", "automations.run"},
	{"GET", "/api/v1/alerts/{id}/failed-deliveries", "reports.view"},
	{"POST", "/api/v1/alerts/{id}/failed-deliveries/{delivery}/resend", "reports.manage"},
	{"GET", "/api/v1/software/titles", "endpoints.view"},
	{"POST", "/api/v1/endpoints/{id}/scan", "endpoints.manage"},
	{"GET", "/api/v1/groups/{id}", "endpoints.view"},
	{"GET", "/api/v1/alerts/{id}", "reports.view"},
	{"PATCH", "/api/v1/alerts/{id}", "reports.manage"},
	{"DELETE", "/api/v1/alerts/{id}", "reports.manage"},
	{"POST", "/api/v1/alerts/{id}/enable", "reports.manage"},
	{"POST", "/api/v1/alerts/{id}/disable", "reports.manage"},
	{"POST", "/api/v1/alerts/{id}/test", "reports.manage"},
	{"GET", "/api/v1/alerts/{id}/events", "reports.view"},
	{"GET", "/api/v1/agent-versions", "endpoints.view"},
	{"PUT", "/api/v1/agent-policy", "endpoints.manage"},
	{"GET", "/api/v1/compliance/history", "endpoints.view"},
	{"GET", "/api/v1/sso", "api.access"},
	{"PUT", "/api/v1/sso", "api.access"},
	{"DELETE", "/api/v1/sso", "api.access"},
	{"GET", "/api/v1/approval-policy", "updates.view"},
	{"PUT", "/api/v1/approval-policy", "updates.manage"},
	{"GET", "/api/v1/vulnerability-exceptions", "vulnerabilities.view"},
	{"GET", "/api/v1/remediation-policy", "vulnerabilities.view"},
	{"GET", "/api/v1/compliance/groups", "endpoints.view"},
	{"GET", "/api/v1/compliance-policy", "endpoints.view"},
	// People, for roles holding every permission (checked by the server;
	// the document names api.access).
	{"GET", "/api/v1/users", "api.access"},
	{"POST", "/api/v1/users", "api.access"},
	{"DELETE", "/api/v1/users/{id}", "api.access"},
	{"PATCH", "/api/v1/users/{id}", "api.access"},
	{"POST", "/api/v1/users/{id}/password", "api.access"},
	{"DELETE", "/api/v1/users/{id}/second-factor", "api.access"},
	{"GET", "/api/v1/roles", "api.access"},
	{"POST", "/api/v1/roles", "api.access"},
	{"PATCH", "/api/v1/roles/{id}", "api.access"},
	{"DELETE", "/api/v1/roles/{id}", "api.access"},
	{"GET", "/api/v1/credentials", "api.access"},
	{"POST", "/api/v1/credentials", "api.access"},
	{"PATCH", "/api/v1/credentials/{id}", "api.access"},
	{"DELETE", "/api/v1/credentials/{id}", "api.access"},
	{"GET", "/api/v1/sign-in-policy", "api.access"},
	{"PUT", "/api/v1/sign-in-policy", "api.access"},
	// New organizations, for a person holding the create-organizations
	// permission (checked by the server).
	{"POST", "/api/v1/organizations", "api.access"},
	// Decisions about CVEs and the remediation periods, for the same roles.
	{"POST", "/api/v1/vulnerabilities/{cve}/exception", "api.access"},
	{"DELETE", "/api/v1/vulnerabilities/{cve}/exception", "api.access"},
	{"PUT", "/api/v1/remediation-policy", "api.access"},
	{"PUT", "/api/v1/compliance-policy", "api.access"},
}

func load(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestOperations(t *testing.T) {
	doc := load(t)

	var want []string
	for _, o := range operations {
		want = append(want, o.method+" "+o.path)
	}
	if len(want) != 25 {
		t.Fatalf("the test lists %d operations, the specification has 25", len(want))
	}
	for _, o := range additions {
		want = append(want, o.method+" "+o.path)
	}
	var got []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			got = append(got, method+" "+path)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("operations:\n got %q\nwant %q", got, want)
	}

	ids := map[string]bool{}
	for i, o := range append(slices.Clone(operations), additions...) {
		t.Run(o.method+" "+o.path, func(t *testing.T) {
			op := doc.Paths.Find(o.path).GetOperation(o.method)
			if added := op.Extensions["x-patchd-addition"] == true; added != (i >= len(operations)) {
				t.Errorf("x-patchd-addition is %v; it marks exactly the operations beyond the specification", added)
			}
			if i >= len(operations) && !strings.Contains(op.Description, "patchd addition") {
				t.Error("the description does not say it is a patchd addition")
			}
			if i >= len(operations) && !strings.Contains(op.Description, "`"+o.permission+"`") {
				t.Errorf("the description does not name the permission %s", o.permission)
			}
			if op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("operationId %q is empty or used twice", op.OperationID)
			}
			ids[op.OperationID] = true
			if op.Summary == "" || op.Description == "" {
				t.Error("summary or description missing")
			}
			if op.Responses.Status(http.StatusOK) == nil {
				t.Error("no 200 response")
			}
			for code, ref := range op.Responses.Map() {
				if code[0] == '4' {
					checkError(t, code, ref.Value)
				}
			}

			if o.permission == "" {
				if op.Security == nil || len(*op.Security) != 0 {
					t.Errorf("public operation must say security: [], has %v", op.Security)
				}
				if o.path != "/api/oauth/token" && op.Responses.Status(http.StatusUnauthorized) != nil {
					t.Error("public operation lists 401")
				}
				return
			}
			checkSecurity(t, op, o.permission)
			unauthorized := op.Responses.Status(http.StatusUnauthorized)
			if unauthorized == nil {
				t.Fatal("no 401 response")
			}
			if h := unauthorized.Value.Headers["WWW-Authenticate"]; h == nil || !h.Value.Required {
				t.Error("401 does not require a WWW-Authenticate header")
			}
			if op.Responses.Status(http.StatusForbidden) == nil {
				t.Error("no 403 response")
			}
			if (len(op.Parameters) > 0 && o.path != "/api/v1/reports/{key}") || op.RequestBody != nil {
				if op.Responses.Status(http.StatusBadRequest) == nil {
					t.Error("takes input but lists no 400")
				}
			}
			if o.method == "POST" || o.method == "PATCH" {
				if op.Responses.Status(http.StatusUnprocessableEntity) == nil && op.RequestBody != nil {
					t.Error("a create, update, action or approval lists no 422")
				}
			}
		})
	}
}

func checkError(t *testing.T, code string, resp *openapi3.Response) {
	t.Helper()
	media := resp.Content.Get("application/json")
	if media == nil || media.Schema == nil || media.Schema.Ref != "#/components/schemas/Error" {
		t.Errorf("%s does not answer the Error schema", code)
	}
}

// checkSecurity wants the bearer scheme, or oauth2 with api.access plus the
// operation's permission.
func checkSecurity(t *testing.T, op *openapi3.Operation, permission string) {
	t.Helper()
	if op.Security == nil {
		t.Fatal("no security requirement of its own")
	}
	var bearer, oauth bool
	for _, req := range *op.Security {
		if scopes, ok := req["bearerAuth"]; ok && len(scopes) == 0 {
			bearer = true
		}
		if scopes, ok := req["oauth2"]; ok {
			slices.Sort(scopes)
			want := []string{"api.access"}
			if permission != "api.access" {
				want = append(want, permission)
			}
			slices.Sort(want)
			if !slices.Equal(scopes, want) {
				t.Errorf("oauth2 scopes %v, want %v", scopes, want)
			}
			oauth = true
		}
	}
	if !bearer || !oauth {
		t.Errorf("security %v lacks bearerAuth or oauth2", *op.Security)
	}
}

func TestPermissionsAreTheScopes(t *testing.T) {
	doc := load(t)
	scopes := doc.Components.SecuritySchemes["oauth2"].Value.Flows.ClientCredentials.Scopes
	want := []string{"api.access", "endpoints.view", "endpoints.manage", "updates.view", "vulnerabilities.view",
		"automations.view", "automations.run", "automations.manage", "updates.manage", "reports.view", "reports.manage"}
	if len(scopes) != len(want) {
		t.Errorf("%d scopes, want %d", len(scopes), len(want))
	}
	for _, s := range want {
		if _, ok := scopes[s]; !ok {
			t.Errorf("scope %s missing", s)
		}
	}
	if url := doc.Components.SecuritySchemes["oauth2"].Value.Flows.ClientCredentials.TokenURL; url != "/api/oauth/token" {
		t.Errorf("tokenUrl %q", url)
	}
}

func TestResourceSchemas(t *testing.T) {
	schemas := load(t).Components.Schemas
	for _, name := range []string{"Endpoint", "EndpointDetail", "EndpointPatch", "Update", "SoftwareRow",
		"Vulnerability", "Group", "GroupRule", "GroupBody", "Automation", "AutomationBody", "AutomationPatch",
		"ActionBody", "ApprovalBody", "Run", "RunCommand", "AlertRule", "AlertRuleBody", "ReportMeta", "Report",
		"TokenRequest", "TokenResponse", "Error", "EndpointPage", "UpdatePage", "SoftwareRowPage",
		"VulnerabilityPage", "RunList", "RunCommandList", "ReportList"} {
		s := schemas[name]
		if s == nil {
			t.Errorf("schema %s missing", name)
			continue
		}
		if s.Value.Description == "" {
			t.Errorf("schema %s has no description", name)
		}
	}
}

func TestTooManyAttemptsCarriesRetryAfter(t *testing.T) {
	op := load(t).Paths.Find("/api/oauth/token").Post
	resp := op.Responses.Status(http.StatusTooManyRequests)
	if resp == nil {
		t.Fatal("no 429")
	}
	h := resp.Value.Headers["Retry-After"]
	if h == nil || !h.Value.Required || !h.Value.Schema.Value.Type.Is(openapi3.TypeInteger) {
		t.Error("429 lacks a required integer Retry-After header")
	}
	for _, ct := range []string{"application/x-www-form-urlencoded", "application/json"} {
		if op.RequestBody.Value.Content.Get(ct) == nil {
			t.Errorf("token call does not take %s", ct)
		}
	}
}

func TestReportKeys(t *testing.T) {
	doc := load(t)
	var keyParam *openapi3.Parameter
	for _, p := range doc.Paths.Find("/api/v1/reports/{key}").Get.Parameters {
		if p.Value.Name == "key" {
			keyParam = p.Value
		}
	}
	if keyParam == nil {
		t.Fatal("no key parameter")
	}
	path := keyParam.Schema.Value.Enum
	// _list, the 87 report keys of the specification and patchd's
	// compliance-history and compliance-by-group.
	if len(path) != 90 || path[0] != "_list" || path[len(path)-2] != "compliance-history" || path[len(path)-1] != "compliance-by-group" {
		t.Fatalf("key enum has %d values starting with %v", len(path), path[0])
	}
	schema := doc.Components.Schemas["ReportKey"].Value.Enum
	if !slices.Equal(path[1:], schema) {
		t.Error("the key parameter and the ReportKey schema list different keys")
	}
	seen := map[any]bool{}
	for _, k := range path {
		if seen[k] {
			t.Errorf("key %v listed twice", k)
		}
		seen[k] = true
	}
	for _, k := range []string{"endpoints", "missing-updates", "cisa-kev", "cve-2025-5480-status"} {
		if !seen[k] {
			t.Errorf("key %s missing", k)
		}
	}
}

// TestResponseShapes validates sample bodies against the document, chiefly the
// two alternatives of GET /api/v1/runs and GET /api/v1/reports/{key}.
func TestResponseShapes(t *testing.T) {
	doc := load(t)
	schema := func(path, contentType string) *openapi3.Schema {
		return doc.Paths.Find(path).Get.Responses.Status(http.StatusOK).Value.Content.Get(contentType).Schema.Value
	}
	run := `{"id":"r1","name":"Reboot","actionType":"REBOOT","status":"COMPLETED","startedAt":"2026-01-02T03:04:05Z",
		"finishedAt":null,"total":2,"succeeded":1,"failed":1,"createdBy":"api:ci","automationId":null,
		"automationName":null,"detail":null}`
	command := `{"id":"c1","machineId":"m1","endpoint":"pc-1","status":"CANCELLED","startedAt":null,"finishedAt":null,
		"createdAt":"2026-01-02T03:04:05Z","result":"Nothing to install"}`
	endpoint := `{"id":"e1","name":"pc-1","hostname":"pc-1","platform":"linux","status":"connected","os":null,
		"osVersion":null,"osBuild":null,"type":"workstation","domain":null,"adOu":null,"user":null,"manufacturer":null,
		"model":null,"serialNumber":null,"cpu":null,"cores":null,"ramGB":null,"ipAddresses":[],"macAddresses":[],
		"antivirus":null,"pendingReboot":false,"agentVersion":null,"attributes":{"attr1":"x"},"lastBootAt":null,
		"lastSeenAt":null,"enrolledAt":null,"comment":null,"insecureChannel":false,"riskScore":0,"riskCve":null}`
	tests := []struct {
		name, path, contentType, body string
		valid                         bool
	}{
		{"runs", "/api/v1/runs", "application/json", `{"items":[` + run + `],"total":1}`, true},
		{"run commands", "/api/v1/runs", "application/json", `{"items":[` + command + `],"total":1}`, true},
		{"no runs", "/api/v1/runs", "application/json", `{"items":[],"total":0}`, true},
		{"run without total", "/api/v1/runs", "application/json", `{"items":[]}`, false},
		{"report", "/api/v1/reports/{key}", "application/json",
			`{"title":"Reboots","columns":["a","b"],"rows":[["x",1],[null,true]],"total":2,"collectedAt":null}`, true},
		{"report catalog", "/api/v1/reports/{key}", "application/json",
			`{"items":[{"key":"reboots","title":"Reboots","category":"Updates","description":"d"}],"total":1}`, true},
		{"csv", "/api/v1/reports/{key}", "text/csv", `"a,b\n1,2\n"`, true},
		{"endpoints", "/api/v1/endpoints", "application/json",
			`{"items":[` + endpoint + `],"total":1,"limit":100,"offset":0,"extra":"allowed"}`, true},
		{"endpoint with an unknown platform", "/api/v1/endpoints", "application/json",
			`{"items":[` + strings.Replace(endpoint, "linux", "beos", 1) + `],"total":1,"limit":100,"offset":0}`, false},
		{"endpoint without a nullable field", "/api/v1/endpoints", "application/json",
			`{"items":[` + strings.Replace(endpoint, `"comment":null`, `"x":1`, 1) + `],"total":1,"limit":100,"offset":0}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tt.body), &v); err != nil {
				t.Fatal(err)
			}
			err := schema(tt.path, tt.contentType).VisitJSON(v)
			if tt.valid && err != nil {
				t.Errorf("rejected: %v", err)
			}
			if !tt.valid && err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestJSONRoundTrip(t *testing.T) {
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	again, err := JSON()
	if err != nil || !bytes.Equal(b, again) {
		t.Fatal("JSON is not stable")
	}

	var raw struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Title   string `json:"title"`
			Version string `json:"version"`
		} `json:"info"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.OpenAPI != "3.0.3" || raw.Info.Version != "1" || raw.Info.Title != "patchd REST API v1" {
		t.Errorf("openapi %q, info %+v", raw.OpenAPI, raw.Info)
	}

	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, item := range doc.Paths.Map() {
		n += len(item.Operations())
	}
	if n != len(operations)+len(additions) {
		t.Errorf("round trip has %d operations", n)
	}
	for _, public := range []*openapi3.Operation{
		doc.Paths.Find("/api/oauth/token").Post,
		doc.Paths.Find("/api/v1/openapi.json").Get,
	} {
		if public.Security == nil || len(*public.Security) != 0 {
			t.Errorf("%s lost its security: [] in JSON", public.OperationID)
		}
	}

	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		t.Fatal(err)
	}
	if path := closedObject(tree, "#"); path != "" {
		t.Errorf("%s sets additionalProperties: false; fields may be added", path)
	}
}

// closedObject returns the location of the first additionalProperties: false.
func closedObject(v any, at string) string {
	switch v := v.(type) {
	case map[string]any:
		if v["additionalProperties"] == false {
			return at
		}
		for k, child := range v {
			if p := closedObject(child, at+"/"+k); p != "" {
				return p
			}
		}
	case []any:
		for _, child := range v {
			if p := closedObject(child, at+"/[]"); p != "" {
				return p
			}
		}
	}
	return ""
}

func TestYAMLIsTheEmbeddedFile(t *testing.T) {
	if !bytes.HasPrefix(YAML(), []byte("openapi: 3.0.3\n")) {
		t.Error("YAML does not start with the OpenAPI version")
	}
}

// TestNullableHasType holds the served document to OpenAPI 3.0.3's reading of
// nullable: it adds null to the values of a schema's type, and does nothing
// beside a bare allOf or $ref. Vulnerability.riskAccepted once said nullable
// without a type, so the null the server sends was invalid to a strict
// reader while kin-openapi (and so the response checks) let it pass.
func TestNullableHasType(t *testing.T) {
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if v["nullable"] == true {
				if _, ok := v["type"].(string); !ok {
					t.Errorf("%s: nullable without a type", at)
				}
			}
			for k, child := range v {
				walk(child, at+"/"+k)
			}
		case []any:
			for i, child := range v {
				walk(child, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(tree, "#")

	vuln := load(t).Components.Schemas["Vulnerability"].Value
	if !slices.Contains(vuln.Required, "riskAccepted") {
		t.Error("Vulnerability.riskAccepted is always sent but not required")
	}
	for _, body := range []string{`null`, `{"kind":"accepted","reason":"r","expiresAt":null,"acceptedBy":"api:ci","acceptedAt":"2026-01-02T03:04:05Z"}`} {
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		if err := vuln.Properties["riskAccepted"].Value.VisitJSON(v); err != nil {
			t.Errorf("riskAccepted %s rejected: %v", body, err)
		}
	}
}

// TestGroupBodyIsGroupPatchWithName: the create body of a group is written
// out in full (no allOf, which openapi-typescript turned into a type whose
// every field is never) and must stay the update body plus a required name.
func TestGroupBodyIsGroupPatchWithName(t *testing.T) {
	schemas := load(t).Components.Schemas
	body, patch := schemas["GroupBody"].Value, schemas["GroupPatch"].Value
	if len(body.AllOf) != 0 || len(body.AnyOf) != 0 || len(body.OneOf) != 0 || !body.Type.Is(openapi3.TypeObject) {
		t.Fatal("GroupBody is not a plain object schema")
	}
	if !slices.Equal(body.Required, []string{"name"}) || len(patch.Required) != 0 {
		t.Errorf("required: GroupBody %v, GroupPatch %v", body.Required, patch.Required)
	}
	if len(body.Properties) != len(patch.Properties) {
		t.Errorf("GroupBody has %d properties, GroupPatch %d", len(body.Properties), len(patch.Properties))
	}
	for name, p := range patch.Properties {
		b, ok := body.Properties[name]
		if !ok {
			t.Errorf("GroupBody lacks %s", name)
			continue
		}
		want, _ := json.Marshal(p)
		got, _ := json.Marshal(b)
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs:\nGroupBody  %s\nGroupPatch %s", name, got, want)
		}
	}
}
