package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Agent update policies of an organization.
const (
	AgentPolicyLatest = "latest"
	AgentPolicyPinned = "pinned"
)

// AgentPolicy is what agent version an organization's endpoints are told
// to run; the zero value (no policy) leaves agents as they are.
type AgentPolicy struct {
	Policy  string // "", AgentPolicyLatest or AgentPolicyPinned
	Version string // with AgentPolicyPinned
}

// Target is the check-in's agentTarget: "latest", the pinned version, or
// "" (leave agents as they are).
func (p AgentPolicy) Target() string {
	switch p.Policy {
	case AgentPolicyLatest:
		return "latest"
	case AgentPolicyPinned:
		return p.Version
	}
	return ""
}

// AgentPolicyOf answers the organization's agent update policy.
func (s *Store) AgentPolicyOf(ctx context.Context, orgID string) (AgentPolicy, error) {
	var p AgentPolicy
	var v sql.NullString
	err := s.queryRow(ctx, `SELECT policy, version FROM agent_update_policy WHERE org_id = ?`, orgID).Scan(&p.Policy, &v)
	if errors.Is(err, sql.ErrNoRows) {
		return AgentPolicy{}, nil
	}
	if err != nil {
		return AgentPolicy{}, fmt.Errorf("store: agent update policy: %w", err)
	}
	p.Version = v.String
	return p, nil
}

// SetAgentPolicy sets the organization's agent update policy; the zero
// policy removes it.
func (s *Store) SetAgentPolicy(ctx context.Context, e *AuditEntry, orgID string, p AgentPolicy, now time.Time) error {
	switch {
	case p.Policy == "":
	case p.Policy == AgentPolicyLatest && p.Version == "":
	case p.Policy == AgentPolicyPinned && p.Version != "":
	default:
		return errors.New("store: agent update policy: latest goes without a version, pinned with one")
	}
	e.Summary = map[string]any{"policy": p.Policy, "version": p.Version}
	return s.Audited(ctx, e, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `DELETE FROM agent_update_policy WHERE org_id = ?`, orgID); err != nil {
			return fmt.Errorf("store: agent update policy: %w", err)
		}
		if p.Policy == "" {
			return nil
		}
		var version any
		if p.Version != "" {
			version = p.Version
		}
		if _, err := tx.exec(ctx, `INSERT INTO agent_update_policy (org_id, policy, version, updated_at) VALUES (?, ?, ?, ?)`,
			orgID, p.Policy, version, millis(now)); err != nil {
			return fmt.Errorf("store: agent update policy: %w", err)
		}
		return nil
	})
}
