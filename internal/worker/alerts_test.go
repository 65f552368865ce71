package worker_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/vulns/feeds"
	"github.com/patchd/patchd/internal/vulns/match"
	"github.com/patchd/patchd/internal/worker"
)

const hookSecret = "whsec-test-secret"

// fakeClock is the alert tests' clock: the agent API and the evaluator
// both read it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// received is one webhook call.
type received struct {
	body []byte
	sig  string
	msg  alerts.Message
}

// receiver is an httptest TLS server recording webhooks; delay makes it slow.
type receiver struct {
	srv      *httptest.Server
	calls    chan received
	count    atomic.Int32
	inFlight atomic.Int32 // requests not answered yet
}

func newReceiver(t *testing.T, delay time.Duration) *receiver {
	r := &receiver{calls: make(chan received, 100)}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.count.Add(1)
		r.inFlight.Add(1)
		defer r.inFlight.Add(-1)
		body, _ := io.ReadAll(req.Body)
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-req.Context().Done():
				return
			}
		}
		var m alerts.Message
		json.Unmarshal(body, &m)
		r.calls <- received{body: body, sig: req.Header.Get(alerts.SignatureHeader), msg: m}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

type alertEnv struct {
	*apitest.Env
	t     *testing.T
	clock *fakeClock
	eval  *worker.AlertEvaluator
	hook  *receiver
	smtp  *apitest.SMTPServer
	roots *x509.CertPool
}

func newAlertEnv(t *testing.T, extra ...*receiver) *alertEnv {
	hook := newReceiver(t, 0)
	roots := trusting(hook.srv)
	for _, r := range extra {
		roots.AddCert(r.srv.Certificate())
	}
	mail := apitest.NewSMTPServer(t, nil, false)
	e := apitest.New(t, func(c *config.Config) {
		c.SchedulerInterval = time.Hour
		c.VulnMatchInterval = time.Hour
		c.SMTP = config.SMTP{Addr: mail.Addr, From: "patchd@example.com", TLS: worker.SMTPNone}
		c.WebhookTLS = &tls.Config{RootCAs: roots}
	})
	clock := &fakeClock{t: time.Now()}
	e.Server.Agents().SetClock(clock.Now)
	return &alertEnv{Env: e, t: t, clock: clock, hook: hook, smtp: mail, roots: roots,
		eval: &worker.AlertEvaluator{Store: e.Store, DisconnectedAfter: 3 * time.Minute, Now: clock.Now}}
}

// rule creates a rule through the API, delivered by e-mail and to the
// receiver with a secret.
func (a *alertEnv) rule(trigger string, threshold *int, reportKey string) string {
	a.t.Helper()
	body := apiv1.AlertRuleBody{Name: trigger + " rule", Trigger: trigger, Threshold: threshold, EmailTo: ptr("ops@example.com, oncall@example.com"),
		WebhookURL: ptr(a.hook.srv.URL + "/hook"), WebhookSecret: ptr(hookSecret)}
	if reportKey != "" {
		body.ReportKey = &reportKey
	}
	res, err := a.Admin.CreateAlertRule(context.Background(), body)
	if err != nil {
		a.t.Fatal(err)
	}
	return res.Rule.ID
}

func (a *alertEnv) evaluate(d time.Duration) int {
	a.t.Helper()
	a.clock.Add(d)
	if err := a.Server.Presence().Flush(context.Background()); err != nil {
		a.t.Fatal(err)
	}
	st, err := a.eval.EvaluateOnce(context.Background())
	if err != nil {
		a.t.Fatal(err)
	}
	return st.Raised
}

