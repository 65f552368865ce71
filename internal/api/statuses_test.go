package api_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store/storetest"
)

// servedDocument loads the OpenAPI document the server serves.
func servedDocument(t *testing.T, e *apitest.Env) *openapi3.T {
	t.Helper()
	resp, err := http.Get(e.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// undeclared answers what is wrong when route ("METHOD /pattern") answered
// status and its operation in doc does not declare it; "" when it does.
func undeclared(doc *openapi3.T, route string, status int) string {
	method, pattern, _ := strings.Cut(route, " ")
	item := doc.Paths.Find(pattern)
	if item == nil || item.GetOperation(method) == nil {
		return route + ": not in the served document"
	}
	if item.GetOperation(method).Responses.Status(status) == nil {
		return route + " answers " + strconv.Itoa(status) + ", which the served document does not declare for it"
	}
	return ""
}

// statusProbes are the requests TestEveryAnsweredStatusIsDeclared sends
// each operation: each provokes a refusal a client can meet.
type statusProbe struct {
	name, token, path, body string
}

// TestEveryAnsweredStatusIsDeclared walks the route table, as
// TestNULIsRefusedEverywhere does (which checks the 400 it provokes the
// same way), and provokes every refusal a client can meet on each
// operation: no token (401), a token without the permission (403), an id
// that names nothing (404), an empty object and an oversized body (400,
// 413, 422), the database unavailable (503). Whatever each answers must be
// declared for that operation in the served document: a generated client
// knows no other. GET /api/v1/endpoints/{id} answered 400 without
// declaring it.
func TestEveryAnsweredStatusIsDeclared(t *testing.T) {
	t.Parallel()
	cut := storetest.OpenCut(t)
	e := apitest.NewOn(t, cut.Store)
	ctx := context.Background()
	doc := servedDocument(t, e)
	admin := tokenOf(t, e.Admin)
	weak, _, err := e.Client(e.Org, perm.Set(perm.APIAccess)).Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const unknown = "0123456789abcdef0123456789abcdef"
	big := `{"name":"` + strings.Repeat("x", 1<<20) + `"}`
	var problems []string
	check := func(route string, p statusProbe) {
		method, _, _ := strings.Cut(route, " ")
		ans := rawCall(t, e, method, p.path, p.token, []byte(p.body))
		if ans.status >= 500 && ans.status != http.StatusServiceUnavailable {
			problems = append(problems, route+" ("+p.name+"): "+strconv.Itoa(ans.status)+" "+ans.body)
		}
		if msg := undeclared(doc, route, ans.status); msg != "" && !slices.Contains(problems, msg) {
			problems = append(problems, msg+" ("+p.name+": "+strings.TrimSpace(ans.body)+")")
		}
	}
	routes := e.Server.API().Routes()
	for _, route := range routes {
		method, pattern, _ := strings.Cut(route, " ")
		path := pattern
		for _, param := range []string{"{id}", "{key}", "{delivery}", "{cve}"} {
			v := unknown
			if param == "{cve}" {
				v = "CVE-2099-0001"
			}
			path = strings.Replace(path, param, v, 1)
		}
		public := pattern == "/api/oauth/token" || pattern == "/api/v1/openapi.json"
		probes := []statusProbe{{"an unknown id, every permission", admin, path, ""}}
		if !public {
			probes = append(probes, statusProbe{"no token", "", path, ""}, statusProbe{"api.access only", weak, path, ""})
		}
		if method != http.MethodGet && method != http.MethodDelete {
			probes = append(probes, statusProbe{"an empty object", admin, path, "{}"}, statusProbe{"an oversized body", admin, path, big})
		}
		for _, p := range probes {
			check(route, p)
		}
	}
	// The database unavailable: every operation that reads or writes it.
	cut.Cut()
	for _, route := range routes {
		_, pattern, _ := strings.Cut(route, " ")
		if pattern == "/api/v1/openapi.json" {
			continue
		}
		path := strings.NewReplacer("{id}", unknown, "{key}", "endpoints", "{delivery}", unknown, "{cve}", "CVE-2099-0001").Replace(pattern)
		body := ""
		if m, _, _ := strings.Cut(route, " "); m == http.MethodPost || m == http.MethodPatch || m == http.MethodPut {
			body = "{}"
		}
		check(route, statusProbe{"database unavailable", admin, path, body})
	}
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
}
