package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// MaxAgentRings bounds the groups of a staged agent update policy.
const MaxAgentRings = 20

// MaxAgentDelayHours bounds a staged policy's delay (a year).
const MaxAgentDelayHours = 8760

// CheckAgentPolicy checks an agent update policy as PUT
// /api/v1/agent-policy and patchd admin agent-policy set take it: latest,
// pinned (with version), staged (with version, rings of the
// organization's groups, each once, delayHours and successRate) or none.
// Bad input is a *valid.Error listing every problem by the body's field
// names (rings[i] for a ring); other errors are the store's.
func CheckAgentPolicy(ctx context.Context, s *store.Store, orgID string, body apiv1.AgentPolicyBody, now time.Time) (store.AgentPolicy, error) {
	var p store.AgentPolicy
	var errs valid.Errors
	version := ""
	if body.Version != nil {
		version = strings.TrimSpace(*body.Version)
	}
	if body.Policy != store.AgentPolicyStaged {
		if body.Rings != nil {
			errs.Add("rings", "go only with policy staged")
		}
		if body.DelayHours != nil {
			errs.Add("delayHours", "goes only with policy staged")
		}
		if body.SuccessRate != nil {
			errs.Add("successRate", "goes only with policy staged")
		}
	}
	switch body.Policy {
	case "none", store.AgentPolicyLatest:
		if body.Version != nil {
			errs.Add("version", "goes only with policy pinned or staged")
		}
		if body.Policy == store.AgentPolicyLatest {
			p.Policy = store.AgentPolicyLatest
		}
	case store.AgentPolicyPinned, store.AgentPolicyStaged:
		switch {
		case version == "" || len(version) > agentproto.MaxAgentVersion:
			errs.Add("version", "policy %s needs the agent version: 1 to %d characters", body.Policy, agentproto.MaxAgentVersion)
		case !utf8.ValidString(version) || strings.ContainsAny(version, " \t\r\n\x00"):
			errs.Add("version", "must be text without spaces or NUL")
		}
		p = store.AgentPolicy{Policy: body.Policy, Version: version}
		if body.Policy == store.AgentPolicyStaged {
			if err := stagedAgentPolicy(ctx, s, orgID, body, &p, &errs, now); err != nil {
				return p, err
			}
		}
	default:
		errs.Add("policy", "must be latest, pinned, staged or none")
	}
	return p, errs.Err()
}

// stagedAgentPolicy checks a staged policy's rings (the organization's
// groups, each once), delay and success rate into p.
func stagedAgentPolicy(ctx context.Context, s *store.Store, orgID string, body apiv1.AgentPolicyBody, p *store.AgentPolicy, errs *valid.Errors, now time.Time) error {
	switch {
	case len(body.Rings) == 0:
		errs.Add("rings", "policy staged needs 1 to %d endpoint group ids, the rings in order", MaxAgentRings)
	case len(body.Rings) > MaxAgentRings:
		errs.Add("rings", "at most %d groups", MaxAgentRings)
	default:
		seen := map[string]bool{}
		for i, id := range body.Rings {
			field := fmt.Sprintf("rings[%d]", i)
			if seen[id] {
				errs.Add(field, "the group is already a ring before")
				continue
			}
			seen[id] = true
			if id == "" || len(id) > 100 || !utf8.ValidString(id) || strings.ContainsRune(id, 0) {
				errs.Add(field, "no such endpoint group")
				continue
			}
			if _, err := s.GetGroup(ctx, orgID, id, now); errors.Is(err, dberr.ErrNotFound) {
				errs.Add(field, "no such endpoint group")
			} else if err != nil {
				return err
			}
		}
		p.Rings = body.Rings
	}
	switch {
	case body.DelayHours == nil:
		errs.Add("delayHours", "policy staged needs the hours a ring runs the version before the next gets it: 0 to %d", MaxAgentDelayHours)
	case *body.DelayHours < 0 || *body.DelayHours > MaxAgentDelayHours:
		errs.Add("delayHours", "must be 0 to %d", MaxAgentDelayHours)
	default:
		p.Delay = time.Duration(*body.DelayHours) * time.Hour
	}
	switch {
	case body.SuccessRate == nil:
		errs.Add("successRate", "policy staged needs the percent of a ring that must run the version: 0 to 100")
	case *body.SuccessRate < 0 || *body.SuccessRate > 100:
		errs.Add("successRate", "must be 0 to 100")
	default:
		p.SuccessRate = *body.SuccessRate
	}
	return nil
}

// AgentRolloutOut is a staged update's state as the API answers it
// (AgentVersions.rollout) and patchd admin agent-policy prints it.
func AgentRolloutOut(ro *store.AgentRollout) *apiv1.AgentRollout {
	out := &apiv1.AgentRollout{Version: ro.Policy.Version, DelayHours: int(ro.Policy.Delay / time.Hour), SuccessRate: ro.Policy.SuccessRate,
		Rings: []apiv1.AgentRing{}}
	at := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	for _, g := range ro.Rings {
		ring := apiv1.AgentRing{Position: g.Position, State: g.State, StartedAt: at(g.StartedAt), DoneAt: at(g.DoneAt), HaltedAt: at(g.HaltedAt),
			Endpoints: g.Endpoints, Updated: g.Updated, Failed: g.Failed}
		if g.GroupID != "" {
			ring.GroupID, ring.GroupName = &g.GroupID, &g.GroupName
		}
		out.Rings = append(out.Rings, ring)
	}
	return out
}
