package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// TestStagedPolicyGroupDeletedMeanwhile: a staged policy naming a ring
// group that no longer exists (deleted after the caller checked it) is a
// field error on that ring, not a failure, and changes nothing.
func TestStagedPolicyGroupDeletedMeanwhile(t *testing.T) {
	t.Parallel()
	s, o := acmeStore(t)
	ctx := context.Background()
	now := time.Now()
	if err := s.SetAgentPolicy(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "agent_policy.set"}, o.ID,
		store.AgentPolicy{Policy: store.AgentPolicyLatest}, now); err != nil {
		t.Fatal(err)
	}
	err := s.SetAgentPolicy(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "agent_policy.set"}, o.ID,
		store.AgentPolicy{Policy: store.AgentPolicyStaged, Version: "2.0.0", Rings: []string{"no-such-group"}, Delay: time.Hour, SuccessRate: 90}, now)
	var ve *valid.Error
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Field != "rings[0]" {
		t.Fatalf("a deleted ring group: %v", err)
	}
	if p, err := s.AgentPolicyOf(ctx, o.ID); err != nil || p.Policy != store.AgentPolicyLatest {
		t.Errorf("the policy changed: %+v %v", p, err)
	}
}
