package reports_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/reports"
	"github.com/patchd/patchd/internal/safecsv"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulndb"
	"github.com/patchd/patchd/openapi"
	"github.com/patchd/patchd/sim"
)

const fleetSeed = 7

// fleetEndpoints is enough for every platform and server role of the
// simulator to appear (Windows file servers send NTFS quotas).
const fleetEndpoints = 48

// simFleet enrolls fleetEndpoints simulated endpoints into the Env's
// organization, gives them vulnerability findings, reboots and update
// deployments, a compensating control, and lets the first ones go offline.
func simFleet(t *testing.T) (*apitest.Env, []*apitest.Agent) {
	t.Helper()
	ctx := context.Background()
	// A short check-in interval makes the endpoints enrolled first offline
	// by the time the reports are read.
	env := apitest.New(t, func(c *config.Config) { c.CheckinInterval = time.Second; c.VulnMatchInterval = 200 * time.Millisecond })
	var agents []*apitest.Agent
	for i := range fleetEndpoints {
		inv := sim.Generate(fleetSeed, i)
		ag := env.Enroll(fmt.Sprintf("sim-%d", i), inv.System.Hostname, sim.Platform(fleetSeed, i))
		ag.MustInventory(inv)
		agents = append(agents, ag)
	}
	// A Windows file server, for the NTFS quotas.
	for i := fleetEndpoints; ; i++ {
		inv := sim.Generate(fleetSeed, i)
		if len(inv.Datasets["disk-quotas"]) > 0 {
			ag := env.Enroll(fmt.Sprintf("sim-%d", i), inv.System.Hostname, sim.Platform(fleetSeed, i))
			ag.MustInventory(inv)
			agents = append(agents, ag)
			break
		}
	}
	const fixtures = "../vulns/testdata/"
	if _, err := vulndb.ImportFiles(ctx, env.Store, []string{fixtures + "nvd-subset.json", fixtures + "kev-subset.json",
		fixtures + "osv-debian12.json", fixtures + "osv-almalinux9.json"}, vulndb.By{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	m := &vulndb.Matcher{Store: env.Store, Holder: "reports-test"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		vs, _, err := env.Store.ListVulnerabilities(ctx, store.VulnQuery{OrgID: env.Org.ID, Limit: 10, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) > 0 {
			err := env.Store.SetVulnException(ctx, &store.AuditEntry{OrgID: env.Org.ID, Actor: "test", Action: "vulnerability.exception"},
				&store.VulnException{OrgID: env.Org.ID, CVEID: vs[0].CVEID, Kind: store.ExceptionCompensatingControl, Reason: "Blocked at the proxy", CreatedBy: "test", CreatedAt: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no vulnerability was matched on the simulated fleet")
		}
		m.RunOnce(ctx)
		time.Sleep(100 * time.Millisecond)
	}
	// Every endpoint but the four that check in below goes offline.
	time.Sleep(3100 * time.Millisecond)
	// Run history: a reboot and an update deployment, reported done.
	zero, one := 0, 1
	for _, typ := range []string{"REBOOT", "DEPLOY_UPDATES"} {
		payload := any(map[string]any{"message": "", "timeoutSeconds": 300})
		if typ == "DEPLOY_UPDATES" {
			payload = map[string]any{"mode": "all"}
		}
		env.Queue(env.Org, typ, payload, agents[len(agents)-4:]...)
		for i, ag := range agents[len(agents)-4:] {
			resp, ans := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0"})
			if ans.Status != http.StatusOK || len(resp.Commands) == 0 {
				t.Fatalf("check-in: %d %s, %d commands", ans.Status, ans.Body, len(resp.Commands))
			}
			for _, c := range resp.Commands {
				status, code := "SUCCESS", &zero
				if i == 0 {
					status, code = "FAILED", &one
				}
				if a := ag.Status(c.ID, status, "Done at "+time.Now().UTC().Format(time.RFC3339)+"\nmore log", code); a.Status != http.StatusOK {
					t.Fatalf("status: %d %s", a.Status, a.Body)
				}
			}
		}
	}
	// Check-ins are written in batches: write them now, or the first reports
	// could be read as JSON before and as CSV after the batch.
	if err := env.Server.FlushCheckins(ctx); err != nil {
		t.Fatal(err)
	}
	return env, agents
}

// csvText is how a JSON report value reads in the CSV of the report.
func csvText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return safecsv.Text(x)
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return safecsv.Text(string(b))
}

func readCSV(t *testing.T, c *client.Client, key string) (http.Header, [][]string) {
	t.Helper()
	resp, err := c.ReportCSV(context.Background(), key)
	if err != nil {
		t.Fatalf("%s csv: %v", key, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s csv: %d %s", key, resp.StatusCode, b)
	}
	records, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil {
		t.Fatalf("%s csv: %v", key, err)
	}
	return resp.Header, records
}

// reportsWithoutSimData have no rows on a simulated fleet for a reason
// outside the simulator: the single-CVE reports need the product (MOVEit
// Transfer, the Action1 agent) that no simulated endpoint runs.
var reportsWithoutSimData = []string{"moveit-vulnerability", "cve-2025-5480-status"}

func TestCatalogOnSimulatedFleet(t *testing.T) {
	env, _ := simFleet(t)
	ctx := context.Background()
	c := env.Admin
	// The day's compliance, as the server's recorder writes it every 10
	// minutes (its first pass may have run before the fleet existed).
	if _, err := env.Store.RecordCompliance(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}

	// The catalog lists exactly the keys of the specification (the enum of
	// the OpenAPI document), each with a title, category and description.
	list, err := c.ReportCatalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	var specKeys []string
	for _, v := range doc.Components.Schemas["ReportKey"].Value.Enum {
		specKeys = append(specKeys, v.(string))
	}
	// The spec's 87 and patchd's compliance-history and compliance-by-group.
	if len(specKeys) != 89 || list.Total != len(list.Items) || len(list.Items) != len(specKeys) {
		t.Fatalf("catalog has %d reports (total %d), the spec %d", len(list.Items), list.Total, len(specKeys))
	}
	for i, m := range list.Items {
		if m.Key != specKeys[i] {
			t.Errorf("catalog entry %d is %q, the spec lists %q", i, m.Key, specKeys[i])
		}
		if m.Title == "" || m.Category == "" || !strings.HasSuffix(m.Description, ".") {
			t.Errorf("report %s: incomplete meta %+v", m.Key, m)
		}
	}

	empty := []string{}
	withRows := 0
	for _, m := range list.Items {
		rep, err := c.Report(ctx, m.Key)
		if err != nil {
			t.Fatalf("%s: %v", m.Key, err)
		}
		def, _ := reports.Lookup(m.Key)
		if rep.Title != def.Title || !slices.Equal(rep.Columns, def.Columns) || rep.Total != len(rep.Rows) {
			t.Errorf("%s: title %q, columns %v, total %d for %d rows", m.Key, rep.Title, rep.Columns, rep.Total, len(rep.Rows))
		}
		for i, row := range rep.Rows {
			if len(row) != len(rep.Columns) {
				t.Fatalf("%s row %d has %d values for %d columns: %v", m.Key, i, len(row), len(rep.Columns), row)
			}
		}
		if len(rep.Rows) == 0 {
			empty = append(empty, m.Key)
			if rep.CollectedAt != nil && !strings.Contains(m.Key, "vulnerab") {
				// Nothing collected is behind an empty report, except the
				// datasets of endpoints whose rows were all filtered out.
				t.Logf("%s: empty, collectedAt %v", m.Key, rep.CollectedAt)
			}
		} else {
			withRows++
			if rep.CollectedAt == nil {
				t.Errorf("%s: %d rows but no collectedAt", m.Key, len(rep.Rows))
			}
		}

		// The CSV holds the same rows, header first.
		h, records := readCSV(t, c, m.Key)
		if ct := h.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
			t.Errorf("%s csv: Content-Type %q", m.Key, ct)
		}
		if cd := h.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="`+m.Key+"-") || !strings.HasSuffix(cd, `.csv"`) {
			t.Errorf("%s csv: Content-Disposition %q", m.Key, cd)
		}
		if len(records) != len(rep.Rows)+1 || !slices.Equal(records[0], rep.Columns) {
			t.Fatalf("%s csv: %d records (header %v), JSON has %d rows", m.Key, len(records), records[0], len(rep.Rows))
		}
		// Time-dependent values (local time now, days offline) may change
		// between the two reads; every other value agrees.
		for i, row := range rep.Rows {
			for j, v := range row {
				if got := records[i+1][j]; got != csvText(v) && m.Key != "local-time" && m.Key != "offline-endpoints" {
					t.Errorf("%s row %d column %s: CSV %q, JSON %q", m.Key, i, rep.Columns[j], got, csvText(v))
				}
			}
		}
	}
	t.Logf("%d of %d reports have rows on a simulated fleet of %d endpoints; empty: %v", withRows, len(list.Items), fleetEndpoints, empty)
	for _, k := range empty {
		if !slices.Contains(reportsWithoutSimData, k) {
			t.Errorf("report %s has no rows on the simulated fleet", k)
		}
	}
}

// TestReportsIsolation: another organization sees none of the fleet's rows,
// and its own endpoint only.
func TestReportsIsolation(t *testing.T) {
	env := apitest.New(t)
	ctx := context.Background()
	for i := range 6 {
		inv := sim.Generate(fleetSeed, i)
		env.Enroll(fmt.Sprintf("a-%d", i), inv.System.Hostname, sim.Platform(fleetSeed, i)).MustInventory(inv)
	}
	other := env.NewOrg("Other")
	oc := env.Client(other, perm.All)
	for _, d := range reports.Catalog() {
		rep, err := oc.Report(ctx, d.Key)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Total != 0 || len(rep.Rows) != 0 || rep.CollectedAt != nil {
			t.Errorf("%s: another organization sees %d rows (collectedAt %v)", d.Key, rep.Total, rep.CollectedAt)
		}
		_, records := readCSV(t, oc, d.Key)
		if len(records) != 1 {
			t.Errorf("%s: another organization's CSV has %d records", d.Key, len(records))
		}
	}
	mine, err := env.Admin.Report(ctx, "endpoints")
	if err != nil {
		t.Fatal(err)
	}
	if mine.Total != 6 {
		t.Fatalf("endpoints report has %d rows, want 6", mine.Total)
	}
}

// TestReportPaging: limit and offset window the JSON rows; total counts
// every row.
func TestReportPaging(t *testing.T) {
	env := apitest.New(t)
	ctx := context.Background()
	for i := range 3 {
		inv := sim.Generate(fleetSeed, i)
		env.Enroll(fmt.Sprintf("p-%d", i), inv.System.Hostname, sim.Platform(fleetSeed, i)).MustInventory(inv)
	}
	all, err := env.Admin.Report(ctx, "installed-software")
	if err != nil {
		t.Fatal(err)
	}
	if all.Total < 20 {
		t.Fatalf("only %d software rows", all.Total)
	}
	var page apiv1.Report
	if err := env.Admin.Do(ctx, http.MethodGet, "/api/v1/reports/installed-software", map[string][]string{"limit": {"5"}, "offset": {"10"}}, nil, &page); err != nil {
		t.Fatal(err)
	}
	if page.Total != all.Total || len(page.Rows) != 5 || fmt.Sprint(page.Rows) != fmt.Sprint(all.Rows[10:15]) {
		t.Fatalf("page: total %d, %d rows %v; want %v", page.Total, len(page.Rows), page.Rows, all.Rows[10:15])
	}
	// Every report: a page equals the same rows of the whole report and
	// total is the whole report's count, whether the source located the
	// page itself (SQL sources, unfiltered datasets) or the API windowed it.
	for _, d := range reports.Catalog() {
		whole, err := env.Admin.Report(ctx, d.Key)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range [][2]int{{3, 2}, {0, 0}, {1000, 0}, {2, whole.Total - 1}, {5, whole.Total + 3}} {
			limit, offset := w[0], max(w[1], 0)
			var page apiv1.Report
			q := map[string][]string{"limit": {fmt.Sprint(limit)}, "offset": {fmt.Sprint(offset)}}
			if err := env.Admin.Do(ctx, http.MethodGet, "/api/v1/reports/"+d.Key, q, nil, &page); err != nil {
				t.Fatal(err)
			}
			from, to := min(offset, len(whole.Rows)), min(offset+limit, len(whole.Rows))
			if page.Total != whole.Total || fmt.Sprint(page.Rows) != fmt.Sprint(whole.Rows[from:to]) {
				t.Errorf("%s limit=%d offset=%d: total %d (want %d), rows %v, want %v", d.Key, limit, offset, page.Total, whole.Total, page.Rows, whole.Rows[from:to])
			}
		}
	}
	var bad apiv1.Report
	err = env.Admin.Do(ctx, http.MethodGet, "/api/v1/reports/endpoints", map[string][]string{"limit": {"x"}}, nil, &bad)
	if !client.IsStatus(err, http.StatusBadRequest) {
		t.Fatalf("limit=x: %v", err)
	}
}
