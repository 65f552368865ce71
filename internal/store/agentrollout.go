package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/patchd/patchd/internal/dberr"
	"time"
)

// States of a ring of a staged agent update.
const (
	RingWaiting    = "waiting"     // a ring before it has not passed its gate
	RingRollingOut = "rolling_out" // gets the version; its gate is not passed yet
	RingDone       = "done"        // passed its gate: the next ring gets the version
	RingHalted     = "halted"      // too many failures to reach the success rate: the rollout stops
)

// AgentRing is one ring of a staged agent update and how far it is.
type AgentRing struct {
	Position  int
	GroupID   string // "" for the last ring, the endpoints in none of the groups
	GroupName string
	State     string
	StartedAt time.Time // zero while waiting
	DoneAt    time.Time
	HaltedAt  time.Time
	Endpoints int // the ring's endpoints
	Updated   int // of them, those that run the version
	Failed    int // of them, those that reported an update failure of the version and do not run it
}

// AgentRollout is the state of an organization's staged agent update.
type AgentRollout struct {
	Policy AgentPolicy
	Rings  []AgentRing
	// ring is each endpoint's index in Rings; an endpoint missing (enrolled
	// since) is in the last ring.
	ring map[string]int
}

// Target is the agentTarget of an endpoint: the version while its ring
// rolls out or is done, "" while it waits or after the rollout halted.
func (r *AgentRollout) Target(endpointID string) string {
	if r == nil || len(r.Rings) == 0 {
		return ""
	}
	i, ok := r.ring[endpointID]
	if !ok {
		i = len(r.Rings) - 1
	}
	if st := r.Rings[i].State; st == RingRollingOut || st == RingDone {
		return r.Policy.Version
	}
	return ""
}

// AgentRolloutOf answers the state of the organization's staged agent
// update (nil without a staged policy) and moves it on as of now: a ring
// whose gate passed is done and the next starts, a ring whose failures
// make its success rate unreachable halts the rollout. The moves are
// written (conditionally: replicas that evaluate at once agree), so a ring
// once done stays done when endpoints join it later.
func (s *Store) AgentRolloutOf(ctx context.Context, orgID string, now time.Time) (*AgentRollout, error) {
	p, err := s.AgentPolicyOf(ctx, orgID)
	if err != nil || p.Policy != AgentPolicyStaged {
		return nil, err
	}
	r := &AgentRollout{Policy: p, ring: map[string]int{}}
	rows, err := s.query(ctx, `SELECT r.position, COALESCE(r.group_id, ''), COALESCE(g.name, ''), r.started_at, r.done_at, r.halted_at
		FROM agent_update_rings r LEFT JOIN endpoint_groups g ON g.id = r.group_id WHERE r.org_id = ? ORDER BY r.position`, orgID)
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var g AgentRing
		var started, done, halted sql.NullInt64
		if err := row.Scan(&g.Position, &g.GroupID, &g.GroupName, &started, &done, &halted); err != nil {
			return err
		}
		if started.Valid {
			g.StartedAt = fromMillis(started.Int64)
		}
		if done.Valid {
			g.DoneAt = fromMillis(done.Int64)
		}
		if halted.Valid {
			g.HaltedAt = fromMillis(halted.Int64)
		}
		r.Rings = append(r.Rings, g)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: agent rollout: %w", err)
	}
	if len(r.Rings) == 0 {
		return r, nil
	}
	last := len(r.Rings) - 1
	for i := range r.Rings[:last] {
		ids, err := s.GroupMemberIDs(ctx, orgID, r.Rings[i].GroupID)
		if errors.Is(err, dberr.ErrNotFound) {
			continue // deleted meanwhile: its ring goes with it
		}
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if _, taken := r.ring[id]; !taken {
				r.ring[id] = i
			}
		}
	}
	rows, err = s.query(ctx, `SELECT id, COALESCE(agent_version, ''), COALESCE(agent_update_failed_version, '') FROM endpoints WHERE org_id = ?`, orgID)
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var id, version, failed string
		if err := row.Scan(&id, &version, &failed); err != nil {
			return err
		}
		i, ok := r.ring[id]
		if !ok {
			i = last
			r.ring[id] = last
		}
		g := &r.Rings[i]
		g.Endpoints++
		switch p.Version {
		case version:
			g.Updated++
		case failed:
			g.Failed++
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: agent rollout: %w", err)
	}
	return r, s.advanceRollout(ctx, orgID, r, now)
}

// advanceRollout sets each ring's State, writing the moves of this
// evaluation.
func (s *Store) advanceRollout(ctx context.Context, orgID string, r *AgentRollout, now time.Time) error {
	now = fromMillis(millis(now)) // as stored
	set := func(column string, position int) error {
		_, err := s.exec(ctx, `UPDATE agent_update_rings SET `+column+` = ? WHERE org_id = ? AND position = ? AND `+column+` IS NULL`,
			millis(now), orgID, position)
		if err != nil {
			return fmt.Errorf("store: agent rollout: %w", err)
		}
		return nil
	}
	rate := r.Policy.SuccessRate
	previousDone := true
	for i := range r.Rings {
		g := &r.Rings[i]
		switch {
		case !g.HaltedAt.IsZero():
			g.State = RingHalted
		case g.StartedAt.IsZero() && !previousDone:
			g.State = RingWaiting
		default:
			if g.StartedAt.IsZero() {
				if err := set("started_at", g.Position); err != nil {
					return err
				}
				g.StartedAt = now
			}
			switch {
			case !g.DoneAt.IsZero():
				g.State = RingDone
			case g.Failed*100 > (100-rate)*g.Endpoints:
				if err := set("halted_at", g.Position); err != nil {
					return err
				}
				g.HaltedAt, g.State = now, RingHalted
			case !now.Before(g.StartedAt.Add(r.Policy.Delay)) && g.Updated*100 >= rate*g.Endpoints:
				if err := set("done_at", g.Position); err != nil {
					return err
				}
				g.DoneAt, g.State = now, RingDone
			default:
				g.State = RingRollingOut
			}
		}
		previousDone = g.State == RingDone
	}
	return nil
}
