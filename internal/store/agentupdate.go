package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/valid"
)

// Agent update policies of an organization.
const (
	AgentPolicyLatest = "latest"
	AgentPolicyPinned = "pinned"
	// AgentPolicyStaged rolls Version out ring by ring (AgentRollout).
	AgentPolicyStaged = "staged"
)

// AgentPolicy is what agent version an organization's endpoints are told
// to run; the zero value (no policy) leaves agents as they are.
type AgentPolicy struct {
	Policy  string // "", AgentPolicyLatest, AgentPolicyPinned or AgentPolicyStaged
	Version string // with AgentPolicyPinned and AgentPolicyStaged
	// With AgentPolicyStaged: the groups whose endpoints form the rings in
	// order (an endpoint belongs to the first that holds it; those in none
	// form the last ring), how long a ring runs the version before the next
	// gets it, and the percent of a ring's endpoints that must run it.
	Rings       []string
	Delay       time.Duration
	SuccessRate int
}

// Target is the check-in's agentTarget: "latest", the pinned version, or
// "" (leave agents as they are). A staged policy's target depends on the
// endpoint's ring: AgentRollout.Target.
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
	var delay int64
	err := s.queryRow(ctx, `SELECT policy, version, delay_seconds, success_rate FROM agent_update_policy WHERE org_id = ?`, orgID).
		Scan(&p.Policy, &v, &delay, &p.SuccessRate)
	if errors.Is(err, sql.ErrNoRows) {
		return AgentPolicy{}, nil
	}
	if err != nil {
		return AgentPolicy{}, fmt.Errorf("store: agent update policy: %w", err)
	}
	p.Version = v.String
	p.Delay = time.Duration(delay) * time.Second
	if p.Policy == AgentPolicyStaged {
		rows, err := s.query(ctx, `SELECT group_id FROM agent_update_rings WHERE org_id = ? AND group_id IS NOT NULL ORDER BY position`, orgID)
		p.Rings = []string{}
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var id string
			if err := r.Scan(&id); err != nil {
				return err
			}
			p.Rings = append(p.Rings, id)
			return nil
		}); err != nil {
			return AgentPolicy{}, fmt.Errorf("store: agent update rings: %w", err)
		}
	}
	return p, nil
}

