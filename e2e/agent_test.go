// Package e2e runs the real programs against a server started by the test:
// patchd-agent on this machine, and patchd-sim.
package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/reports"
)

// build compiles a command of the module into dir.
func build(t *testing.T, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, "github.com/patchd/patchd/"+pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// TestRealAgentOnThisMachine enrolls patchd-agent, running on the test
// machine itself, and checks its real inventory and a script round trip.
func TestRealAgentOnThisMachine(t *testing.T) {
	a := newEnrolledAgent(t)
	e := a.e
	ctx := context.Background()
	runAgent(t, a.bin, a.state, a.env)

	// The inventory arrives: the machine's real packages and disks.
	var id string
	deadline := time.Now().Add(60 * time.Second)
	for {
		page, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{})
		if err == nil && page.Total == 1 {
			id = page.Items[0].ID
			if d, err := e.Admin.GetEndpoint(ctx, id); err == nil && len(d.Software) > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no inventory from the agent within 60 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	d, err := e.Admin.GetEndpoint(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	hasBash := false
	for _, sw := range d.Software {
		if sw.Name == "bash" {
			hasBash = true
		}
	}
	if len(d.Software) <= 100 || !hasBash {
		t.Fatalf("real inventory: %d applications, bash %v", len(d.Software), hasBash)
	}
	if len(d.Disks) == 0 || d.Disks[0].SizeGB == nil || *d.Disks[0].SizeGB <= 0 {
		t.Fatalf("real disks: %+v", d.Disks)
	}
	if d.Hostname != host || d.Platform != "linux" || d.OS == nil || d.Cores == nil || d.RAMGB == nil {
		t.Fatalf("real system: %+v", d.Endpoint)
	}

	// Every report of the catalog answers the Report shape on this real
	// inventory; rows match the columns.
	withRows := checkReports(t, e.Admin)
	t.Logf("%d of %d reports have rows on this machine: %s", len(withRows), len(reports.Catalog()), strings.Join(withRows, ", "))

	// A RUN_SCRIPT echo round trip reaches SUCCESS with the output.
	ag := &apitest.Agent{ID: id}
	r := e.Queue(e.Org, agentproto.TypeRunScript, agentproto.RunScriptPayload{Script: "echo hello-from-patchd", Language: "sh"}, ag)
	deadline = time.Now().Add(30 * time.Second)
	for {
		cmds, err := e.Admin.RunCommands(ctx, r.RunID, client.RunQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if c := cmds.Items[0]; c.Status == "SUCCESS" || c.Status == "FAILED" {
			if c.Status != "SUCCESS" || c.Result == nil || !strings.Contains(*c.Result, "hello-from-patchd") {
				t.Fatalf("script command: %s %v", c.Status, deref(c.Result))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("script not done within 30 s: %+v", cmds.Items[0])
		}
		time.Sleep(100 * time.Millisecond)
	}
	runs, err := e.Admin.ListRuns(ctx, client.RunQuery{})
	if err != nil || runs.Items[0].Status != "COMPLETED" || runs.Items[0].Succeeded != 1 {
		t.Fatalf("run: %+v %v", runs.Items, err)
	}
}

// checkReports reads every report of the catalog as JSON and checks its
// shape (the client also checks each answer against the OpenAPI document);
// it answers the keys of the reports that have rows.
func checkReports(t *testing.T, c *client.Client) []string {
	t.Helper()
	ctx := context.Background()
	var withRows []string
	for _, d := range reports.Catalog() {
		r, err := c.Report(ctx, d.Key)
		if err != nil {
			t.Errorf("report %s: %v", d.Key, err)
			continue
		}
		if r.Title != d.Title || !slices.Equal(r.Columns, d.Columns) || r.Total != len(r.Rows) {
			t.Errorf("report %s: title %q, columns %v, total %d for %d rows", d.Key, r.Title, r.Columns, r.Total, len(r.Rows))
		}
		for i, row := range r.Rows {
			if len(row) != len(d.Columns) {
				t.Errorf("report %s row %d has %d values for %d columns", d.Key, i, len(row), len(d.Columns))
				break
			}
			for _, v := range row {
				switch v.(type) {
				case nil, string, float64, bool, json.Number:
				default:
					t.Errorf("report %s row %d: value %v of type %T", d.Key, i, v, v)
				}
			}
		}
		if len(r.Rows) > 0 {
			withRows = append(withRows, d.Key)
		}
	}
	return withRows
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
