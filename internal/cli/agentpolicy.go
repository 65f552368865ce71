package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// parseDelayHours reads a staged policy's delay as patchctl does: hours
// ("12h", or a bare number) or days ("3d").
func parseDelayHours(v string) (int, error) {
	v = strings.TrimSpace(v)
	unit := 1
	switch {
	case strings.HasSuffix(v, "d"):
		unit, v = 24, strings.TrimSuffix(v, "d")
	case strings.HasSuffix(v, "h"):
		v = strings.TrimSuffix(v, "h")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1<<20 {
		return 0, errors.New("wants hours or days: 12h, 3d")
	}
	return n * unit, nil
}

// ringGroupIDs answers the ids of the organization's groups given by id
// or by name (names are unique in an organization); a group that does not
// exist is passed on for the policy's check to name.
func ringGroupIDs(ctx context.Context, s *store.Store, orgID string, refs []string) ([]string, error) {
	list, err := s.ListGroups(ctx, orgID, time.Now())
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(refs))
	for _, ref := range refs {
		id := ref
		for _, g := range list {
			if g.ID == ref || g.Name == ref {
				id = g.ID
				break
			}
		}
		out = append(out, id)
	}
	return out, nil
}

// agentPolicyFlags are the flags of the API body's fields.
var agentPolicyFlags = map[string]string{"policy": "--policy", "version": "--version", "rings": "--ring",
	"delayHours": "--delay", "successRate": "--success-rate"}

// agentPolicyProblems words the policy's validation problems (the API's
// messages) by the flags that were given: rings[1] is the second --ring.
// Other errors pass unchanged.
func agentPolicyProblems(name string, rings []string, err error) error {
	var v *valid.Error
	if !errors.As(err, &v) {
		return err
	}
	parts := make([]string, 0, len(v.Problems))
	for _, p := range v.Problems {
		f, ok := agentPolicyFlags[p.Field]
		if !ok {
			f = p.Field
			var i int
			if _, err := fmt.Sscanf(p.Field, "rings[%d]", &i); err == nil && i >= 0 && i < len(rings) {
				f = fmt.Sprintf("--ring %q", rings[i])
			}
		}
		parts = append(parts, f+": "+p.Message)
	}
	return usagef("%s: %s", name, strings.Join(parts, "; "))
}

// agentPolicyOut is what agent-policy set and get print; a staged
// policy's rollout (each ring's state and counts) as the API's
// agent-versions answers it.
func agentPolicyOut(ctx context.Context, s *store.Store, orgID string, p store.AgentPolicy) (map[string]any, error) {
	policy := p.Policy
	if policy == "" {
		policy = "none"
	}
	if p.Policy != store.AgentPolicyStaged {
		return map[string]any{"org": orgID, "policy": policy, "version": p.Version, "agentTarget": p.Target()}, nil
	}
	// The target depends on each endpoint's ring.
	ro, err := s.AgentRolloutOf(ctx, orgID, time.Now())
	if err != nil {
		return nil, err
	}
	return map[string]any{"org": orgID, "policy": policy, "version": p.Version, "rings": p.Rings,
		"delayHours": int(p.Delay / time.Hour), "successRate": p.SuccessRate, "rollout": admin.AgentRolloutOut(ro)}, nil
}
