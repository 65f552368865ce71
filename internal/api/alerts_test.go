package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

func TestAlertRulesCreateAndList(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	const secret = "very-secret-signing-key"
	res, err := e.Admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "  Servers offline ", Trigger: "ENDPOINT_OFFLINE", Threshold: ptr(15),
		EmailTo: ptr("ops@example.com,  oncall@example.com"), WebhookURL: ptr("https://hooks.example.com/services/T1"), WebhookSecret: ptr(secret)})
	if err != nil || !res.OK || res.Rule.ID == "" || res.Rule.Name != "Servers offline" {
		t.Fatalf("create: %+v, %v", res, err)
	}
	if _, err := e.Admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "Critical CVEs", Trigger: "CRITICAL_VULN", EmailTo: ptr("sec@example.com")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "Reboots", Trigger: "REPORT_ROWS", ReportKey: ptr("reboots"), Threshold: ptr(10),
		WebhookURL: ptr("https://chat.example.com/hook")}); err != nil {
		t.Fatal(err)
	}
	list, err := e.Admin.ListAlertRules(ctx)
	if err != nil || list.Total != 3 || len(list.Items) != 3 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	r := list.Items[0]
	if r.ID != res.Rule.ID || r.Trigger != "ENDPOINT_OFFLINE" || r.Threshold != 15 || !r.Enabled || *r.EmailTo != "ops@example.com, oncall@example.com" ||
		*r.WebhookURL != "https://hooks.example.com/services/T1" || r.ReportKey != nil || !r.HasWebhookSecret || r.Events != 0 || r.CreatedAt == nil {
		t.Fatalf("rule %+v", r)
	}
	if v := list.Items[1]; v.Threshold != 9 || v.HasWebhookSecret || v.WebhookURL != nil {
		t.Fatalf("default threshold / no webhook: %+v", v)
	}
	if v := list.Items[2]; v.ReportKey == nil || *v.ReportKey != "reboots" || v.EmailTo != nil {
		t.Fatalf("report rule %+v", v)
	}
	// The secret appears in no answer and no audit entry.
	raw := rawGet(t, e, "/api/v1/alerts")
	if strings.Contains(raw, secret) || !strings.Contains(raw, `"hasWebhookSecret":true`) {
		t.Fatalf("list answer %s", raw)
	}
	entries, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "alert.create"})
	if err != nil || len(entries) != 3 || !strings.HasPrefix(entries[0].Actor, "api:") {
		t.Fatalf("audit %+v, %v", entries, err)
	}
	for _, en := range entries {
		b, _ := json.Marshal(en)
		if strings.Contains(string(b), secret) {
			t.Fatalf("audit entry carries the secret: %s", b)
		}
	}
}

// TestAlertRuleIgnoredThreshold: NEW_ENDPOINT and GROUP_UPTIME ignore
// threshold; any non-negative value is accepted and answered back as given.
func TestAlertRuleIgnoredThreshold(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	want := map[string]int{}
	for trigger, threshold := range map[string]int{"NEW_ENDPOINT": 1, "GROUP_UPTIME": 45} {
		res, err := e.Admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: trigger, Trigger: trigger, Threshold: ptr(threshold), EmailTo: ptr("ops@example.com")})
		if err != nil {
			t.Fatalf("%s threshold %d: %v", trigger, threshold, err)
		}
		want[res.Rule.ID] = threshold
	}
	list, err := e.Admin.ListAlertRules(ctx)
	if err != nil || list.Total != 2 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	for _, r := range list.Items {
		if r.Threshold != want[r.ID] {
			t.Errorf("%s: threshold %d, want %d", r.Trigger, r.Threshold, want[r.ID])
		}
	}
}

// rawGet answers the body of GET path as the Env's Administrator.
func rawGet(t *testing.T, e *apitest.Env, path string) string {
	t.Helper()
	tok := tokenOf(t, e.Admin)
	return rawCall(t, e, http.MethodGet, path, tok, nil).body
}