// delivered waits for the webhook and the e-mail of one event and checks
// them: signature, fields, text, recipients.
func (a *alertEnv) delivered(event, titlePart string) alerts.Message {
	a.t.Helper()
	var got received
	select {
	case got = <-a.hook.calls:
	case <-time.After(time.Minute):
		a.t.Fatalf("no webhook for %s", event)
	}
	if !alerts.Verify(hookSecret, got.body, got.sig) {
		a.t.Fatalf("bad signature %q for %s", got.sig, got.body)
	}
	m := got.msg
	if m.Event != event || !strings.Contains(m.Title, titlePart) || m.Organization != a.Org.Name || m.Rule.ID == "" ||
		m.Severity == "" || m.At.IsZero() || !strings.Contains(m.Text, m.Title) || strings.Contains(string(got.body), hookSecret) {
		a.t.Fatalf("webhook body %s", got.body)
	}
	select {
	case mail := <-a.smtp.Mail:
		if mail.From != "patchd@example.com" || strings.Join(mail.To, ",") != "ops@example.com,oncall@example.com" ||
			!strings.Contains(mail.Data, "Subject: [patchd] ") || !strings.Contains(mail.Data, titlePart) ||
			!strings.Contains(mail.Data, "["+strings.ToUpper(m.Severity)+"] ") || !strings.Contains(mail.Data, "Organization: "+a.Org.Name) ||
			!strings.Contains(mail.Data, "Content-Type: text/plain; charset=utf-8") {
			a.t.Fatalf("mail %+v", mail)
		}
	case <-time.After(time.Minute):
		a.t.Fatalf("no e-mail for %s", event)
	}
	return m
}

// quiet checks that nothing more is delivered for a while.
func (a *alertEnv) quiet() {
	a.t.Helper()
	select {
	case got := <-a.hook.calls:
		a.t.Fatalf("unexpected webhook %s", got.body)
	case <-time.After(2500 * time.Millisecond):
	}
}

func (a *alertEnv) events(ruleID string) int {
	a.t.Helper()
	list, err := a.Admin.ListAlertRules(context.Background())
	if err != nil {
		a.t.Fatal(err)
	}
	for _, r := range list.Items {
		if r.ID == ruleID {
			return r.Events
		}
	}
	a.t.Fatalf("rule %s not listed", ruleID)
	return 0
}

func ptr[T any](v T) *T { return &v }

