package console_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestCompliancePage: the Compliance page says the policy in a sentence and
// lists every group's compliance under it with links to those endpoints;
// an administrator's form sets the policy through the API (audited, a
// refused value shown and nothing changed); a Read-only user reads it
// without the form and may not post it; the dashboard says the same
// sentence.
func TestCompliancePage(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "reader@example.com", store.RoleReadOnly)
	e.Enroll("m1", "win-a", "windows").MustInventory(apitest.Sample("win-a", "windows"))
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	code, page := b.get("/console/compliance")
	if code != http.StatusOK || !strings.Contains(page, "Critical 15 days, Important 30, Moderate 60, Low 90, Unspecified 90") ||
		!strings.Contains(page, "Directive 19-02") || !strings.Contains(page, `id="compliance-policy"`) {
		t.Fatalf("compliance page %d:\n%s", code, between(page, "<main", "</main>"))
	}
	groups := between(page, `id="compliance-groups"`, "</table>")
	if !strings.Contains(groups, "All endpoints") || !strings.Contains(groups, "compliance=compliant\">1</a>") {
		t.Errorf("groups:\n%s", groups)
	}
	// The built-in groups' links list their members too.
	all := between(groups, "All endpoints", "</tr>")
	href := html.UnescapeString(between(all, `<td class="num"><a href="`, `"`))
	if _, list := b.get(href); !strings.Contains(list, `<span id="endpoint-total"><strong>1</strong>`) {
		t.Errorf("%s lists:\n%s", href, between(list, "<main", "</form>"))
	}
	// The endpoints list shows each endpoint's patch state, sortable and
	// filterable, and so does its CSV.
	_, list := b.get("/console/endpoints?sort=overdue&order=desc&compliance=compliant")
	for _, want := range []string{`aria-sort="descending"><a href="/console/endpoints?compliance=compliant&amp;sort=overdue">Overdue</a>`,
		`>Missing critical</a>`, `>Missing updates</a>`, `<span class="sev sev-critical">`, `<strong>1</strong> endpoint(s) match`} {
		if !strings.Contains(list, want) {
			t.Errorf("endpoints list lacks %s:\n%s", want, between(list, `<table class="list" id="endpoints">`, "</table>"))
		}
	}
	if _, list := b.get("/console/endpoints?compliance=overdue"); !strings.Contains(list, `<strong>0</strong> endpoint(s) match`) {
		t.Errorf("overdue endpoints:\n%s", between(list, "<main", "</form>"))
	}
	if _, csv := b.get("/console/endpoints.csv"); !strings.Contains(csv, "Missing critical,Missing updates,Overdue,Risk") {
		t.Errorf("csv: %s", csv)
	}
	// The risk column (the endpoint's riskScore) sorts as the API does.
	if _, list := b.get("/console/endpoints?sort=risk&order=desc"); !strings.Contains(list, `aria-sort="descending"><a href="/console/endpoints?sort=risk">Risk</a>`) ||
		!strings.Contains(list, `<td class="num opt">0.0</td>`) {
		t.Errorf("risk column:\n%s", between(list, `<table class="list" id="endpoints">`, "</table>"))
	}
	form := url.Values{"criticalDays": {"7"}, "importantDays": {"14"}, "moderateDays": {"30"}, "lowDays": {"60"}, "unspecifiedDays": {"120"}, "kevDays": {"10"}}
	if _, page := b.get("/console/compliance"); !strings.Contains(page, `name="kevDays"`) || !strings.Contains(page, "Fixes a KEV CVE (days)") {
		t.Errorf("the policy form lacks the KEV deadline:\n%s", between(page, `id="h-policy"`, "</section>"))
	}
	if code, loc, _ := b.post("/console/compliance/policy", form); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/compliance") {
		t.Fatalf("set: %d %s", code, loc)
	}
	var p apiv1.CompliancePolicy
	if err := e.Admin.Do(ctx, http.MethodGet, "/api/v1/compliance-policy", nil, nil, &p); err != nil || p.CriticalDays != 7 || p.UnspecifiedDays != 120 || p.KEVDays != 10 {
		t.Fatalf("policy: %+v %v", p, err)
	}
	if entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "compliance_policy.set"}); len(entries) != 1 || !strings.Contains(entries[0].Actor, "alice@example.com") {
		t.Errorf("audit: %+v", entries)
	}
	form.Set("lowDays", "0")
	b.post("/console/compliance/policy", form)
	if _, page := b.get("/console/compliance"); !strings.Contains(page, "lowDays: ") || !strings.Contains(page, "Low 60") {
		t.Errorf("refused policy:\n%s", between(page, `id="h-policy"`, "</section>"))
	}
	if _, page := b.get("/console/"); !strings.Contains(page, "Critical 7 days, Important 14") || !strings.Contains(page, `href="/console/compliance"`) {
		t.Errorf("dashboard lacks the policy:\n%s", between(page, `id="h-compliance"`, "</section>"))
	}
	rd := newBrowser(t, e.URL)
	rd.signIn("reader@example.com")
	if _, page := rd.get("/console/compliance"); strings.Contains(page, `id="compliance-policy"`) || !strings.Contains(page, "Critical 7 days") {
		t.Errorf("read-only page:\n%s", between(page, "<main", "</main>"))
	}
	if code, _, _ := rd.post("/console/compliance/policy", form); code != http.StatusForbidden {
		t.Errorf("read-only set: %d", code)
	}
}

// TestSignInOffersPasskeysOnlyWhereTheyWork: at an IP address the sign-in
// page says to use localhost or the --base-url name instead of offering
// "Sign in with a passkey", which the browser would refuse; at a name it
// offers it.
func TestSignInOffersPasskeysOnlyWhereTheyWork(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	get := func(base string) string {
		t.Helper()
		resp, err := http.Get(base + "/console/login")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		if _, err := io.Copy(&b, resp.Body); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if page := get(e.URL); strings.Contains(page, `id="passkey-login"`) || !strings.Contains(page, "<code>localhost</code>") {
		t.Errorf("at %s:\n%s", e.URL, between(page, "<main", "</main>"))
	}
	if page := get(strings.Replace(e.URL, "://127.0.0.1:", "://localhost:", 1)); !strings.Contains(page, `id="passkey-login"`) || strings.Contains(page, `id="passkey-unavailable"`) {
		t.Errorf("at localhost:\n%s", between(page, "<main", "</main>"))
	}
	// The Account page offers adding a passkey only where it can work too.
	addUser(t, e, e.Org, "pat@example.com", store.RoleReadOnly)
	for base, offered := range map[string]bool{e.URL: false, strings.Replace(e.URL, "://127.0.0.1:", "://localhost:", 1): true} {
		b := newBrowser(t, base)
		b.signIn("pat@example.com")
		_, page := b.get("/console/account")
		if strings.Contains(page, `id="passkey-register"`) != offered || strings.Contains(page, `id="passkey-unavailable"`) == offered {
			t.Errorf("the Account page at %s (adding a passkey offered: want %v):\n%s", base, offered, between(page, `id="h-passkeys"`, "</section>"))
		}
	}
}