// webhookRetryMinutes (a patchd addition) is stored and answered; absent
// it is 0, the specification's single try.
func TestAlertRuleWebhookRetryMinutes(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	for _, body := range []apiv1.AlertRuleBody{
		{Name: "retried", Trigger: "NEW_ENDPOINT", WebhookURL: ptr("https://hooks.example.com/a"), WebhookRetryMinutes: ptr(1440)},
		{Name: "once", Trigger: "NEW_ENDPOINT", WebhookURL: ptr("https://hooks.example.com/b")},
	} {
		if _, err := e.Admin.CreateAlertRule(ctx, body); err != nil {
			t.Fatal(err)
		}
	}
	list, err := e.Admin.ListAlertRules(ctx)
	if err != nil || len(list.Items) != 2 || list.Items[0].WebhookRetryMinutes != 1440 || list.Items[1].WebhookRetryMinutes != 0 {
		t.Fatalf("list %+v %v", list, err)
	}
}

func TestAlertRuleValidation(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	mail := ptr("ops@example.com")
	for _, tc := range []struct {
		name   string
		body   apiv1.AlertRuleBody
		fields []string
	}{
		{"unknown trigger", apiv1.AlertRuleBody{Name: "x", Trigger: "DISK_FULL", EmailTo: mail}, []string{"trigger"}},
		{"missing name and trigger", apiv1.AlertRuleBody{EmailTo: mail}, []string{"name", "trigger"}},
		{"plain http webhook", apiv1.AlertRuleBody{Name: "x", Trigger: "NEW_ENDPOINT", WebhookURL: ptr("http://hooks.example.com/x")}, []string{"webhookUrl"}},
		{"malformed recipients", apiv1.AlertRuleBody{Name: "x", Trigger: "NEW_ENDPOINT", EmailTo: ptr("ops@example.com; boss")}, []string{"emailTo"}},
		{"display-name recipient", apiv1.AlertRuleBody{Name: "x", Trigger: "NEW_ENDPOINT", EmailTo: ptr("Ops <ops@example.com>")}, []string{"emailTo"}},
		{"nowhere to deliver", apiv1.AlertRuleBody{Name: "x", Trigger: "NEW_ENDPOINT"}, []string{"emailTo"}},
		{"report rows without key", apiv1.AlertRuleBody{Name: "x", Trigger: "REPORT_ROWS", EmailTo: mail}, []string{"reportKey"}},
		{"report rows unknown key", apiv1.AlertRuleBody{Name: "x", Trigger: "REPORT_ROWS", ReportKey: ptr("no-such-report"), EmailTo: mail}, []string{"reportKey"}},
		{"threshold out of range", apiv1.AlertRuleBody{Name: "x", Trigger: "CRITICAL_VULN", Threshold: ptr(11), EmailTo: mail}, []string{"threshold"}},
		{"negative ignored threshold", apiv1.AlertRuleBody{Name: "x", Trigger: "NEW_ENDPOINT", Threshold: ptr(-1), EmailTo: mail}, []string{"threshold"}},
		{"ignored threshold past 32 bits", apiv1.AlertRuleBody{Name: "x", Trigger: "GROUP_UPTIME", Threshold: ptr(1 << 31), EmailTo: mail}, []string{"threshold"}},
		{"secret without webhook", apiv1.AlertRuleBody{Name: "x", Trigger: "NEW_ENDPOINT", EmailTo: mail, WebhookSecret: ptr("s")}, []string{"webhookSecret"}},
		{"retries without webhook", apiv1.AlertRuleBody{Name: "x", Trigger: "NEW_ENDPOINT", EmailTo: mail, WebhookRetryMinutes: ptr(10)}, []string{"webhookRetryMinutes"}},
		{"retries past a day", apiv1.AlertRuleBody{Name: "x", Trigger: "NEW_ENDPOINT", WebhookURL: ptr("https://hooks.example.com/x"), WebhookRetryMinutes: ptr(1441)}, []string{"webhookRetryMinutes"}},
		{"negative retries", apiv1.AlertRuleBody{Name: "x", Trigger: "NEW_ENDPOINT", WebhookURL: ptr("https://hooks.example.com/x"), WebhookRetryMinutes: ptr(-1)}, []string{"webhookRetryMinutes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Admin.CreateAlertRule(ctx, tc.body)
			wantValidation(t, err, tc.fields...)
		})
	}
	// Malformed JSON is 400; a threshold of the wrong type is 422.
	tok := tokenOf(t, e.Admin)
	for body, status := range map[string]int{`{"name":`: 400, `{"name":"x","trigger":"NEW_ENDPOINT","threshold":"ten"}`: 422} {
		if a := rawCall(t, e, http.MethodPost, "/api/v1/alerts", tok, []byte(body)); a.status != status {
			t.Errorf("%s: status %d, want %d", body, a.status, status)
		}
	}
	if list, _ := e.Admin.ListAlertRules(ctx); list.Total != 0 {
		t.Fatalf("invalid rules were stored: %+v", list)
	}
}

