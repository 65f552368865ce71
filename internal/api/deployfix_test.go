package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
)

// TestDeployUpdatesByCVE: DEPLOY_UPDATES filters select the missing updates
// that fix given CVEs, or any CVE in CISA's KEV catalog, on each endpoint
// (patchd additions to filters: cves, kev); an update that does not reach
// the fixed version is not a fix; a selection that fixes nothing anywhere
// is refused with 422, and a malformed CVE id names its field.
func TestDeployUpdatesByCVE(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newVulnEnv(t)
	str := func(s string) *string { return &s }
	debian := func(host, opensslLatest string) *apitest.Agent {
		ag := e.Enroll("m-"+host, host, "linux")
		doc := apitest.Sample(host, "linux")
		doc.System.OSVersion = str("12.5")
		doc.Software = []agentproto.Software{
			{Name: "libssl3", Version: str("3.0.11-1~deb12u1"), InstallType: str("deb"), SourcePackage: str("openssl")}, // CVE-2023-5363, fixed in 3.0.11-1~deb12u2
			{Name: "libwebp7", Version: str("1.2.4-0.2"), InstallType: str("deb"), SourcePackage: str("libwebp")},       // CVE-2023-4863 (KEV), fixed in 1.2.4-0.2+deb12u1
		}
		doc.Updates = []agentproto.Update{
			{Title: "openssl", PackageName: str("openssl"), Distro: str("debian"), InstalledVersion: str("3.0.11-1~deb12u1"),
				LatestVersion: str(opensslLatest), Severity: str("Important"), Source: "OS - Mandatory"},
			{Title: "libwebp", PackageName: str("libwebp"), Distro: str("debian"), InstalledVersion: str("1.2.4-0.2"),
				LatestVersion: str("1.2.4-0.2+deb12u1"), Severity: str("Important"), Source: "OS - Mandatory"},
		}
		ag.MustInventory(doc)
		return ag
	}
	fixed, short := debian("deb-01", "3.0.11-1~deb12u2"), debian("deb-02", "3.0.11-1~deb12u1+b1")
	deadline := time.Now().Add(time.Minute) // generous: a busy machine must pass
	for {
		l, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{CVE: "CVE-2023-4863"})
		if err != nil {
			t.Fatal(err)
		}
		if l.Total == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Each missing update lists the CVEs it fixes on its endpoint.
	for ag, want := range map[*apitest.Agent]map[string]string{fixed: {"openssl": "CVE-2023-5363", "libwebp": "CVE-2023-4863"},
		short: {"openssl": "", "libwebp": "CVE-2023-4863"}} {
		l, err := e.Admin.ListUpdates(ctx, client.UpdateQuery{EndpointID: ag.ID})
		if err != nil || l.Total != 2 {
			t.Fatalf("updates of %s: %+v %v", ag.ID, l, err)
		}
		for _, u := range l.Items {
			if got := strings.Join(u.CVEs, ","); got != want[u.Title] {
				t.Errorf("%s on %s fixes %q, want %q", u.Title, u.Endpoint, got, want[u.Title])
			}
		}
	}
	// The report names the update available for each finding.
	rep, err := e.Admin.Report(ctx, "vulnerabilities-by-endpoint")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, row := range rep.Rows {
		if row[0] == "deb-01" && row[2] == "CVE-2023-5363" {
			found = true
			if u, _ := row[len(row)-1].(string); !strings.Contains(u, "openssl@3.0.11-1~deb12u2") {
				t.Errorf("deb-01's CVE-2023-5363: update available %v", row[len(row)-1])
			}
		}
	}
	if !found {
		t.Errorf("the report has no row of deb-01's CVE-2023-5363: %v", rep.Rows)
	}
	deploy := func(filters string) (apiv1.RunStarted, error) {
		return e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "DEPLOY_UPDATES", EndpointIDs: []string{fixed.ID, short.ID},
			Payload: json.RawMessage(`{"mode":"filters","filters":` + filters + `}`)})
	}
	packages := func(ag *apitest.Agent) []string {
		t.Helper()
		resp, _ := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0"})
		var out []string
		for _, c := range resp.Commands {
			var p agentproto.DeployUpdatesPayload
			if err := json.Unmarshal(c.Payload, &p); err != nil {
				t.Fatal(err)
			}
			for _, u := range p.Updates {
				out = append(out, *u.PackageName)
			}
			ag.Status(c.ID, "SUCCESS", "done", intp(0))
		}
		slices.Sort(out)
		return out
	}
	// By CVE: deb-02's openssl does not reach the fix, so it has nothing.
	started, err := deploy(`{"cves":["cve-2023-5363"]}`)
	if err != nil || started.Queued != 1 {
		t.Fatalf("by CVE: %+v %v", started, err)
	}
	if got := packages(fixed); !slices.Equal(got, []string{"openssl"}) {
		t.Errorf("deb-01 by CVE: %v", got)
	}
	if got := packages(short); got != nil {
		t.Errorf("deb-02 by CVE: %v", got)
	}
	// By KEV: libwebp fixes CVE-2023-4863 on both.
	if started, err := deploy(`{"kev":true}`); err != nil || started.Queued != 2 {
		t.Fatalf("by KEV: %+v %v", started, err)
	}
	if got := packages(fixed); !slices.Equal(got, []string{"libwebp"}) {
		t.Errorf("deb-01 by KEV: %v", got)
	}
	// Filters together: a CVE nobody has fixes nothing: 422.
	wantStatus(t, errOf(deploy(`{"cves":["CVE-2099-0001"]}`)), http.StatusUnprocessableEntity, "a CVE nobody has")
	if _, err := deploy(`{"cves":["heartbleed"]}`); problemFields(err) != "validation_failed:payload.filters.cves[0]" {
		t.Errorf("a malformed CVE id: %v", err)
	}
}
