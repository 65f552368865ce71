package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/bootedtest"
	"github.com/patchd/patchd/internal/config"
)

// TestBootedStagedSelfUpdate: on a booted Debian with systemd and one
// with SysV init, the agent installed from the .deb (2.0.0, the release
// key built in), and on one with OpenRC the agent installed by the
// one-line installer (its OpenRC script runs it under supervise-daemon),
// is the only endpoint of the group "Test", the first ring of a staged
// policy. When the policy rolls 3.0.0 out, the agent updates itself and
// the service manager runs the new binary: the service's process executes
// the installed file (not a deleted one), which is 3.0.0, and the endpoint
// reports 3.0.0. When the policy rolls out 4.0.0, which exits as soon as
// it runs, the watchdog puts 3.0.0 back: the service manager (systemd,
// supervise-daemon) or, under SysV init, which restarts nothing, the
// watchdog itself (writing the init script's pid file) runs it again, the
// endpoint reports 3.0.0 and the failure is recorded against 4.0.0. (The
// .deb under OpenRC runs its LSB script, which takes the SysV path.)
func TestBootedStagedSelfUpdate(t *testing.T) {
	// One release key for every kind: the agents are built once.
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range bootedKinds {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			bootedStagedSelfUpdate(t, k, k == bootedtest.OpenRC, pub, priv)
		})
	}
}

// bootedStagedSelfUpdate is TestBootedStagedSelfUpdate on a machine of
// kind k, the agent installed from the .deb or, when installer, by the
// printed one-line installer.
func bootedStagedSelfUpdate(t *testing.T, k bootedtest.Kind, installer bool, pub ed25519.PublicKey, priv ed25519.PrivateKey) {
	m := bootedtest.Boot(t, k)
	agentDir := t.TempDir()
	e := apitest.New(t, func(c *config.Config) { c.AgentDir = agentDir })
	h := e.Server.AgentDist()
	ctx := context.Background()
	// The agent API reads the policy at most every 30 s: the clock moves
	// past that after each change of policy (nothing waits for it).
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	e.Server.Agents().SetClock(now)
	e.Server.API().SetClock(now)
	policyChanged := func() { offset.Add(int64(31 * time.Second)) }

	f := &front{}
	ts := httptest.NewServer(f.wrap(e.Server.Handler()))
	defer ts.Close()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent log in the %s machine:\n%s", k, agentLog(m, k))
		}
	})
	p := agentdist.Platform{OS: "linux", Arch: "amd64"}
	dir := t.TempDir()
	release := func(file, version string) {
		t.Helper()
		sum, err := agentdist.FileSHA256(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Store.SetRelease(p, version, agentproto.SignRelease(priv, p.OS, p.Arch, version, sum), []ed25519.PublicKey{pub}); err != nil {
			t.Fatal(err)
		}
	}
	publish := func(version string) {
		t.Helper()
		exe := builtAgent(t, version, base64.StdEncoding.EncodeToString(pub))
		if _, err := h.Store.Publish(exe, p); err != nil {
			t.Fatal(err)
		}
		release(exe, version)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 2 minutes", what)
			}
		}
	}
	var id string
	reports := func(version string) bool {
		e.Server.FlushCheckins(ctx)
		page, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{})
		if err != nil || page.Total != 1 || page.Items[0].AgentVersion == nil {
			return false
		}
		id = page.Items[0].ID
		return *page.Items[0].AgentVersion == version && page.Items[0].Status == "connected"
	}
	publish("2.0.0")
	exe := "/usr/bin/patchd-agent"
	if installer {
		exe = "/usr/local/bin/patchd-agent"
		printed, err := h.Installers(ctx, ts.URL, e.EnrollToken)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := m.Run(printed.Linux); err != nil || !strings.Contains(out, "done: the agent runs as a service") {
			t.Fatalf("the printed line: %v\n%s", err, out)
		}
	} else {
		pkg, err := h.Packages.Build(ctx, agentdist.PackageRequest{Type: "deb", Arch: "amd64", Server: ts.URL})
		if err != nil {
			t.Fatal(err)
		}
		m.Copy(pkg.Path, "/tmp/patchd-agent.deb", 0o644)
		if out, err := m.Run("dpkg -i /tmp/patchd-agent.deb", "PATCHD_TOKEN="+e.EnrollToken); err != nil {
			t.Fatalf("dpkg -i: %v\n%s", err, out)
		}
	}
	waitFor("the installed agent checking in as 2.0.0", func() bool { return reports("2.0.0") })
	g, err := e.Admin.CreateGroup(ctx, apiv1.GroupBody{Name: ptr("Test"), MachineIDs: &[]string{id}})
	if err != nil {
		t.Fatal(err)
	}

	publish("3.0.0")
	if _, err := e.Admin.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "staged", Version: ptr("3.0.0"), Rings: []string{g.Group.ID},
		DelayHours: ptr(24), SuccessRate: ptr(90)}); err != nil {
		t.Fatal(err)
	}
	policyChanged()
	waitFor("the endpoint reporting 3.0.0", func() bool { return reports("3.0.0") })
	if ok, out := serviceRuns(m, k, exe, "3.0.0"); !ok {
		t.Fatalf("after the self-update %s does not run 3.0.0:\n%s", k, out)
	}
	v, err := e.Admin.AgentVersions(ctx)
	if err != nil || v.Rollout == nil || len(v.Rollout.Rings) == 0 || v.Rollout.Rings[0].Updated != 1 {
		t.Errorf("the test ring after the update: %+v %v", v.Rollout, err)
	}

	// 4.0.0 answers its version, and fails as soon as it runs.
	crash := filepath.Join(dir, "v4")
	os.WriteFile(crash, []byte("#!/bin/sh\nif [ \"$1\" = version ]; then echo \"patchd-agent 4.0.0 "+p.String()+"\"; exit 0; fi\necho 'patchd-agent 4.0.0: crashed' >&2\nexit 2\n"), 0o755)

	if err := os.Rename(crash, filepath.Join(agentDir, p.OS+"-"+p.Arch, p.FileName())); err != nil { // the release tooling refuses a script
		t.Fatal(err)
	}
	release(filepath.Join(agentDir, p.OS+"-"+p.Arch, p.FileName()), "4.0.0")
	if _, err := e.Admin.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "staged", Version: ptr("4.0.0"), Rings: []string{g.Group.ID},
		DelayHours: ptr(24), SuccessRate: ptr(90)}); err != nil {
		t.Fatal(err)
	}
	policyChanged()
	waitFor("the failure of 4.0.0 recorded", func() bool {
		for _, f := range mustFailures(t, e) {
			if f.EndpointID == id && f.Version == "4.0.0" {
				return true
			}
		}
		return false
	})
	waitFor("the endpoint reporting 3.0.0 again", func() bool { return reports("3.0.0") })
	if ok, out := serviceRuns(m, k, exe, "3.0.0"); !ok {
		t.Fatalf("after the rollback %s does not run 3.0.0:\n%s", k, out)
	}
}
