package vulndb_test

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/vulndb"
	"github.com/patchd/patchd/internal/vulns"
)

const testdata = "../vulns/testdata/"

var fixtures = []string{testdata + "nvd-subset.json", testdata + "kev-subset.json", testdata + "osv-debian12.json", testdata + "osv-almalinux9.json"}

func TestImportFixtures(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	res, err := vulndb.ImportFiles(ctx, s, fixtures, vulndb.By{Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	want := vulndb.Counts{CVEs: 18, Rejected: 1, KEV: 10, OSV: 10}
	if res.Counts != want || res.Files != 4 || res.Formats["nvd"].CVEs != 18 || res.Formats["kev"].KEV != 10 || res.Formats["osv"].OSV != 10 {
		t.Fatalf("import = %+v, want counts %+v", res, want)
	}
	if res.Stored != (store.FeedCounts{CVEs: 18, KEV: 10, OSV: 10}) || res.FeedVersion != 1 {
		t.Fatalf("stored = %+v version %d", res.Stored, res.FeedVersion)
	}

	// Re-importing (plain, gzip and zip copies) updates, never duplicates.
	dir := t.TempDir()
	gz := filepath.Join(dir, "nvd.json.gz")
	raw, _ := os.ReadFile(fixtures[0])
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	zw.Close()
	os.WriteFile(gz, buf.Bytes(), 0o600)
	zipName := filepath.Join(dir, "osv.zip")
	writeZip(t, zipName, fixtures[2:])
	res, err = vulndb.ImportFiles(ctx, s, append([]string{gz, zipName}, fixtures...), vulndb.By{Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored != (store.FeedCounts{CVEs: 18, KEV: 10, OSV: 10}) || res.FeedVersion != 2 || res.Documents != 7 {
		t.Fatalf("re-import stored = %+v, documents %d, version %d", res.Stored, res.Documents, res.FeedVersion)
	}

	// A CVE the NVD rejects later is deleted.
	rejected := filepath.Join(dir, "rejected.json")
	os.WriteFile(rejected, []byte(`{"format":"NVD_CVE","version":"2.0","vulnerabilities":[{"cve":{"id":"CVE-2023-44487",
		"published":"2023-10-10T14:15:10.883","lastModified":"2025-01-01T00:00:00.000","vulnStatus":"Rejected",
		"descriptions":[{"lang":"en","value":"** REJECT ** test"}],"metrics":{},"configurations":[]}}]}`), 0o600)
	res, err = vulndb.ImportFiles(ctx, s, []string{rejected}, vulndb.By{Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Rejected != 1 || res.Stored.CVEs != 17 {
		t.Fatalf("after rejection: %+v", res)
	}
}

func writeZip(t *testing.T, name string, files []string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := zw.Create(filepath.Base(f))
		w.Write(b)
	}
	zw.Close()
	if err := os.WriteFile(name, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// nvdServer answers NVD CVE API 2.0 pages from the fixture: the records
// whose lastModified falls in [lastModStartDate, lastModEndDate), paged by
// startIndex and resultsPerPage, as the real API does.
func nvdServer(t *testing.T, requests *int) http.HandlerFunc {
	raw, err := os.ReadFile(fixtures[0])
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Vulnerabilities []json.RawMessage `json:"vulnerabilities"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		*requests++
		q := r.URL.Query()
		start, err1 := time.Parse("2006-01-02T15:04:05.000-07:00", q.Get("lastModStartDate"))
		end, err2 := time.Parse("2006-01-02T15:04:05.000-07:00", q.Get("lastModEndDate"))
		index, _ := strconv.Atoi(q.Get("startIndex"))
		size, _ := strconv.Atoi(q.Get("resultsPerPage"))
		if err1 != nil || err2 != nil || size <= 0 || end.Sub(start) > 120*24*time.Hour {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var in []json.RawMessage
		for _, v := range doc.Vulnerabilities {
			var item struct {
				CVE struct {
					LastModified string `json:"lastModified"`
				} `json:"cve"`
			}
			json.Unmarshal(v, &item)
			m, _ := time.Parse("2006-01-02T15:04:05.000", item.CVE.LastModified)
			if !m.Before(start) && m.Before(end) {
				in = append(in, v)
			}
		}
		page := in[min(index, len(in)):min(index+size, len(in))]
		json.NewEncoder(w).Encode(map[string]any{"resultsPerPage": len(page), "startIndex": index, "totalResults": len(in),
			"format": "NVD_CVE", "version": "2.0", "timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000"), "vulnerabilities": page})
	}
}

func TestSyncFromHTTP(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	zipName := filepath.Join(t.TempDir(), "all.zip")
	writeZip(t, zipName, fixtures[2:])
	nvdRequests := 0
	mux := http.NewServeMux()
	mux.HandleFunc("GET /rest/json/cves/2.0", nvdServer(t, &nvdRequests))
	mux.HandleFunc("GET /kev.json", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, fixtures[1]) })
	mux.HandleFunc("GET /Debian/all.zip", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, zipName) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) // after the last fixture change (2026-05-28)
	cfg := vulndb.ConfigFromFeeds(config.Feeds{NVDURL: srv.URL + "/rest/json/cves/2.0", KEVURL: srv.URL + "/kev.json", OSVURLs: srv.URL + "/Debian/all.zip"})
	cfg.NVDSince = time.Date(2023, 6, 1, 0, 0, 0, 0, time.UTC)
	cfg.NVDPageSize, cfg.NVDRateLimit, cfg.NVDBackoff = 4, time.Millisecond, time.Millisecond
	cfg.Now = func() time.Time { return now }
	res, err := vulndb.Sync(ctx, s, cfg, vulndb.By{Actor: "server:replica-1"})
	if err != nil {
		t.Fatal(err)
	}
	events, err := s.ListInstanceEvents(ctx, store.InstanceEventFilter{Actions: []string{"vulndb.sync"}})
	if err != nil || len(events) != 1 || events[0].Actor != "server:replica-1" || events[0].Summary["cves"] != float64(18) ||
		events[0].Summary["kev"] != float64(10) || events[0].Summary["feedVersion"] != float64(res.FeedVersion) || events[0].Summary["nvdUntil"] == nil {
		t.Errorf("the sync's instance event: %+v %v", events, err)
	}
	// Every fixture CVE was modified after 2023-06-01; the rejected one too.
	if res.Counts != (vulndb.Counts{CVEs: 18, Rejected: 1, KEV: 10, OSV: 10}) || res.Stored != (store.FeedCounts{CVEs: 18, KEV: 10, OSV: 10}) {
		t.Fatalf("sync = %+v", res)
	}
	// 19 records in pages of 4 over 10 windows of 120 days: more than one page.
	if nvdRequests < 7 {
		t.Errorf("NVD requests = %d, want paging", nvdRequests)
	}
	synced, _ := s.VulnState(ctx, store.StateNVDSynced)
	if synced != now.UnixMilli() {
		t.Errorf("nvd_synced = %d, want %d", synced, now.UnixMilli())
	}
	// The next sync asks only for what changed since (nothing here).
	now = now.Add(24 * time.Hour)
	nvdRequests = 0
	res, err = vulndb.Sync(ctx, s, cfg, vulndb.By{Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.CVEs != 0 || nvdRequests != 1 || res.NVDFrom.Before(now.Add(-25*time.Hour)) || res.Stored.CVEs != 18 {
		t.Errorf("incremental sync = %+v after %d requests", res, nvdRequests)
	}
	// A failing feed is an error, not a silent success.
	cfg.KEVURL = srv.URL + "/missing.json"
	if _, err := vulndb.Sync(ctx, s, cfg, vulndb.By{Actor: "test"}); err == nil {
		t.Error("sync with a missing KEV file succeeded")
	}
}

func str(s string) *string { return &s }

func sw(name, publisher, version string) agentproto.Software {
	return agentproto.Software{Name: name, Publisher: str(publisher), Version: str(version), InstallType: str("exe")}
}

func pkg(name, source, version, typ string) agentproto.Software {
	return agentproto.Software{Name: name, Version: str(version), InstallType: str(typ), SourcePackage: str(source)}
}

func linuxInventory(host, distro, release string, software ...agentproto.Software) agentproto.Inventory {
	doc := apitest.Sample(host, "linux")
	doc.System.OSVersion = str(release)
	doc.Updates[0].Distro = str(distro)
	doc.Software = software
	return doc
}

func windowsInventory(host string, software ...agentproto.Software) agentproto.Inventory {
	doc := apitest.Sample(host, "windows")
	doc.Software = software
	return doc
}

func findingSet(t *testing.T, s *store.Store, org, endpoint string) []string {
	t.Helper()
	fs, err := s.EndpointFindings(context.Background(), org, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, f.Software+" "+f.CVEID)
	}
	slices.Sort(out)
	return out
}

// TestMatchingAndRemediation drives the matcher by hand with a fixed clock
// (the server's own worker is slowed down to never run).
func TestMatchingAndRemediation(t *testing.T) {
	ctx := context.Background()
	env := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = time.Hour })
	s := env.Store
	if _, err := vulndb.ImportFiles(ctx, s, fixtures, vulndb.By{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	win := env.Enroll("m-win", "win-01", "windows")
	win.MustInventory(windowsInventory("win-01",
		sw("Google Chrome", "Google LLC", "116.0.5845.187"),                   // versionEndExcluding boundary: not CVE-2023-4863
		sw("Notepad++ (64-bit x64)", "Notepad++ Team", "8.5.6"),               // versionEndIncluding: affected
		sw("7-Zip 24.07 (x64)", "Igor Pavlov", "24.07"),                       // fixed for 11477, not for 0411
		sw("VLC media player", "VideoLAN", "3.0.20"),                          // fixed
		sw("Mozilla Firefox 115.16.1 ESR (x64 en-US)", "Mozilla", "115.16.1"), // ESR ranges, fixed
	))
	deb := env.Enroll("m-deb", "deb-01", "linux")
	deb.MustInventory(linuxInventory("deb-01", "debian", "12.5",
		pkg("libssl3", "openssl", "3.0.11-1~deb12u1", "deb"),   // before the backported fix
		pkg("libwebp7", "libwebp", "1.2.4-0.2+deb12u1", "deb"), // the fix
		pkg("xz-utils", "", "5.4.1-0.2", "deb"),                // Debian 12 never had the backdoor
		pkg("libc6", "glibc", "2.36-9+deb12u1", "deb"),
	))
	alma := env.Enroll("m-alma", "alma-01", "linux")
	alma.MustInventory(linuxInventory("alma-01", "almalinux", "9.3",
		pkg("openssl-libs", "openssl-3.0.7-24.el9.src.rpm", "3.0.7-24.el9", "rpm"), // no epoch, fix is 1:3.0.7-27.el9
		pkg("glibc", "glibc-2.34-60.el9_2.7.src.rpm", "2.34-60.el9_2.7", "rpm"),    // the fix itself
	))

	t0 := time.Date(2025, 1, 10, 12, 0, 0, 0, time.UTC)
	clock := t0
	m := &vulndb.Matcher{Store: s, Holder: "test", Now: func() time.Time { return clock }}
	st, ok, err := m.RunOnce(ctx)
	if err != nil || !ok || !st.Full || !st.Rebuilt {
		t.Fatalf("first pass = %+v %v %v", st, ok, err)
	}
	check := func(a *apitest.Agent, want ...string) {
		t.Helper()
		if got := findingSet(t, s, env.Org.ID, a.ID); !slices.Equal(got, want) {
			t.Errorf("findings of %s = %q, want %q", a.ID, got, want)
		}
	}
	check(win, "7-Zip CVE-2025-0411", "Google Chrome CVE-2024-12053", "Google Chrome CVE-2024-4671", "Google Chrome CVE-2025-2783", "Notepad++ CVE-2023-40031")
	check(deb, "glibc CVE-2023-4911", "openssl CVE-2023-5363")
	check(alma, "openssl CVE-2023-5363", "openssl CVE-2023-5678", "openssl CVE-2023-6129", "openssl CVE-2023-6237", "openssl CVE-2024-0727")

	// Nothing dirty and nothing new: a second pass writes nothing.
	st, _, err = m.RunOnce(ctx)
	if err != nil || st.Full || st.Changes != (store.ResultStats{}) {
		t.Fatalf("idle pass = %+v %v", st, err)
	}

	list := func(q store.VulnQuery) map[string]string {
		t.Helper()
		q.OrgID, q.Limit = env.Org.ID, 100
		items, total, err := s.ListVulnerabilities(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if total != len(items) {
			t.Fatalf("total %d for %d items", total, len(items))
		}
		out := map[string]string{}
		for _, v := range items {
			status := "-"
			if v.RemediationStatus != nil {
				status = *v.RemediationStatus + " " + v.RemediationDeadline.Format(time.DateOnly)
			}
			out[v.CVEID] = status
		}
		return out
	}
	// KEV due date first (CVE-2024-4671 due 2024-06-03, CVE-2023-4911
	// 2023-12-12, CVE-2025-0411 2025-02-27, CVE-2025-2783 2025-04-17);
	// otherwise first detection plus the period: High 30 days, Critical 15.
	now := t0.Add(24 * time.Hour)
	got := list(store.VulnQuery{Now: now})
	want := map[string]string{
		"CVE-2024-4671":  "Overdue 2024-06-03",
		"CVE-2023-4911":  "Overdue 2023-12-12",
		"CVE-2025-0411":  "Due later 2025-02-27",
		"CVE-2025-2783":  "Due later 2025-04-17",
		"CVE-2024-12053": "Due later 2025-02-09",
		"CVE-2023-40031": "Due later 2025-02-09",
		"CVE-2023-5363":  "Due later 2025-02-09",
		"CVE-2023-5678":  "-", // OSV-only ids without an NVD record: no severity, no deadline
		"CVE-2023-6129":  "-",
		"CVE-2023-6237":  "-",
		"CVE-2024-0727":  "-",
	}
	if !mapsEqual(got, want) {
		t.Errorf("list = %v\nwant %v", got, want)
	}
	// remediatedBy: the fixed package version of each distribution, the
	// fixed application version; a finding without a known fix adds none.
	fixes := map[string][]string{}
	items, _, err := s.ListVulnerabilities(ctx, store.VulnQuery{OrgID: env.Org.ID, Limit: 100, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range items {
		for _, r := range v.RemediatedBy {
			fixed := "-"
			if r.FixedIn != nil {
				fixed = *r.FixedIn
			}
			fixes[v.CVEID] = append(fixes[v.CVEID], r.Kind+" "+r.Key+" "+fixed+" "+strconv.Itoa(r.Endpoints))
		}
	}
	for cve, want := range map[string][]string{
		"CVE-2023-5363":  {"package openssl 1:3.0.7-27.el9 1", "package openssl 3.0.11-1~deb12u2 1"},
		"CVE-2024-12053": {"application Google Chrome 131.0.6778.108 1"},
	} {
		if !slices.Equal(fixes[cve], want) {
			t.Errorf("remediatedBy of %s = %q, want %q", cve, fixes[cve], want)
		}
	}
	// Due soon within 7 days of the deadline; the KEV due date counts to
	// the end of its day.
	at := func(y int, mo time.Month, d, h int) time.Time { return time.Date(y, mo, d, h, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		now       time.Time
		cve, want string
	}{
		{at(2025, 2, 3, 0), "CVE-2023-40031", "Due soon 2025-02-09"},
		{at(2025, 2, 3, 0), "CVE-2025-0411", "Due later 2025-02-27"},
		{at(2025, 2, 21, 0), "CVE-2025-0411", "Due soon 2025-02-27"},
		{at(2025, 2, 21, 0), "CVE-2023-40031", "Overdue 2025-02-09"},
		{at(2025, 2, 27, 23), "CVE-2025-0411", "Due soon 2025-02-27"},
		{at(2025, 2, 28, 0), "CVE-2025-0411", "Overdue 2025-02-27"},
	} {
		if got := list(store.VulnQuery{Now: c.now})[c.cve]; got != c.want {
			t.Errorf("%s at %v: %q, want %q", c.cve, c.now, got, c.want)
		}
	}
	// The organization's policy: High 7 days.
	p := vulns.DefaultPolicy()
	p.High = 7 * 24 * time.Hour
	if err := s.SetVulnPolicy(ctx, &store.AuditEntry{OrgID: env.Org.ID, Actor: "test", Action: "vulnerability.policy"}, env.Org.ID, p); err != nil {
		t.Fatal(err)
	}
	if got := list(store.VulnQuery{Now: now}); got["CVE-2023-40031"] != "Due soon 2025-01-17" || got["CVE-2024-4671"] != "Overdue 2024-06-03" {
		t.Errorf("with a 7-day High policy: %v", got)
	}
	// Filters.
	min9 := 9.0
	if got := list(store.VulnQuery{Now: now, MinCVSS: &min9}); len(got) != 1 || got["CVE-2024-4671"] == "" {
		t.Errorf("minCvss 9: %v", got)
	}
	if got := list(store.VulnQuery{Now: now, KEVOnly: true}); len(got) != 4 {
		t.Errorf("kev: %v", got)
	}

	// An accepted risk leaves the default list until it expires.
	exp := now.Add(48 * time.Hour)
	x := &store.VulnException{OrgID: env.Org.ID, CVEID: "CVE-2023-4911", Kind: store.ExceptionAccepted, Reason: "isolated lab",
		ExpiresAt: &exp, CreatedBy: "test", CreatedAt: now}
	if err := s.SetVulnException(ctx, &store.AuditEntry{OrgID: env.Org.ID, Actor: "test", Action: "vulnerability.accept"}, x); err != nil {
		t.Fatal(err)
	}
	if got := list(store.VulnQuery{Now: now}); got["CVE-2023-4911"] != "" || len(got) != 10 {
		t.Errorf("accepted CVE still listed: %v", got)
	}
	if got := list(store.VulnQuery{Now: now, IncludeAccepted: true}); got["CVE-2023-4911"] == "" {
		t.Errorf("accepted=1 does not show it: %v", got)
	}
	if got := list(store.VulnQuery{Now: exp.Add(time.Second)}); got["CVE-2023-4911"] == "" {
		t.Errorf("expired acceptance still hides it: %v", got)
	}
	xs, err := s.ListVulnExceptions(ctx, env.Org.ID, "", exp.Add(time.Second))
	if err != nil || len(xs) != 1 || xs[0].Active || xs[0].Endpoints != 1 {
		t.Errorf("exceptions = %+v %v", xs, err)
	}

	// Inventory change: only the endpoint is marked; its unchanged finding
	// keeps its first detection.
	clock = t0.Add(2 * time.Hour)
	win.MustInventory(windowsInventory("win-01",
		sw("Google Chrome", "Google LLC", "124.0.6367.201"),
		sw("Notepad++ (64-bit x64)", "Notepad++ Team", "8.5.6"),
		sw("VLC media player", "VideoLAN", "3.0.18"),
	))
	st, _, err = m.RunOnce(ctx)
	if err != nil || st.Full || st.Endpoints != 1 || st.Changes.Added != 1 || st.Changes.Removed != 2 {
		t.Fatalf("incremental pass = %+v %v", st, err)
	}
	check(win, "Google Chrome CVE-2024-12053", "Google Chrome CVE-2025-2783", "Notepad++ CVE-2023-40031", "VLC media player CVE-2023-47359")
	fs, _ := s.EndpointFindings(ctx, env.Org.ID, win.ID)
	for _, f := range fs {
		wantFirst := t0
		if f.CVEID == "CVE-2023-47359" {
			wantFirst = clock
		}
		if !f.FirstSeenAt.Equal(wantFirst) {
			t.Errorf("%s first seen %v, want %v", f.CVEID, f.FirstSeenAt, wantFirst)
		}
	}
	got = list(store.VulnQuery{Now: now})
	if got["CVE-2024-4671"] != "" || got["CVE-2025-0411"] != "" || got["CVE-2023-47359"] != "Due later 2025-01-25" {
		t.Errorf("after the change: %v", got)
	}

	// A feed change recomputes the fleet; removing an endpoint drops its
	// results from the counts.
	if _, err := vulndb.ImportFiles(ctx, s, fixtures[:1], vulndb.By{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	st, _, err = m.RunOnce(ctx)
	if err != nil || !st.Full || st.Endpoints != 3 || st.Changes != (store.ResultStats{}) {
		t.Fatalf("pass after a feed import = %+v %v", st, err)
	}
	if err := s.DeleteEndpoint(ctx, &store.AuditEntry{OrgID: env.Org.ID, Actor: "test", Action: "endpoint.delete"}, env.Org.ID, deb.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	got = list(store.VulnQuery{Now: now, IncludeAccepted: true})
	if got["CVE-2023-4911"] != "" || got["CVE-2023-5363"] == "" {
		t.Errorf("after removing the Debian endpoint: %v", got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestFeedChangesAudited: every import is an instance event with its
// actor and counts (a failed one that stored records too), and an import
// without an actor stores nothing.
func TestFeedChangesAudited(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	if _, err := vulndb.ImportFiles(ctx, s, fixtures[1:2], vulndb.By{}); err == nil {
		t.Fatal("an import without an actor succeeded")
	}
	if c, _ := s.CountFeeds(ctx); c != (store.FeedCounts{}) {
		t.Fatalf("an import without an actor stored %+v", c)
	}
	res, err := vulndb.ImportFiles(ctx, s, fixtures[1:2], vulndb.By{Actor: "user:op@example.com", Address: "192.0.2.7", Names: []string{"kev.json"}})
	if err != nil {
		t.Fatal(err)
	}
	events, err := s.ListInstanceEvents(ctx, store.InstanceEventFilter{})
	if err != nil || len(events) != 1 {
		t.Fatalf("instance events: %+v %v", events, err)
	}
	e := events[0]
	if e.Action != "vulndb.import" || e.Actor != "user:op@example.com" || e.Address != "192.0.2.7" || e.Summary["ok"] != true ||
		e.Summary["kev"] != float64(10) || e.Summary["feedVersion"] != float64(res.FeedVersion) ||
		e.Summary["storedBefore"].(map[string]any)["kev"] != float64(0) || e.Summary["stored"].(map[string]any)["kev"] != float64(10) {
		t.Errorf("the import's event: %+v", e)
	}
	if files, _ := e.Summary["files"].([]any); len(files) != 1 || files[0] != "kev.json" {
		t.Errorf("the event's files: %v", e.Summary["files"])
	}

	// The first file is stored, the second is no feed: the error is
	// answered and what was stored is recorded.
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"not":"a feed"`), 0o600); err != nil {
		t.Fatal(err)
	}
	version, _ := s.VulnState(ctx, store.StateFeedVersion)
	if _, err := vulndb.ImportFiles(ctx, s, []string{fixtures[2], bad}, vulndb.By{Actor: "cli:root"}); err == nil {
		t.Fatal("an import of a broken file succeeded")
	}
	events, _ = s.ListInstanceEvents(ctx, store.InstanceEventFilter{Actor: "cli:root"})
	if len(events) != 1 || events[0].Summary["ok"] != false || events[0].Summary["osv"].(float64) < 1 || events[0].Summary["error"] == "" {
		t.Errorf("the failed import's event: %+v", events)
	}
	if v, _ := s.VulnState(ctx, store.StateFeedVersion); v != version {
		t.Errorf("a failed import bumped the feed version %d → %d", version, v)
	}
}
