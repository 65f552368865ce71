package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// TestAgentVersions: GET /api/v1/agent-versions counts the organization's
// agents by version against the published releases and the policy (who is
// behind), lists its update failures and nothing of another
// organization's; PUT /api/v1/agent-policy sets the policy the check-ins
// answer (audited), refuses a malformed body (400) or policy (422) without
// changing anything, and needs endpoints.manage (403).
func TestAgentVersions(t *testing.T) {
	// A signed release 2.0.0 for linux/amd64.
	e, ctx, now := withRelease(t, "2.0.0")

	old := e.Enroll("uid-v1", "web-1", "linux")
	cur := e.Enroll("uid-v2", "web-2", "linux")
	mac := e.Enroll("uid-mac", "mac-1", "macos")
	checkin := func(a *apitest.Agent, version string, f *agentproto.UpdateFailure) agentproto.CheckinResponse {
		t.Helper()
		return checkinAs(t, a, agentproto.CheckinRequest{AgentVersion: version, IPAddresses: []string{}, UpdateFailure: f})
	}
	checkin(old, "1.0.0", &agentproto.UpdateFailure{Version: "2.0.0", Reason: "bad signature", At: now.Add(-time.Minute)})
	checkin(cur, "2.0.0", nil)
	checkin(mac, "1.0.0", nil)
	// Another organization's agent and failure.
	other := e.NewOrg("Other")
	if err := e.Store.RecordAgentUpdateFailure(ctx, other.ID, "no-such", "9", "x", *now, *now); err != nil {
		t.Fatal(err)
	}
	e.Server.Presence().Flush(ctx)

	v, err := e.Admin.AgentVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.Policy != "none" || v.Target != nil || v.PinnedVersion != nil || v.Endpoints != 3 || v.Behind != 1 {
		t.Fatalf("without a policy: %+v", v)
	}
	if len(v.Releases) != 1 || v.Releases[0].Version != "2.0.0" || v.Releases[0].OS != "linux" || v.Releases[0].Arch != "amd64" {
		t.Fatalf("releases: %+v", v.Releases)
	}
	want := map[string]struct {
		n      int
		wanted *string
		behind bool
	}{"linux/1.0.0": {1, ptr("2.0.0"), true}, "linux/2.0.0": {1, ptr("2.0.0"), false}, "macos/1.0.0": {1, nil, false}}
	if len(v.Versions) != len(want) {
		t.Fatalf("versions: %+v", v.Versions)
	}
	for _, c := range v.Versions {
		w, ok := want[c.Platform+"/"+c.AgentVersion]
		if !ok || c.Endpoints != w.n || c.Behind != w.behind || (w.wanted == nil) != (c.WantedVersion == nil) ||
			w.wanted != nil && *c.WantedVersion != *w.wanted || c.Arch != "amd64" {
			t.Fatalf("version row %+v, want %+v", c, w)
		}
	}
	if len(v.Failures) != 1 || v.Failures[0].EndpointID != old.ID || v.Failures[0].Reason != "bad signature" || v.Failures[0].Version != "2.0.0" {
		t.Fatalf("failures: %+v", v.Failures)
	}

	// Pinned: every agent not at the pinned version is behind, whatever
	// is published; the check-in answers the pinned version.
	v, err = e.Admin.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "pinned", Version: ptr(" 1.0.0 ")})
	if err != nil {
		t.Fatal(err)
	}
	if v.Policy != "pinned" || v.PinnedVersion == nil || *v.PinnedVersion != "1.0.0" || v.Target == nil || *v.Target != "1.0.0" || v.Behind != 1 {
		t.Fatalf("pinned: %+v", v)
	}
	*now = now.Add(time.Minute) // past the agent API's policy cache
	if r := checkin(cur, "2.0.0", nil); r.AgentTarget != "1.0.0" {
		t.Fatalf("check-in target: %q", r.AgentTarget)
	}
	audit, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "agent_policy.set"})
	if err != nil || len(audit) != 1 || audit[0].Summary["version"] != "1.0.0" {
		t.Fatalf("audit: %+v %v", audit, err)
	}

	// Malformed: nothing changes.
	token := tokenOf(t, e.Admin)
	for _, c := range []struct {
		body   string
		status int
	}{
		{`{"policy":`, http.StatusBadRequest},
		{`{"policy":5}`, http.StatusUnprocessableEntity},
		{``, http.StatusBadRequest},
		{`{"policy":"sometimes"}`, http.StatusUnprocessableEntity},
		{`{"policy":"pinned"}`, http.StatusUnprocessableEntity},
		{`{"policy":"pinned","version":"2 0"}`, http.StatusUnprocessableEntity},
		{`{"policy":"latest","version":"2.0.0"}`, http.StatusUnprocessableEntity},
		{`{"policy":"none","version":""}`, http.StatusUnprocessableEntity},
	} {
		if ans := rawCall(t, e, http.MethodPut, "/api/v1/agent-policy", token, []byte(c.body)); ans.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.body, ans.status, ans.body, c.status)
		}
	}
	if pol, err := e.Store.AgentPolicyOf(ctx, e.Org.ID); err != nil || pol.Policy != store.AgentPolicyPinned || pol.Version != "1.0.0" {
		t.Fatalf("after malformed bodies: %+v %v", pol, err)
	}

	// A viewer reads but may not set; another organization sees its own.
	viewer := e.Client(e.Org, perm.Set(perm.APIAccess|perm.EndpointsView))
	if _, err := viewer.AgentVersions(ctx); err != nil {
		t.Fatalf("viewer read: %v", err)
	}
	mustStatus(t, errOf(viewer.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "none"})), http.StatusForbidden, "viewer set")
	mustStatus(t, errOf(e.Client(e.Org, perm.Set(perm.APIAccess)).AgentVersions(ctx)), http.StatusForbidden, "read without endpoints.view")
	oc := e.Client(other, perm.All)
	ov, err := oc.AgentVersions(ctx)
	if err != nil || ov.Policy != "none" || ov.Endpoints != 0 || len(ov.Versions) != 0 || len(ov.Failures) != 0 {
		t.Fatalf("other organization: %+v %v", ov, err)
	}
	if _, err := oc.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "latest"}); err != nil {
		t.Fatal(err)
	}
	if pol, _ := e.Store.AgentPolicyOf(ctx, e.Org.ID); pol.Policy != store.AgentPolicyPinned {
		t.Fatalf("another organization's policy changed ours: %+v", pol)
	}

	// latest, then none.
	if v, err = e.Admin.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "latest"}); err != nil || v.Target == nil || *v.Target != "latest" || v.Behind != 1 {
		t.Fatalf("latest: %+v %v", v, err)
	}
	if v, err = e.Admin.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "none"}); err != nil || v.Target != nil || v.Policy != "none" {
		t.Fatalf("none: %+v %v", v, err)
	}
}

