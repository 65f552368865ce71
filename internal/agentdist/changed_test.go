package agentdist_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/lockedbuf"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/perm"
)

// TestReleaseChangedOnDisk: a published binary changed on disk after its
// release was signed is served by none of the release, the download, its
// SHA-256 and the packages: each answers 503 saying what happened and what
// to do; it is logged at ERROR and raises AGENT_UPDATE_FAILED for the rules
// of every organization, once however many requests find it. Publishing
// again serves again, and publishing without a release is no change on
// disk (no release is served: 404).
func TestReleaseChangedOnDisk(t *testing.T) {
	e, h := newEnv(t)
	logs := &lockedbuf.Buffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	ctx := context.Background()
	other := e.NewOrg("Globex")
	clients := []*client.Client{e.Admin, e.Client(other, perm.All)}
	var rules []string
	for _, c := range clients {
		r, err := c.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "agent updates", Trigger: alerts.AgentUpdateFailed, EmailTo: ptr("ops@example.com")})
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, r.Rule.ID)
	}

	p := agentdist.Platform{OS: "linux", Arch: "amd64"}
	f := filepath.Join(t.TempDir(), "patchd-agent")
	os.WriteFile(f, fakeELF, 0o755)
	if _, err := h.Store.Publish(f, p); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store.SetRelease(p, "2.0.0", "c2ln", nil); err != nil {
		t.Fatal(err)
	}
	if resp, body := get(t, e.URL+"/agent/v1/release/linux/amd64"); resp.StatusCode != http.StatusOK {
		t.Fatalf("release: %d %s", resp.StatusCode, body)
	}

	// The file is changed in place, not through patchd.
	served := filepath.Join(h.Store.Dir, "linux-amd64", "patchd-agent")
	if err := os.WriteFile(served, append(bytes.Clone(fakeELF), "changed"...), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/agent/v1/release/linux/amd64", "/agent/v1/download/linux/amd64", "/agent/v1/download/linux/amd64.sha256",
		"/agent/v1/package/deb/amd64", "/agent/v1/release/linux/amd64"} {
		resp, body := get(t, e.URL+path)
		var apiErr struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		json.Unmarshal(body, &apiErr)
		if resp.StatusCode != http.StatusServiceUnavailable || apiErr.Error != "unavailable" ||
			!strings.Contains(apiErr.Description, "changed on disk after its release 2.0.0 was signed") ||
			!strings.Contains(apiErr.Description, "patchd admin agent publish") {
			t.Errorf("%s: %d %.300s", path, resp.StatusCode, body)
		}
	}
	if n := strings.Count(logs.String(), "level=ERROR msg=\"agent release withdrawn: the published binary changed on disk"); n != 1 {
		t.Errorf("logged %d times at ERROR, want once:\n%s", n, logs.String())
	}
	// The agent versions leave the release out.
	if v, err := e.Admin.AgentVersions(ctx); err != nil || len(v.Releases) != 0 {
		t.Errorf("agent versions list the changed release: %+v %v", v.Releases, err)
	}
	for i, c := range clients {
		evs, err := c.ListAlertEvents(ctx, rules[i], client.PageQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs.Items) != 1 || evs.Items[0].Severity != alerts.Critical || !strings.Contains(evs.Items[0].Title, "linux/amd64 changed on disk") ||
			!strings.Contains(evs.Items[0].Detail, "release 2.0.0") {
			t.Errorf("organization %d's alert events: %+v", i, evs.Items)
		}
	}

	// Published again through patchd, without a release: the binary is
	// served, and no release (404, not a change on disk).
	if _, err := h.Store.Publish(f, p); err != nil {
		t.Fatal(err)
	}
	if resp, body := get(t, e.URL+"/agent/v1/download/linux/amd64"); resp.StatusCode != http.StatusOK || !bytes.Equal(body, fakeELF) {
		t.Errorf("download after publishing again: %d", resp.StatusCode)
	}
	if resp, body := get(t, e.URL+"/agent/v1/release/linux/amd64"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("release after publishing again without one: %d %s", resp.StatusCode, body)
	}
	if _, err := h.Store.SetRelease(p, "2.0.1", "c2ln", nil); err != nil {
		t.Fatal(err)
	}
	if resp, body := get(t, e.URL+"/agent/v1/release/linux/amd64"); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"2.0.1"`) {
		t.Errorf("release after publishing again with one: %d %s", resp.StatusCode, body)
	}
}

func ptr[T any](v T) *T { return &v }
