package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agent"
	"github.com/patchd/patchd/internal/config"
)

// fakeAptGet puts, first on the PATH of the environment it answers, an
// apt-get that only records how it was called (one line to the file
// answered): the real agent refreshes "the package lists" through it, and
// this machine's own lists stay as they are. The agent looks for its
// service definition under an empty folder of dir, not this machine's /etc.
func fakeAptGet(t *testing.T, dir string) (env []string, calls string) {
	t.Helper()
	bin := filepath.Join(dir, "fakebin")
	calls = filepath.Join(dir, "apt-get.calls")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$*\" >> '" + calls + "'\n"
	if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PATCHD_AGENT_SERVICE_ROOT="+filepath.Join(dir, "no-services")), calls
}

func aptCalls(path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "_"))
}

// TestRealAgentScans runs patchd-agent on this machine: it takes the
// server's scan interval, refreshes the package lists (apt-get update, a
// recording stand-in) before its first inventory, and again at once on a
// "scan now" from the API, each time followed by the inventory.
func TestRealAgentScans(t *testing.T) {
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		t.Skip("a Debian-family machine (dpkg, apt) is needed")
	}
	a := newEnrolledAgent(t, func(c *config.Config) { c.ScanInterval = 3 * time.Hour })
	e, state, calls := a.e, a.state, a.aptCalls
	ctx := context.Background()
	_, _, logs := runAgent(t, a.bin, state, a.env)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 2 minutes", what)
			}
		}
	}
	// refreshedThenSent tells whether the log has n refreshes, each
	// followed by an inventory sent.
	refreshedThenSent := func(n int) bool {
		l := logs.String()
		for range n {
			i := strings.Index(l, "package lists refreshed")
			if i < 0 {
				return false
			}
			l = l[i:]
			j := strings.Index(l, "inventory sent")
			if j < 0 {
				return false
			}
			l = l[j:]
		}
		return true
	}

	waitFor("the first refresh and inventory", func() bool { return refreshedThenSent(1) })
	if got := aptCalls(calls); len(got) != 1 || got[0] != "update_-q" {
		t.Fatalf("apt-get calls: %q; want one apt-get update -q", got)
	}
	st, err := agent.LoadState(state)
	if err != nil || st.RefreshSeconds != 3*3600 || st.NextRefreshAt == nil || time.Until(*st.NextRefreshAt) < 2*time.Hour {
		t.Fatalf("state after the first refresh: %+v %v", st, err)
	}
	id := st.EndpointID
	if d, err := e.Admin.GetEndpoint(ctx, id); err != nil || len(d.Software) == 0 {
		t.Fatalf("inventory: %v", err)
	}

	// Scan now, while the agent waits in its long poll.
	waitFor("the agent's long poll", func() bool { return e.Server.Presence().Polling(id) })
	if err := e.Admin.ScanEndpoint(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitFor("the scan's refresh and inventory", func() bool { return refreshedThenSent(2) })
	if got := aptCalls(calls); len(got) != 2 || got[1] != "update_-q" {
		t.Fatalf("apt-get calls after scan now: %q", got)
	}
}