func TestAlertRulePermissionsAndIsolation(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	body := apiv1.AlertRuleBody{Name: "new", Trigger: "NEW_ENDPOINT", EmailTo: ptr("ops@example.com")}
	if _, err := e.Admin.CreateAlertRule(ctx, body); err != nil {
		t.Fatal(err)
	}
	viewer := e.Client(e.Org, perm.Set(perm.APIAccess)|perm.Set(perm.ReportsView))
	if list, err := viewer.ListAlertRules(ctx); err != nil || list.Total != 1 {
		t.Fatalf("viewer list: %+v, %v", list, err)
	}
	mustStatus(t, errOf(viewer.CreateAlertRule(ctx, body)), http.StatusForbidden, "viewer create")
	blind := e.Client(e.Org, perm.Set(perm.APIAccess)|perm.Set(perm.EndpointsView))
	mustStatus(t, errOf(blind.ListAlertRules(ctx)), http.StatusForbidden, "list without reports.view")
	anon := client.New(e.URL, "nobody", "wrong", client.WithHTTPClient(e.HTTPClient))
	mustStatus(t, errOf(anon.ListAlertRules(ctx)), http.StatusUnauthorized, "anonymous list")
	other := e.NewOrg("Other " + apitest.NewName())
	oc := e.Client(other, perm.All)
	if list, err := oc.ListAlertRules(ctx); err != nil || list.Total != 0 || len(list.Items) != 0 {
		t.Fatalf("other organization sees %+v, %v", list, err)
	}
}

// A failed delivery is listed with its error and sent again once, audited
// (patchd additions); another organization sees neither.
func TestAlertFailedDeliveriesAndResend(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	// Nothing listens on port 1: the delivery fails; the rule does not retry.
	res, err := e.Admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "down", Trigger: "NEW_ENDPOINT", WebhookURL: ptr("https://127.0.0.1:1/hook")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.TestAlertRule(ctx, e.Org.ID, res.Rule.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	var failed apiv1.List[apiv1.FailedDelivery]
	for deadline := time.Now().Add(time.Minute); len(failed.Items) == 0; time.Sleep(100 * time.Millisecond) {
		if failed, err = e.Admin.FailedDeliveries(ctx, res.Rule.ID); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the delivery did not fail")
		}
	}
	f := failed.Items[0]
	if f.Channel != "webhook" || f.Attempts != 1 || !strings.HasPrefix(f.Error, "error: ") || f.EventID == "" {
		t.Fatalf("failed %+v", f)
	}
	other := e.Client(e.NewOrg("Other "+apitest.NewName()), perm.All)
	mustStatus(t, errOf(other.FailedDeliveries(ctx, res.Rule.ID)), http.StatusNotFound, "another organization")
	mustStatus(t, errOf(other.ResendDelivery(ctx, res.Rule.ID, f.ID)), http.StatusNotFound, "another organization resends")
	q, err := e.Admin.ResendDelivery(ctx, res.Rule.ID, f.ID)
	if err != nil || !q.OK || q.Delivery == "" {
		t.Fatalf("resend %+v %v", q, err)
	}
	mustStatus(t, errOf(e.Admin.ResendDelivery(ctx, res.Rule.ID, f.ID)), http.StatusConflict, "second resend")
	mustStatus(t, errOf(e.Admin.ResendDelivery(ctx, res.Rule.ID, "no-such-delivery")), http.StatusNotFound, "unknown delivery")
	audit, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "alert.resend"})
	if err != nil || len(audit) != 1 || audit[0].TargetID != res.Rule.ID {
		t.Fatalf("audit %+v %v", audit, err)
	}
}
