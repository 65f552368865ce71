package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/updates"
)

// PolicyRequest is a patchd admin approval-policy command.
type PolicyRequest struct {
	Verb      string // set, list or delete
	Org       string
	Severity  string
	Source    string
	DelayDays int
	// DeclineOlder is "", "true" or "false".
	DeclineOlder string
}

// ApprovalPolicy runs an approval-policy command and answers the
// organization's policy as it stands afterwards.
func ApprovalPolicy(ctx context.Context, s *store.Store, actor string, r PolicyRequest) (store.ApprovalPolicy, error) {
	o, err := s.FindOrg(ctx, strings.TrimSpace(r.Org))
	if err != nil {
		return store.ApprovalPolicy{}, err
	}
	e := &store.AuditEntry{OrgID: o.ID, Actor: actor, TargetType: "approval_policy", TargetID: o.ID}
	switch r.Verb {
	case "list":
		return s.GetApprovalPolicy(ctx, o.ID)
	case "set":
		var c store.PolicyChange
		if r.Severity != "" || r.Source != "" {
			rule, err := updates.CheckPolicyRule(updates.PolicyRule{Severity: r.Severity, Source: r.Source, DelayDays: r.DelayDays})
			if err != nil {
				return store.ApprovalPolicy{}, fmt.Errorf("--severity, --source, --delay-days: %w", err)
			}
			c.Rule = &rule
		}
		if r.DeclineOlder != "" {
			on, err := strconv.ParseBool(r.DeclineOlder)
			if err != nil {
				return store.ApprovalPolicy{}, errors.New("--decline-older must be true or false")
			}
			c.DeclineOlder = &on
		}
		if c.Rule == nil && c.DeclineOlder == nil {
			return store.ApprovalPolicy{}, errors.New("give --severity and --source (with --delay-days), or --decline-older")
		}
		e.Action = "approval_policy.set"
		return s.SetApprovalPolicy(ctx, e, o.ID, c)
	case "delete":
		rule, err := updates.CheckPolicyRule(updates.PolicyRule{Severity: r.Severity, Source: r.Source})
		if err != nil {
			return store.ApprovalPolicy{}, fmt.Errorf("--severity, --source: %w", err)
		}
		e.Action = "approval_policy.delete"
		return s.DeleteApprovalPolicyRule(ctx, e, o.ID, rule.Severity, rule.Source)
	}
	return store.ApprovalPolicy{}, fmt.Errorf("unknown approval-policy verb %q", r.Verb)
}
