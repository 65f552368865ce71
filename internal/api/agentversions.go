package api

import (
	"net/http"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
)

// getAgentVersions (a patchd addition) answers the organization's agent
// versions, the published releases, its policy and target, who is behind
// and the recent update failures.
func (a *API) getAgentVersions(w http.ResponseWriter, r *http.Request) error {
	out, err := a.agentVersions(r, principal(r).OrgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// setAgentPolicy (a patchd addition) sets the organization's agent update
// policy and answers the agent versions under it.
func (a *API) setAgentPolicy(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.AgentPolicyBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	orgID := principal(r).OrgID
	p, err := admin.CheckAgentPolicy(r.Context(), a.store, orgID, body, a.clock.Now())
	if err != nil {
		return err
	}
	if err := a.store.SetAgentPolicy(r.Context(), a.auditEntry(r, "agent_policy.set", "org", orgID), orgID, p, a.clock.Now()); err != nil {
		return err
	}
	out, err := a.agentVersions(r, orgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) agentVersions(r *http.Request, orgID string) (apiv1.AgentVersions, error) {
	out := apiv1.AgentVersions{Policy: "none", Releases: []apiv1.AgentRelease{}, Versions: []apiv1.AgentVersionCount{}, Failures: []apiv1.AgentUpdateFailure{}}
	p, err := a.store.AgentPolicyOf(r.Context(), orgID)
	if err != nil {
		return out, err
	}
	if p.Policy != "" {
		out.Policy = p.Policy
	}
	if p.Policy == store.AgentPolicyPinned {
		out.PinnedVersion = &p.Version
	}
	if t := p.Target(); t != "" {
		out.Target = &t
	}
	if p.Policy == store.AgentPolicyStaged {
		ro, err := a.store.AgentRolloutOf(r.Context(), orgID, a.clock.Now())
		if err != nil {
			return out, err
		}
		out.Target = &p.Version
		out.Rollout = admin.AgentRolloutOut(ro)
	}
	var releases []agentproto.Release
	if a.cfg.Releases != nil {
		if releases, err = a.cfg.Releases(r.Context()); err != nil {
			return out, err
		}
	}
	released := map[string]string{} // os/arch: version
	for _, rel := range releases {
		out.Releases = append(out.Releases, apiv1.AgentRelease{OS: rel.OS, Arch: rel.Arch, Version: rel.Version, SHA256: rel.SHA256, Size: rel.Size})
		released[rel.OS+"/"+rel.Arch] = rel.Version
	}
	fleet, err := a.store.AgentFleetOf(r.Context(), orgID)
	if err != nil {
		return out, err
	}
	for _, c := range fleet.Versions {
		row := apiv1.AgentVersionCount{Platform: c.Platform, Arch: c.Arch, AgentVersion: c.AgentVersion, Endpoints: c.Endpoints}
		wanted := released[goOS(c.Platform)+"/"+c.Arch]
		named := p.Policy == store.AgentPolicyPinned || p.Policy == store.AgentPolicyStaged
		if named {
			wanted = p.Version
		}
		if wanted != "" {
			row.WantedVersion = &wanted
			row.Behind = behind(c.AgentVersion, wanted, named)
		}
		out.Endpoints += c.Endpoints
		if row.Behind {
			out.Behind += c.Endpoints
		}
		out.Versions = append(out.Versions, row)
	}
	for _, f := range fleet.Failures {
		out.Failures = append(out.Failures, apiv1.AgentUpdateFailure{EndpointID: f.EndpointID, Hostname: f.Hostname, Platform: f.Platform,
			AgentVersion: f.AgentVersion, Version: f.Version, Reason: f.Reason, At: f.At})
	}
	return out, nil
}

// behind tells whether agents of version are behind wanted. A version
// the policy names (pinned, staged) is followed up or down: any other
// version is behind it. The published release is followed only upwards:
// an agent newer than it keeps its version and is not behind; versions
// are compared as semantic versions (one that is not is behind).
func behind(version, wanted string, named bool) bool {
	if version == wanted {
		return false
	}
	if named {
		return true
	}
	c, err := agentproto.CompareVersions(version, wanted)
	return err != nil || c < 0
}

// goOS is the release's os of an endpoint platform (macos is darwin).
func goOS(platform string) string {
	if platform == "macos" {
		return "darwin"
	}
	return platform
}
