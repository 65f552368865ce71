package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/agent"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/bootedtest"
	"github.com/patchd/patchd/internal/config"
)

// TestBootedInstallAndRemoval runs, on a booted Debian with systemd, one
// with SysV init and one with OpenRC, what an administrator does: the printed one-line
// installer installs the agent, its service runs and the server sees the
// endpoint; the endpoint is removed while the agent uploads its inventory
// (the upload is answered 401) and the agent removes itself all the same,
// with nothing of it left, and reports it (Audit Trail); installed again,
// an endpoint removed while the agent waits in its check-in goes the same
// way.
func TestBootedInstallAndRemoval(t *testing.T) {
	for _, k := range bootedKinds {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			bootedInstallAndRemoval(t, k)
		})
	}
}

// front is the server as the machine sees it: long polls shortened to 2 s
// (a removal reaches an idle agent quickly), and inventory uploads held
// while hold is set, until release is closed.
type front struct {
	mu      sync.Mutex
	hold    bool
	held    chan struct{} // closed when an upload is held
	release chan struct{}
}

func (f *front) holdNext() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold, f.held, f.release = true, make(chan struct{}), make(chan struct{})
}

func (f *front) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/agent/v1/checkin" && r.URL.Query().Get("wait") != "" {
			q := r.URL.Query()
			q.Set("wait", "2")
			r.URL.RawQuery = q.Encode()
		}
		if r.Method == http.MethodPut && r.URL.Path == "/agent/v1/inventory" {
			f.mu.Lock()
			hold, held, release := f.hold, f.held, f.release
			f.hold = false
			f.mu.Unlock()
			if hold {
				close(held)
				<-release
			}
		}
		h.ServeHTTP(w, r)
	})
}

func bootedInstallAndRemoval(t *testing.T, k bootedtest.Kind) {
	m := bootedtest.Boot(t, k)
	e := apitest.New(t, func(c *config.Config) { c.AgentDir = t.TempDir() })
	h := e.Server.AgentDist()
	ctx := context.Background()
	if _, err := h.Store.BuildFromSource(ctx, agentdist.ModuleRoot("."), agentdist.Platform{OS: "linux", Arch: "amd64"}); err != nil {
		t.Fatal(err)
	}
	f := &front{}
	srv := httptest.NewServer(f.wrap(e.Server.Handler()))
	defer srv.Close()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent log in the %s machine:\n%s", k, agentLog(m, k))
		}
	})
	printed, err := h.Installers(ctx, srv.URL, e.EnrollToken)
	if err != nil {
		t.Fatal(err)
	}

	install := func() string {
		t.Helper()
		tmpBefore, _ := m.Run("ls -A /tmp /var/tmp")
		out, err := m.Run(printed.Linux)
		if err != nil || !strings.Contains(out, "done: the agent runs as a service") {
			t.Fatalf("the printed line: %v\n%s", err, out)
		}
		if tmpAfter, _ := m.Run("ls -A /tmp /var/tmp"); tmpAfter != tmpBefore {
			t.Errorf("the installer left files in /tmp or /var/tmp:\n%s\nwas:\n%s", tmpAfter, tmpBefore)
		}
		if ok, seen := serviceRuns(m, k, "/usr/local/bin/patchd-agent", agent.Version); !ok {
			t.Fatalf("the service does not run the installed agent: %s", seen)
		}
		// The server sees it: enrolled and checking in.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			e.Server.FlushCheckins(ctx)
			page, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{})
			if err == nil && page.Total == 1 && page.Items[0].LastSeenAt != nil && page.Items[0].Status == "connected" {
				return page.Items[0].ID
			}
			if time.Now().After(deadline) {
				t.Fatalf("the installed agent never checked in: %+v %v", page, err)
			}
		}
	}

	removed := func(id string, round int) {
		t.Helper()
		var problems []string
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
			problems = leftInMachine(m, k)
			page, err := e.Admin.ListAudit(ctx, client.AuditQuery{Action: "endpoint.uninstalled"})
			if err == nil && page.Total == round && len(problems) == 0 {
				got := page.Items[0]
				if got.Actor != "agent:"+id || got.Summary["complete"] != true || got.Summary["manager"] != string(k) {
					t.Errorf("the removal's report: %+v", got)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the removal: reports %+v (%v); left in the machine: %s", page.Items, err, strings.Join(problems, "; "))
			}
		}
	}

	// Removed while the agent uploads its first inventory.
	f.holdNext()
	id := install()
	select {
	case <-f.held:
	case <-time.After(time.Minute):
		t.Fatal("the agent sent no inventory")
	}
	if err := e.Admin.DeleteEndpoint(ctx, id); err != nil {
		t.Fatal(err)
	}
	close(f.release)
	removed(id, 1)

	// Installed again, removed while it waits in its check-in.
	id = install()
	if err := e.Admin.DeleteEndpoint(ctx, id); err != nil {
		t.Fatal(err)
	}
	removed(id, 2)
}

// leftInMachine lists what of the agent is in the machine: its service
// known to the service manager, its files, its state, its process.
func leftInMachine(m *bootedtest.Machine, k bootedtest.Kind) []string {
	var left []string
	for _, p := range []string{"/usr/local/bin/patchd-agent", "/var/lib/patchd-agent", "/etc/default/patchd-agent", "/etc/init.d/patchd-agent",
		"/etc/systemd/system/patchd-agent.service", "/etc/systemd/system/multi-user.target.wants/patchd-agent.service", "/run/patchd-agent.pid", "/var/run/patchd-agent.pid"} {
		if m.Exists(p) {
			left = append(left, p)
		}
	}
	if out, _ := m.Run("ls /etc/rc?.d /etc/runlevels/* 2>/dev/null | grep patchd-agent"); strings.TrimSpace(out) != "" {
		left = append(left, "runlevel links: "+strings.Join(strings.Fields(out), " "))
	}
	if out, _ := m.Run("pgrep -a patchd-agent"); strings.TrimSpace(out) != "" {
		left = append(left, "processes: "+strings.TrimSpace(out))
	}
	if k == bootedtest.Systemd {
		if out, _ := m.Run("systemctl list-unit-files --no-legend 'patchd-agent*'"); strings.TrimSpace(out) != "" {
			left = append(left, fmt.Sprintf("systemd unit files: %q", strings.TrimSpace(out)))
		}
		if units := loadedUnits(m); units != "" {
			left = append(left, "systemd units: "+units)
		}
	}
	return left
}

// loadedUnits lists the agent's units systemd has loaded, but for one it
// only remembers by name: "not-found inactive dead" has no unit file, no
// process and no job, and stays in systemd's memory until its garbage
// collection (which a busy machine may put off for minutes) or the next
// daemon-reload.
func loadedUnits(m *bootedtest.Machine) string {
	out, _ := m.Run("systemctl list-units --all --no-legend --plain 'patchd-agent*'")
	var units []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "*" || f[0] == "●") { // the mark of a unit not loaded properly
			f = f[1:]
		}
		if len(f) == 0 || len(f) >= 4 && f[1] == "not-found" && f[2] == "inactive" && f[3] == "dead" {
			continue
		}
		units = append(units, strings.TrimSpace(line))
	}
	return strings.Join(units, "; ")
}
