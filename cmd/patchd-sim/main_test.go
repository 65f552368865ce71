package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/sim"
)

func TestEnrollOnlyPrintsSummary(t *testing.T) {
	var enrolled, inventories atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /agent/v1/enroll", func(w http.ResponseWriter, r *http.Request) {
		var req agentproto.EnrollRequest
		json.NewDecoder(r.Body).Decode(&req)
		if req.EnrollToken != "tok" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_enroll_token","error_description":null}`)
			return
		}
		n := enrolled.Add(1)
		json.NewEncoder(w).Encode(agentproto.EnrollResponse{EndpointID: fmt.Sprint("ep", n), AgentSecret: fmt.Sprint("s", n), CheckinSeconds: 60})
	})
	mux.HandleFunc("POST /agent/v1/checkin", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(agentproto.CheckinResponse{Commands: []agentproto.Command{}, CheckinSeconds: 60, InventoryWanted: true})
	})
	mux.HandleFunc("PUT /agent/v1/inventory", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get(agentproto.HeaderInventoryHash) == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		inventories.Add(1)
		io.WriteString(w, `{"ok":true}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var stdout, stderr bytes.Buffer
	err := run([]string{"--server", srv.URL, "--enroll-token", "tok", "--endpoints", "12", "--concurrency", "4", "--enroll-only"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	var st sim.Stats
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, stdout.String())
	}
	if st.Enrolled != 12 || st.InventoriesSent != 12 || inventories.Load() != 12 || len(st.Errors) != 0 {
		t.Errorf("summary %+v", st)
	}
	if !strings.Contains(stderr.String(), "enroll: finished") {
		t.Errorf("no progress line on stderr:\n%s", stderr.String())
	}

	stdout.Reset()
	err = run([]string{"--server", srv.URL, "--enroll-token", "wrong", "--endpoints", "3", "--enroll-only"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "enrollment token") {
		t.Errorf("a refused token gave %v", err)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--endpoints", "3"},
		{"--server", "http://127.0.0.1:1", "--enroll-token", "t", "--endpoints", "0"},
		{"--server", "http://127.0.0.1:1", "--enroll-token", "t", "extra"},
		{"--nope"},
	} {
		if err := run(args, io.Discard, io.Discard); err == nil {
			t.Errorf("run(%q) accepted bad arguments", args)
		}
	}
}
