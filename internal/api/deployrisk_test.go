package api_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/vulndb"
	"github.com/patchd/patchd/internal/vulns/feeds"
	"github.com/patchd/patchd/sim"
)

// Deploy by risk: the automation "every update that fixes a
// KEV CVE, within 24 hours" (DEPLOY_UPDATES, filters {kev: true}, daily)
// sends each endpoint of a simulated fleet exactly its missing updates
// that fix a CVE of CISA's KEV catalog on it, as Update.cves pairs them,
// with the demo feeds (real NVD, KEV, MSRC and EPSS records). minEpss and
// minCvss select the same way; out-of-range values name their field.
func TestAutomationDeploysKEVFixes(t *testing.T) {
	e, ctx := apitest.NewParallel(t, func(c *config.Config) { c.VulnMatchInterval = time.Hour })
	apitest.ImportDemoFeeds(t, e.Store)
	kevList := map[string]bool{}
	if _, err := feeds.ParseFile("../vulns/testdata/kev-subset.json", feeds.Handler{KEV: func(k feeds.KEV) error { kevList[k.CVEID] = true; return nil }}); err != nil {
		t.Fatal(err)
	}
	agents := map[string]*apitest.Agent{}
	for i := range 150 {
		doc := sim.Generate(1, i)
		a := e.Enroll(fmt.Sprintf("sim-%d", i), doc.System.Hostname, sim.Platform(1, i))
		a.MustInventory(doc)
		agents[a.ID] = a
	}
	m := &vulndb.Matcher{Store: e.Store, Holder: "test"}
	if _, _, err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	epss := map[string]float64{"CVE-2024-12053": 0.002, "CVE-2024-9680": 0.12889, "CVE-2025-0411": 0.43908, "CVE-2025-2783": 0.28801}
	// What each endpoint should get: its missing updates fixing a KEV CVE
	// on it, and those fixing a CVE of EPSS 0.001 or more.
	wantKEV, wantEPSS := map[string][]string{}, map[string][]string{}
	missing := 0
	for id := range agents {
		for u, err := range e.Admin.Updates(ctx, client.UpdateQuery{EndpointID: id}) {
			if err != nil {
				t.Fatal(err)
			}
			missing++
			if slices.ContainsFunc(u.CVEs, func(c string) bool { return kevList[c] }) {
				wantKEV[id] = append(wantKEV[id], u.Key)
			}
			if slices.ContainsFunc(u.CVEs, func(c string) bool { return epss[c] >= 0.001 }) {
				wantEPSS[id] = append(wantEPSS[id], u.Key)
			}
		}
	}
	nKEV := 0
	for _, l := range wantKEV {
		nKEV += len(l)
	}
	if len(wantKEV) < 2 || nKEV >= missing || len(wantEPSS) <= len(wantKEV) {
		t.Fatalf("the fleet: %d endpoints with KEV fixes (%d of %d missing updates), %d with EPSS ≥ 0.001 fixes", len(wantKEV), nKEV, missing, len(wantEPSS))
	}
	// deployed runs the agents' pending DEPLOY_UPDATES and answers the keys
	// each endpoint was sent.
	deployed := func() map[string][]string {
		out := map[string][]string{}
		for id, ag := range agents {
			resp, _ := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0"})
			for _, c := range resp.Commands {
				var p agentproto.DeployUpdatesPayload
				if err := json.Unmarshal(c.Payload, &p); err != nil {
					t.Fatal(err)
				}
				for _, u := range p.Updates {
					out[id] = append(out[id], u.Key)
				}
				ag.Status(c.ID, "SUCCESS", "done", intp(0))
			}
			slices.Sort(out[id])
		}
		return out
	}
	same := func(what string, got, want map[string][]string) {
		t.Helper()
		for _, id := range slices.Sorted(maps.Keys(agents)) {
			w := slices.Clone(want[id])
			slices.Sort(w)
			if !slices.Equal(got[id], w) {
				t.Errorf("%s on %s: sent %v, want %v", what, id, got[id], w)
			}
		}
	}

	created, err := e.Admin.CreateAutomation(ctx, apiv1.AutomationBody{Name: "KEV within 24 hours", ActionType: "DEPLOY_UPDATES",
		Payload:    json.RawMessage(`{"mode":"filters","filterVersion":2,"filters":{"kev":true}}`),
		TargetMode: str("all"), ScheduleKind: str("RECURRING"), Freq: str("DAILY"), AtTime: str("02:00")})
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.Admin.GetAutomation(ctx, created.Automation.ID)
	if err != nil || a.NextRunAt == nil || time.Until(*a.NextRunAt) > 24*time.Hour {
		t.Fatalf("the automation runs within 24 hours: %+v %v", a, err)
	}
	started, err := e.Admin.RunAutomation(ctx, a.ID)
	if err != nil || started.Queued != len(wantKEV) {
		t.Fatalf("run: %+v %v", started, err)
	}
	same("kev", deployed(), wantKEV)

	// By exploit likelihood: the Firefox fixes (CVE-2024-9680, EPSS 0.12889)
	// and the Chrome ones (CVE-2024-12053, 0.002).
	started, err = e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "DEPLOY_UPDATES", EndpointIDs: slices.Collect(maps.Keys(agents)),
		Payload: json.RawMessage(`{"mode":"filters","filters":{"minEpss":0.001}}`)})
	if err != nil {
		t.Fatal(err)
	}
	same("minEpss 0.001", deployed(), wantEPSS)
	// minCvss 9.9 matches nothing in the demo feeds (the highest is 9.8): 422.
	if _, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "DEPLOY_UPDATES", EndpointIDs: slices.Collect(maps.Keys(agents)),
		Payload: json.RawMessage(`{"mode":"filters","filters":{"minCvss":9.9}}`)}); !client.IsStatus(err, http.StatusUnprocessableEntity) {
		t.Errorf("minCvss 9.9: %v", err)
	}
	if _, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "DEPLOY_UPDATES", EndpointIDs: slices.Collect(maps.Keys(agents)),
		Payload: json.RawMessage(`{"mode":"filters","filters":{"minCvss":11,"minEpss":-1}}`)}); problemFields(err) != "validation_failed:payload.filters.minCvss,payload.filters.minEpss" {
		t.Errorf("out of range: %v", err)
	}
}
