package vulndb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/vulndb"
	"github.com/patchd/patchd/sim"
)

// A simulated Windows fleet with the demo feeds: its application updates
// are reported as patchd-agent reports winget's ("Google Chrome
// 131.0.6778.140", winget id Google.Chrome), and the Chrome findings pair
// with the Chrome update: the CVE's fixing updates list it, DEPLOY_UPDATES
// by CVE sends it, and Microsoft 365 Apps findings pair with the Office
// update.
func TestSimulatedWindowsFleetPairsApplicationFixes(t *testing.T) {
	ctx := context.Background()
	env := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = time.Hour })
	s := env.Store
	files, _ := filepath.Glob("../../demo/feeds/*.json")
	xmls, _ := filepath.Glob("../../demo/feeds/*.xml")
	files = append(files, xmls...)
	if _, err := vulndb.ImportFiles(ctx, s, files, vulndb.By{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	agents := map[string]*apitest.Agent{}
	chrome := map[string]string{} // endpoint → the Chrome update's title
	office := map[string]bool{}   // endpoints with an Office update
	for i := range 60 {
		if sim.Platform(1, i) != "windows" {
			continue
		}
		doc := sim.Generate(1, i)
		a := env.Enroll(fmt.Sprintf("sim-%d", i), doc.System.Hostname, "windows")
		a.MustInventory(doc)
		agents[a.ID] = a
		for _, u := range doc.Updates {
			switch {
			case u.WingetID != nil && *u.WingetID == "Google.Chrome":
				chrome[a.ID] = u.Title
			case u.WingetID != nil && *u.WingetID == "Microsoft.Office":
				office[a.ID] = true
			}
		}
	}
	m := &vulndb.Matcher{Store: s, Holder: "test"}
	if _, _, err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	const cve = "CVE-2024-12053" // Chrome < 131.0.6778.108
	fixes, err := s.FixingUpdates(ctx, env.Org.ID, cve)
	if err != nil {
		t.Fatal(err)
	}
	paired := 0
	for _, f := range fixes {
		if f.Title != "Google Chrome 131.0.6778.140" || f.KB != "" {
			t.Errorf("update fixing %s: %+v", cve, f)
		}
		paired += f.Endpoints
	}
	// Every endpoint with the Chrome finding and a Chrome update is paired.
	var target string
	want := 0
	for id := range chrome {
		fs, err := s.EndpointFindings(ctx, env.Org.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if f.CVEID == cve {
				want++
				if target == "" || id < target {
					target = id
				}
			}
		}
	}
	if want == 0 || paired != want {
		t.Fatalf("%s: %d endpoints paired with the Chrome update, %d have the finding and the update (fixes %+v)", cve, paired, want, fixes)
	}
	// "Deploy the fix": DEPLOY_UPDATES by CVE sends the Chrome update.
	if _, err := env.Admin.RunAction(ctx, apiv1.ActionBody{Type: "DEPLOY_UPDATES", EndpointIDs: []string{target},
		Payload: json.RawMessage(`{"mode":"filters","filters":{"cves":["` + cve + `"]}}`)}); err != nil {
		t.Fatal(err)
	}
	resp, _ := agents[target].Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0"})
	var deployed []string
	for _, c := range resp.Commands {
		var p agentproto.DeployUpdatesPayload
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			t.Fatal(err)
		}
		for _, u := range p.Updates {
			deployed = append(deployed, u.Title+" "+*u.WingetID)
		}
	}
	if !slices.Equal(deployed, []string{chrome[target] + " Google.Chrome"}) {
		t.Errorf("deploying the fix of %s sends %q", cve, deployed)
	}
	// Microsoft 365 Apps (found by family, "Microsoft 365 Apps") pairs
	// with the update of the installed "Microsoft 365 Apps for enterprise
	// - en-us".
	const officeCVE = "CVE-2025-62554"
	fixes, err = s.FixingUpdates(ctx, env.Org.ID, officeCVE)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fixes {
		if f.Title != "Microsoft 365 Apps for enterprise - en-us 16.0.19426.20186" {
			t.Errorf("update fixing %s: %+v", officeCVE, f)
		}
		n += f.Endpoints
	}
	if len(office) == 0 || n == 0 {
		t.Errorf("no Office update paired with %s (%d endpoints with an Office update)", officeCVE, len(office))
	}
}