func TestAlertNewEndpoint(t *testing.T) {
	t.Parallel()
	a := newAlertEnv(t)
	id := a.rule(alerts.NewEndpoint, nil, "")
	ag := a.Enroll("m-new-1", "laptop-7", "windows")
	m := a.delivered(alerts.NewEndpoint, "New endpoint laptop-7 enrolled")
	if m.Severity != alerts.Info || !strings.Contains(m.Detail, ag.ID) {
		t.Fatalf("message %+v", m)
	}
	// Enrolling the same machine again is not a new endpoint.
	a.Enroll("m-new-1", "laptop-7", "windows")
	a.quiet()
	if n := a.events(id); n != 1 {
		t.Fatalf("events = %d", n)
	}
	// Isolation: an endpoint of another organization raises nothing here.
	other := a.NewOrg("Other " + apitest.NewName())
	tok, err := admin.CreateEnrollToken(context.Background(), a.Store, "test", other.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	own := a.EnrollToken
	a.EnrollToken = tok.Token
	a.Enroll("m-other-1", "elsewhere", "linux")
	a.EnrollToken = own
	a.quiet()
	if n := a.events(id); n != 1 {
		t.Fatalf("events = %d after another organization's enrollment", n)
	}
	otherAdmin := a.Client(other, perm.All)
	list, err := otherAdmin.ListAlertRules(context.Background())
	if err != nil || list.Total != 0 {
		t.Fatalf("other organization sees %+v, %v", list, err)
	}
}

func TestAlertEndpointOffline(t *testing.T) {
	t.Parallel()
	a := newAlertEnv(t)
	id := a.rule(alerts.EndpointOffline, ptr(10), "")
	ag := a.Enroll("m-off-1", "web-01", "linux")
	if n := a.evaluate(5 * time.Minute); n != 0 {
		t.Fatalf("raised %d after 5 minutes", n)
	}
	if n := a.evaluate(6 * time.Minute); n != 1 {
		t.Fatalf("raised %d after 11 minutes", n)
	}
	m := a.delivered(alerts.EndpointOffline, "Endpoint web-01 is offline")
	if m.Severity != alerts.Warning {
		t.Fatalf("severity %s", m.Severity)
	}
	if n := a.evaluate(20 * time.Minute); n != 0 {
		t.Fatalf("raised %d again for the same episode", n)
	}
	// Back, then gone again: a new episode, a new event.
	ag.Checkin(0, agentproto.CheckinRequest{})
	a.evaluate(time.Minute)
	if n := a.evaluate(15 * time.Minute); n != 1 {
		t.Fatalf("raised %d for the second episode", n)
	}
	a.delivered(alerts.EndpointOffline, "web-01")
	if n := a.events(id); n != 2 {
		t.Fatalf("events = %d", n)
	}
}

func TestAlertGroupUptime(t *testing.T) {
	t.Parallel()
	a := newAlertEnv(t)
	ag := a.Enroll("m-grp-1", "db-01", "linux")
	a.Enroll("m-grp-2", "not-in-group", "linux")
	if _, err := a.Admin.CreateGroup(context.Background(), apiv1.GroupBody{Name: ptr("Databases"), MachineIDs: &[]string{ag.ID},
		OfflineAlertMinutes: ptr(30), OnlineAlert: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	id := a.rule(alerts.GroupUptime, nil, "")
	if n := a.evaluate(20 * time.Minute); n != 0 {
		t.Fatalf("raised %d after 20 minutes", n)
	}
	if n := a.evaluate(11 * time.Minute); n != 1 {
		t.Fatalf("raised %d after 31 minutes (one member only)", n)
	}
	a.delivered(alerts.GroupUptime, "Endpoint db-01 of group Databases is offline")
	if n := a.evaluate(10 * time.Minute); n != 0 {
		t.Fatalf("raised %d again", n)
	}
	ag.Checkin(0, agentproto.CheckinRequest{})
	if n := a.evaluate(time.Minute); n != 1 {
		t.Fatalf("raised %d when back online", n)
	}
	a.delivered(alerts.EventEndpointOnline, "Endpoint db-01 of group Databases is back online")
	if n := a.evaluate(time.Minute); n != 0 {
		t.Fatalf("raised %d after back online", n)
	}
	if n := a.events(id); n != 2 {
		t.Fatalf("events = %d", n)
	}
}

func TestAlertRebootRequired(t *testing.T) {
	t.Parallel()
	a := newAlertEnv(t)
	id := a.rule(alerts.RebootRequired, nil, "") // default 24 hours
	ag := a.Enroll("m-rb-1", "ws-42", "windows")
	a.Enroll("m-rb-2", "no-reboot", "windows")
	ag.Checkin(0, agentproto.CheckinRequest{PendingReboot: true})
	if n := a.evaluate(0); n != 0 {
		t.Fatalf("raised %d at once", n)
	}
	if n := a.evaluate(23 * time.Hour); n != 0 {
		t.Fatalf("raised %d after 23 hours", n)
	}
	if n := a.evaluate(2 * time.Hour); n != 1 {
		t.Fatalf("raised %d after 25 hours", n)
	}
	a.delivered(alerts.RebootRequired, "Endpoint ws-42 needs a reboot")
	if n := a.evaluate(24 * time.Hour); n != 0 {
		t.Fatalf("raised %d again", n)
	}
	if n := a.events(id); n != 1 {
		t.Fatalf("events = %d", n)
	}
	// It reboots: the wait is forgotten, and a later pending reboot waits
	// its own 24 hours.
	ag.Checkin(0, agentproto.CheckinRequest{PendingReboot: false})
	if n := a.evaluate(time.Hour); n != 0 {
		t.Fatalf("raised %d after the reboot", n)
	}
	ag.Checkin(0, agentproto.CheckinRequest{PendingReboot: true})
	if n := a.evaluate(time.Hour); n != 0 {
		t.Fatalf("raised %d at once for the next pending reboot", n)
	}
	if n := a.evaluate(25 * time.Hour); n != 1 {
		t.Fatalf("raised %d 25 hours into the next pending reboot", n)
	}
}

func TestAlertMissingCriticalUpdate(t *testing.T) {
	t.Parallel()
	a := newAlertEnv(t)
	id := a.rule(alerts.MissingCriticalUpdate, nil, "") // default 7 days
	ag := a.Enroll("m-upd-1", "pc-9", "windows")
	doc := apitest.Sample("pc-9", "windows")
	doc.CollectedAt = a.clock.Now()
	ag.MustInventory(doc)
	if n := a.evaluate(6 * 24 * time.Hour); n != 0 {
		t.Fatalf("raised %d after 6 days", n)
	}
	if n := a.evaluate(2 * 24 * time.Hour); n != 1 {
		t.Fatalf("raised %d after 8 days (one Critical update)", n)
	}
	m := a.delivered(alerts.MissingCriticalUpdate, "Endpoint pc-9 is missing a Critical update")
	if !strings.Contains(m.Detail, "KB5048685") {
		t.Fatalf("detail %q", m.Detail)
	}
	if n := a.evaluate(24 * time.Hour); n != 0 {
		t.Fatalf("raised %d again", n)
	}
	if n := a.events(id); n != 1 {
		t.Fatalf("events = %d", n)
	}
}

func TestAlertCriticalVuln(t *testing.T) {
	t.Parallel()
	a := newAlertEnv(t)
	id := a.rule(alerts.CriticalVuln, nil, "") // default CVSS 9
	ag := a.Enroll("m-cve-1", "srv-3", "linux")
	ctx := context.Background()
	score := func(v float64) *float64 { return &v }
	err := a.Store.StoreFeeds(ctx, store.FeedBatch{
		CVEs: []feeds.CVE{{ID: "CVE-2026-1001", CVSS: score(9.8), Description: "Remote code execution in libdemo."},
			{ID: "CVE-2026-1002", CVSS: score(5.0)}, {ID: "CVE-2026-1003", CVSS: score(6.1)}},
		KEVs: []feeds.KEV{{CVEID: "CVE-2026-1003", VendorProject: "Demo", Product: "demo"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	findings := []match.Finding{{CVEID: "CVE-2026-1001", Software: "libdemo", Version: "1.0", Source: "demo:libdemo"},
		{CVEID: "CVE-2026-1002", Software: "libdemo", Version: "1.0", Source: "demo:libdemo"},
		{CVEID: "CVE-2026-1003", Software: "libdemo", Version: "1.0", Source: "demo:libdemo"}}
	if _, err := a.Store.SaveMatchResults(ctx, []store.MatchResult{{EndpointID: ag.ID, OrgID: a.Org.ID, Findings: findings}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := a.evaluate(time.Minute); n != 2 {
		t.Fatalf("raised %d, want 2 (CVSS 9.8, and 6.1 in KEV; not 5.0)", n)
	}
	titles := map[string]bool{}
	for range 2 {
		m := a.delivered(alerts.CriticalVuln, "Critical vulnerability")
		if m.Severity != alerts.Critical {
			t.Fatalf("severity %s", m.Severity)
		}
		titles[m.Title] = true
	}
	if !titles["Critical vulnerability CVE-2026-1001 found on the fleet"] || !titles["Critical vulnerability CVE-2026-1003 found on the fleet"] {
		t.Fatalf("titles %v", titles)
	}
	if n := a.evaluate(time.Minute); n != 0 {
		t.Fatalf("raised %d again", n)
	}
	if n := a.events(id); n != 2 {
		t.Fatalf("events = %d", n)
	}
}

func TestAlertReportRows(t *testing.T) {
	t.Parallel()
	a := newAlertEnv(t)
	id := a.rule(alerts.ReportRows, ptr(2), "endpoints")
	a.Enroll("m-rep-1", "a1", "linux")
	if n := a.evaluate(time.Minute); n != 0 {
		t.Fatalf("raised %d with one row", n)
	}
	a.Enroll("m-rep-2", "a2", "linux")
	if n := a.evaluate(time.Minute); n != 1 {
		t.Fatalf("raised %d with two rows", n)
	}
	a.delivered(alerts.ReportRows, "Report endpoints has 2 rows")
	a.Enroll("m-rep-3", "a3", "linux")
	if n := a.evaluate(time.Minute); n != 0 {
		t.Fatalf("raised %d while still over the threshold", n)
	}
	if n := a.events(id); n != 1 {
		t.Fatalf("events = %d", n)
	}
}

// REPORT_ROWS watches any report of the catalog, here one built from the
// agents' datasets, counting its rows as the report shows them.
func TestAlertReportRowsOfADatasetReport(t *testing.T) {
	t.Parallel()
	a := newAlertEnv(t)
	id := a.rule(alerts.ReportRows, ptr(2), "services")
	ag := a.Enroll("m-svc-1", "s1", "windows")
	ag.MustInventory(apitest.Sample("s1", "windows")) // one service
	if n := a.evaluate(time.Minute); n != 0 {
		t.Fatalf("raised %d with one service", n)
	}
	doc := apitest.Sample("s1", "windows")
	doc.Datasets["services"] = append(doc.Datasets["services"], map[string]any{"name": "W32Time", "state": "running", "startMode": "auto"})
	ag.MustInventory(doc)
	if n := a.evaluate(time.Minute); n != 1 {
		t.Fatalf("raised %d with two services", n)
	}
	a.delivered(alerts.ReportRows, "Report services has 2 rows")
	if n := a.events(id); n != 1 {
		t.Fatalf("events = %d", n)
	}
}

// A receiver that answers in 15 s is cut at 10 s and not called again,
// while a fast receiver gets its delivery meanwhile.
func TestAlertSlowWebhookTimesOutWithoutRetry(t *testing.T) {
	t.Parallel()
	slow := newReceiver(t, 15*time.Second)
	a := newAlertEnv(t, slow)
	ctx := context.Background()
	res, err := a.Admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "slow", Trigger: alerts.NewEndpoint, WebhookURL: ptr(slow.srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	a.rule(alerts.NewEndpoint, nil, "")
	start := time.Now()
	a.Enroll("m-slow-1", "slowpoke", "linux")
	a.delivered(alerts.NewEndpoint, "slowpoke")
	if called, open := slow.count.Load(), slow.inFlight.Load(); called > 0 && open == 0 {
		t.Fatal("the fast receiver was served only after the slow one was cut")
	}
	var outcome string
	for outcome == "" {
		evs, err := a.Store.ListAlertEvents(ctx, a.Org.ID, res.Rule.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 1 && evs[0].WebhookOutcome != nil {
			outcome = *evs[0].WebhookOutcome
			break
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatal("no outcome recorded")
		}
		time.Sleep(200 * time.Millisecond)
	}
	elapsed := time.Since(start)
	// Cut at 10 s: an outcome after the receiver's 15 s would be its answer.
	if !strings.Contains(outcome, "no answer within 10s") || elapsed < 10*time.Second {
		t.Fatalf("outcome %q after %s", outcome, elapsed)
	}
	time.Sleep(4 * time.Second) // two more looks at the outbox
	if n := slow.count.Load(); n != 1 {
		t.Fatalf("the slow receiver was called %d times", n)
	}
}

// storeOnly sets up a store with one organization and no server, so that
// the test's deliverers are the only ones.
func storeOnly(t *testing.T) (*store.Store, store.Org) {
	s := storetest.Open(t)
	org, err := admin.CreateOrg(context.Background(), s, "Acme "+apitest.NewName(), "UTC")
	if err != nil {
		t.Fatal(err)
	}
	return s, org
}

// trusting answers a pool of roots that trusts srv's certificate.
func trusting(srv *httptest.Server) *x509.CertPool {
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return roots
}

// createRule checks in and creates it as the organization's rule.
func createRule(t *testing.T, s *store.Store, org store.Org, in alerts.Rule) store.AlertRule {
	t.Helper()
	if err := in.Check(); err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateAlertRule(context.Background(), &store.AuditEntry{OrgID: org.ID, Actor: "test", Action: "alert.create", TargetType: "alert"}, org.ID, in, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func webhookRule(t *testing.T, s *store.Store, org store.Org, url string) store.AlertRule {
	t.Helper()
	return createRule(t, s, org, alerts.Rule{Name: "hook", Trigger: alerts.NewEndpoint, WebhookURL: url, WebhookSecret: hookSecret})
}

func TestAlertWebhookRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	s, org := storeOnly(t)
	recv := newReceiver(t, 0)
	roots := trusting(recv.srv)
	port := recv.srv.URL[strings.LastIndexByte(recv.srv.URL, ':'):]
	ctx := context.Background()
	// A literal loopback address, and a name that resolves to one.
	for _, url := range []string{recv.srv.URL + "/x", "https://localhost" + port + "/x"} {
		r := webhookRule(t, s, org, url)
		if _, err := s.TestAlertRule(ctx, org.ID, r.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	d := &worker.AlertDeliverer{Store: s, WebhookTLS: &tls.Config{RootCAs: roots}}
	if err := d.DeliverPending(ctx); err != nil {
		t.Fatal(err)
	}
	d.Wait()
	rules, _ := s.ListAlertRules(ctx, org.ID)
	for _, r := range rules {
		evs, err := s.ListAlertEvents(ctx, org.ID, r.ID, 10)
		if err != nil || len(evs) != 1 || evs[0].WebhookOutcome == nil || !strings.Contains(*evs[0].WebhookOutcome, "webhook target address refused") {
			t.Fatalf("%s: events %+v, %v", *r.WebhookURL, evs, err)
		}
	}
	if n := recv.count.Load(); n != 0 {
		t.Fatalf("the private receiver was called %d times", n)
	}
	// With --allow-private-webhooks the same target is reached, signed.
	r := webhookRule(t, s, org, recv.srv.URL+"/y")
	if _, err := s.TestAlertRule(ctx, org.ID, r.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	allowed := &worker.AlertDeliverer{Store: s, AllowPrivate: true, WebhookTLS: &tls.Config{RootCAs: roots}}
	if err := allowed.DeliverPending(ctx); err != nil {
		t.Fatal(err)
	}
	allowed.Wait()
	got := <-recv.calls
	if !alerts.Verify(hookSecret, got.body, got.sig) || got.msg.Event != alerts.EventTest {
		t.Fatalf("delivery %s %s", got.sig, got.body)
	}
}

// Two deliverers (two replicas) share one outbox: each event is delivered once.
func TestAlertOutboxClaimedOnce(t *testing.T) {
	t.Parallel()
	s, org := storeOnly(t)
	recv := newReceiver(t, 0)
	roots := trusting(recv.srv)
	ctx := context.Background()
	r := webhookRule(t, s, org, recv.srv.URL)
	const n = 30
	for range n {
		if _, err := s.TestAlertRule(ctx, org.ID, r.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range 2 {
		d := &worker.AlertDeliverer{Store: s, Holder: fmt.Sprintf("replica-%d", i), AllowPrivate: true, WebhookTLS: &tls.Config{RootCAs: roots}, Concurrency: 4}
		wg.Go(func() {
			// Both replicas keep looking until every event reached the
			// receiver (however slow a busy machine makes that).
			for deadline := time.Now().Add(time.Minute); recv.count.Load() < n && time.Now().Before(deadline); {
				if err := d.DeliverPending(ctx); err != nil {
					t.Error(err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			d.Wait()
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for len(seen) < n {
		select {
		case got := <-recv.calls:
			seen[got.msg.ID]++
		case <-time.After(time.Minute):
			t.Fatalf("%d of %d events delivered", len(seen), n)
		}
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("event %s delivered %d times", id, c)
		}
	}
	if got := recv.count.Load(); got != n {
		t.Fatalf("%d calls for %d events", got, n)
	}
}

// The mailer speaks STARTTLS and implicit TLS with PLAIN authentication.
func TestMailerTLSModes(t *testing.T) {
	t.Parallel()
	certSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer certSrv.Close()
	roots := trusting(certSrv)
	serverTLS := &tls.Config{Certificates: certSrv.TLS.Certificates}
	for _, mode := range []string{worker.SMTPStartTLS, worker.SMTPTLS} {
		srv := apitest.NewSMTPServer(t, serverTLS, mode == worker.SMTPTLS)
		m := &worker.Mailer{Addr: srv.Addr, User: "alerts", Password: "pw", From: "patchd@example.com", TLS: mode, TLSConfig: &tls.Config{RootCAs: roots}}
		if err := m.Send(context.Background(), []string{"ops@example.com"}, "Ünïcode subject", "line one\n.line two starts with a dot\n"); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		got := <-srv.Mail
		if !got.TLS || got.Auth != "alerts:pw" || got.To[0] != "ops@example.com" || !strings.Contains(got.Data, "\n.line two starts with a dot") ||
			!strings.Contains(got.Data, "Subject: =?utf-8?q?") {
			t.Fatalf("%s: %+v", mode, got)
		}
	}
	// STARTTLS required but not offered: refused rather than sent in clear.
	plain := apitest.NewSMTPServer(t, nil, false)
	m := &worker.Mailer{Addr: plain.Addr, From: "patchd@example.com", TLS: worker.SMTPStartTLS}
	if err := m.Send(context.Background(), []string{"ops@example.com"}, "s", "b"); err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("err = %v", err)
	}
}

// TestAlertOutcomeSavedOnceSent: when saving a delivery's outcome fails,
// the deliverer tries again and keeps its claim meanwhile, so another
// replica never sends the event a second time (it did once the claim
// expired: the outcome save had one 10 s try).
func TestAlertOutcomeSavedOnceSent(t *testing.T) {
	t.Parallel()
	s, u := storetest.OpenURL(t)
	org, err := admin.CreateOrg(context.Background(), s, "Acme", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	recv := newReceiver(t, 0)
	roots := trusting(recv.srv)
	ctx := context.Background()
	r := webhookRule(t, s, org, recv.srv.URL)
	ev, err := s.TestAlertRule(ctx, org.ID, r.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	const claim = 6 * time.Second
	deliverer := func(holder string) *worker.AlertDeliverer {
		return &worker.AlertDeliverer{Store: s, Holder: holder, AllowPrivate: true, WebhookTLS: &tls.Config{RootCAs: roots},
			Timeout: time.Second, Claim: claim}
	}
	a, b := deliverer("replica-a"), deliverer("replica-b")
	// Recording the outcome (done_at set) fails until undo.
	undo := storetest.FailUpdates(t, u, "alert_outbox", "done_at")
	if err := a.DeliverPending(ctx); err != nil {
		t.Fatal(err)
	}
	claimedBy := time.Now() // a claimed the row before this, until claimedBy + claim at the latest
	select {
	case <-recv.calls:
	case <-time.After(time.Minute):
		t.Fatal("replica a did not send the event")
	}
	// Past a's first claim, replica b looks at the outbox.
	for time.Now().Before(claimedBy.Add(claim + 500*time.Millisecond)) {
		time.Sleep(100 * time.Millisecond)
	}
	if err := b.DeliverPending(ctx); err != nil {
		t.Fatal(err)
	}
	b.Wait()
	if n := recv.count.Load(); n != 1 {
		t.Fatalf("the event was sent %d times while its outcome could not be saved", n)
	}
	// The database takes the outcome again: a records it.
	undo()
	a.Wait()
	evs, err := s.ListAlertEvents(ctx, org.ID, r.ID, 10)
	if err != nil || len(evs) != 1 || evs[0].ID != ev.ID || evs[0].WebhookOutcome == nil || *evs[0].WebhookOutcome != "HTTP 204" {
		t.Fatalf("events %+v %v", evs, err)
	}
	if err := b.DeliverPending(ctx); err != nil {
		t.Fatal(err)
	}
	b.Wait()
	if n := recv.count.Load(); n != 1 {
		t.Fatalf("the event was sent %d times", n)
	}
}

// TestAlertEndpointOfflineStopped: an endpoint whose agent said it stops
// counts as disconnected at once, so its offline alert comes after the
// rule's threshold alone; an endpoint merely unseen waits until it counts
// as disconnected (three check-in intervals) too.
func TestAlertEndpointOfflineStopped(t *testing.T) {
	t.Parallel()
	a := newAlertEnv(t)
	a.eval.DisconnectedAfter = 30 * time.Minute
	a.rule(alerts.EndpointOffline, ptr(10), "")
	stopped := a.Enroll("m-stop-1", "web-stop", "linux")
	a.Enroll("m-stop-2", "web-run", "linux")
	a.clock.Add(time.Second)
	if ans := stopped.Stopping(agentproto.StopSignal); ans.Status != http.StatusNoContent {
		t.Fatalf("stopping: %d %s", ans.Status, ans.Body)
	}
	if n := a.evaluate(9 * time.Minute); n != 0 {
		t.Fatalf("raised %d after 9 minutes", n)
	}
	if n := a.evaluate(2 * time.Minute); n != 1 {
		t.Fatalf("raised %d after 11 minutes, want the stopped endpoint's", n)
	}
	a.delivered(alerts.EndpointOffline, "Endpoint web-stop is offline")
	if n := a.evaluate(15 * time.Minute); n != 0 {
		t.Fatalf("raised %d after 26 minutes", n)
	}
	if n := a.evaluate(5 * time.Minute); n != 1 {
		t.Fatalf("raised %d after 31 minutes, want the unseen endpoint's", n)
	}
	a.delivered(alerts.EndpointOffline, "Endpoint web-run is offline")
}
