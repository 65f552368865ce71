package console_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
)

// forgedFeed writes a forged feed, as an attacker would: a CVSS 10 CVE for any
// Chrome, and the real KEV CVE-2024-4671 marked Rejected (so deleted).
func forgedFeed(t *testing.T) string {
	t.Helper()
	cve := func(id, status string, cvss float64) map[string]any {
		return map[string]any{"cve": map[string]any{
			"id": id, "published": "2025-01-01T00:00:00.000", "lastModified": "2025-01-02T00:00:00.000", "vulnStatus": status,
			"descriptions": []any{map[string]any{"lang": "en", "value": "forged"}},
			"metrics": map[string]any{"cvssMetricV31": []any{map[string]any{"source": "x", "type": "Primary",
				"cvssData": map[string]any{"version": "3.1", "vectorString": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H", "baseScore": cvss, "baseSeverity": "CRITICAL"}}}},
			"configurations": []any{map[string]any{"nodes": []any{map[string]any{"operator": "OR", "negate": false,
				"cpeMatch": []any{map[string]any{"vulnerable": true, "criteria": "cpe:2.3:a:google:chrome:*:*:*:*:*:*:*:*", "versionEndExcluding": "999.0"}}}}}},
		}}
	}
	doc := map[string]any{"resultsPerPage": 2, "startIndex": 0, "totalResults": 2, "format": "NVD_CVE", "version": "2.0",
		"timestamp": "2025-11-02T00:00:00.000", "vulnerabilities": []any{cve("CVE-2099-0001", "Analyzed", 10), cve("CVE-2024-4671", "Rejected", 9.6)}}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "forged-nvd.json")
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// vulnIDs lists an organization's vulnerabilities (CVE id and KEV flag).
func vulnIDs(t *testing.T, e *apitest.Env, orgID string) []string {
	t.Helper()
	list, _, err := e.Store.ListVulnerabilities(context.Background(), store.VulnQuery{OrgID: orgID, Limit: 1000, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range list {
		id := v.CVEID
		if v.CISAKEV {
			id += "(KEV)"
		}
		out = append(out, id)
	}
	return out
}

// TestFeedsOnlyInstanceOperators: an organization's
// Administrator cannot change the feeds every organization shares (403,
// nothing stored, the other organization's results unchanged); an instance
// operator can, and the change is in the instance's Audit Trail.
func TestFeedsOnlyInstanceOperators(t *testing.T) {
	e := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = 50 * time.Millisecond })
	ctx := context.Background()
	if _, err := admin.CreateOperator(ctx, e.Store, "test", admin.InstanceActor{Actor: "test"}, e.Org.ID, "op@example.com", store.RoleAdministrator, password); err != nil {
		t.Fatal(err)
	}
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	chromeInventory(e.Enroll("acme-1", "acme-pc", "windows"), "acme-pc")

	// The operator imports the real feeds: Acme's Chrome has CVEs, one in KEV.
	op := newBrowser(t, e.URL)
	op.signIn("op@example.com")
	if _, body := op.get("/console/feeds"); !strings.Contains(body, `id="feed-upload"`) {
		t.Fatal("the operator sees no upload form")
	}
	if code, body := op.upload("/console/feeds", feedFixtures...); code != http.StatusOK || !strings.Contains(body, `id="import-result"`) {
		t.Fatalf("the operator's upload: %d\n%.1500s", code, body)
	}
	events, err := e.Store.ListInstanceEvents(ctx, store.InstanceEventFilter{Actions: []string{"vulndb.import"}})
	if err != nil || len(events) != 1 {
		t.Fatalf("instance events after the upload: %+v %v", events, err)
	}
	ev := events[0]
	if ev.Actor != "user:op@example.com" || ev.Address != "127.0.0.1" || ev.Summary["ok"] != true || ev.Summary["cves"].(float64) < 1 ||
		ev.Summary["kev"].(float64) < 1 || ev.Summary["feedVersion"].(float64) < 1 || !strings.Contains(jsonText(ev.Summary["files"]), "kev-subset.json") {
		t.Errorf("the upload's instance event: %+v", ev)
	}
	if entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "vulndb.import"}); len(entries) != 0 {
		t.Errorf("a feed change is not an organization's event: %+v", entries)
	}
	waitFor(t, "Acme's vulnerabilities", func() bool {
		return strings.Contains(strings.Join(vulnIDs(t, e, e.Org.ID), " "), "CVE-2024-4671(KEV)")
	})
	acmeBefore := vulnIDs(t, e, e.Org.ID)
	stored, _ := e.Store.CountFeeds(ctx)
	version, _ := e.Store.VulnState(ctx, store.StateFeedVersion)

	// Globex's Administrator sees the feed status but no upload form, nor
	// who changed the feeds, and its forged feed is refused.
	globex := e.NewOrg("Globex")
	addUser(t, e, globex, "admin@globex.example", store.RoleAdministrator)
	g := newBrowser(t, e.URL)
	g.signIn("admin@globex.example")
	code, body := g.get("/console/feeds")
	if code != http.StatusOK || !strings.Contains(body, `id="stored-cves"`) || !strings.Contains(body, `id="feed-changes"`) {
		t.Fatalf("Globex's admin reads the feeds page: %d\n%.1500s", code, body)
	}
	if !strings.Contains(body, `id="operator-hint"`) {
		t.Error("the feeds page does not tell a non-operator how operators are made")
	}
	for _, hidden := range []string{`id="feed-upload"`, `type="file"`, "op@example.com", "127.0.0.1", "kev-subset.json"} {
		if strings.Contains(body, hidden) {
			t.Errorf("Globex's admin sees %q on the feeds page", hidden)
		}
	}
	forged := forgedFeed(t)
	code, body = g.upload("/console/feeds", forged)
	if code != http.StatusForbidden || !strings.Contains(body, "instance operator") {
		t.Fatalf("Globex's admin uploads a feed: %d, want 403\n%.1000s", code, body)
	}
	// Acme's own Administrator, no operator, is refused too.
	a := newBrowser(t, e.URL)
	a.signIn("alice@example.com")
	a.get("/console/feeds")
	if code, _ := a.upload("/console/feeds", forged); code != http.StatusForbidden {
		t.Fatalf("Acme's non-operator admin uploads a feed: %d, want 403", code)
	}
	for _, b := range []*browser{g, a} {
		if code, _ := b.get("/console/instance/audit"); code != http.StatusForbidden {
			t.Errorf("a non-operator opens the instance Audit Trail: %d, want 403", code)
		}
	}

	// Nothing changed: the feeds, their version, Acme's results.
	if now, _ := e.Store.CountFeeds(ctx); now != stored {
		t.Errorf("the feeds changed after refused uploads: %+v, was %+v", now, stored)
	}
	if v, _ := e.Store.VulnState(ctx, store.StateFeedVersion); v != version {
		t.Errorf("the feed version moved from %d to %d", version, v)
	}
	if events, _ := e.Store.ListInstanceEvents(ctx, store.InstanceEventFilter{}); len(events) != 2 { // the grant and the import
		t.Errorf("instance events after refused uploads: %+v", events)
	}
	if after := vulnIDs(t, e, e.Org.ID); strings.Join(after, " ") != strings.Join(acmeBefore, " ") {
		t.Errorf("Acme's vulnerabilities changed: %v, were %v", after, acmeBefore)
	}

	// The operator reads the instance Audit Trail, with the address.
	code, body = op.get("/console/instance/audit")
	if code != http.StatusOK || !strings.Contains(body, "<code>vulndb.import</code>") || !strings.Contains(body, "user:op@example.com") || !strings.Contains(body, "127.0.0.1") {
		t.Errorf("the operator's instance Audit Trail: %d\n%.2000s", code, body)
	}
	if code, body := op.get("/console/instance/audit?action=instance_operator.grant"); code != http.StatusOK || strings.Contains(body, "<code>vulndb.import</code>") || !strings.Contains(body, "<code>instance_operator.grant</code>") {
		t.Errorf("the instance Audit Trail filtered by action: %d", code)
	}
	// The same forged feed from the operator is stored (the operator is
	// trusted with the feeds): the fake CVE reaches Acme, the rejected one
	// leaves.
	if code, _ := op.upload("/console/feeds", forged); code != http.StatusOK {
		t.Fatalf("the operator's second upload: %d", code)
	}
	waitFor(t, "Acme's results after the operator's feed", func() bool {
		ids := strings.Join(vulnIDs(t, e, e.Org.ID), " ")
		return strings.Contains(ids, "CVE-2099-0001") && !strings.Contains(ids, "CVE-2024-4671")
	})
}

// TestOperatorAccountsGuarded: an Administrator who is no instance
// operator cannot disable or delete an operator's account.
func TestOperatorAccountsGuarded(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	opUser, err := admin.CreateOperator(ctx, e.Store, "test", admin.InstanceActor{Actor: "test"}, e.Org.ID, "op@example.com", store.RoleReadOnly, password)
	if err != nil {
		t.Fatal(err)
	}
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	a := newBrowser(t, e.URL)
	a.signIn("alice@example.com")
	if _, body := a.get("/console/users"); !strings.Contains(body, "instance operator") {
		t.Error("the users page does not mark the operator")
	}
	for _, op := range []string{"disable", "delete"} {
		if code, _, _ := a.post("/console/users/"+opUser.ID+"/"+op, url.Values{}); code != http.StatusForbidden {
			t.Errorf("a non-operator admin can %s an operator: %d, want 403", op, code)
		}
	}
	ops, err := e.Store.ListInstanceOperators(ctx)
	if err != nil || len(ops) != 1 || ops[0].Disabled {
		t.Errorf("the operator after the refused changes: %+v %v", ops, err)
	}
	// The operator (a Read-only user of its organization) reaches the
	// feeds upload and the instance Audit Trail all the same.
	o := newBrowser(t, e.URL)
	o.signIn("op@example.com")
	if _, body := o.get("/console/feeds"); !strings.Contains(body, `id="feed-upload"`) || !strings.Contains(body, `href="/console/instance/audit"`) {
		t.Error("a Read-only operator sees no upload form or instance audit link")
	}
	if code, _ := o.get("/console/instance/audit"); code != http.StatusOK {
		t.Errorf("the operator's instance Audit Trail: %d", code)
	}
}

// TestFirstRunSetupMakesOperator: the first user made on the first-run
// page with the first start's credential while the instance has no
// operator becomes one — whatever users and invitations other
// organizations have already — and every other first user is told
// plainly that they are not one: before an operator exists, an
// Administrator credential made later never makes one; after, nothing
// does.
func TestFirstRunSetupMakesOperator(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	setup := func(org store.Org, actor, email string) string {
		t.Helper()
		cred, err := admin.CreateCredential(ctx, e.Store, actor, org.ID, "admin-"+apitest.NewName(), store.RoleAdministrator)
		if err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, e.URL)
		b.get("/console/setup")
		code, loc, body := b.post("/console/setup", url.Values{"client_id": {cred.ClientID}, "client_secret": {cred.ClientSecret},
			"email": {email}, "password": {password}, "password2": {password}})
		if code != http.StatusSeeOther || loc != "/console/" {
			t.Fatalf("setup of %s: %d %s\n%.600s", email, code, loc, body)
		}
		_, body = b.get("/console/")
		return html.UnescapeString(body)
	}
	operators := func() []string {
		t.Helper()
		ops, err := e.Store.ListInstanceOperators(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range ops {
			out = append(out, o.Email)
		}
		return out
	}

	// Before anyone signs up in the first organization, another
	// organization has an invitation pending, and a third one its first
	// administrator, proved with a credential made on the command line.
	globex := e.NewOrg("Globex")
	role, err := e.Store.FindRole(ctx, globex.ID, store.RoleAdministrator)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := admin.InvitePerson(ctx, e.Store, admin.By{Actor: "test"}, globex.ID, "invited@globex.example", role, time.Hour); err != nil {
		t.Fatal(err)
	}
	initech := e.NewOrg("Initech")
	body := setup(initech, admin.ActorCLI, "first@initech.example")
	if ops := operators(); len(ops) != 0 {
		t.Fatalf("a later organization's Administrator credential made an operator: %v", ops)
	}
	if !strings.Contains(body, "You are not this server's instance operator") || !strings.Contains(body, "it has none yet") ||
		!strings.Contains(body, "patchd admin user operator grant --email first@initech.example") {
		t.Errorf("the first user of a later organization is not told who may be the operator:\n%.3000s", body)
	}

	// The first start's credential makes the operator all the same.
	body = setup(e.Org, store.FirstStartActor, "first@example.com")
	if ops := operators(); len(ops) != 1 || ops[0] != "first@example.com" {
		t.Fatalf("instance operators after the first start's credential signed up: %v", ops)
	}
	if !strings.Contains(body, "you are also this server's instance operator") {
		t.Errorf("the operator is not told:\n%.3000s", body)
	}
	events, err := e.Store.ListInstanceEvents(ctx, store.InstanceEventFilter{Actions: []string{"instance_operator.grant"}})
	if err != nil || len(events) != 1 || events[0].Actor != "user:first@example.com" || events[0].TargetID == "" ||
		events[0].Summary["firstRun"] != true || events[0].Address == "" {
		t.Errorf("the grant's instance event: %+v %v", events, err)
	}

	// Once there is an operator, no setup makes another, not even with a
	// credential that claims the first start's creator.
	umbrella := e.NewOrg("Umbrella")
	body = setup(umbrella, store.FirstStartActor, "first@umbrella.example")
	if ops := operators(); len(ops) != 1 || ops[0] != "first@example.com" {
		t.Fatalf("instance operators after a later organization's setup: %v", ops)
	}
	if !strings.Contains(body, "You are not this server's instance operator") || !strings.Contains(body, "another user is") {
		t.Errorf("the first user of a later organization is not told that another user is the operator:\n%.3000s", body)
	}
	g := newBrowser(t, e.URL)
	g.signIn("first@umbrella.example")
	g.get("/console/feeds")
	if code, _ := g.upload("/console/feeds", feedFixtures[1]); code != http.StatusForbidden {
		t.Errorf("the first user of a later organization uploads a feed: %d, want 403", code)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
