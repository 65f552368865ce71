package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/sim"
)

// publishAgent builds the real agent as version for each platform the
// simulated fleet has (stripped: a thousand endpoints download it),
// publishes it and signs its release.
func publishAgent(t *testing.T, dist *agentdist.Store, priv ed25519.PrivateKey, version string) {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []agentdist.Platform{{OS: "linux", Arch: "amd64"}, {OS: "windows", Arch: "amd64"}, {OS: "darwin", Arch: "arm64"}} {
		out := filepath.Join(dir, p.OS+"-"+p.Arch)
		cmd := exec.Command("go", "build", "-o", out, "-ldflags", "-s -w -X github.com/patchd/patchd/agent.Version="+version,
			"github.com/patchd/patchd/cmd/patchd-agent")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s %s: %v\n%s", p, version, err, b)
		}
		b, err := dist.Publish(out, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dist.SetRelease(p, version, agentproto.SignRelease(priv, p.OS, p.Arch, version, b.SHA256), []ed25519.PublicKey{priv.Public().(ed25519.PublicKey)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStagedRolloutSim: 1,000 simulated endpoints that update themselves
// as the real agent does (patchd-sim), 100 of them in the group "Test",
// under a staged policy (ring "Test", then the rest; 24 hours; 90 %) with
// 5 % of the updates failing. The test ring gets the release first and no
// other endpoint does until the ring has run it for 24 hours (an injected
// clock: nothing waits) with its success rate; then the rest gets it. A
// second release with a gate of 98 % halts in the test ring: the rest
// never gets it, and every failure raised AGENT_UPDATE_FAILED.
func TestStagedRolloutSim(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent and runs 1,000 simulated endpoints")
	}
	agentDir := t.TempDir()
	e := apitest.New(t, func(c *config.Config) { c.AgentDir = agentDir; c.CheckinInterval = 2 * time.Second })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	advance := func(d time.Duration) { clock.Add(int64(d)) }
	e.Server.Agents().SetClock(now)
	e.Server.API().SetClock(now)

	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dist, err := agentdist.NewStore(agentDir)
	if err != nil {
		t.Fatal(err)
	}
	publishAgent(t, dist, priv, "2.0.0")

	rule, err := e.Admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "Agent updates", Trigger: "AGENT_UPDATE_FAILED", EmailTo: ptr("ops@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	const n, ringSize = 1000, 100
	fleet, err := sim.New(sim.Config{Server: e.URL, EnrollToken: e.EnrollToken, Endpoints: n, Seed: 17, Speed: 1000,
		Checkin: 2 * time.Second, Wait: -1, ReleaseKey: base64.StdEncoding.EncodeToString(pub), UpdateFailureRate: 0.05,
		ReleaseCheckEvery: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := fleet.Enroll(ctx); err != nil {
		t.Fatal(err)
	}
	ids := fleet.EndpointIDs()
	testIDs := ids[:ringSize]
	g, err := e.Admin.CreateGroup(ctx, apiv1.GroupBody{Name: ptr("Test"), MachineIDs: &testIDs})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- fleet.Run(ctx) }()

	// versions answers the policy's view (moving the clock past the agent
	// API's policy cache first) and how many endpoints run version.
	versions := func(version string) (apiv1.AgentVersions, int) {
		t.Helper()
		if err := e.Server.FlushCheckins(ctx); err != nil {
			t.Fatal(err)
		}
		advance(31 * time.Second)
		v, err := e.Admin.AgentVersions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, c := range v.Versions {
			if c.AgentVersion == version {
				running += c.Endpoints
			}
		}
		return v, running
	}
	// waitRing waits until every endpoint of ring i has run or failed
	// version, checking at each step that no endpoint of a later ring runs it.
	waitRing := func(version string, i int) apiv1.AgentVersions {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			v, running := versions(version)
			rings := v.Rollout.Rings
			for _, later := range rings[i+1:] {
				if later.Updated != 0 || later.State != "waiting" {
					t.Fatalf("%s reached a later ring while ring %d rolls out: %+v", version, i, rings)
				}
			}
			if running > sumEndpoints(rings[:i+1]) {
				t.Fatalf("%d endpoints run %s, more than the rings that have it hold: %+v", running, version, rings)
			}
			if r := rings[i]; r.Updated+r.Failed == r.Endpoints || r.State == "halted" {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("ring %d did not finish with %s: %+v; sim %+v", i, version, rings, fleet.Stats())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// 2.0.0: the test ring first.
	if _, err := e.Admin.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "staged", Version: ptr("2.0.0"), Rings: []string{g.Group.ID},
		DelayHours: ptr(24), SuccessRate: ptr(90)}); err != nil {
		t.Fatal(err)
	}
	v := waitRing("2.0.0", 0)
	test := v.Rollout.Rings[0]
	t.Logf("test ring with 2.0.0: %+v", test)
	if test.Endpoints != ringSize || test.Failed == 0 || test.Updated*100 < 90*ringSize || test.State != "rolling_out" {
		t.Fatalf("test ring: %+v", test)
	}
	// The gate passes after 24 hours of the clock: the rest gets it.
	advance(24 * time.Hour)
	v = waitRing("2.0.0", 1)
	rest := v.Rollout.Rings[1]
	t.Logf("rest with 2.0.0: %+v", rest)
	if v.Rollout.Rings[0].State != "done" || rest.Endpoints != n-ringSize || rest.State != "rolling_out" || rest.Updated*100 < 90*rest.Endpoints {
		t.Fatalf("after the test ring's gate: %+v", v.Rollout.Rings)
	}
	advance(24 * time.Hour)
	if v, _ = versions("2.0.0"); v.Rollout.Rings[1].State != "done" {
		t.Fatalf("rest after its delay: %+v", v.Rollout.Rings)
	}
	failures2 := v.Rollout.Rings[0].Failed + v.Rollout.Rings[1].Failed

	// 3.0.0 with a gate of 98 %: its failures in the test ring halt it.
	publishAgent(t, dist, priv, "3.0.0")
	if _, err := e.Admin.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "staged", Version: ptr("3.0.0"), Rings: []string{g.Group.ID},
		DelayHours: ptr(24), SuccessRate: ptr(98)}); err != nil {
		t.Fatal(err)
	}
	v = waitRing("3.0.0", 0)
	if test = v.Rollout.Rings[0]; test.State != "halted" || test.Failed*100 <= 2*ringSize || v.Rollout.Rings[1].State != "waiting" {
		t.Fatalf("3.0.0: %+v", v.Rollout.Rings)
	}
	t.Logf("test ring with 3.0.0: %+v", test)
	// Halted stays halted, whatever the clock: the rest never gets 3.0.0.
	advance(72 * time.Hour)
	time.Sleep(3 * time.Second) // more than a check-in interval of the fleet
	v, running := versions("3.0.0")
	if v.Rollout.Rings[0].State != "halted" || v.Rollout.Rings[1].State != "waiting" || v.Rollout.Rings[1].Updated != 0 || running > ringSize {
		t.Fatalf("after the halt: %d run 3.0.0, %+v", running, v.Rollout.Rings)
	}

	// Every failure the agents reported raised AGENT_UPDATE_FAILED.
	evs, err := e.Store.ListAlertEvents(ctx, e.Org.ID, rule.Rule.ID, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if want := failures2 + test.Failed; len(evs) != want {
		t.Fatalf("%d AGENT_UPDATE_FAILED events, %d failures", len(evs), want)
	}
	cancel()
	if err := <-ran; err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	s := fleet.Stats()
	t.Logf("sim: %d updates, %d update failures, %d check-ins, errors %v", s.AgentUpdates, s.AgentUpdateFailures, s.Checkins, s.Errors)
	if s.AgentUpdateFailures != int64(failures2+test.Failed) {
		t.Fatalf("the sim counts %d failures, the server %d", s.AgentUpdateFailures, failures2+test.Failed)
	}
}

func sumEndpoints(rings []apiv1.AgentRing) int {
	n := 0
	for _, r := range rings {
		n += r.Endpoints
	}
	return n
}

func ptr[T any](v T) *T { return &v }

// TestSimRefusesUntrustedRelease: patchd-sim's agents verify a release as
// the real agent does: a release signed by a key they do not trust is
// refused, reported once as an update failure ("bad signature"), and no
// endpoint runs it.
func TestSimRefusesUntrustedRelease(t *testing.T) {
	agentDir := t.TempDir()
	e := apitest.New(t, func(c *config.Config) { c.AgentDir = agentDir; c.CheckinInterval = time.Second })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	trusted, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dist, err := agentdist.NewStore(agentDir)
	if err != nil {
		t.Fatal(err)
	}
	// Any linux/amd64 program serves: the simulated agents never run it.
	p := agentdist.Platform{OS: "linux", Arch: "amd64"}
	b, err := dist.Publish("/bin/true", p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dist.SetRelease(p, "2.0.0", agentproto.SignRelease(other, p.OS, p.Arch, "2.0.0", b.SHA256), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "latest"}); err != nil {
		t.Fatal(err)
	}
	fleet, err := sim.New(sim.Config{Server: e.URL, EnrollToken: e.EnrollToken, Endpoints: 30, Seed: 5, Speed: 1000,
		Checkin: time.Second, Wait: -1, ReleaseKey: base64.StdEncoding.EncodeToString(trusted)})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- fleet.Run(ctx) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := e.Server.FlushCheckins(ctx); err != nil {
			t.Fatal(err)
		}
		v, err := e.Admin.AgentVersions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		linux := 0
		for _, c := range v.Versions {
			if c.AgentVersion != sim.AgentVersion {
				t.Fatalf("an endpoint runs %s: %+v", c.AgentVersion, v.Versions)
			}
			if c.Platform == "linux" {
				linux += c.Endpoints
			}
		}
		if v.Endpoints == 30 && linux > 0 && len(v.Failures) == linux {
			for _, f := range v.Failures {
				if f.Platform != "linux" || f.Version != "2.0.0" || f.Reason != "bad signature" {
					t.Fatalf("failure: %+v", f)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("failures %+v; sim %+v", v.Failures, fleet.Stats())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // more check-ins: a refused release is not tried again
	cancel()
	<-ran
	s := fleet.Stats()
	if s.AgentUpdates != 0 || s.AgentUpdateFailures != int64(len(mustFailures(t, e))) {
		t.Fatalf("sim: %d updates, %d failures", s.AgentUpdates, s.AgentUpdateFailures)
	}
}

func mustFailures(t *testing.T, e *apitest.Env) []apiv1.AgentUpdateFailure {
	t.Helper()
	v, err := e.Admin.AgentVersions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v.Failures
}
