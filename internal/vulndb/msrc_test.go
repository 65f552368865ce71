package vulndb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/vulndb"
)

var msrcFixtures = []string{testdata + "msrc-2025-Nov.xml", testdata + "msrc-2025-Dec.xml"}

func TestImportMSRC(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	res, err := vulndb.ImportFiles(ctx, s, msrcFixtures, vulndb.By{Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts != (vulndb.Counts{MSRC: 8}) || res.Formats["msrc"] != (vulndb.Counts{MSRC: 8}) || res.Stored != (store.FeedCounts{MSRC: 8}) || res.Documents != 2 {
		t.Fatalf("import = %+v", res)
	}
	fixes := 0
	if err := s.ScanMSRCFixes(ctx, func(store.MSRCFix) { fixes++ }); err != nil {
		t.Fatal(err)
	}
	// Re-importing (here the December document in its JSON form) updates
	// in place.
	res, err = vulndb.ImportFiles(ctx, s, []string{testdata + "msrc-2025-Dec.json", msrcFixtures[0]}, vulndb.By{Actor: "test"})
	if err != nil || res.Stored != (store.FeedCounts{MSRC: 8}) {
		t.Fatalf("re-import = %+v %v", res, err)
	}
	again := 0
	if err := s.ScanMSRCFixes(ctx, func(store.MSRCFix) { again++ }); err != nil {
		t.Fatal(err)
	}
	if fixes == 0 || again != fixes {
		t.Errorf("fixes %d, after re-import %d", fixes, again)
	}
	cves, err := s.MSRCCVEs(ctx, []string{"CVE-2025-62215", "CVE-2025-62468", "CVE-2025-0000"})
	if err != nil {
		t.Fatal(err)
	}
	k := cves["CVE-2025-62215"]
	if len(cves) != 2 || !k.Exploited || k.CVSS == nil || *k.CVSS != 7.0 || k.Release != "2025-Nov" || k.Severity != "Important" ||
		cves["CVE-2025-62468"].Exploited || cves["CVE-2025-62468"].Release != "2025-Dec" {
		t.Errorf("MSRC CVEs = %+v", cves)
	}
}

func TestSyncMSRCMonths(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	var mu sync.Mutex
	var asked []string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /cvrf/v3.0/cvrf/{month}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.PathValue("month"))
		mu.Unlock()
		if r.Header.Get("Accept") != "application/json" {
			http.Error(w, "accept", http.StatusNotAcceptable)
			return
		}
		switch r.PathValue("month") {
		case "2025-Nov":
			http.ServeFile(w, r, testdata+"msrc-2025-Nov.xml")
		case "2025-Dec":
			http.ServeFile(w, r, testdata+"msrc-2025-Dec.json")
		default:
			http.NotFound(w, r) // not published
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	now := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	cfg := vulndb.ConfigFromFeeds(config.Feeds{MSRCURL: srv.URL + "/cvrf/v3.0/cvrf/", MSRCSince: "2025-10"})
	cfg.Now = func() time.Time { return now }
	res, err := vulndb.Sync(ctx, s, cfg, vulndb.By{Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{"2025-Oct", "2025-Nov", "2025-Dec", "2026-Jan"}) || !slices.Equal(res.MSRCMonths, []string{"2025-Nov", "2025-Dec"}) ||
		res.Counts.MSRC != 8 || res.Stored.MSRC != 8 {
		t.Fatalf("sync asked %v: %+v", asked, res)
	}
	if v, _ := s.VulnState(ctx, store.StateMSRCSynced); v != 202512 {
		t.Errorf("msrc_synced = %d", v)
	}
	events, err := s.ListInstanceEvents(ctx, store.InstanceEventFilter{Actions: []string{"vulndb.sync"}})
	if err != nil || len(events) != 1 || events[0].Summary["msrc"] != float64(8) {
		t.Errorf("the sync's instance event: %+v %v", events, err)
	}
	// The next sync starts two months before the last one stored.
	asked, now = nil, time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC)
	if _, err := vulndb.Sync(ctx, s, cfg, vulndb.By{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{"2025-Oct", "2025-Nov", "2025-Dec", "2026-Jan", "2026-Feb"}) {
		t.Errorf("second sync asked %v", asked)
	}
	// A server error is a failed sync, not a skipped month.
	mux.HandleFunc("GET /broken/{month}", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusBadGateway) })
	cfg.MSRCURL = srv.URL + "/broken/"
	if _, err := vulndb.Sync(ctx, s, cfg, vulndb.By{Actor: "test"}); err == nil {
		t.Error("sync against a failing MSRC API succeeded")
	}
}

func windowsHost(host, caption, build, arch, typ, installType string) agentproto.Inventory {
	doc := apitest.Sample(host, "windows")
	doc.System.OS, doc.System.OSBuild, doc.System.Arch, doc.System.Type = str(caption), str(build), arch, typ
	if installType != "" {
		doc.System.OSInstallationType = str(installType)
	}
	doc.Software = nil
	doc.Updates = nil
	return doc
}

func windowsUpdate(title, kb string) agentproto.Update {
	return agentproto.Update{Title: title, KB: str(kb), Severity: str("Critical"), Source: "OS - Mandatory", Categories: []string{"Security Updates"}}
}

// Endpoints enrolled through the agent protocol are matched by their
// reported Windows build; the finding names the KB that fixes it.
func TestMatchingWindowsBuilds(t *testing.T) {
	ctx := context.Background()
	env := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = time.Hour })
	s := env.Store
	if _, err := vulndb.ImportFiles(ctx, s, msrcFixtures, vulndb.By{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	hosts := []struct {
		id, caption, build, arch, typ, install string
		want                                   []string
	}{
		{"w11-behind", "Windows 11 Pro", "10.0.22631.6198", "amd64", "workstation", "Client", []string{
			"CVE-2025-62215 KB5068865 10.0.22631.6199", "CVE-2025-62218 KB5068865 10.0.22631.6199",
			"CVE-2025-62221 KB5071417 10.0.22631.6345", "CVE-2025-62468 KB5071417 10.0.22631.6345"}},
		{"w11-nov", "Windows 11 Enterprise", "10.0.22631.6199", "amd64", "workstation", "Client", []string{
			"CVE-2025-62221 KB5071417 10.0.22631.6345", "CVE-2025-62468 KB5071417 10.0.22631.6345"}},
		{"w11-current", "Windows 11 Pro", "10.0.22631.6345", "amd64", "workstation", "Client", nil},
		{"w24h2", "Windows 11 Pro", "10.0.26100.7170", "arm64", "workstation", "", []string{
			"CVE-2025-62215 KB5068861 10.0.26100.7171", "CVE-2025-62218 KB5068861 10.0.26100.7171",
			"CVE-2025-62221 KB5072033 10.0.26100.7462", "CVE-2025-62468 KB5072033 10.0.26100.7462"}},
		{"ltsc2019", "Windows 10 Enterprise LTSC 2019", "10.0.17763.8027", "amd64", "workstation", "Client", []string{
			"CVE-2025-62221 KB5071544 10.0.17763.8146"}},
		{"srv2022-core", "Windows Server 2022 Datacenter", "10.0.20348.4404", "amd64", "server", "Server Core", []string{
			"CVE-2025-60713 KB5068787 10.0.20348.4405", "CVE-2025-62215 KB5068787 10.0.20348.4405",
			"CVE-2025-62221 KB5071547 10.0.20348.4529"}},
	}
	agents := map[string]*apitest.Agent{}
	for _, h := range hosts {
		a := env.Enroll("m-"+h.id, h.id, "windows")
		a.MustInventory(windowsHost(h.id, h.caption, h.build, h.arch, h.typ, h.install))
		agents[h.id] = a
	}
	m := &vulndb.Matcher{Store: s, Holder: "test"}
	if _, _, err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		fs, err := s.EndpointFindings(ctx, env.Org.ID, agents[h.id].ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range fs {
			got = append(got, f.CVEID+" "+f.Source+" "+f.FixedIn)
		}
		slices.Sort(got)
		if !slices.Equal(got, h.want) {
			t.Errorf("%s (%s): findings %q, want %q", h.id, h.build, got, h.want)
		}
		if h.id == "srv2022-core" && (len(fs) == 0 || fs[0].Software != "Windows Server 2022 (Server Core installation)" || fs[0].Version != "10.0.20348.4404") {
			t.Errorf("Server Core finding = %+v", fs)
		}
	}
	// Missing updates list the CVEs they fix on their endpoint. December's
	// cumulative update fixes November's CVEs too; November's update only
	// November's; an update Microsoft's data does not know fixes none.
	inv := windowsHost("w11-behind", "Windows 11 Pro", "10.0.22631.6198", "amd64", "workstation", "Client")
	inv.Updates = []agentproto.Update{
		windowsUpdate("2025-12 Cumulative Update for Windows 11 Version 23H2 for x64-based Systems (KB5071417)", "KB5071417"),
		windowsUpdate("2025-11 Cumulative Update for Windows 11 Version 23H2 for x64-based Systems (KB5068865)", "5068865"),
		windowsUpdate("2025-12 Cumulative Update for Windows 10 Version 22H2 (KB5071546)", "KB5071546"), // another product's
		windowsUpdate("Windows Malicious Software Removal Tool x64 - v5.137 (KB890830)", "KB890830"),
	}
	agents["w11-behind"].MustInventory(inv)
	if _, _, err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []store.UpdateQuery{{OrgID: env.Org.ID, EndpointID: agents["w11-behind"].ID, Limit: 100}, {OrgID: env.Org.ID, Limit: 100}} {
		ups, _, err := s.ListUpdates(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for _, u := range ups {
			got[*u.KB] = u.CVEs
		}
		want := map[string][]string{
			"KB5071417": {"CVE-2025-62215", "CVE-2025-62218", "CVE-2025-62221", "CVE-2025-62468"},
			"5068865":   {"CVE-2025-62215", "CVE-2025-62218"},
			"KB5071546": {},
			"KB890830":  {},
		}
		if len(got) != len(want) {
			t.Fatalf("updates = %v", got)
		}
		for kb, w := range want {
			if !slices.Equal(got[kb], w) || got[kb] == nil {
				t.Errorf("cves of %s = %q, want %q (endpoint filter %q)", kb, got[kb], w, q.EndpointID)
			}
		}
	}

	// The updates that fix a CVE count the cumulative ones: a November CVE
	// is fixed by November's and December's updates, a December CVE by
	// December's alone; DEPLOY_UPDATES by CVE installs them.
	for cve, want := range map[string][]string{"CVE-2025-62215": {"5068865", "KB5071417"}, "CVE-2025-62221": {"KB5071417"}} {
		fixes, err := s.FixingUpdates(ctx, env.Org.ID, cve)
		if err != nil {
			t.Fatal(err)
		}
		var kbs []string
		for _, f := range fixes {
			kbs = append(kbs, f.KB)
		}
		slices.Sort(kbs)
		if !slices.Equal(kbs, want) {
			t.Errorf("updates fixing %s: %q, want %q", cve, kbs, want)
		}
	}
	if _, err := env.Admin.RunAction(ctx, apiv1.ActionBody{Type: "DEPLOY_UPDATES", EndpointIDs: []string{agents["w11-behind"].ID},
		Payload: json.RawMessage(`{"mode":"filters","filters":{"cves":["CVE-2025-62221"]}}`)}); err != nil {
		t.Fatal(err)
	}
	resp, _ := agents["w11-behind"].Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0"})
	var deployed []string
	for _, c := range resp.Commands {
		var p agentproto.DeployUpdatesPayload
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			t.Fatal(err)
		}
		for _, u := range p.Updates {
			deployed = append(deployed, *u.KB)
		}
	}
	if !slices.Equal(deployed, []string{"KB5071417"}) {
		t.Errorf("deploying the fix of CVE-2025-62221 sends %q, want December's update", deployed)
	}

	// Installing December's update (a new inventory with the new build)
	// clears the findings.
	agents["w11-nov"].MustInventory(windowsHost("w11-nov", "Windows 11 Enterprise", "10.0.22631.6345", "amd64", "workstation", "Client"))
	if _, _, err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if fs, _ := s.EndpointFindings(ctx, env.Org.ID, agents["w11-nov"].ID); len(fs) != 0 {
		t.Errorf("after the December update: %+v", fs)
	}
	// The list shows Microsoft's score and title where the NVD has none.
	items, _, err := s.ListVulnerabilities(ctx, store.VulnQuery{OrgID: env.Org.ID, Limit: 100, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	byCVE := map[string]int{}
	for i, v := range items {
		byCVE[v.CVEID] = i
	}
	k, ok := byCVE["CVE-2025-62215"]
	if !ok || len(items) != 5 || items[k].CVSSScore == nil || *items[k].CVSSScore != 7.0 || items[k].Description == nil ||
		*items[k].Description != "Windows Kernel Elevation of Privilege Vulnerability" || len(items[k].Endpoints) != 3 {
		t.Errorf("list = %+v", items)
	}
	// Each CVE names the KB that fixes it on each affected endpoint.
	var rems []string
	for _, r := range items[byCVE["CVE-2025-62221"]].RemediatedBy {
		rems = append(rems, fmt.Sprintf("%s %s %s %s %d", r.Kind, r.Key, r.Software, *r.FixedIn, r.Endpoints))
	}
	if want := []string{
		"kb KB5071417 Windows 11 Version 23H2 for x64-based Systems 10.0.22631.6345 1",
		"kb KB5071544 Windows 10 Version 1809 for x64-based Systems 10.0.17763.8146 1",
		"kb KB5071547 Windows Server 2022 (Server Core installation) 10.0.20348.4529 1",
		"kb KB5072033 Windows 11 Version 24H2 for ARM64-based Systems 10.0.26100.7462 1",
	}; !slices.Equal(rems, want) {
		t.Errorf("remediatedBy of CVE-2025-62221 = %q, want %q", rems, want)
	}
	min := 7.5
	items, _, err = s.ListVulnerabilities(ctx, store.VulnQuery{OrgID: env.Org.ID, Limit: 100, MinCVSS: &min, Now: time.Now()})
	if err != nil || len(items) != 2 || items[0].CVEID != "CVE-2025-62221" || items[1].CVEID != "CVE-2025-60713" {
		t.Errorf("minCvss 7.5 = %+v %v", items, err)
	}
}

// clickToRunFindings answers the endpoint's findings as sorted "CVE
// fixed-in" pairs, each of which must be of the software at the version
// through Click to Run (host names the endpoint in an error).
func clickToRunFindings(t *testing.T, s *store.Store, orgID, endpointID, host, software, version string) []string {
	t.Helper()
	fs, err := s.EndpointFindings(context.Background(), orgID, endpointID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		if f.Software != software || f.Source != "Click to Run" || f.Version != version {
			t.Errorf("%s: finding %+v", host, f)
		}
		got = append(got, f.CVEID+" "+f.FixedIn)
	}
	slices.Sort(got)
	return got
}

// Microsoft 365 Apps installs are matched by build: Microsoft's data says
// which CVEs the Click-to-Run builds of a Patch Tuesday fix, the release
// history which builds those are (both real, testdata/README.md).
func TestMatchingOfficeBuilds(t *testing.T) {
	ctx := context.Background()
	env := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = time.Hour })
	s := env.Store
	res, err := vulndb.ImportFiles(ctx, s, append(slices.Clone(msrcFixtures), testdata+"m365-apps-builds-2025Q4.json"), vulndb.By{Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Formats["office-builds"] != (vulndb.Counts{OfficeBuilds: 36}) || res.Stored.OfficeBuilds != 35 || res.Stored.MSRC != 8 {
		// 36 rows, one build listed twice in one channel (19029.20300 on
		// 2025-11-11 and 2025-11-17).
		t.Fatalf("import = %+v", res)
	}
	const m365 = "Microsoft 365 Apps for enterprise - en-us"
	hosts := []struct {
		id, version string
		want        []string
	}{
		// One release before November's Patch Tuesday build 19328.20190.
		{"o-behind", "16.0.19328.20178", []string{
			"CVE-2025-60728 16.0.19328.20190", "CVE-2025-62199 16.0.19328.20190", "CVE-2025-62554 16.0.19328.20266"}},
		{"o-nov", "16.0.19328.20190", []string{"CVE-2025-62554 16.0.19328.20266"}},
		{"o-mec-dec", "16.0.19328.20266", nil},
		{"o-current", "16.0.19426.20186", nil},
		{"o-saec", "16.0.17928.20729", []string{
			"CVE-2025-60728 16.0.17928.20730", "CVE-2025-62199 16.0.17928.20730", "CVE-2025-62554 16.0.17928.20742"}},
		{"o-unknown-line", "16.0.18129.20158", nil},
	}
	agents := map[string]*apitest.Agent{}
	for _, h := range hosts {
		a := env.Enroll("m-"+h.id, h.id, "windows")
		inv := windowsHost(h.id, "Windows 11 Pro", "10.0.22631.6345", "amd64", "workstation", "Client")
		inv.Software = []agentproto.Software{sw(m365, "Microsoft Corporation", h.version), sw("Office 16 Click-to-Run Licensing Component", "Microsoft Corporation", h.version)}
		a.MustInventory(inv)
		agents[h.id] = a
	}
	m := &vulndb.Matcher{Store: s, Holder: "test"}
	if _, _, err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		got := clickToRunFindings(t, s, env.Org.ID, agents[h.id].ID, h.id, "Microsoft 365 Apps", h.version)
		if !slices.Equal(got, h.want) {
			t.Errorf("%s (%s): findings %q, want %q", h.id, h.version, got, h.want)
		}
	}
	// Without the release history the same hosts have no Office finding:
	// MSRC alone names no build.
	env2 := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = time.Hour })
	if _, err := vulndb.ImportFiles(ctx, env2.Store, msrcFixtures, vulndb.By{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	a := env2.Enroll("m-o", "o-behind", "windows")
	inv := windowsHost("o-behind", "Windows 11 Pro", "10.0.22631.6345", "amd64", "workstation", "Client")
	inv.Software = []agentproto.Software{sw(m365, "Microsoft Corporation", "16.0.19328.20178")}
	a.MustInventory(inv)
	m2 := &vulndb.Matcher{Store: env2.Store, Holder: "test"}
	if _, _, err := m2.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if fs, err := env2.Store.EndpointFindings(ctx, env2.Org.ID, a.ID); err != nil || len(fs) != 0 {
		t.Errorf("without a release history: %+v %v", fs, err)
	}
}

// Volume-licensed Office LTSC 2021 and Office 2019 installs are matched by
// their own histories (real builds, testdata/README.md) against the real
// February 2024 MSRC document: a build below February's fix has its CVEs,
// the fix and later builds none; a winget update of the install to the fix
// pairs with the findings.
func TestMatchingOfficeVolumeLicensed(t *testing.T) {
	ctx := context.Background()
	env := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = time.Hour })
	s := env.Store
	files := append(slices.Clone(msrcFixtures), testdata+"msrc-2024-Feb.xml", testdata+"m365-apps-builds-2025Q4.json",
		testdata+"office-vl-builds-2023-2024.json")
	res, err := vulndb.ImportFiles(ctx, s, files, vulndb.By{Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Formats["office-builds"] != (vulndb.Counts{OfficeBuilds: 46}) || res.Stored.OfficeBuilds != 45 || res.Stored.MSRC != 10 {
		t.Fatalf("import = %+v", res)
	}
	const (
		ltsc21 = "Microsoft Office LTSC Professional Plus 2021 - en-us"
		o19    = "Microsoft Office Professional Plus 2019 - en-us"
	)
	hosts := []struct {
		id, name, version, family string
		want                      []string
	}{
		{"l21-dec23", ltsc21, "16.0.14332.20615", "Microsoft Office LTSC 2021", []string{
			"CVE-2024-20673 16.0.14332.20637", "CVE-2024-21413 16.0.14332.20637"}},
		{"l21-below", ltsc21, "16.0.14332.20636", "Microsoft Office LTSC 2021", []string{
			"CVE-2024-20673 16.0.14332.20637", "CVE-2024-21413 16.0.14332.20637"}},
		{"l21-fix", ltsc21, "16.0.14332.20637", "", nil},
		{"l21-dec24", ltsc21, "16.0.14332.20828", "", nil},
		{"o19-dec23", o19, "16.0.10405.20015", "Microsoft Office 2019", []string{
			"CVE-2024-20673 16.0.10407.20032", "CVE-2024-21413 16.0.10407.20032"}},
		{"o19-fix", o19, "16.0.10407.20032", "", nil},
		{"o19-nov24", o19, "16.0.10416.20007", "", nil},
	}
	agents := map[string]*apitest.Agent{}
	for _, h := range hosts {
		a := env.Enroll("m-"+h.id, h.id, "windows")
		inv := windowsHost(h.id, "Windows 11 Pro", "10.0.22631.6345", "amd64", "workstation", "Client")
		inv.Software = []agentproto.Software{sw(h.name, "Microsoft Corporation", h.version)}
		if h.id == "l21-dec23" {
			// winget offers the install the fix (as patchd-agent reports it).
			inv.Updates = []agentproto.Update{{Title: h.name + " 16.0.14332.20637", Severity: str("Unspecified"), Source: "Applications",
				Categories: []string{"Application Updates"}, WingetID: str("Microsoft.Office"), InstalledVersion: str(h.version),
				LatestVersion: str("16.0.14332.20637")}}
		}
		a.MustInventory(inv)
		agents[h.id] = a
	}
	m := &vulndb.Matcher{Store: s, Holder: "test"}
	if _, _, err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		got := clickToRunFindings(t, s, env.Org.ID, agents[h.id].ID, h.id, h.family, h.version)
		if !slices.Equal(got, h.want) {
			t.Errorf("%s (%s): findings %q, want %q", h.id, h.version, got, h.want)
		}
	}
	fixes, err := s.FixingUpdates(ctx, env.Org.ID, "CVE-2024-21413")
	if err != nil {
		t.Fatal(err)
	}
	if len(fixes) != 1 || fixes[0].Title != ltsc21+" 16.0.14332.20637" || fixes[0].Endpoints != 1 {
		t.Errorf("updates fixing CVE-2024-21413: %+v", fixes)
	}
}

// The findings reports' "Update Available" pairs a finding with a missing
// update as Update.cves does: a later cumulative update fixes what an
// earlier KB fixed, so a November CVE whose own KB (KB5068865) is not
// missing (superseded) shows December's KB5071417; another product's
// update and one Microsoft's data does not know fix nothing; an
// application update counts only when it reaches the fixed version.
func TestFindingsReportUpdateAvailable(t *testing.T) {
	ctx := context.Background()
	env := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = time.Hour })
	s := env.Store
	if _, err := vulndb.ImportFiles(ctx, s, append(slices.Clone(msrcFixtures), testdata+"m365-apps-builds-2025Q4.json"), vulndb.By{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	const m365 = "Microsoft 365 Apps for enterprise - en-us"
	office := func(latest string) agentproto.Update {
		return agentproto.Update{Title: "Microsoft 365 Apps", Severity: str("Important"), Source: "Applications", InstalledVersion: str("16.0.19328.20178"),
			LatestVersion: str(latest), Categories: []string{"Applications"}}
	}
	behind := env.Enroll("m-behind", "w11-behind", "windows")
	inv := windowsHost("w11-behind", "Windows 11 Pro", "10.0.22631.6198", "amd64", "workstation", "Client")
	inv.Software = []agentproto.Software{sw(m365, "Microsoft Corporation", "16.0.19328.20178")}
	inv.Updates = []agentproto.Update{
		windowsUpdate("2025-12 Cumulative Update for Windows 11 Version 23H2 for x64-based Systems (KB5071417)", "KB5071417"),
		windowsUpdate("2025-12 Cumulative Update for Windows 10 Version 22H2 (KB5071546)", "KB5071546"),
		windowsUpdate("Windows Malicious Software Removal Tool x64 - v5.137 (KB890830)", "KB890830"),
		office("16.0.19426.20186"),
	}
	behind.MustInventory(inv)
	other := env.Enroll("m-other", "w10-other", "windows")
	inv = windowsHost("w10-other", "Windows 10 Enterprise", "10.0.19045.6575", "amd64", "workstation", "Client")
	inv.Software = []agentproto.Software{sw(m365, "Microsoft Corporation", "16.0.19328.20178")}
	// Another product's update, and an Office update short of December's
	// fix (16.0.19328.20266 in Version 2510).
	inv.Updates = []agentproto.Update{windowsUpdate("2025-12 Cumulative Update for Windows 11 Version 23H2 (KB5071417)", "KB5071417"), office("16.0.19328.20244")}
	other.MustInventory(inv)
	m := &vulndb.Matcher{Store: s, Holder: "test"}
	if _, _, err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{} // endpoint + KB or title → update key
	ups, _, err := s.ListUpdates(ctx, store.UpdateQuery{OrgID: env.Org.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range ups {
		name := u.Title
		if u.KB != nil {
			name = *u.KB
		}
		keys[u.Endpoint+" "+name] = u.Key
	}
	got := map[string]string{}
	for row, err := range s.ReportRows(ctx, "vuln-findings", store.ReportParams{OrgID: env.Org.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		u, _ := row.Values[10].(string) // Endpoint, its id, CVE, …, Software (6), …, Update Available
		got[fmt.Sprint(row.Values[0], " ", row.Values[2], " ", row.Values[6])] = u
	}
	dec := keys["w11-behind KB5071417"]
	app := keys["w11-behind Microsoft 365 Apps"]
	if dec == "" || app == "" {
		t.Fatalf("update keys %v", keys)
	}
	const w11 = "Windows 11 Version 23H2 for x64-based Systems"
	const w10 = "Windows 10 Version 22H2 for x64-based Systems"
	want := map[string]string{
		"w11-behind CVE-2025-62215 " + w11:             dec, // November's CVE: December's update
		"w11-behind CVE-2025-62218 " + w11:             dec,
		"w11-behind CVE-2025-62221 " + w11:             dec,
		"w11-behind CVE-2025-62468 " + w11:             dec,
		"w11-behind CVE-2025-60728 Microsoft 365 Apps": app,
		"w11-behind CVE-2025-62199 Microsoft 365 Apps": app,
		"w11-behind CVE-2025-62554 Microsoft 365 Apps": app,
		"w10-other CVE-2025-62221 " + w10:              "", // KB5071417 is Windows 11's
		"w10-other CVE-2025-60728 Microsoft 365 Apps":  keys["w10-other Microsoft 365 Apps"],
		"w10-other CVE-2025-62199 Microsoft 365 Apps":  keys["w10-other Microsoft 365 Apps"],
		"w10-other CVE-2025-62554 Microsoft 365 Apps":  "", // 16.0.19328.20244 is short of 20266
	}
	if len(got) != len(want) {
		t.Errorf("report rows %v", got)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: update available %q, want %q (rows %v)", k, g, w, got)
		}
	}
}

// sync downloads the Microsoft 365 Apps release history when
// --office-builds-url names one; a document of another kind there fails
// the sync.
func TestSyncOfficeBuilds(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /buildnumbers.json", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, testdata+"m365-apps-builds-2025Q4.json")
	})
	mux.HandleFunc("GET /kev.json", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, testdata+"kev-subset.json") })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfg := vulndb.ConfigFromFeeds(config.Feeds{OfficeBuildsURL: srv.URL + "/buildnumbers.json"})
	res, err := vulndb.Sync(ctx, s, cfg, vulndb.By{Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.OfficeBuilds != 36 || res.Stored.OfficeBuilds != 35 {
		t.Fatalf("sync = %+v", res)
	}
	events, err := s.ListInstanceEvents(ctx, store.InstanceEventFilter{Actions: []string{"vulndb.sync"}})
	if err != nil || len(events) != 1 || events[0].Summary["officeBuilds"] != float64(36) {
		t.Errorf("the sync's instance event: %+v %v", events, err)
	}
	cfg.OfficeBuildsURL = srv.URL + "/kev.json"
	if _, err := vulndb.Sync(ctx, s, cfg, vulndb.By{Actor: "test"}); err == nil || !strings.Contains(err.Error(), "release history") {
		t.Errorf("a KEV catalog as the release history: %v", err)
	}
	if c, _ := s.CountFeeds(ctx); c.KEV != 0 || c.OfficeBuilds != 35 {
		t.Errorf("after the failed sync: %+v", c)
	}
}
