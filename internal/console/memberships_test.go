package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// enrollIn enrolls an endpoint in org (through an enrollment token of it).
func enrollIn(t *testing.T, e *apitest.Env, org store.Org, uid, hostname string) string {
	t.Helper()
	return enrollAgent(t, e, org, uid, hostname).ID
}

// enrollAgent is enrollIn answering the agent.
func enrollAgent(t *testing.T, e *apitest.Env, org store.Org, uid, hostname string) *apitest.Agent {
	t.Helper()
	tok, err := admin.CreateEnrollToken(context.Background(), e.Store, "test", org.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	keep := e.EnrollToken
	e.EnrollToken = tok.Token
	defer func() { e.EnrollToken = keep }()
	return e.Enroll(uid, hostname, "windows")
}

var consoleLink = regexp.MustCompile(`href="(/console/[^"#]*)"`)

// walk opens every page of the console's route table a signed-in browser
// reaches without an id, and every console link those pages hold (one
// level down: details, reports and their CSV), and answers each path
// with its status and body.
func walk(t *testing.T, e *apitest.Env, b *browser) map[string]struct {
	code int
	body string
} {
	t.Helper()
	out := map[string]struct {
		code int
		body string
	}{}
	var start []string
	for _, route := range e.Server.Console().Routes() {
		method, path, ok := strings.Cut(route, " ")
		if !ok || method != "GET" || strings.Contains(path, "{") && !strings.HasSuffix(path, "{$}") || strings.HasSuffix(path, "/") ||
			strings.HasPrefix(path, "/console/login") || path == "/console/setup" || strings.HasPrefix(path, "/console/signin") ||
			strings.HasPrefix(path, "/console/invitation") || strings.HasPrefix(path, "/console/sso") {
			continue
		}
		start = append(start, strings.TrimSuffix(path, "{$}"))
	}
	open := func(p string) {
		if _, seen := out[p]; seen || strings.HasPrefix(p, "/console/static/") || strings.HasPrefix(p, "/console/login") {
			return
		}
		code, body := b.get(p)
		out[p] = struct {
			code int
			body string
		}{code, body}
	}
	for _, p := range start {
		open(p)
	}
	for _, p := range slicesOfKeys(out) {
		for _, m := range consoleLink.FindAllStringSubmatch(out[p].body, -1) {
			if len(out) > 400 {
				break
			}
			open(strings.ReplaceAll(m[1], "&amp;", "&"))
		}
	}
	return out
}

func slicesOfKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestMembershipsSwitchAndIsolationWalk: Ann joins her Globex account to
// her Acme one, then works in Acme as an administrator and in Globex as
// Read-only with one sign-in. Every console page and report she reaches
// in each shows nothing of the other organization nor of Initech (where
// another account of her address exists, not joined), and nothing beyond
// her role there.
func TestMembershipsSwitchAndIsolationWalk(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	acme := e.Org
	globex, initech := e.NewOrg("Globex"), e.NewOrg("Initech")
	addUser(t, e, acme, "ann@example.com", store.RoleAdministrator)
	addUser(t, e, globex, "ann@example.com", store.RoleReadOnly)
	addUser(t, e, initech, "ann@example.com", store.RoleAdministrator)
	if _, err := admin.CreateUser(ctx, e.Store, "test", initech.ID, "ann@example.com", store.RoleAdministrator, "another password of Initech"); err == nil {
		t.Fatal("a second ann@example.com in Initech was made")
	}
	addUser(t, e, acme, "dave@acme.example", store.RoleReadOnly)
	addUser(t, e, globex, "erin@globex.example", store.RoleReadOnly)
	addUser(t, e, initech, "carol@initech.example", store.RoleAdministrator)
	acmePC := enrollIn(t, e, acme, "m-acme", "acme-secret-pc")
	enrollIn(t, e, globex, "m-globex", "globex-secret-pc")
	initechPC := enrollIn(t, e, initech, "m-initech", "initech-secret-pc")

	b := newBrowser(t, e.URL)
	b.signIn("ann@example.com")
	_, body := b.get("/console/account")
	if strings.Contains(body, `id="org-switch"`) || !strings.Contains(body, `id="org-name"`) {
		t.Fatalf("one membership shows a switcher, or no organization name")
	}
	// Joining takes the other account's password: a wrong one joins nothing.
	if code, _, body := b.post("/console/account/join", url.Values{"password": {"not her password"}}); code != http.StatusUnauthorized || !strings.Contains(body, "join-error") {
		t.Fatalf("join with a wrong password: %d", code)
	}
	// Ann's accounts of Globex and Initech have the same password: the
	// join takes the first other one it matches, so Initech's account is
	// given its own password first.
	initechAnn, err := admin.FindUser(ctx, e.Store, initech.ID, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.ResetPassword(ctx, e.Store, admin.By{Actor: "test"}, initechAnn, "Initech's own password", false); err != nil {
		t.Fatal(err)
	}
	if code, loc, body := b.post("/console/account/join", url.Values{"password": {password}}); code != http.StatusSeeOther || loc != "/console/account" {
		t.Fatalf("join: %d %s\n%.600s", code, loc, body)
	}
	_, body = b.get("/console/")
	if !strings.Contains(body, `id="org-switch"`) || !strings.Contains(body, "Globex (Read-only)") || !strings.Contains(body, "Acme (Administrator)") ||
		strings.Contains(body, "Initech") {
		t.Fatalf("the switcher after the join:\n%.3000s", body)
	}
	if got, _ := e.Store.UsersByEmail(ctx, "ann@example.com"); len(got) != 2 {
		t.Fatalf("ann's accounts after the join: %d, want 2 (one person, Initech's apart)", len(got))
	}

	secrets := map[string][]string{
		acme.ID:   {"acme-secret-pc", "dave@acme.example"},
		globex.ID: {"globex-secret-pc", "erin@globex.example"},
	}
	initechSecrets := []string{"initech-secret-pc", "carol@initech.example", "Initech", initech.ID, initechPC}
	check := func(in store.Org, other store.Org, admin bool) map[string]struct {
		code int
		body string
	} {
		pages := walk(t, e, b)
		if len(pages) < 20 {
			t.Fatalf("the walk in %s opened %d pages", in.Name, len(pages))
		}
		sawOwn := false
		for p, pg := range pages {
			if pg.code >= 500 {
				t.Errorf("%s: GET %s answered %d", in.Name, p, pg.code)
			}
			for _, s := range append(append([]string{}, initechSecrets...), secrets[other.ID]...) {
				if strings.Contains(pg.body, s) {
					t.Errorf("%s: GET %s shows %q", in.Name, p, s)
				}
			}
			if strings.Contains(pg.body, secrets[in.ID][0]) {
				sawOwn = true
			}
		}
		if !sawOwn {
			t.Errorf("the walk in %s never showed its own endpoint", in.Name)
		}
		for _, p := range []string{"/console/users", "/console/enrollment", "/console/groups/new", "/console/automations/new"} {
			if want := map[bool]int{true: http.StatusOK, false: http.StatusForbidden}[admin]; pages[p].code != want {
				t.Errorf("%s: GET %s answered %d, want %d", in.Name, p, pages[p].code, want)
			}
		}
		if code, _ := b.get("/console/endpoints/" + initechPC); code != http.StatusNotFound {
			t.Errorf("%s: Initech's endpoint answered %d, want 404", in.Name, code)
		}
		return pages
	}
	acmePages := check(acme, globex, true)
	if _, ok := acmePages["/console/endpoints/"+acmePC]; !ok {
		t.Error("the walk missed the endpoint's detail page")
	}
	if reports := reportsOf(acmePages); len(reports) < 4 || len(reports) != 2*len(slices.DeleteFunc(slices.Clone(reports), func(p string) bool { return strings.HasSuffix(p, ".csv") })) {
		t.Errorf("the walk opened the reports %v, want each with its CSV", reports)
	}

	// Switching to Initech (not hers) is refused; to Globex works.
	if code, _, _ := b.post("/console/org", url.Values{"org": {initech.ID}}); code != http.StatusSeeOther {
		t.Fatalf("switch to Initech: %d", code)
	}
	if _, body := b.get("/console/users"); !strings.Contains(body, "dave@acme.example") {
		t.Fatal("a refused switch left Acme")
	}
	if code, loc, _ := b.post("/console/org", url.Values{"org": {globex.ID}}); code != http.StatusSeeOther || loc != "/console/" {
		t.Fatalf("switch to Globex: %d %s", code, loc)
	}
	if reports := reportsOf(check(globex, acme, false)); len(reports) < 4 {
		t.Errorf("the walk in Globex (Read-only) opened the reports %v", reports)
	}
	if code, _ := b.get("/console/endpoints/" + acmePC); code != http.StatusNotFound {
		t.Errorf("Globex: Acme's endpoint answered %d, want 404", code)
	}
	// Every write of the route table beyond Read-only is refused in Globex.
	writesBeyond(t, e, b, "Globex (Read-only)", perm.ReadOnly, acmePC)
	// The view across organizations: one line per organization of Ann,
	// each figure read under her role there; a number opens that
	// organization's list.
	code, csvBody := b.get("/console/organizations.csv")
	wantCSV := "organization,role,endpoints,compliance_percent,overdue_critical_cves,failed_runs_7d,not_seen_7d\n" +
		"Acme,Administrator,1,100,0,0,0\nGlobex,Read-only,1,100,0,0,0\n"
	if code != http.StatusOK || csvBody != wantCSV {
		t.Errorf("the report across organizations: %d\n%s\nwant\n%s", code, csvBody, wantCSV)
	}
	watcher, err := e.Store.CreateRole(ctx, globex.ID, "Endpoints watcher", perm.Set(perm.EndpointsView))
	if err != nil {
		t.Fatal(err)
	}
	annUser, err := admin.FindUser(ctx, e.Store, globex.ID, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ChangeRole(ctx, e.Store, admin.By{Actor: "test"}, annUser, watcher.ID); err != nil {
		t.Fatal(err)
	}
	_, csvBody = b.get("/console/organizations.csv")
	if want := "Acme,Administrator,1,100,0,0,0\nGlobex,Endpoints watcher,1,,,,0\n"; !strings.HasSuffix(csvBody, want) {
		t.Errorf("the report after Globex's role change:\n%s\nwant its end\n%s", csvBody, want)
	}
	for _, p := range append([]string{"/console/updates", "/console/vulnerabilities", "/console/runs", "/console/reports"}, reportsOf(acmePages)...) {
		if code, _ := b.get(p); code != http.StatusForbidden {
			t.Errorf("Globex (Endpoints watcher): GET %s answered %d, want 403", p, code)
		}
	}
	check(globex, acme, false)
	writesBeyond(t, e, b, "Globex (Endpoints watcher)", watcher.Permissions, acmePC)
	b.get("/console/organizations")
	if code, loc, _ := b.post("/console/org", url.Values{"org": {acme.ID}, "next": {"/console/endpoints"}}); code != http.StatusSeeOther || loc != "/console/endpoints" {
		t.Fatalf("a number of Acme's line: %d %s", code, loc)
	}
	if _, body := b.get("/console/endpoints"); !strings.Contains(body, "acme-secret-pc") {
		t.Error("Acme's number did not open Acme's endpoints")
	}
	b.post("/console/org", url.Values{"org": {globex.ID}})

	// Globex's Audit Trail has the join and the switch, Acme's not the join.
	ga, err := e.Store.ListAudit(ctx, globex.ID, store.AuditFilter{Actor: "user:ann@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range ga {
		actions = append(actions, a.Action)
	}
	if !slicesContains(actions, "user.join") || !slicesContains(actions, "user.org_switch") {
		t.Errorf("Globex's Audit Trail of Ann: %v", actions)
	}
	aa, _ := e.Store.ListAudit(ctx, acme.ID, store.AuditFilter{Actor: "user:ann@example.com"})
	for _, a := range aa {
		if a.Action == "user.join" {
			t.Errorf("Acme's Audit Trail has %s", a.Action)
		}
	}
	// The next sign-in opens Globex, the organization she switched to last.
	b2 := newBrowser(t, e.URL)
	b2.signIn("ann@example.com")
	if _, body := b2.get("/console/users"); !strings.Contains(body, "Endpoints watcher") || strings.Contains(body, "dave@acme.example") {
		t.Error("the next sign-in did not open Globex")
	}
}

// consoleWrites are the POST routes of the console's route table that
// change an organization (the sign-in steps, the person's own account,
// the switch and the sign-out left out).
func consoleWrites(e *apitest.Env) []string {
	var out []string
	for _, route := range e.Server.Console().Routes() {
		method, path, _ := strings.Cut(route, " ")
		if method != "POST" || strings.HasPrefix(path, "/console/account") || strings.HasPrefix(path, "/console/signin") ||
			strings.HasPrefix(path, "/console/login") || strings.HasPrefix(path, "/console/invitation") ||
			slicesContains([]string{"/console/org", "/console/logout", "/console/setup", "/console/sso"}, path) {
			continue
		}
		out = append(out, route)
	}
	return out
}

// writesBeyond posts every write of the route table that the role (of a
// person who is no instance operator) does not allow, as the console
// itself decides it (Console.Allows), aimed at the endpoint id; each must
// answer 403.
func writesBeyond(t *testing.T, e *apitest.Env, b *browser, who string, role perm.Set, endpointID string) {
	t.Helper()
	b.get("/console/")
	refused := 0
	for _, route := range consoleWrites(e) {
		allowed, checked := e.Server.Console().Allows(route, role, false)
		if !checked {
			t.Errorf("%s: the console route %s checks no permission", who, route)
		}
		if allowed {
			continue
		}
		_, path, _ := strings.Cut(route, " ")
		p := strings.NewReplacer("{id}", endpointID, "{op}", "delete", "{org}", "x", "{cve}", "CVE-2023-4863", "{delivery}", "x", "{key...}", "k").Replace(path)
		if code, _, _ := b.post(p, url.Values{"name": {"x"}}); code != http.StatusForbidden {
			t.Errorf("%s: POST %s answered %d, want 403", who, p, code)
		}
		refused++
	}
	if refused < 20 {
		t.Errorf("%s: %d writes beyond the role, want the route table's", who, refused)
	}
}

// reportsOf are the report pages and CSV downloads a walk opened.
func reportsOf(pages map[string]struct {
	code int
	body string
}) []string {
	var out []string
	for _, p := range slicesOfKeys(pages) {
		if strings.HasPrefix(p, "/console/reports/") {
			out = append(out, p)
		}
	}
	return out
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// orgObjects makes one of each object of the organization that a console
// write names by its id, through the REST API as the organization's
// administrator would, and answers their ids by the part of the console
// path they stand for ("endpoints", "groups", …).
func orgObjects(t *testing.T, e *apitest.Env, org store.Org, member string) map[string]string {
	t.Helper()
	ctx := context.Background()
	c := e.Client(org, perm.All)
	ag := enrollAgent(t, e, org, "m-"+org.Name, strings.ToLower(org.Name)+"-secret-pc")
	grp, err := c.CreateGroup(ctx, apiv1.GroupBody{Name: ptr(org.Name + " group"), MachineIDs: &[]string{ag.ID}})
	if err != nil {
		t.Fatal(err)
	}
	au, err := c.CreateAutomation(ctx, apiv1.AutomationBody{Name: org.Name + " reboot", ActionType: "REBOOT",
		Payload: json.RawMessage(`{"message":"bye","timeoutSeconds":60}`), TargetMode: ptr("all"), ScheduleKind: ptr("RECURRING"),
		Kind: ptr("SCHEDULED"), Freq: ptr("DAILY"), AtTime: ptr("23:30"), WindowMinutes: ptr(60)})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := c.CreateScript(ctx, apiv1.ScriptBody{Name: ptr(org.Name + "-script"), Language: ptr("sh"), Code: ptr("true")})
	if err != nil {
		t.Fatal(err)
	}
	role, err := c.CreateRole(ctx, apiv1.RoleBody{Name: org.Name + " watcher", Permissions: []string{"endpoints.view"}})
	if err != nil {
		t.Fatal(err)
	}
	rule, err := c.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: org.Name + " rule", Trigger: "NEW_ENDPOINT", EmailTo: ptr("ops@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := admin.CreateEnrollToken(ctx, e.Store, "test", org.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	u, err := admin.FindUser(ctx, e.Store, org.ID, member)
	if err != nil {
		t.Fatal(err)
	}
	run := e.Queue(org, agentproto.TypeReboot, agentproto.RebootPayload{Message: "m", TimeoutSeconds: 60}, ag)
	return map[string]string{
		"endpoints": ag.ID, "groups": grp.Group.ID, "automations": au.Automation.ID, "scripts": sc.ID, "runs": run.RunID,
		"users": u.ID, "instance/people": u.ID, "roles": role.ID, "credentials": e.Credential(org, perm.ReadOnly).ID,
		"enrollment": tok.ID, "alerts": rule.Rule.ID,
	}
}

// orgParam matches a path parameter that names an organization's object
// (a CVE, an update key or a report file are everyone's names).
var orgParam = regexp.MustCompile(`\{(id|org|delivery|op)\}`)

// aimedAt fills the parameters of a console write with the objects of
// another organization: each path of the route (one per operation for
// {op}), or none when the route names no object of an organization. The
// object is found by the path's part after /console/, so a new route
// names an object of orgObjects or fails the test.
func aimedAt(t *testing.T, pattern string, objects map[string]string, orgID string) []string {
	t.Helper()
	if !orgParam.MatchString(pattern) {
		return nil
	}
	kind, _, _ := strings.Cut(strings.TrimPrefix(pattern, "/console/"), "/{")
	id, ok := objects[kind]
	if !ok {
		t.Errorf("POST %s: no object of the other organization for %q (add one to orgObjects)", pattern, kind)
		return nil
	}
	ops := []string{""}
	if strings.Contains(pattern, "{op}") {
		ops = []string{"delete", "disable", "enable", "role", "password", "reset-mfa", "update", "revoke"}
	}
	var out []string
	for _, op := range ops {
		out = append(out, strings.NewReplacer("{id}", id, "{org}", orgID, "{delivery}", "x", "{op}", op).Replace(pattern))
	}
	return out
}

// TestMembershipsWritesStayInTheirOrganization: Ann, Administrator of
// Acme and Read-only in Globex, posts every write of the console's route
// table from Acme aimed at Initech's objects (its endpoint, group,
// automation, script, run, user, role, credential, enrollment token and
// alert rule in the path; its ids in the forms of the others). Each aimed
// write is refused (4xx, or back to the page with an error), none answers
// 5xx, and Initech's and Globex's rows are the same afterwards.
func TestMembershipsWritesStayInTheirOrganization(t *testing.T) {
	s, dbURL := storetest.OpenURL(t)
	e := apitest.NewOn(t, s)
	ctx := context.Background()
	acme := e.Org
	globex, initech := e.NewOrg("Globex"), e.NewOrg("Initech")
	addUser(t, e, acme, "ann@example.com", store.RoleAdministrator)
	ann, err := admin.FindUser(ctx, e.Store, acme.ID, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddMembership(ctx, e.Store, admin.By{Actor: "test"}, ann, globex.ID, store.RoleReadOnly); err != nil {
		t.Fatal(err)
	}
	addUser(t, e, initech, "carol@initech.example", store.RoleAdministrator)
	addUser(t, e, globex, "erin@globex.example", store.RoleAdministrator)
	initechObjects := orgObjects(t, e, initech, "carol@initech.example")
	orgObjects(t, e, globex, "erin@globex.example")
	orgObjects(t, e, acme, "ann@example.com")

	b := newBrowser(t, e.URL)
	b.signIn("ann@example.com")
	if _, body := b.get("/console/users"); !strings.Contains(body, "Acme watcher") {
		t.Fatal("Ann does not work in Acme")
	}
	// The server's vulnerability matching works through the endpoints
	// enrolled on its own: the rows are compared once it is done.
	for _, o := range []store.Org{initech, globex} {
		waitFor(t, o.Name+"'s vulnerability matching", func() bool {
			return strings.HasPrefix(storetest.OrgRows(t, dbURL, o.ID)["vuln_dirty"], "0 rows")
		})
	}
	before := map[string]map[string]string{initech.Name: storetest.OrgRows(t, dbURL, initech.ID), globex.Name: storetest.OrgRows(t, dbURL, globex.ID)}
	form := func() url.Values {
		id := initechObjects
		return url.Values{"name": {"x"}, "endpointIds": {id["endpoints"]}, "machineIds": {id["endpoints"]}, "groupId": {id["groups"]},
			"scriptId": {id["scripts"]}, "script": {id["scripts"]}, "role": {id["roles"]}, "org": {initech.ID}, "to": {initech.ID + "/" + id["roles"]},
			"targetMode": {"group"}, "actionType": {"REBOOT"}}
	}
	aimed := 0
	for _, route := range consoleWrites(e) {
		_, pattern, _ := strings.Cut(route, " ")
		paths := aimedAt(t, pattern, initechObjects, initech.ID)
		for _, p := range paths {
			b.get("/console/")
			code, loc, _ := b.post(p, form())
			kind, text := b.takeFlash()
			switch {
			case code >= 400 && code < 500:
			case code == http.StatusSeeOther && kind == "error":
			default:
				t.Errorf("Acme: POST %s (Initech's) answered %d %s %s %q, want a refusal", p, code, loc, kind, text)
			}
			aimed++
		}
		if paths == nil {
			b.get("/console/")
			if code, _, _ := b.post(pattern, form()); code >= 500 {
				t.Errorf("Acme: POST %s with Initech's ids answered %d", pattern, code)
			}
			b.takeFlash()
		}
	}
	if aimed < 30 {
		t.Errorf("%d writes aimed at Initech's objects, want every one of the route table", aimed)
	}
	for name, rows := range before {
		id := map[string]string{initech.Name: initech.ID, globex.Name: globex.ID}[name]
		after := storetest.OrgRows(t, dbURL, id)
		for _, table := range slicesOfKeys(after) {
			if after[table] != rows[table] {
				t.Errorf("Acme's writes changed %s's %s: %s, were %s", name, table, after[table], rows[table])
			}
		}
	}
	if a, _ := e.Store.ListAudit(ctx, acme.ID, store.AuditFilter{Actor: "user:ann@example.com"}); len(a) == 0 {
		t.Error("none of Acme's writes reached Acme: the walk posted nothing that works")
	}
}
