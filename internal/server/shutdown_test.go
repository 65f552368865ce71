package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestShutdownAtScale: a replica holding 2,000 long polls
// of 40 endpoints and a request that never ends (an inventory whose body
// stops coming, as requests hang on a database that gives no transaction)
// is stopped as on SIGTERM, with the 30 seconds until the SIGKILL as the
// deadline. The long polls are answered at once, the hanging request is cut
// off with time left for the workers, Shutdown returns before the deadline
// and the check-ins the long polls' answers accepted are in the database.
func TestShutdownAtScale(t *testing.T) {
	const endpoints, polls = 40, 2000
	stopped := false
	cfg, run, base, token := startWithToken(t, &stopped)
	var agents []agentproto.EnrollResponse
	for i := range endpoints {
		name := fmt.Sprintf("ws-scale-%02d", i)
		resp, body, err := call(t, http.MethodPost, base+agentproto.PathEnroll, "", agentproto.EnrollRequest{EnrollToken: token, MachineUID: name,
			Hostname: name, Platform: "linux", OS: "Test OS", OSVersion: "1", Arch: "amd64", AgentVersion: "1.0.0"})
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("enroll: %v %s", err, body)
		}
		var a agentproto.EnrollResponse
		json.Unmarshal(body, &a)
		if resp, body, err = call(t, http.MethodPut, base+agentproto.PathInventory, a.AgentSecret, apitest.Sample(name, "linux"),
			agentproto.HeaderInventoryHash, "h1"); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("inventory: %v %s", err, body)
		}
		agents = append(agents, a)
	}

	// The long polls, each on its own connection.
	tr := &http.Transport{MaxIdleConnsPerHost: -1}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	body, _ := json.Marshal(agentproto.CheckinRequest{InventoryHash: "h1", AgentVersion: "1.0.0"})
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered := map[int]int{}
	for i := range polls {
		a := agents[i%endpoints]
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s%s?wait=%d", base, agentproto.PathCheckin, agentproto.MaxWaitSeconds), bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+a.AgentSecret)
			status := 0
			if resp, err := hc.Do(req); err == nil {
				var r agentproto.CheckinResponse
				if json.NewDecoder(resp.Body).Decode(&r) == nil && r.Commands != nil {
					status = resp.StatusCode
				}
				resp.Body.Close()
			}
			mu.Lock()
			answered[status]++
			mu.Unlock()
		})
	}
	for {
		held, _ := run.Server().Presence().LongPolls()
		if held == polls {
			break
		}
		mu.Lock()
		early := len(answered)
		mu.Unlock()
		if early != 0 {
			t.Fatalf("long polls answered before the shutdown: %v", answered)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// An inventory upload whose body never comes: the server's "100
	// Continue" says its handler is reading the body.
	hang, err := net.Dial("tcp", run.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	fmt.Fprintf(hang, "PUT %s HTTP/1.1\r\nHost: patchd\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n%s: h2\r\nExpect: 100-continue\r\nContent-Length: 100000\r\n\r\n",
		agentproto.PathInventory, agents[0].AgentSecret, agentproto.HeaderInventoryHash)
	cont, err := bufio.NewReader(hang).ReadString('\n')
	if err != nil || !strings.Contains(cont, " 100 ") {
		t.Fatalf("the inventory upload is not being read: %q %v", cont, err)
	}

	before := time.Now().Truncate(time.Millisecond)
	kill, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopped = true
	err = run.Shutdown(kill)
	if kill.Err() != nil {
		t.Fatal("Shutdown returned after the deadline (the SIGKILL)")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want the hanging request cut off (context.DeadlineExceeded)", err)
	}
	wg.Wait()
	if answered[http.StatusOK] != polls {
		t.Fatalf("long polls answered: %v (status: count), want %d with 200", answered, polls)
	}

	s, err := store.Open(context.Background(), cfg.DB, cfg.DataDir, store.Options{SecretKey: store.SecretKey{Text: cfg.SecretKey, File: cfg.SecretKeyFile}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	orgs, err := s.ListOrgs(context.Background())
	if err != nil || len(orgs) != 1 {
		t.Fatalf("organizations %v, %v", orgs, err)
	}
	for _, a := range agents {
		e, err := s.GetEndpoint(context.Background(), orgs[0].ID, a.EndpointID, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if e.LastSeenAt == nil || e.LastSeenAt.Before(before) {
			t.Errorf("endpoint %s: last seen %v, want the long poll's answer at or after %v (the final save)", e.Hostname, e.LastSeenAt, before)
		}
	}
}
