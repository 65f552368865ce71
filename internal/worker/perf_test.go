package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/worker"
)

// fleetSize is the fleet of the performance tests (docs/performance.md);
// PATCHD_PERF_FLEET changes it for a quick look.
var fleetSize = 10_000

func perfOnly(t *testing.T) {
	if os.Getenv("PATCHD_PERF") == "" {
		t.Skip("performance test: set PATCHD_PERF=1 (figures in docs/performance.md)")
	}
	if n, err := strconv.Atoi(os.Getenv("PATCHD_PERF_FLEET")); err == nil && n > 0 {
		fleetSize = n
	}
}

// bulkFleet enrolls n endpoints straight in the store, each with an
// inventory hash so that its long poll is held. It answers ids and secrets.
func bulkFleet(t *testing.T, s *store.Store, orgID string, n int) ([]string, []string) {
	t.Helper()
	ctx := context.Background()
	ids, secrets := make([]string, n), make([]string, n)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				secrets[i] = fmt.Sprintf("perf-secret-%06d", i)
				host := fmt.Sprintf("host-%06d", i)
				now := time.Now()
				id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: orgID, MachineUID: host, Hostname: host, Platform: "windows", OS: "Windows 11",
					OSVersion: "23H2", Arch: "amd64", AgentVersion: "1.0.0", SecretHash: auth.HashSecret(secrets[i])}, now)
				if err != nil {
					t.Error(err)
					return
				}
				doc := agentproto.Inventory{CollectedAt: now, System: agentproto.System{Hostname: host, Arch: "amd64", Type: "workstation"}}
				norm, err := inventory.Check(&doc, "windows", "", now)
				if err == nil {
					err = s.ReplaceInventory(ctx, orgID, id, norm, "h", now)
				}
				if err != nil {
					t.Error(err)
					return
				}
				ids[i] = id
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ids, secrets
}

func percentile(d []time.Duration, p float64) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// An action on 10,000 endpoints answers in under a second, and each of the
// 10,000 agents long-polling (in process, through the real handler) has its
// command within two seconds of the answer.
func TestPerfActionFanOut(t *testing.T) {
	perfOnly(t)
	e := apitest.New(t, quietScheduler)
	ctx := context.Background()
	setup := time.Now()
	ids, secrets := bulkFleet(t, e.Store, e.Org.ID, fleetSize)
	t.Logf("setup: %d endpoints in %s", fleetSize, time.Since(setup).Round(time.Millisecond))

	h := e.Server.Handler()
	body, _ := json.Marshal(agentproto.CheckinRequest{AgentVersion: "1.0.0", InventoryHash: "h"})
	got := make([]time.Time, fleetSize)
	var wg sync.WaitGroup
	for i := range fleetSize {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodPost, agentproto.PathCheckin+"?wait=60", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+secrets[i])
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			var r agentproto.CheckinResponse
			if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &r) != nil || len(r.Commands) != 1 {
				t.Errorf("agent %d: %d %s", i, w.Code, w.Body)
				return
			}
			got[i] = time.Now()
		})
	}
	// Wait until every agent holds its poll.
	hub := e.Server.Presence()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		polling := 0
		for _, id := range ids {
			if hub.Polling(id) {
				polling++
			}
		}
		if polling == fleetSize {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d agents long-polling", polling, fleetSize)
		}
		time.Sleep(100 * time.Millisecond)
	}

	start := time.Now()
	started, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "RUN_SCRIPT", EndpointIDs: ids, Payload: json.RawMessage(`{"script":"uptime","language":"sh"}`)})
	answered := time.Now()
	if err != nil || started.Queued != fleetSize {
		t.Fatalf("action: %+v %v", started, err)
	}
	wg.Wait()
	lat := make([]time.Duration, 0, fleetSize)
	for _, at := range got {
		lat = append(lat, at.Sub(answered))
	}
	took := answered.Sub(start)
	p50, p99, worst := percentile(lat, 0.5), percentile(lat, 0.99), percentile(lat, 1)
	t.Logf("PERF engine=%s action on %d endpoints answered in %s; agents had the command after the answer: p50 %s, p99 %s, max %s",
		e.Store.Engine(), fleetSize, took.Round(time.Millisecond), p50.Round(time.Millisecond), p99.Round(time.Millisecond), worst.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("the action took %s (limit 1 s)", took)
	}
	if worst > 2*time.Second {
		t.Errorf("an agent had its command %s after the answer (limit 2 s)", worst)
	}
}

// 10,000 automations due in the same minute all fire within that minute.
func TestPerfDueAutomations(t *testing.T) {
	perfOnly(t)
	e := apitest.New(t, quietScheduler)
	ctx := context.Background()
	ids, _ := bulkFleet(t, e.Store, e.Org.ID, 100)
	slotMinute := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Minute)
	payload := json.RawMessage(`{"message":"","timeoutSeconds":300}`)
	setup := time.Now()
	for start := 0; start < fleetSize; start += 500 {
		err := e.Store.InTx(ctx, func(tx *store.Tx) error {
			for i := start; i < min(start+500, fleetSize); i++ {
				at := slotMinute.Add(time.Duration(i%60) * time.Second)
				a := store.Automation{OrgID: e.Org.ID, Name: fmt.Sprintf("auto %05d", i), ActionType: "REBOOT", Payload: payload, Kind: store.KindSimple,
					ScheduleKind: "ONCE", RunAt: &at, NextRunAt: &at, Enabled: true, TargetMode: store.TargetEndpoints,
					EndpointIDs: []string{ids[i%len(ids)]}, CreatedBy: "perf"}
				if err := tx.CreateAutomation(ctx, &a, time.Now()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("setup: %d automations in %s", fleetSize, time.Since(setup).Round(time.Millisecond))
	clk := &clock{t: slotMinute.Add(59 * time.Second)}
	s := &worker.Scheduler{Store: e.Store, Queued: e.Server.Presence().Queued, Now: clk.Now}
	begin := time.Now()
	n, err := s.Tick(ctx)
	took := time.Since(begin)
	if err != nil || n != fleetSize {
		t.Fatalf("fired %d of %d: %v", n, fleetSize, err)
	}
	t.Logf("PERF engine=%s %d automations due in one minute fired in %s (%.0f slots/s)", e.Store.Engine(), fleetSize, took.Round(time.Millisecond),
		float64(fleetSize)/took.Seconds())
	if took > time.Minute {
		t.Errorf("firing took %s (limit: within the minute)", took)
	}
	due, _ := e.Store.DueAutomations(ctx, clk.Now(), 10)
	if len(due) != 0 {
		t.Fatalf("%d still due", len(due))
	}
}
