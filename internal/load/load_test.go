package load_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/load"
	"github.com/patchd/patchd/internal/perm"
)

// A short run against a server in the process: the fleet enrolls, every
// kind of API call is made without errors, and the process figures of this
// process and the size of a database file are read.
func TestRunAgainstServer(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	role, err := admin.CreateRole(ctx, e.Store, e.Org.ID, "load", perm.All.String())
	if err != nil {
		t.Fatal(err)
	}
	cred, err := admin.CreateCredential(ctx, e.Store, "test", e.Org.ID, "load", role.ID)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "patchd.db")
	if err := os.WriteFile(db, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	// --state-dir names a folder that does not exist yet: the run makes it.
	stateDir := filepath.Join(t.TempDir(), "new", "state")
	rep, err := load.Run(ctx, load.Config{Servers: []string{e.URL, e.URL}, EnrollToken: e.EnrollToken, ClientID: cred.ClientID,
		ClientSecret: cred.ClientSecret, Endpoints: 30, Duration: 4 * time.Second, Checkin: time.Second, Clients: 2,
		ActionEvery: time.Second, FanOut: 10, ServerPIDs: []int{os.Getpid()}, DBPID: os.Getpid(), DB: "sqlite:" + db, StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(stateDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state folder: %v %v", fi, err)
	}
	for _, name := range []string{"sim-0.json", "sim-1.json"} {
		if fi, err := os.Stat(filepath.Join(stateDir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("state file %s was not saved: %v", name, err)
		}
	}
	enrolled := int64(0)
	for _, f := range rep.Fleet {
		enrolled += f.Enrolled
	}
	if rep.Endpoints != 30 || enrolled != 30 || len(rep.Fleet) != 2 || rep.EnrollSeconds <= 0 || rep.Checkins == 0 {
		t.Fatalf("fleet: %+v", rep)
	}
	for _, op := range []string{"GET /endpoints", "GET /updates", "GET /groups", "POST /updates/approvals", "POST /actions"} {
		st, ok := rep.API[op]
		if !ok || st.Count == 0 || st.P99Ms < st.P50Ms {
			t.Errorf("%s: %+v", op, st)
		}
	}
	for op, st := range rep.API {
		if st.Errors > 0 {
			t.Errorf("%s: %d errors %v", op, st.Errors, st.ErrorText)
		}
	}
	if len(rep.Processes) != 1 || rep.Processes[0].RSSMiB <= 0 || rep.Processes[0].PeakRSSMiB < rep.Processes[0].RSSMiB || rep.Processes[0].CPUPercent < 0 {
		t.Errorf("process: %+v", rep.Processes)
	}
	// The server is this process, and so is the "database server" (DBPID).
	if rep.ServerCPUPerCheckinMicros <= 0 || rep.DatabaseCPUPercent <= 0 || rep.DatabaseCPUPerCheckinMicros <= 0 {
		t.Errorf("CPU per check-in: server %v µs, database %v%% %v µs", rep.ServerCPUPerCheckinMicros, rep.DatabaseCPUPercent, rep.DatabaseCPUPerCheckinMicros)
	}
	if rep.DBBytes != 4096 || rep.DBError != "" {
		t.Errorf("database size %d %q", rep.DBBytes, rep.DBError)
	}
	if rep.LoadAverage[0] == "" || rep.LoadAverage[1] == "" {
		t.Errorf("load average %q", rep.LoadAverage)
	}
}

// TestFleetAlone: with no API clients the run measures the fleet alone,
// after its warm-up.
func TestFleetAlone(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	role, err := admin.CreateRole(ctx, e.Store, e.Org.ID, "load", perm.All.String())
	if err != nil {
		t.Fatal(err)
	}
	cred, err := admin.CreateCredential(ctx, e.Store, "test", e.Org.ID, "load", role.ID)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := load.Run(ctx, load.Config{Servers: []string{e.URL}, EnrollToken: e.EnrollToken, ClientID: cred.ClientID,
		ClientSecret: cred.ClientSecret, Endpoints: 10, Warmup: time.Second, Duration: 3 * time.Second, Checkin: time.Second, Wait: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.API) != 0 || rep.Checkins == 0 || rep.SteadySeconds < 3 {
		t.Fatalf("fleet alone: %d API operations, %d check-ins in %vs", len(rep.API), rep.Checkins, rep.SteadySeconds)
	}
	if _, err := load.Run(ctx, load.Config{Servers: []string{e.URL}, EnrollToken: e.EnrollToken, ClientID: "x", ClientSecret: "y",
		Endpoints: 1, Duration: time.Second, Clients: -1}); err == nil {
		t.Error("negative clients accepted")
	}
}
