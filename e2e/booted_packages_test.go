package e2e

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/bootedtest"
	"github.com/patchd/patchd/internal/config"
)

// TestBootedDebPackage: on a booted Debian with systemd, the .deb the
// server builds for its published agent, installed with dpkg -i and
// PATCHD_TOKEN, enrolls and its service runs; the endpoint checks in with
// the published version. The .deb of a newer published agent upgrades it:
// systemd runs the new binary (a new main process whose executable is the
// installed file, not a deleted one) and the endpoint reports the new
// version. Removing the endpoint on the server has the agent purge its own
// package and report it; installed again, a purge by hand leaves nothing
// either: no unit known to systemd, no files, state, configuration or
// process.
func TestBootedDebPackage(t *testing.T) {
	m := bootedtest.Boot(t, bootedtest.Systemd)
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
			out, _ := m.Run("journalctl --no-pager -n 60 -u patchd-agent 2>/dev/null")
			t.Logf("agent journal:\n%s", out)
		}
	})
	dir := t.TempDir()
	deb := func(version string) string {
		t.Helper()
		exe := filepath.Join(dir, version, "patchd-agent")
		buildVersion(t, exe, version, "")
		if _, err := h.Store.Publish(exe, p); err != nil {
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
		out, err := m.Run("systemctl is-active --quiet patchd-agent && systemctl show -p MainPID --value patchd-agent")
		pid := strings.TrimSpace(out)
		if err != nil || pid == "" || pid == "0" {
			t.Fatalf("the service does not run: %v %q", err, out)
		}
		return pid
	}

	out, err := m.Run("dpkg -i "+deb("1.4.0"), "PATCHD_TOKEN="+e.EnrollToken)
	if err != nil || !strings.Contains(out, "enrolled as endpoint") {
		t.Fatalf("dpkg -i: %v\n%s", err, out)
	}
	if strings.Contains(out, "not running") {
		t.Errorf("postinst says the agent is not running under systemd:\n%s", out)
	}
	first := mainPID()
	reports("1.4.0")

	out, err = m.Run("dpkg -i " + deb("1.5.0"))
	if err != nil || strings.Contains(out, "enrolled as endpoint") {
		t.Fatalf("dpkg -i of the newer package: %v\n%s", err, out)
	}
	second := mainPID()
	exe, _ := m.Run("readlink /proc/" + second + "/exe; /usr/bin/patchd-agent version")
	if second == first || !strings.HasPrefix(exe, "/usr/bin/patchd-agent\n") || !strings.Contains(exe, "1.5.0") {
		t.Fatalf("after the upgrade systemd runs pid %s (was %s): %q", second, first, exe)
	}
	reports("1.5.0")

	// Removed from the server: the agent has the package manager remove
	// its package (dpkg --purge in a helper outside its unit) and reports
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
		left := debLeft(m)
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

	// Installed again and purged by hand: nothing left either.
	out, err = m.Run("dpkg -i "+deb("1.6.0"), "PATCHD_TOKEN="+e.EnrollToken)
	if err != nil || !strings.Contains(out, "enrolled as endpoint") {
		t.Fatalf("dpkg -i after the removal: %v\n%s", err, out)
	}
	mainPID()
	if out, err := m.Run("dpkg --purge patchd-agent"); err != nil {
		t.Fatalf("dpkg --purge: %v\n%s", err, out)
	}
	if left := debLeft(m); len(left) > 0 {
		t.Errorf("left after purge: %v", left)
	}
}

// debLeft lists what of a .deb-installed agent is in the machine: files,
// state, configuration, units known to systemd, runlevel links, processes.
func debLeft(m *bootedtest.Machine) []string {
	var left []string
	for _, p := range []string{"/usr/bin/patchd-agent", "/var/lib/patchd-agent", "/etc/patchd-agent", "/etc/init.d/patchd-agent", "/var/log/patchd-agent.log",
		"/usr/lib/systemd/system/patchd-agent.service", "/etc/systemd/system/multi-user.target.wants/patchd-agent.service", "/etc/systemd/system/patchd-agent.service",
		"/var/lib/systemd/deb-systemd-helper-enabled/patchd-agent.service.dsh-also", "/var/lib/systemd/deb-systemd-helper-masked/patchd-agent.service"} {
		if m.Exists(p) {
			left = append(left, p)
		}
	}
	if out, _ := m.Run("ls /etc/rc?.d | grep patchd-agent; pgrep -a patchd-agent; systemctl list-unit-files --no-legend 'patchd-agent*'"); strings.TrimSpace(out) != "" {
		left = append(left, strings.Fields(out)...)
	}
	if units := loadedUnits(m); units != "" {
		left = append(left, "systemd units: "+units)
	}
	return left
}
