package ctl_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/ctl"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/version"
	"github.com/patchd/patchd/sim"
)

// counting counts requests per "METHOD path" on the way to the server.
type counting struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[req.Method+" "+req.URL.Path]++
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

func (c *counting) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

func (c *counting) reset() {
	c.mu.Lock()
	c.n = map[string]int{}
	c.mu.Unlock()
}

// harness runs patchctl against one server with its own config folder.
type harness struct {
	t        *testing.T
	env      *apitest.Env
	dir      string
	vars     map[string]string
	http     *http.Client
	requests *counting
	terminal bool
	// typing: stdin is a terminal (someone answers the questions).
	typing bool
}

type result struct {
	stdout, stderr string
	code           int
}

func newHarness(t *testing.T, e *apitest.Env, url string) *harness {
	h := &harness{t: t, env: e, dir: t.TempDir(), vars: map[string]string{}}
	h.requests = &counting{next: http.DefaultTransport, n: map[string]int{}}
	if e != nil {
		h.requests.next = e.HTTPClient.Transport
	}
	h.http = &http.Client{Transport: h.requests, Timeout: time.Minute}
	_ = url
	return h
}

func (h *harness) run(stdin string, args ...string) result {
	h.t.Helper()
	var out, errb bytes.Buffer
	in := strings.NewReader(stdin)
	stdio := ctl.IO{
		Stdin: in, Stdout: &out, Stderr: &errb, HTTPClient: h.http,
		Getenv: func(k string) string {
			if k == "PATCHCTL_CONFIG_DIR" {
				return h.dir
			}
			return h.vars[k]
		},
		IsTerminal: func(stream any) bool {
			return h.terminal && (stream == any(&out) || stream == any(&errb)) || h.typing && stream == any(in)
		},
	}
	code := ctl.Run(context.Background(), args, stdio)
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// ok runs patchctl and fails the test unless it exits 0.
func (h *harness) ok(args ...string) string {
	h.t.Helper()
	r := h.run("", args...)
	if r.code != 0 {
		h.t.Fatalf("patchctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// okJSON runs patchctl with -o json and decodes its output into v.
func (h *harness) okJSON(v any, args ...string) {
	h.t.Helper()
	out := h.ok(append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		h.t.Fatalf("patchctl %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// fail runs patchctl and checks its exit code and that stderr holds want.
func (h *harness) fail(code int, want string, args ...string) result {
	h.t.Helper()
	r := h.run("", args...)
	if r.code != code || !strings.Contains(r.stderr, want) {
		h.t.Fatalf("patchctl %s: exit %d, want %d with %q\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, want, r.stdout, r.stderr)
	}
	return r
}

// login logs in with a new credential holding perms.
func (h *harness) login(perms perm.Set, extra ...string) string {
	h.t.Helper()
	cred := h.env.Credential(h.env.Org, perms)
	args := append([]string{"login", "--server", h.env.URL, "--client-id", cred.ClientID, "--client-secret-stdin"}, extra...)
	r := h.run(cred.ClientSecret+"\n", args...)
	if r.code != 0 {
		h.t.Fatalf("login: exit %d: %s", r.code, r.stderr)
	}
	return cred.ClientID
}

// startFleet enrolls n simulated agents that run commands a thousand times
// faster than real ones, until the test ends.
func startFleet(t *testing.T, e *apitest.Env, n int) []string {
	t.Helper()
	f, err := sim.New(sim.Config{Server: e.URL, EnrollToken: e.EnrollToken, Endpoints: n, Speed: 1000, Seed: 7, Wait: -1, Checkin: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := f.Enroll(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return f.EndpointIDs()
}

func TestLoginProfilesAndFiles(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	clientID := h.login(perm.All, "--default-output", "json")

	var cfg struct {
		Current  string
		Profiles map[string]struct{ Server, ClientID, Output string }
	}
	b, err := os.ReadFile(filepath.Join(h.dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &cfg)
	if p := cfg.Profiles["default"]; cfg.Current != "default" || p.Server != e.URL || p.ClientID != clientID || p.Output != "json" {
		t.Fatalf("config.json: %s", b)
	}
	if strings.Contains(string(b), "pds_") {
		t.Fatalf("the secret is in config.json: %s", b)
	}
	for _, name := range []string{"default.secret", "default.token"} {
		st, err := os.Stat(filepath.Join(h.dir, name))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v", name, err, st.Mode())
		}
	}
	// The profile's default output is JSON; the cached token is used (no
	// token request).
	h.requests.reset()
	var eps []apiv1.Endpoint
	if err := json.Unmarshal([]byte(h.ok("endpoints", "list")), &eps); err != nil {
		t.Fatal(err)
	}
	if n := h.requests.count("POST /api/oauth/token"); n != 0 {
		t.Errorf("%d token requests with a cached token", n)
	}

	// A second profile from PATCHCTL_CLIENT_SECRET becomes the current one;
	// --profile picks the first again.
	cred := e.Credential(e.Org, perm.ReadOnly)
	h.vars["PATCHCTL_CLIENT_SECRET"] = cred.ClientSecret
	h.ok("login", "--profile", "ro", "--server", e.URL+"/", "--client-id", cred.ClientID)
	delete(h.vars, "PATCHCTL_CLIENT_SECRET")
	if out := h.ok("endpoints", "list"); !strings.HasPrefix(out, "ID ") {
		t.Errorf("profile ro (table output) printed %q", out)
	}
	h.fail(ctl.ExitAPI, "insufficient_scope", "endpoints", "rename", "x", "y")
	h.ok("endpoints", "list", "--profile", "default")
	h.vars["PATCHCTL_PROFILE"] = "default"
	if out := h.ok("endpoints", "list"); !strings.HasPrefix(out, "[") {
		t.Errorf("PATCHCTL_PROFILE=default printed %q", out)
	}
	delete(h.vars, "PATCHCTL_PROFILE")

	// Environment only, no profile.
	h2 := newHarness(t, e, e.URL)
	h2.vars = map[string]string{"PATCHCTL_SERVER": e.URL, "PATCHCTL_CLIENT_ID": cred.ClientID, "PATCHCTL_CLIENT_SECRET": cred.ClientSecret}
	h2.ok("groups", "list")
	h2.vars["PATCHCTL_CLIENT_SECRET"] = ""
	h2.fail(ctl.ExitUsage, "no client secret", "groups", "list")
	h2.vars = map[string]string{}
	h2.fail(ctl.ExitUsage, "not logged in", "groups", "list")

	// Wrong secret, bad address, no secret at all.
	r := h.run("wrong\n", "login", "--server", e.URL, "--client-id", cred.ClientID, "--client-secret-stdin")
	if r.code != ctl.ExitAPI || !strings.Contains(r.stderr, "invalid_client") || !strings.Contains(r.stderr, "HTTP 401") {
		t.Errorf("wrong secret: exit %d: %s", r.code, r.stderr)
	}
	h.fail(ctl.ExitUsage, "bad server address", "login", "--server", "ftp://x", "--client-id", "c", "--client-secret-stdin")
	h.fail(ctl.ExitUsage, "no client secret", "login", "--server", e.URL, "--client-id", "c")
	h.fail(ctl.ExitUsage, "bad profile name", "login", "--profile", "../x", "--server", e.URL, "--client-id", "c")

	h.ok("logout", "--profile", "ro")
	if _, err := os.Stat(filepath.Join(h.dir, "ro.secret")); !os.IsNotExist(err) {
		t.Errorf("logout left ro.secret: %v", err)
	}
	h.fail(ctl.ExitUsage, "no profile", "logout", "--profile", "ro")
}

func TestTokenExpiryAndRenewal(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	clientID := h.login(perm.All)
	tokenPath := filepath.Join(h.dir, "default.token")
	readToken := func() (tc struct {
		Server, ClientID, AccessToken string
		ExpiresAt                     time.Time
	}) {
		b, err := os.ReadFile(tokenPath)
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(b, &tc)
		return tc
	}
	writeToken := func(token string, expires time.Time) {
		b, _ := json.Marshal(map[string]any{"server": e.URL, "clientId": clientID, "accessToken": token, "expiresAt": expires})
		if err := os.WriteFile(tokenPath, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	first := readToken()
	if first.AccessToken == "" || first.ClientID != clientID || time.Until(first.ExpiresAt) < 50*time.Minute {
		t.Fatalf("token cache after login: %+v", first)
	}

	// A token the server issued but which has expired there, while the
	// cache still believes it valid: the call answers 401, patchctl gets a
	// new token, retries and saves it.
	cred, err := e.Store.CredentialByClientID(context.Background(), clientID)
	if err != nil {
		t.Fatal(err)
	}
	expired := "pdt_expiredfortest"
	sum := sha256.Sum256([]byte(expired))
	if err := e.Store.InsertAccessToken(context.Background(), hex.EncodeToString(sum[:]), cred, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	writeToken(expired, time.Now().Add(30*time.Minute))
	h.requests.reset()
	h.ok("endpoints", "list")
	if h.requests.count("GET /api/v1/endpoints") != 2 || h.requests.count("POST /api/oauth/token") != 1 {
		t.Errorf("renewal on 401: requests %v", h.requests.n)
	}
	renewed := readToken()
	if renewed.AccessToken == expired || renewed.AccessToken == "" {
		t.Fatalf("the renewed token was not saved: %+v", renewed)
	}

	// The next call reuses the renewed token.
	h.requests.reset()
	h.ok("groups", "list")
	if h.requests.count("POST /api/oauth/token") != 0 {
		t.Errorf("the saved token was not reused: %v", h.requests.n)
	}

	// A cached token past its expiry is not sent: a new one is fetched first.
	writeToken(renewed.AccessToken, time.Now().Add(-time.Second))
	h.requests.reset()
	h.ok("groups", "list")
	if h.requests.count("POST /api/oauth/token") != 1 || h.requests.count("GET /api/v1/groups") != 1 {
		t.Errorf("expired cache: requests %v", h.requests.n)
	}

	// A token of another server or client id is ignored.
	writeToken("pdt_other", time.Now().Add(time.Hour))
	b, _ := json.Marshal(map[string]any{"server": "http://elsewhere", "clientId": clientID, "accessToken": "pdt_other", "expiresAt": time.Now().Add(time.Hour)})
	os.WriteFile(tokenPath, b, 0o600)
	h.requests.reset()
	h.ok("groups", "list")
	if h.requests.count("POST /api/oauth/token") != 1 || h.requests.count("GET /api/v1/groups") != 1 {
		t.Errorf("foreign cache: requests %v", h.requests.n)
	}

	// Credentials disabled on the server: renewal fails with the API error.
	sum = sha256.Sum256([]byte("pdt_expired2"))
	e.Store.InsertAccessToken(context.Background(), hex.EncodeToString(sum[:]), cred, time.Now().Add(-time.Minute))
	writeToken("pdt_expired2", time.Now().Add(time.Hour))
	h.vars["PATCHCTL_CLIENT_SECRET"] = "pds_wrong"
	h.fail(ctl.ExitAPI, "invalid_client", "groups", "list")
}

func decodeCSV(t *testing.T, out string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, out)
	}
	return rows
}

func TestInventoryCommandsAndPaging(t *testing.T) {
	e := apitest.New(t)
	ids := startFleet(t, e, 5)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	// Every endpoint over three pages of two.
	h.requests.reset()
	var eps []apiv1.Endpoint
	h.okJSON(&eps, "endpoints", "list", "--page-size", "2")
	if len(eps) != 5 || h.requests.count("GET /api/v1/endpoints") != 3 {
		t.Fatalf("%d endpoints in %d requests", len(eps), h.requests.count("GET /api/v1/endpoints"))
	}
	seen := map[string]bool{}
	for _, ep := range eps {
		seen[ep.ID] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("endpoint %s missing from the walk", id)
		}
	}
	// --limit stops early, in as few requests as it needs.
	h.requests.reset()
	h.okJSON(&eps, "endpoints", "list", "--page-size", "2", "--limit", "3")
	if len(eps) != 3 || h.requests.count("GET /api/v1/endpoints") != 2 {
		t.Errorf("--limit 3: %d endpoints in %d requests", len(eps), h.requests.count("GET /api/v1/endpoints"))
	}
	rows := decodeCSV(t, h.ok("endpoints", "list", "-o", "csv"))
	if len(rows) != 6 || rows[0][0] != "ID" || rows[0][4] != "STATUS" {
		t.Errorf("CSV: %v", rows)
	}
	table := h.ok("endpoints", "list")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "ID") || strings.Contains(table, "\x1b[") {
		t.Errorf("table:\n%s", table)
	}
	// Columns are aligned: STATUS starts at the same offset on every line.
	at := strings.Index(lines[0], "STATUS")
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l[at:], "connected") && !strings.HasPrefix(l[at:], "disconnected") {
			t.Errorf("misaligned line %q (STATUS at %d)", l, at)
		}
	}
	h.okJSON(&eps, "endpoints", "list", "-q", eps[0].Hostname)
	if len(eps) != 1 {
		t.Errorf("-q: %d endpoints", len(eps))
	}

	// get, rename, comment, set-attr.
	id := ids[0]
	// scan: the request waits for the agent's check-in.
	if out := h.ok("endpoints", "scan", id); !strings.Contains(out, "Scan of endpoint "+id+" requested") {
		t.Errorf("endpoints scan: %q", out)
	}
	// The simulated agent checks in every second and may have taken the
	// request already: the audit trail holds it either way.
	if audit, err := e.Admin.ListAudit(context.Background(), client.AuditQuery{Action: "endpoint.scan"}); err != nil || audit.Total != 1 || audit.Items[0].TargetID == nil || *audit.Items[0].TargetID != id {
		t.Errorf("endpoints scan recorded no request: %+v %v", audit, err)
	}
	h.fail(ctl.ExitAPI, "not_found", "endpoints", "scan", "no-such-endpoint")
	h.ok("endpoints", "rename", id, "Front desk")
	h.ok("endpoints", "comment", id, "lobby, ground floor")
	h.ok("endpoints", "set-attr", id, "attr1=Berlin", "attr2=Sales")
	var d apiv1.EndpointDetail
	h.okJSON(&d, "endpoints", "get", id)
	if d.Name != "Front desk" || d.Comment == nil || *d.Comment != "lobby, ground floor" || d.Attributes["attr1"] != "Berlin" || d.Attributes["attr2"] != "Sales" {
		t.Errorf("after the changes: name %q comment %v attributes %v", d.Name, d.Comment, d.Attributes)
	}
	if len(d.Software) == 0 {
		t.Errorf("the simulated endpoint has no software")
	}
	out := h.ok("endpoints", "get", id)
	for _, want := range []string{"Name:", "Front desk", "attr1:", "Berlin", "Software (", "Channel:", "HTTPS or loopback"} {
		if !strings.Contains(out, want) {
			t.Errorf("endpoints get table lacks %q:\n%s", want, out)
		}
	}
	h.fail(ctl.ExitAPI, "validation_failed", "endpoints", "set-attr", id, "attr99=x")
	h.fail(ctl.ExitUsage, "attrN=VALUE", "endpoints", "set-attr", id, "novalue")
	h.ok("endpoints", "rename", id, "")
	h.okJSON(&d, "endpoints", "get", id)
	if d.Name != d.Hostname {
		t.Errorf("an empty name should give back the hostname: %q vs %q", d.Name, d.Hostname)
	}

	// Software over several pages.
	var sw []apiv1.SoftwareRow
	h.okJSON(&sw, "software", "list")
	h.requests.reset()
	var paged []apiv1.SoftwareRow
	h.okJSON(&paged, "software", "list", "--page-size", "7")
	if len(sw) < 15 || len(paged) != len(sw) || h.requests.count("GET /api/v1/software") != (len(sw)+6)/7 {
		t.Errorf("software: %d rows, %d paged in %d requests", len(sw), len(paged), h.requests.count("GET /api/v1/software"))
	}
	var one []apiv1.SoftwareRow
	h.okJSON(&one, "software", "list", "--endpoint", id, "-q", sw[0].Name[:3])
	for _, r := range one {
		if r.EndpointID != id {
			t.Errorf("--endpoint %s gave a row of %s", id, r.EndpointID)
		}
	}

	// Software by title (a patchd addition): every title once, by name,
	// with endpoint counts that add up over its versions.
	var titles []apiv1.SoftwareTitle
	h.okJSON(&titles, "software", "titles", "--sort", "name", "--page-size", "2")
	names := map[string]bool{}
	for _, r := range sw {
		names[r.Name] = true
	}
	if len(titles) != len(names) {
		t.Errorf("software titles: %d titles, %d names in the software list", len(titles), len(names))
	}
	for i, ti := range titles {
		sum := 0
		for _, v := range ti.Versions {
			sum += v.Hosts
		}
		if !names[ti.Name] || ti.Hosts < 1 || sum < ti.Hosts || (i > 0 && strings.ToLower(titles[i-1].Name) > strings.ToLower(ti.Name)) {
			t.Errorf("software titles: %+v", ti)
		}
	}
	titleTable := h.ok("software", "titles", "-q", titles[0].Name)
	if !strings.Contains(titleTable, "HOSTS") || !strings.Contains(titleTable, titles[0].Name) {
		t.Errorf("software titles table:\n%s", titleTable)
	}
	h.fail(ctl.ExitUsage, "--sort", "software", "titles", "--sort", "installs")

	// Updates: list, filters, approve / decline / reset.
	var ups []apiv1.Update
	h.okJSON(&ups, "updates", "list", "--page-size", "3")
	if len(ups) < 4 {
		t.Fatalf("the fleet misses only %d updates", len(ups))
	}
	var os_ []apiv1.Update
	h.okJSON(&os_, "updates", "list", "--source", "THIRD_PARTY", "--endpoint", ups[0].EndpointID)
	for _, u := range os_ {
		if u.EndpointID != ups[0].EndpointID || u.Source != "Applications" {
			t.Errorf("filtered update %+v", u)
		}
	}
	h.fail(ctl.ExitUsage, "--severity", "updates", "list", "--severity", "Urgent")
	key := ups[0].Key
	var res apiv1.ApprovalResult
	h.okJSON(&res, "updates", "approve", key)
	if res.Status != "APPROVED" || res.Count != 1 {
		t.Errorf("approve: %+v", res)
	}
	h.okJSON(&ups, "updates", "list", "--endpoint", ups[0].EndpointID)
	for _, u := range ups {
		if u.Key == key && u.Approval != "APPROVED" {
			t.Errorf("update %s is %s after approve", key, u.Approval)
		}
	}
	// Keys from stdin, as `updates list -o csv` writes them.
	listed := h.ok("updates", "list", "-o", "csv", "--endpoint", ups[0].EndpointID)
	r := h.run(listed, "updates", "decline", "-")
	if r.code != 0 || !strings.Contains(r.stdout, "DECLINED") {
		t.Errorf("decline from stdin: %d %s %s", r.code, r.stdout, r.stderr)
	}
	h.okJSON(&res, "updates", "reset", key)
	if res.Status != "NEW" || res.Changed != 1 {
		t.Errorf("reset: %+v", res)
	}
	h.fail(ctl.ExitUsage, "update KEY", "updates", "approve")
	if r := h.run("KEY,ENDPOINT\n", "updates", "approve", "-"); r.code != 0 || !strings.Contains(r.stdout, "nothing changed") {
		t.Errorf("approve - with no keys: %d %s %s", r.code, r.stdout, r.stderr)
	}

	// Vulnerabilities: the sim fleet's software may match nothing without
	// feeds; the command still walks the list.
	h.requests.reset()
	var vulns []apiv1.Vulnerability
	h.okJSON(&vulns, "vulns", "list", "--min-cvss", "7", "--kev")
	if h.requests.count("GET /api/v1/vulnerabilities") != 1 {
		t.Errorf("vulns list: %v", h.requests.n)
	}
	h.fail(ctl.ExitUsage, "--min-cvss", "vulns", "list", "--min-cvss", "eleven")

	// Remove.
	h.ok("endpoints", "remove", ids[4])
	h.fail(ctl.ExitAPI, "not_found", "endpoints", "get", ids[4])
}

func TestGroups(t *testing.T) {
	e := apitest.New(t)
	ids := startFleet(t, e, 3)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	var created apiv1.GroupResult
	h.okJSON(&created, "groups", "create", "--name", "Pilot", "--member", ids[0]+","+ids[1])
	var dyn apiv1.GroupResult
	h.okJSON(&dyn, "groups", "create", "--name", "Everything", "--rule", "type:notEquals:toaster", "--rule", "platform:notEquals:plan9", "--match-all")
	var groups []apiv1.Group
	h.okJSON(&groups, "groups", "list")
	var builtin string
	found := map[string]apiv1.Group{}
	for _, g := range groups {
		found[g.ID] = g
		if g.System {
			builtin = g.ID
		}
	}
	if g := found[created.Group.ID]; g.Members != 2 || g.Kind != "STATIC" {
		t.Errorf("static group: %+v", g)
	}
	if g := found[dyn.Group.ID]; g.Kind != "DYNAMIC" || len(g.Rules) != 2 || !g.MatchAll {
		t.Errorf("dynamic group: %+v", g)
	}
	h.ok("groups", "update", created.Group.ID, "--name", "Pilot ring", "--member", ids[2])
	h.okJSON(&groups, "groups", "list")
	for _, g := range groups {
		if g.ID == created.Group.ID && (g.Name != "Pilot ring" || g.Members != 1) {
			t.Errorf("after update: %+v", g)
		}
	}
	// A body from a file, flags on top.
	file := filepath.Join(t.TempDir(), "g.json")
	os.WriteFile(file, []byte(`{"name":"From file","rules":[{"field":"platform","op":"equals","value":"linux"}],"offlineAlertMinutes":30}`), 0o644)
	h.ok("groups", "create", "-f", file, "--description", "made by a test")
	h.fail(ctl.ExitUsage, "unknown field", "groups", "create", "-f", writeTemp(t, `{"nmae":"typo"}`))
	h.fail(ctl.ExitUsage, "--name", "groups", "create")
	h.fail(ctl.ExitUsage, "nothing to change", "groups", "update", created.Group.ID)
	h.fail(ctl.ExitUsage, "FIELD:OP", "groups", "create", "--name", "x", "--rule", "justfield")

	table := h.ok("groups", "list")
	if !strings.Contains(table, "Pilot ring") || !strings.Contains(table, `platform notEquals "plan9"`) {
		t.Errorf("groups table:\n%s", table)
	}
	r := h.fail(ctl.ExitAPI, "builtin_group", "groups", "delete", builtin)
	if !strings.Contains(r.stderr, "HTTP 409") {
		t.Errorf("409 not shown: %s", r.stderr)
	}
	h.fail(ctl.ExitAPI, "validation_failed", "groups", "create", "--name", "bad", "--rule", "hostname:sounds-like:x")
	h.ok("groups", "delete", created.Group.ID)
	h.fail(ctl.ExitAPI, "not_found", "groups", "delete", created.Group.ID)

	// The examples of docs/patchctl.md.
	var web apiv1.GroupResult
	h.okJSON(&web, "groups", "create", "--name", "Web servers", "--rule", "hostname:startsWith:web", "--rule", "type:equals:server", "--match-all")
	tuesday := `{"name": "Patch Tuesday", "actionType": "DEPLOY_UPDATES", "targetMode": "group", "groupId": "` + web.Group.ID + `",
 "scheduleKind": "RECURRING", "freq": "PATCH_TUESDAY", "offsetDays": 2, "atTime": "22:00", "windowMinutes": 180,
 "payload": {"mode": "all"}}`
	h.ok("automations", "create", "-f", writeTemp(t, tuesday))
	r = h.run(h.ok("updates", "list", "--severity", "Critical", "-o", "csv"), "updates", "approve", "-")
	if r.code != 0 {
		t.Errorf("approve critical updates from stdin: %d %s", r.code, r.stderr)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestActionsAutomationsAndRuns(t *testing.T) {
	e := apitest.New(t)
	ids := startFleet(t, e, 3)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	// A one-off script, followed to its end by the simulated agents.
	r := h.run("", "actions", "run", "--type", "RUN_SCRIPT", "--endpoints", ids[0]+","+ids[1], "--script", "uptime", "--language", "bash",
		"--label", "uptime check", "--watch", "--interval", "100ms", "--timeout", "1m")
	if r.code != 0 || strings.Count(r.stdout, "SUCCESS") < 2 || !strings.Contains(r.stdout, "2 command(s): 2 SUCCESS") {
		t.Fatalf("actions run --watch: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var started apiv1.RunStarted
	h.okJSON(&started, "actions", "run", "--type", "REBOOT", "--endpoints", ids[2], "--payload", `{"message":"bye","timeoutSeconds":60}`)
	if started.RunID == "" || started.Queued != 1 {
		t.Fatalf("actions run: %+v", started)
	}
	// --fix-cve and --fix-kev: the server pairs updates with CVEs; this fleet has no CVE data, so
	// nothing fixes them: 422, nothing queued. Used with another type: a usage error.
	if r := h.run("", "actions", "run", "--type", "DEPLOY_UPDATES", "--endpoints", ids[0], "--fix-cve", "CVE-2024-4671", "--fix-kev"); r.code == 0 ||
		!strings.Contains(r.stderr, "422") {
		t.Errorf("actions run --fix-cve: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := h.run("", "actions", "run", "--type", "REBOOT", "--endpoints", ids[0], "--fix-kev"); r.code == 0 || !strings.Contains(r.stderr, "--fix-kev") {
		t.Errorf("actions run REBOOT --fix-kev: exit %d\n%s", r.code, r.stderr)
	}
	if r := h.run("", "actions", "run", "--type", "DEPLOY_UPDATES", "--endpoints", ids[0], "--fix-min-epss", "0.5"); r.code == 0 ||
		!strings.Contains(r.stderr, "422") {
		t.Errorf("actions run --fix-min-epss: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := h.run("", "actions", "run", "--type", "DEPLOY_UPDATES", "--endpoints", ids[0], "--fix-min-cvss", "11"); r.code == 0 ||
		!strings.Contains(r.stderr, "payload.filters.minCvss") {
		t.Errorf("actions run --fix-min-cvss 11: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var cmds apiv1.List[apiv1.RunCommand]
	h.okJSON(&cmds, "runs", "get", started.RunID, "--watch", "--interval", "100ms", "--timeout", "1m")
	if cmds.Total != 1 || cmds.Items[0].Status != "SUCCESS" || cmds.Items[0].MachineID != ids[2] {
		t.Errorf("runs get --watch: %+v", cmds)
	}
	rows := decodeCSV(t, h.ok("runs", "get", started.RunID, "-o", "csv"))
	if len(rows) != 2 || rows[1][1] != "SUCCESS" {
		t.Errorf("runs get csv: %v", rows)
	}
	var runs []apiv1.Run
	h.okJSON(&runs, "runs", "list", "--limit", "10")
	if len(runs) != 2 || runs[0].ID != started.RunID {
		t.Errorf("runs list: %+v", runs)
	}
	h.okJSON(&runs, "runs", "list", "--endpoint", ids[2])
	if len(runs) != 1 {
		t.Errorf("runs list --endpoint: %d runs", len(runs))
	}
	h.fail(ctl.ExitAPI, "not_found", "actions", "run", "--type", "REBOOT", "--endpoints", "nope")
	h.fail(ctl.ExitAPI, "validation_failed", "actions", "run", "--type", "UNINSTALL_SOFTWARE", "--endpoints", ids[0], "--payload", `{}`)
	h.fail(ctl.ExitUsage, "--type", "actions", "run", "--type", "FLY", "--endpoints", ids[0])
	h.fail(ctl.ExitUsage, "--endpoints", "actions", "run", "--type", "REBOOT")
	h.fail(ctl.ExitUsage, "not valid JSON", "actions", "run", "--type", "REBOOT", "--endpoints", ids[0], "--payload", "{")
	h.fail(ctl.ExitAPI, "not_found", "runs", "get", "nope")

	// Automations: create NOW and watch, then the rest of the verbs.
	body := map[string]any{"name": "Nightly check", "actionType": "RUN_SCRIPT", "targetMode": "endpoints", "endpointIds": ids,
		"scheduleKind": "NOW", "payload": map[string]string{"script": "echo hi", "language": "bash"}}
	b, _ := json.Marshal(body)
	file := writeTemp(t, string(b))
	r = h.run("", "automations", "create", "-f", file, "--watch", "--interval", "100ms", "--timeout", "1m")
	if r.code != 0 || !strings.Contains(r.stdout, "3 command(s): 3 SUCCESS") || !strings.Contains(r.stdout, "Automation \"Nightly check\" created") {
		t.Fatalf("automations create --watch: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var list []apiv1.Automation
	h.okJSON(&list, "automations", "list")
	if len(list) != 1 || list[0].Name != "Nightly check" {
		t.Fatalf("automations list: %+v", list)
	}
	aid := list[0].ID
	var a apiv1.Automation
	h.okJSON(&a, "automations", "get", aid)
	if a.Action != "RUN_SCRIPT" || !strings.Contains(string(a.Payload), "echo hi") {
		t.Errorf("automations get: %+v", a)
	}
	if out := h.ok("automations", "get", aid); !strings.Contains(out, "Payload:") || !strings.Contains(out, "echo hi") {
		t.Errorf("automations get table:\n%s", out)
	}
	h.ok("automations", "update", aid, "--name", "Nightly uptime")
	h.ok("automations", "disable", aid)
	h.okJSON(&a, "automations", "get", aid)
	if a.Name != "Nightly uptime" || a.Enabled {
		t.Errorf("after update and disable: %q enabled=%v", a.Name, a.Enabled)
	}
	h.ok("automations", "enable", aid)
	// A full replace from a file holding actionType: a daily schedule.
	body = map[string]any{"name": "Daily reboot", "actionType": "REBOOT", "targetMode": "all", "scheduleKind": "RECURRING",
		"freq": "DAILY", "atTime": "03:00", "payload": map[string]any{"message": "night", "timeoutSeconds": 300}}
	b, _ = json.Marshal(body)
	h.ok("automations", "update", aid, "-f", writeTemp(t, string(b)))
	h.okJSON(&a, "automations", "get", aid)
	if a.Action != "REBOOT" || a.Freq == nil || *a.Freq != "DAILY" || !a.Enabled {
		t.Errorf("after a full replace: %+v", a)
	}
	h.fail(ctl.ExitAPI, "validation_failed", "automations", "update", aid, "-f", writeTemp(t, `{"name":"x","actionType":"FLY"}`))
	var run apiv1.RunStarted
	h.okJSON(&run, "automations", "run", aid)
	if run.RunID == "" || run.Queued != 3 {
		t.Errorf("automations run: %+v", run)
	}
	h.okJSON(&runs, "runs", "list", "--automation", aid)
	if len(runs) != 2 {
		t.Errorf("runs of the automation: %d", len(runs))
	}
	h.ok("automations", "delete", aid)
	h.fail(ctl.ExitAPI, "not_found", "automations", "get", aid)
	h.fail(ctl.ExitUsage, "-f", "automations", "create")
	h.fail(ctl.ExitAPI, "validation_failed", "automations", "create", "-f", writeTemp(t, `{"name":"x","actionType":"REBOOT","targetMode":"all"}`))
}

func TestFailedRunExitCode(t *testing.T) {
	e := apitest.New(t)
	f, err := sim.New(sim.Config{Server: e.URL, EnrollToken: e.EnrollToken, Endpoints: 1, Speed: 1000, Seed: 3, Wait: -1, Checkin: time.Second, FailureRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	if err := f.Enroll(ctx); err != nil {
		t.Fatal(err)
	}
	go func() { f.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	h := newHarness(t, e, e.URL)
	h.login(perm.All)
	r := h.run("", "actions", "run", "--type", "RUN_SCRIPT", "--endpoints", f.EndpointIDs()[0], "--script", "false", "--language", "bash",
		"--watch", "--interval", "100ms")
	if r.code != ctl.ExitRunFailed || !strings.Contains(r.stdout, "FAILED") || !strings.Contains(r.stderr, "1 failed command") {
		t.Errorf("failed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestErrorClasses(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	// Usage: exit 2 with the command's synopsis.
	for _, args := range [][]string{
		{"endpoints", "fly"},
		{"nothing"},
		{"endpoints", "get"},
		{"endpoints", "get", "a", "b"},
		{"endpoints", "list", "--nope"},
		{"endpoints", "list", "-o", "yaml"},
		{"endpoints", "list", "--color", "sometimes"},
		{"endpoints", "list", "--page-size", "501"},
		{"endpoints", "list", "--limit", "-1"},
		{"runs", "list", "--limit", "501"},
		{"completion", "powershell"},
		{"alerts", "create", "--name", "x", "--trigger", "SOMETIMES"},
	} {
		if r := h.run("", args...); r.code != ctl.ExitUsage || !strings.Contains(r.stderr, "patchctl:") {
			t.Errorf("%q: exit %d, stderr %s", args, r.code, r.stderr)
		}
	}
	if r := h.run(""); r.code != ctl.ExitUsage || !strings.Contains(r.stderr, "Exit codes:") {
		t.Errorf("no command: exit %d", r.code)
	}
	r := h.fail(ctl.ExitUsage, "usage: patchctl endpoints get ID", "endpoints", "get")
	_ = r

	// API errors: exit 3 with the code and description.
	r = h.fail(ctl.ExitAPI, "not_found", "endpoints", "get", "nope")
	if !strings.Contains(r.stderr, "HTTP 404") {
		t.Errorf("404: %s", r.stderr)
	}
	h.fail(ctl.ExitAPI, "not_found", "automations", "delete", "nope")
	r = h.fail(ctl.ExitAPI, "validation_failed", "groups", "create", "--name", "x", "--rule", "hostname:fly:y")
	if !strings.Contains(r.stderr, "rules[0].op") {
		t.Errorf("validation details not printed: %s", r.stderr)
	}
	ro := newHarness(t, e, e.URL)
	ro.login(perm.ReadOnly)
	ro.fail(ctl.ExitAPI, "insufficient_scope", "groups", "delete", "x")
	ro.fail(ctl.ExitAPI, "HTTP 403", "updates", "approve", "k")

	// Network errors: exit 4.
	down := newHarness(t, nil, "")
	down.vars = map[string]string{"PATCHCTL_SERVER": "http://127.0.0.1:1", "PATCHCTL_CLIENT_ID": "c", "PATCHCTL_CLIENT_SECRET": "s"}
	down.fail(ctl.ExitNetwork, "cannot reach the server", "endpoints", "list")
	down.fail(ctl.ExitNetwork, "cannot reach the server", "login", "--server", "http://127.0.0.1:1", "--client-id", "c")

	// Help and -h exit 0.
	if out := h.ok("help", "runs", "get"); !strings.Contains(out, "--watch") {
		t.Errorf("help runs get:\n%s", out)
	}
	if out := h.ok("actions", "run", "-h"); !strings.Contains(out, "--endpoints IDS") {
		t.Errorf("actions run -h:\n%s", out)
	}
	if out := h.ok("--help"); !strings.Contains(out, "4  network error") {
		t.Errorf("--help:\n%s", out)
	}
}

func TestColourAndProgressOnATerminal(t *testing.T) {
	e := apitest.New(t)
	startFleet(t, e, 3)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)
	h.terminal = true
	r := h.run("", "endpoints", "list", "--page-size", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "\x1b[1mID\x1b[0m") || !strings.Contains(r.stdout, "\x1b[32mconnected\x1b[0m") {
		t.Errorf("no colour on a terminal:\n%q", r.stdout)
	}
	if !strings.Contains(r.stderr, "endpoints: 1 of 3") || !strings.Contains(r.stderr, "endpoints: 2 of 3") || !strings.HasSuffix(r.stderr, "\r\x1b[K") {
		t.Errorf("progress: %q", r.stderr)
	}
	h.vars["NO_COLOR"] = "1"
	if r := h.run("", "endpoints", "list"); strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("NO_COLOR ignored")
	}
	if r := h.run("", "endpoints", "list", "--color", "always"); !strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("--color always ignored")
	}
	h.terminal = false
	if r := h.run("", "endpoints", "list", "--page-size", "1"); strings.Contains(r.stdout, "\x1b[") || r.stderr != "" {
		t.Errorf("colour or progress off a terminal: %q %q", r.stdout, r.stderr)
	}
}

func TestCompletion(t *testing.T) {
	h := newHarness(t, nil, "")
	for shell, want := range map[string]string{"bash": "complete -o default -F _patchctl patchctl", "zsh": "#compdef patchctl", "fish": "complete -c patchctl"} {
		if out := h.ok("completion", shell); !strings.Contains(out, want) || !strings.Contains(out, "__complete") {
			t.Errorf("%s completion:\n%s", shell, out)
		}
	}
	for _, c := range []struct {
		words []string
		want  []string
		not   string
	}{
		{nil, []string{"endpoints", "updates", "automations", "login", "completion", "help"}, "list"},
		{[]string{"automations"}, []string{"create", "enable", "run"}, "--watch"},
		{[]string{"runs", "get"}, []string{"--watch", "--interval", "-o", "--profile"}, "--type"},
		{[]string{"-o", "json", "updates", "list"}, []string{"--severity", "--source"}, "json"},
		{[]string{"actions", "run", "--type"}, []string{"RUN_SCRIPT", "REBOOT"}, "--type"},
		{[]string{"updates", "list", "-o"}, []string{"table", "json", "csv"}, ""},
		{[]string{"completion"}, []string{"bash", "zsh", "fish"}, ""},
	} {
		out := h.ok(append([]string{"__complete"}, c.words...)...)
		lines := strings.Split(out, "\n")
		has := map[string]bool{}
		for _, l := range lines {
			has[l] = true
		}
		for _, w := range c.want {
			if !has[w] {
				t.Errorf("__complete %q lacks %q:\n%s", c.words, w, out)
			}
		}
		if c.not != "" && has[c.not] {
			t.Errorf("__complete %q offers %q", c.words, c.not)
		}
	}
}

func TestReportsAndAlerts(t *testing.T) {
	e := apitest.New(t)
	startFleet(t, e, 3)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	var catalog []apiv1.ReportMeta
	h.okJSON(&catalog, "reports", "list")
	keys := map[string]bool{}
	for _, m := range catalog {
		keys[m.Key] = true
	}
	if len(catalog) < 50 || !keys["endpoints"] || !keys["missing-updates"] {
		t.Fatalf("reports list: %d reports", len(catalog))
	}
	var rep apiv1.Report
	h.okJSON(&rep, "reports", "get", "endpoints")
	if len(rep.Columns) == 0 || len(rep.Rows) != 3 || rep.Total != 3 {
		t.Fatalf("reports get endpoints: %d columns, %d rows, total %d", len(rep.Columns), len(rep.Rows), rep.Total)
	}
	table := h.ok("reports", "get", "endpoints")
	if !strings.Contains(table, rep.Title) || len(strings.Split(strings.TrimSpace(table), "\n")) != 2+1+3 {
		t.Errorf("report table:\n%s", table)
	}
	for _, args := range [][]string{{"reports", "get", "endpoints", "--csv"}, {"reports", "get", "endpoints", "-o", "csv"}} {
		rows := decodeCSV(t, h.ok(args...))
		if len(rows) != 4 || len(rows[0]) != len(rep.Columns) {
			t.Errorf("%q: %d rows", args, len(rows))
		}
	}
	h.fail(ctl.ExitAPI, "not_found", "reports", "get", "no-such-report")
	h.fail(ctl.ExitAPI, "not_found", "reports", "get", "no-such-report", "--csv")

	var created apiv1.AlertRuleResult
	h.okJSON(&created, "alerts", "create", "--name", "Offline too long", "--trigger", "ENDPOINT_OFFLINE", "--threshold", "30", "--email-to", "ops@example.com")
	if created.Rule.ID == "" {
		t.Fatalf("alerts create: %+v", created)
	}
	r := h.run("s3cret\n", "alerts", "create", "--name", "Big report", "--trigger", "REPORT_ROWS", "--report-key", "offline-endpoints",
		"--webhook-url", "https://127.0.0.1:9/hook", "--webhook-secret-stdin", "--retry-minutes", "45")
	if r.code != 0 {
		t.Fatalf("alerts create with webhook: %d %s", r.code, r.stderr)
	}
	rule := writeTemp(t, `{"name":"From file","trigger":"NEW_ENDPOINT","emailTo":"a@example.com"}`)
	h.ok("alerts", "create", "-f", rule, "--name", "New endpoints")
	var rules []apiv1.AlertRule
	h.okJSON(&rules, "alerts", "list")
	byName := map[string]apiv1.AlertRule{}
	for _, a := range rules {
		byName[a.Name] = a
	}
	if a := byName["Offline too long"]; a.Threshold != 30 || str(a.EmailTo) != "ops@example.com" || a.HasWebhookSecret {
		t.Errorf("email rule: %+v", a)
	}
	if a := byName["Big report"]; a.WebhookRetryMinutes != 45 || byName["Offline too long"].WebhookRetryMinutes != 0 || !a.HasWebhookSecret || str(a.ReportKey) != "offline-endpoints" || str(a.WebhookURL) != "https://127.0.0.1:9/hook" {
		t.Errorf("webhook rule: %+v", a)
	}
	if a := byName["New endpoints"]; a.Trigger != "NEW_ENDPOINT" {
		t.Errorf("rule from a file: %+v", rules)
	}
	if table := h.ok("alerts", "list"); !strings.Contains(table, "Offline too long") || strings.Contains(table, "s3cret") {
		t.Errorf("alerts table:\n%s", table)
	}
	h.fail(ctl.ExitAPI, "validation_failed", "alerts", "create", "--name", "x", "--trigger", "NEW_ENDPOINT", "--webhook-url", "http://plain.example.com/")
	h.fail(ctl.ExitUsage, "--name and --trigger", "alerts", "create", "--name", "x")
	if table := h.ok("alerts", "failed", byName["Big report"].ID); !strings.Contains(table, "ERROR") {
		t.Errorf("alerts failed table:\n%s", table)
	}
	h.fail(ctl.ExitAPI, "not_found", "alerts", "resend", byName["Big report"].ID, "no-such-delivery")
	h.fail(ctl.ExitUsage, "DELIVERY_ID", "alerts", "resend", byName["Big report"].ID)
	h.fail(ctl.ExitAPI, "webhookRetryMinutes", "alerts", "create", "--name", "x", "--trigger", "NEW_ENDPOINT", "--webhook-url", "https://127.0.0.1:9/hook",
		"--retry-minutes", "1441")
	ro := newHarness(t, e, e.URL)
	ro.login(perm.ReadOnly)
	ro.ok("alerts", "list")
	ro.fail(ctl.ExitAPI, "insufficient_scope", "alerts", "create", "--name", "x", "--trigger", "NEW_ENDPOINT", "--email-to", "a@example.com")
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TestVersion: patchctl version prints the build's version, commit and
// date, without a profile or a server.
func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	dir := t.TempDir()
	code := ctl.Run(context.Background(), []string{"version"}, ctl.IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string { return map[string]string{"PATCHCTL_CONFIG_DIR": dir, "HOME": dir}[k] }})
	if want := "patchctl " + version.Get().String() + "\n"; code != ctl.ExitOK || out.String() != want {
		t.Fatalf("patchctl version: %d %q (stderr %q), want %q", code, out.String(), errOut.String(), want)
	}
}
