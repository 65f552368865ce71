package api

import (
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
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
	var p store.AgentPolicy
	var errs valid.Errors
	version := ""
	if body.Version != nil {
		version = strings.TrimSpace(*body.Version)
	}
	switch body.Policy {
	case "none", store.AgentPolicyLatest:
		if body.Version != nil {
			errs.Add("version", "goes only with policy pinned")
		}
		if body.Policy == store.AgentPolicyLatest {
			p.Policy = store.AgentPolicyLatest
		}
	case store.AgentPolicyPinned:
		switch {
		case version == "" || len(version) > agentproto.MaxAgentVersion:
			errs.Add("version", "policy pinned needs the agent version: 1 to %d characters", agentproto.MaxAgentVersion)
		case !utf8.ValidString(version) || strings.ContainsAny(version, " \t\r\n\x00"):
			errs.Add("version", "must be text without spaces or NUL")
		}
		p = store.AgentPolicy{Policy: store.AgentPolicyPinned, Version: version}
	default:
		errs.Add("policy", "must be latest, pinned or none")
	}
	if err := errs.Err(); err != nil {
		return err
	}
	orgID := principal(r).OrgID
	if err := a.store.SetAgentPolicy(r.Context(), auditEntry(r, "agent_policy.set", "org", orgID), orgID, p, time.Now()); err != nil {
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
	var releases []agentproto.Release
	if a.cfg.Releases != nil {
		if releases, err = a.cfg.Releases(); err != nil {
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
		if p.Policy == store.AgentPolicyPinned {
			wanted = p.Version
		}
		if wanted != "" {
			row.WantedVersion = &wanted
			row.Behind = c.AgentVersion != wanted
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

// goOS is the release's os of an endpoint platform (macos is darwin).
func goOS(platform string) string {
	if platform == "macos" {
		return "darwin"
	}
	return platform
}
