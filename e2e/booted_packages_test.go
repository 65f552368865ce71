package e2e

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/bootedtest"
	"github.com/patchd/patchd/internal/config"
)

// TestBootedDebPackage: on a booted Debian with systemd, one with SysV
// init and one with OpenRC, the .deb the server builds for its published
// agent, installed with dpkg -i and PATCHD_TOKEN, enrolls and its service
// runs; the endpoint checks in with the published version. The .deb of a
// newer published agent upgrades it: the service manager runs the new
// binary (a new process whose executable is the installed file, not a
// deleted one) and the endpoint reports the new version. Removing the
// endpoint on the server has the agent purge its own package and report
// it; installed again, a purge by hand leaves nothing either: no service
// known to the service manager, no runlevel links, no files, state,
// configuration, pid file or process.
func TestBootedDebPackage(t *testing.T) {
	for _, k := range bootedKinds {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			bootedDebPackage(t, k)
		})
	}
}

func bootedDebPackage(t *testing.T, k bootedtest.Kind) {
	m := bootedtest.Boot(t, k)
	e := apitest.New(t, func(c *config.Config) { c.AgentDir = t.TempDir() })
	h := e.Server.AgentDist()
	ctx := context.Background()
	p := agentdist.Platform{OS: "linux", Arch: "amd64"}
	f := &front{}
	ts := httptest.NewServer(f.wrap(e.Server.Handler()))
	defer ts.Close()
	srv := ts.URL
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent log in the %s machine:\n%s", k, agentLog(m, k))
		}
	})
	deb := func(version string) string {
		t.Helper()
		if _, err := h.Store.Publish(builtAgent(t, version, ""), p); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Store.SetRelease(p, version, "unsigned", nil); err != nil {
			t.Fatal(err)
		}
		pkg, err := h.Packages.Build(ctx, agentdist.PackageRequest{Type: "deb", Arch: "amd64", Server: srv})
		if err != nil {
			t.Fatal(err)
		}
		m.Copy(pkg.Path, "/tmp/patchd-agent_"+version+".deb", 0o644)
		return "/tmp/patchd-agent_" + version + ".deb"
	}
	reports := func(version string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			e.Server.FlushCheckins(ctx)
			page, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{})
			if err == nil && page.Total == 1 && page.Items[0].Status == "connected" && page.Items[0].AgentVersion != nil && *page.Items[0].AgentVersion == version {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the endpoint does not check in with %s: %+v %v", version, page, err)
			}
		}
	}
	mainPID := func() string {
		t.Helper()
		pid, seen := servicePID(m, k)
		if pid == "" {
			t.Fatalf("the service does not run under %s: %s", k, seen)
		}
		return pid
	}

	out, err := m.Run("dpkg -i "+deb("1.4.0"), "PATCHD_TOKEN="+e.EnrollToken)
	if err != nil || !strings.Contains(out, "enrolled as endpoint") {
		t.Fatalf("dpkg -i: %v\n%s", err, out)
	}
	if strings.Contains(out, "the agent is not running") { // postinst's say_if_not_running
		t.Errorf("postinst says the agent is not running under %s:\n%s", k, out)
	}
	first := mainPID()
	reports("1.4.0")

	out, err = m.Run("dpkg -i " + deb("1.5.0"))
	if err != nil || strings.Contains(out, "enrolled as endpoint") {
		t.Fatalf("dpkg -i of the newer package: %v\n%s", err, out)
	}
	second := mainPID()
	if ok, seen := serviceRuns(m, k, "/usr/bin/patchd-agent", "1.5.0"); second == first || !ok {
		t.Fatalf("after the upgrade %s runs pid %s (was %s): %s", k, second, first, seen)
	}
	reports("1.5.0")

	// Removed from the server: the agent has the package manager remove
	// its package (dpkg --purge in a helper outside its service) and reports
	// it, with nothing left.
	page, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{})
	if err != nil || page.Total != 1 {
		t.Fatalf("endpoints: %+v %v", page, err)
	}
	id := page.Items[0].ID
	if err := e.Admin.DeleteEndpoint(ctx, id); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		audit, err := e.Admin.ListAudit(ctx, client.AuditQuery{Action: "endpoint.uninstalled"})
		status, _ := m.Run("dpkg-query -W -f='${db:Status-Status}' patchd-agent 2>/dev/null")
		left := debLeft(m, k)
		if err == nil && audit.Total == 1 && strings.TrimSpace(status) != "installed" && len(left) == 0 {
			if got := audit.Items[0]; got.Actor != "agent:"+id || got.Summary["complete"] != true {
				t.Errorf("the removal's report: %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the endpoint's removal: reports %+v (%v); package %q; left: %v", audit.Items, err, status, left)
		}
	}

	// Installed again (the first version: its agent is built already) and
	// purged by hand: nothing left either.
	out, err = m.Run("dpkg -i "+deb("1.4.0"), "PATCHD_TOKEN="+e.EnrollToken)
	if err != nil || !strings.Contains(out, "enrolled as endpoint") {
		t.Fatalf("dpkg -i after the removal: %v\n%s", err, out)
	}
	mainPID()
	if out, err := m.Run("dpkg --purge patchd-agent"); err != nil {
		t.Fatalf("dpkg --purge: %v\n%s", err, out)
	}
	if left := debLeft(m, k); len(left) > 0 {
		t.Errorf("left after purge: %v", left)
	}
}

// debLeft lists what of a .deb-installed agent is in the machine: files,
// state, configuration, pid file, units known to systemd, runlevel links
// (SysV's and OpenRC's), processes.
func debLeft(m *bootedtest.Machine, k bootedtest.Kind) []string {
	var left []string
	for _, p := range []string{"/usr/bin/patchd-agent", "/var/lib/patchd-agent", "/etc/patchd-agent", "/etc/init.d/patchd-agent", "/var/log/patchd-agent.log",
		"/usr/lib/systemd/system/patchd-agent.service", "/etc/systemd/system/multi-user.target.wants/patchd-agent.service", "/etc/systemd/system/patchd-agent.service",
		"/var/lib/systemd/deb-systemd-helper-enabled/patchd-agent.service.dsh-also", "/var/lib/systemd/deb-systemd-helper-masked/patchd-agent.service",
		"/run/patchd-agent.pid", "/var/run/patchd-agent.pid"} {
		if m.Exists(p) {
			left = append(left, p)
		}
	}
	if out, _ := m.Run("ls /etc/rc?.d /etc/runlevels/* 2>/dev/null | grep patchd-agent; pgrep -a patchd-agent"); strings.TrimSpace(out) != "" {
		left = append(left, strings.Fields(out)...)
	}
	if k == bootedtest.Systemd {
		if out, _ := m.Run("systemctl list-unit-files --no-legend 'patchd-agent*'"); strings.TrimSpace(out) != "" {
			left = append(left, strings.Fields(out)...)
		}
		if units := loadedUnits(m); units != "" {
			left = append(left, "systemd units: "+units)
		}
	}
	return left
}
