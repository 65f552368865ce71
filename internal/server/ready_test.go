package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestReadyzFailsWhenWritesFail: /readyz pinged the database only, and
// stayed 200 while every write failed on a full disk. It now reports
// not-ready while writes fail, and ready again once they succeed.
func TestReadyzFailsWhenWritesFail(t *testing.T) {
	t.Parallel()
	s, u := storetest.OpenURL(t)
	srv := New(config.Config{}, s)
	srv.writeRecent = 0 // probe on every check past store.ProbeEvery
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	ready := func() (int, string) {
		resp, err := ts.Client().Get(ts.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]string
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body["reason"]
	}
	waitFor := func(want int, wantReason string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			status, reason := ready()
			if status == want && reason == wantReason {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz answered %d %q; want %d %q", status, reason, want, wantReason)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor(http.StatusOK, "")
	undo := storetest.FailUpdates(t, u, "write_probe")
	waitFor(http.StatusServiceUnavailable, "database refuses writes")
	undo()
	waitFor(http.StatusOK, "")
}