// TestAgentNewerThanRelease: under the policy latest an agent newer than
// the release published for its platform is neither told to update (it
// would refuse the older release at every check-in) nor counted behind;
// an older one is both, versions compared as semantic versions (1.10.0 is
// newer than 1.9.0), and one that is not a semantic version is told and
// counted. A pinned version is followed down: a newer agent is told it
// and is behind.
func TestAgentNewerThanRelease(t *testing.T) {
	e, ctx, now := withRelease(t, "1.9.0")
	if _, err := e.Admin.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "latest"}); err != nil {
		t.Fatal(err)
	}
	agents := map[string]*apitest.Agent{}
	for _, v := range []string{"1.2.0", "1.9.0", "1.10.0", "dev"} {
		agents[v] = e.Enroll("uid-"+v, "host-"+v, "linux")
	}
	checkin := func(version string) string {
		t.Helper()
		return checkinAs(t, agents[version], agentproto.CheckinRequest{AgentVersion: version, IPAddresses: []string{}}).AgentTarget
	}
	for version, want := range map[string]string{"1.2.0": "latest", "1.9.0": "", "1.10.0": "", "dev": "latest"} {
		if got := checkin(version); got != want {
			t.Errorf("agent %s is told %q, want %q", version, got, want)
		}
	}
	e.Server.Presence().Flush(ctx)
	behindOf := func(v apiv1.AgentVersions) map[string]bool {
		out := map[string]bool{}
		for _, c := range v.Versions {
			out[c.AgentVersion] = c.Behind
		}
		return out
	}
	v, err := e.Admin.AgentVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b := behindOf(v); v.Behind != 2 || !b["1.2.0"] || b["1.9.0"] || b["1.10.0"] || !b["dev"] {
		t.Fatalf("under latest: %d behind: %v", v.Behind, b)
	}

	v, err = e.Admin.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "pinned", Version: ptr("1.9.0")})
	if err != nil {
		t.Fatal(err)
	}
	if b := behindOf(v); v.Behind != 3 || !b["1.2.0"] || b["1.9.0"] || !b["1.10.0"] || !b["dev"] {
		t.Fatalf("pinned: %d behind: %v", v.Behind, b)
	}
	*now = now.Add(time.Minute) // past the agent API's policy cache
	if got := checkin("1.10.0"); got != "1.9.0" {
		t.Fatalf("pinned: agent 1.10.0 is told %q", got)
	}
}