// SetAgentPolicy sets the organization's agent update policy; the zero
// policy removes it. Setting a staged policy (again) starts its rollout
// over: the first ring gets the version now, the others wait. Ring groups
// must be the organization's (the caller checks; the database refuses a
// group that does not exist).
func (s *Store) SetAgentPolicy(ctx context.Context, e *AuditEntry, orgID string, p AgentPolicy, now time.Time) error {
	staged := p.Policy == AgentPolicyStaged
	switch {
	case !staged && (len(p.Rings) > 0 || p.Delay != 0 || p.SuccessRate != 0):
		return errors.New("store: agent update policy: rings, delay and success rate go only with staged")
	case p.Policy == "":
	case p.Policy == AgentPolicyLatest && p.Version == "":
	case p.Policy == AgentPolicyPinned && p.Version != "":
	case staged && p.Version != "" && len(p.Rings) > 0 && p.Delay >= 0 && p.SuccessRate >= 0 && p.SuccessRate <= 100:
	default:
		return errors.New("store: agent update policy: latest goes without a version, pinned with one, staged with a version, rings, a delay and a success rate of 0 to 100")
	}
	e.Summary = map[string]any{"policy": p.Policy, "version": p.Version}
	if staged {
		e.Summary["rings"] = p.Rings
		e.Summary["delayHours"] = p.Delay.Hours()
		e.Summary["successRate"] = p.SuccessRate
	}
	return s.Audited(ctx, e, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `DELETE FROM agent_update_policy WHERE org_id = ?`, orgID); err != nil {
			return fmt.Errorf("store: agent update policy: %w", err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM agent_update_rings WHERE org_id = ?`, orgID); err != nil {
			return fmt.Errorf("store: agent update rings: %w", err)
		}
		if p.Policy == "" {
			return nil
		}
		var version any
		if p.Version != "" {
			version = p.Version
		}
		if _, err := tx.exec(ctx, `INSERT INTO agent_update_policy (org_id, policy, version, updated_at, delay_seconds, success_rate) VALUES (?, ?, ?, ?, ?, ?)`,
			orgID, p.Policy, version, millis(now), int64(p.Delay/time.Second), p.SuccessRate); err != nil {
			return fmt.Errorf("store: agent update policy: %w", err)
		}
		if !staged {
			return nil
		}
		for i, g := range append(slices.Clone(p.Rings), "") {
			var group, started any
			if g != "" {
				group = g
			}
			if i == 0 {
				started = millis(now)
			}
			if _, err := tx.exec(ctx, `INSERT INTO agent_update_rings (org_id, position, group_id, started_at) VALUES (?, ?, ?, ?)`,
				orgID, i, group, started); err != nil {
				if foreignKeyFault(err) {
					// The group was deleted since the caller checked it.
					return valid.One(fmt.Sprintf("rings[%d]", i), "no such endpoint group")
				}
				return fmt.Errorf("store: agent update rings: %w", err)
			}
		}
		return nil
	})
}

// AgentUpdateFailure is a self-update an endpoint's agent reported as
// failed or rolled back (the check-in's updateFailure).
type AgentUpdateFailure struct {
	EndpointID   string    `json:"endpointId"`
	Hostname     string    `json:"hostname"`
	Platform     string    `json:"platform"`
	AgentVersion string    `json:"agentVersion"` // the version it runs now
	Version      string    `json:"version"`      // the release it failed to update to
	Reason       string    `json:"reason"`
	At           time.Time `json:"at"`
}

// RecordAgentUpdateFailure stores the failure on the endpoint (the last one
// replaces the one before) and raises AGENT_UPDATE_FAILED for the
// organization's enabled rules, in one transaction. Each report is an
// event of its own: the agent reports a release once.
func (s *Store) RecordAgentUpdateFailure(ctx context.Context, orgID, endpointID, version, reason string, at, now time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		var hostname string
		err := tx.queryRow(ctx, `SELECT hostname FROM endpoints WHERE id = ? AND org_id = ?`, endpointID, orgID).Scan(&hostname)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // removed meanwhile: nothing to record
		}
		if err != nil {
			return fmt.Errorf("store: agent update failure: %w", err)
		}
		if _, err := tx.exec(ctx, `UPDATE endpoints SET agent_update_failed_version = ?, agent_update_failed_reason = ?, agent_update_failed_at = ? WHERE id = ?`,
			version, reason, millis(at), endpointID); err != nil {
			return fmt.Errorf("store: agent update failure: %w", err)
		}
		rules, err := tx.enabledRules(ctx, orgID, alerts.AgentUpdateFailed)
		if err != nil || len(rules) == 0 {
			return err
		}
		key := "agent-update:" + endpointID + ":" + NewID()
		detail := fmt.Sprintf("The agent of %s did not update itself to %s: %s. It keeps running its current version and does not try that release again; publish a new one. Endpoint id %s.",
			hostname, version, reason, endpointID)
		for _, r := range rules {
			if _, err := tx.raiseAlert(ctx, r, NewAlertEvent{Key: key, Event: alerts.AgentUpdateFailed, Severity: alerts.Warning,
				Title: "Agent update of " + hostname + " failed", Detail: detail, EndpointID: endpointID}, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// AgentVersionCount is how many of an organization's endpoints of one
// platform and architecture run one agent version.
type AgentVersionCount struct {
	Platform     string `json:"platform"`
	Arch         string `json:"arch"`
	AgentVersion string `json:"agentVersion"`
	Endpoints    int    `json:"endpoints"`
}

// maxAgentUpdateFailures bounds AgentFleet.Failures.
const maxAgentUpdateFailures = 50

// AgentFleet is the agent versions of an organization's endpoints and
// their most recent update failures (newest first, at most 50).
type AgentFleet struct {
	Versions []AgentVersionCount
	Failures []AgentUpdateFailure
}

// AgentFleetOf answers the organization's agent versions and failures.
func (s *Store) AgentFleetOf(ctx context.Context, orgID string) (AgentFleet, error) {
	f := AgentFleet{Versions: []AgentVersionCount{}, Failures: []AgentUpdateFailure{}}
	rows, err := s.query(ctx, `SELECT platform, COALESCE(arch, ''), COALESCE(agent_version, ''), COUNT(*) FROM endpoints WHERE org_id = ?
		GROUP BY platform, COALESCE(arch, ''), COALESCE(agent_version, '') ORDER BY 1, 2, 3`, orgID)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var c AgentVersionCount
		if err := r.Scan(&c.Platform, &c.Arch, &c.AgentVersion, &c.Endpoints); err != nil {
			return err
		}
		f.Versions = append(f.Versions, c)
		return nil
	}); err != nil {
		return f, fmt.Errorf("store: agent versions: %w", err)
	}
	rows, err = s.query(ctx, `SELECT id, hostname, platform, COALESCE(agent_version, ''), agent_update_failed_version, COALESCE(agent_update_failed_reason, ''), agent_update_failed_at
		FROM endpoints WHERE org_id = ? AND agent_update_failed_at IS NOT NULL ORDER BY agent_update_failed_at DESC, id LIMIT ?`, orgID, maxAgentUpdateFailures)
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var x AgentUpdateFailure
		var at int64
		if err := row.Scan(&x.EndpointID, &x.Hostname, &x.Platform, &x.AgentVersion, &x.Version, &x.Reason, &at); err != nil {
			return err
		}
		x.At = fromMillis(at)
		f.Failures = append(f.Failures, x)
		return nil
	}); err != nil {
		return f, fmt.Errorf("store: agent update failures: %w", err)
	}
	return f, nil
}

// RaiseAgentReleaseChanged raises AGENT_UPDATE_FAILED for the enabled
// rules of every organization: the agent binary published for platform
// changed on disk after its release (version) was signed, so no endpoint
// of any organization gets that release until it is published again. The
// condition key names the changed file (its SHA-256): replicas and
// requests that find the same file raise one event per rule.
func (s *Store) RaiseAgentReleaseChanged(ctx context.Context, platform, version, releaseSHA, fileSHA string, now time.Time) (int, error) {
	raised := 0
	err := s.InTx(ctx, func(tx *Tx) error {
		rows, err := tx.query(ctx, `SELECT `+alertRuleColumns+` FROM alert_rules WHERE trigger_kind = ? AND enabled = TRUE ORDER BY org_id, id`, alerts.AgentUpdateFailed)
		rules, err := scanRows(rows, err, scanAlertRule)
		if err != nil {
			return fmt.Errorf("store: alert rules: %w", err)
		}
		detail := fmt.Sprintf("The agent binary published for %s changed on the server's disk after its release %s was signed "+
			"(the file's SHA-256 is %s, the release's %s). The server serves neither the release nor the file until the agent is "+
			"published again (patchd admin agent publish --version …); no endpoint updates meanwhile. Find out who changed the file.",
			platform, version, fileSHA, releaseSHA)
		for _, r := range rules {
			ok, err := tx.raiseAlert(ctx, r, NewAlertEvent{Key: "agent-release-changed:" + platform + ":" + fileSHA, Event: alerts.AgentUpdateFailed,
				Severity: alerts.Critical, Title: "Published agent for " + platform + " changed on disk", Detail: detail}, now)
			if err != nil {
				return err
			}
			if ok {
				raised++
			}
		}
		return nil
	})
	return raised, err
}
