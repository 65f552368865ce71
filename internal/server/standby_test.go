package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/pgcluster"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestStandbyReadsAndFailover runs patchd on a primary and a streaming
// standby the test makes (initdb, pg_basebackup -R), with the multi-host
// --db and the standby as --db-read: lists and reports go to the standby
// while it keeps up, a read that must see its write goes to the primary,
// a lagging (replay paused) or stopped standby is skipped, with the
// primary stopped lists and reports answer from the standby, and once the
// standby is promoted writes succeed again without reopening the store.
func TestStandbyReadsAndFailover(t *testing.T) {
	c := pgcluster.New(t)
	sb := c.AddStandby("standby1", false)
	const maxLag = 2 * time.Second
	s, err := store.Open(context.Background(), pgcluster.MultiHost(c.Primary, sb), "", store.Options{
		MaxConns: 8, SecretKey: storetest.SecretKey,
		ReadURLs: []string{sb.URL()}, ReadMaxLag: maxLag, ReadCheckEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := apitest.NewOn(t, s)
	ctx := context.Background()
	agent := e.Enroll("uid-1", "host-1", "linux")
	agent.MustInventory(apitest.Sample("host-1", "linux"))

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 90 s; replication: %+v", what, s.Replication())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	usable := func() bool {
		r := s.Replication()
		return len(r.Standbys) == 1 && r.Standbys[0].Usable
	}
	listHosts := func() ([]string, error) {
		var out apiv1.Page[apiv1.Endpoint]
		err := e.Admin.Do(ctx, http.MethodGet, "/api/v1/endpoints", nil, nil, &out)
		var hosts []string
		for _, ep := range out.Items {
			hosts = append(hosts, ep.Hostname)
		}
		return hosts, err
	}
	report := func() error {
		resp, err := e.Admin.Raw(ctx, "/api/v1/reports/endpoints", url.Values{"format": {"csv"}})
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "host-1") {
			t.Errorf("endpoints report without host-1:\n%s", b)
		}
		return nil
	}
	// served runs fn and answers how many lag-tolerant reads the standby
	// and the primary served meanwhile.
	served := func(fn func()) (standby, primary int64) {
		before := s.Replication()
		fn()
		after := s.Replication()
		return after.ReadsFromStandby - before.ReadsFromStandby, after.ReadsFromPrimary - before.ReadsFromPrimary
	}

	waitFor("standby usable", usable)
	waitFor("standby has host-1", func() bool {
		hosts, err := listHosts()
		return err == nil && len(hosts) == 1
	})

	// A list and a report go to the standby.
	if n, p := served(func() {
		if _, err := listHosts(); err != nil {
			t.Fatal(err)
		}
		if err := report(); err != nil {
			t.Fatal(err)
		}
	}); n == 0 || p != 0 {
		t.Errorf("list and report: %d reads from the standby, %d from the primary; want all from the standby", n, p)
	}

	// A write and the read of what it wrote stay on the primary.
	if n, p := served(func() {
		g, err := e.Admin.CreateGroup(ctx, apiv1.GroupBody{Name: ptr("written")})
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Admin.GetGroup(ctx, g.Group.ID)
		if err != nil || got.Name != "written" {
			t.Fatalf("GET the group just created: %+v, %v", got, err)
		}
	}); n != 0 || p != 0 {
		t.Errorf("write then read: %d lag-tolerant reads from the standby, %d from the primary; want none", n, p)
	}

	// A standby whose replay is paused falls behind the primary's writes
	// and is skipped: lists come from the primary and show the writes.
	sb.Exec("SELECT pg_wal_replay_pause()")
	e.Enroll("uid-2", "host-2", "linux")
	waitFor("paused standby skipped", func() bool {
		e.Store.Writable(ctx, 0) // keep the primary writing
		r := s.Replication()
		return !r.Standbys[0].Usable && r.Standbys[0].Up && r.Standbys[0].Lag > maxLag
	})
	if n, p := served(func() {
		hosts, err := listHosts()
		if err != nil || len(hosts) != 2 {
			t.Errorf("list with the standby lagging: %v, %v; want host-1 and host-2", hosts, err)
		}
	}); n != 0 || p == 0 {
		t.Errorf("lagging standby: %d reads from it, %d from the primary; want all from the primary", n, p)
	}
	sb.Exec("SELECT pg_wal_replay_resume()")
	waitFor("standby usable after resuming replay", usable)

	// A stopped standby is skipped, at once: the read it failed is the
	// primary's.
	sb.Stop("fast")
	if n, p := served(func() {
		hosts, err := listHosts()
		if err != nil || len(hosts) != 2 {
			t.Errorf("list with the standby stopped: %v, %v", hosts, err)
		}
	}); n != 0 || p == 0 {
		t.Errorf("stopped standby: %d reads from it, %d from the primary; want all from the primary", n, p)
	}
	if r := s.Replication(); r.Standbys[0].Usable {
		t.Errorf("stopped standby still usable: %+v", r.Standbys[0])
	}
	sb.Start()
	waitFor("standby usable after its restart", usable)

	// The primary stops: lists and reports answer from the standby,
	// writes fail with 503.
	c.Primary.Stop("immediate")
	waitFor("primary seen down", func() bool { return !s.Replication().PrimaryUp })
	if n, p := served(func() {
		hosts, err := listHosts()
		if err != nil || len(hosts) != 2 {
			t.Errorf("list with the primary stopped: %v, %v", hosts, err)
		}
		if err := report(); err != nil {
			t.Errorf("report with the primary stopped: %v", err)
		}
	}); n == 0 || p != 0 {
		t.Errorf("primary stopped: %d reads from the standby, %d from the primary; want all from the standby", n, p)
	}
	if _, err := e.Admin.CreateGroup(ctx, apiv1.GroupBody{Name: ptr("while down")}); !client.IsStatus(err, http.StatusServiceUnavailable) {
		t.Errorf("write with the primary stopped: %v; want 503", err)
	}

	// Promoted, the standby takes the writes: the multi-host --db finds it
	// without a restart of patchd.
	sb.Promote()
	waitFor("writes after promotion", func() bool {
		_, err := e.Admin.CreateGroup(ctx, apiv1.GroupBody{Name: ptr("after promotion")})
		return err == nil
	})
	waitFor("failover counted", func() bool {
		r := s.Replication()
		return r.Failovers == 1 && r.Primary == sb.HostPort() && r.PrimaryUp
	})
	resp, err := http.Get(e.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ready struct {
		Status   string `json:"status"`
		Database struct {
			Writes    string `json:"writes"`
			Failovers int64  `json:"failovers"`
			Standbys  []struct {
				Name   string `json:"name"`
				Usable bool   `json:"usable"`
			} `json:"standbys"`
		} `json:"database"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ready); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || ready.Database.Writes != sb.HostPort() || ready.Database.Failovers != 1 ||
		len(ready.Database.Standbys) != 1 || ready.Database.Standbys[0].Name != sb.HostPort() {
		t.Errorf("/readyz after the failover: %d %+v", resp.StatusCode, ready)
	}
	rec := httptest.NewRecorder()
	e.Server.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{
		"patchd_db_failovers_total 1",
		`patchd_db_primary_info{server="` + sb.HostPort() + `"} 1`,
		"patchd_db_primary_up 1",
		`patchd_db_standby_usable{standby="` + sb.HostPort() + `"} 1`,
		`patchd_db_standby_lag_seconds{standby="` + sb.HostPort() + `"}`,
		"patchd_db_standby_max_lag_seconds 2",
		`patchd_db_lag_tolerant_reads_total{served_by="primary"}`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
