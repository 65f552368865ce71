package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/perm"
)

// Creating organizations (docs/identity.md, "Creating organizations"): a
// person granted create_orgs by whoever runs the server creates an
// organization and becomes its Administrator, optionally copying the
// settings of a template organization it administers.

// ErrNoCreateOrgs refuses a person without the create-organizations
// permission (or disabled).
var ErrNoCreateOrgs = errors.New("creating organizations is an instance-level permission the person does not hold (patchd admin user create-orgs grant)")

// ErrTemplate answers a template organization that does not exist or that
// the person does not administer: the two are not told apart, so that no
// one learns of an organization it does not belong to.
var ErrTemplate = fmt.Errorf("store: no organization you administer by that id or name: %w", dberr.ErrNotFound)

// NewOrg is an organization to create.
type NewOrg struct {
	Name     string
	TimeZone string
	// CreatorID is the person who becomes the new organization's
	// Administrator ("": nobody, the command line without --admin-email).
	CreatorID string
	// Checked: the creator must hold create_orgs and administer the
	// template (the console and API); false for the command line, whose
	// operator may do anything.
	Checked bool
	// TemplateRef names the template organization (id or name; "": none).
	TemplateRef string
	// Entry is the Audit Trail entry (org.create) of the new organization;
	// From, when not nil, is recorded in the organization the request came
	// from; Instance in the instance's Audit Trail.
	Entry    *AuditEntry
	From     *AuditEntry
	Instance *InstanceEvent
}

// SetCreateOrgs grants (on) or revokes the create-organizations permission
// of a person and records ie in the instance's Audit Trail; a person that
// has the asked state already answers changed=false (nothing recorded).
func (s *Store) SetCreateOrgs(ctx context.Context, ie *InstanceEvent, userID string, on bool) (changed bool, err error) {
	return s.setUserFlag(ctx, ie, userID, "create_orgs", "create organizations", on, "TRUE")
}

// ListOrgCreators lists the people holding the create-organizations
// permission (as a member of the organization their account was made in).
func (s *Store) ListOrgCreators(ctx context.Context) ([]ConsoleUser, error) {
	return s.listConsoleUsers(ctx, "list organization creators", `u.create_orgs = TRUE AND m.org_id = u.org_id`)
}

// createOrg creates the organization with its built-in roles and rows.
func (tx *Tx) createOrg(ctx context.Context, o Org) error {
	if _, err := tx.exec(ctx, `INSERT INTO orgs (id, name, timezone, created_at) VALUES (?, ?, ?, ?)`,
		o.ID, o.Name, o.TimeZone, millis(o.CreatedAt)); err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("store: organization %q exists: %w", o.Name, dberr.ErrConflict)
		}
		return fmt.Errorf("store: create organization: %w", err)
	}
	for _, r := range []struct {
		name  string
		perms perm.Set
	}{{RoleAdministrator, perm.All}, {RoleReadOnly, perm.ReadOnly}} {
		if _, err := tx.insertRole(ctx, o.ID, r.name, r.perms, true); err != nil {
			return err
		}
	}
	return tx.afterCreateOrg(ctx, o)
}

// CreateOrgFor creates an organization as in: the creator becomes its
// Administrator, and the template's settings are copied. A checked
// creator without create_orgs answers ErrNoCreateOrgs, a template it does
// not administer ErrTemplate, a taken name dberr.ErrConflict; nothing is
// created then.
func (s *Store) CreateOrgFor(ctx context.Context, in NewOrg) (Org, *apiv1.OrganizationCopy, error) {
	now := time.Now().UTC()
	o := Org{ID: NewID(), Name: in.Name, TimeZone: in.TimeZone, CreatedAt: now}
	var copied *apiv1.OrganizationCopy
	err := s.InTx(ctx, func(tx *Tx) error {
		var email string
		if in.CreatorID != "" {
			q := `SELECT email, create_orgs, disabled FROM users WHERE id = ?`
			if tx.s.engine == Postgres {
				q += ` FOR UPDATE` // a revocation committing meanwhile
			}
			var may, disabled bool
			err := tx.queryRow(ctx, q, in.CreatorID).Scan(&email, &may, &disabled)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
			}
			if err != nil {
				return fmt.Errorf("store: read user: %w", err)
			}
			if in.Checked && (!may || disabled) {
				return fmt.Errorf("store: %w", ErrNoCreateOrgs)
			}
		}
		var tmpl Org
		if in.TemplateRef != "" {
			var err error
			if tmpl, err = tx.templateOrg(ctx, in); err != nil {
				return err
			}
		}
		if err := tx.createOrg(ctx, o); err != nil {
			return err
		}
		if in.CreatorID != "" {
			var adminID string
			if err := tx.queryRow(ctx, `SELECT id FROM roles WHERE org_id = ? AND builtin = TRUE AND name = ?`, o.ID, RoleAdministrator).Scan(&adminID); err != nil {
				return fmt.Errorf("store: read Administrator role: %w", err)
			}
			if err := tx.insertMembership(ctx, in.CreatorID, o.ID, adminID, now); err != nil {
				return err
			}
		}
		if tmpl.ID != "" {
			actor := ""
			if in.Entry != nil {
				actor = in.Entry.Actor
			}
			c, err := tx.copyTemplate(ctx, tmpl, o, actor, now)
			if err != nil {
				return err
			}
			copied = c
		}
		if e := in.Entry; e != nil {
			e.OrgID, e.TargetType, e.TargetID = o.ID, "org", o.ID
			e.Summary = orgSummary(e.Summary, o, email, copied)
			if err := tx.insertAudit(ctx, e); err != nil {
				return err
			}
		}
		if e := in.From; e != nil {
			e.TargetType, e.TargetID = "org", o.ID
			e.Summary = orgSummary(e.Summary, o, email, copied)
			if err := tx.insertAudit(ctx, e); err != nil {
				return err
			}
		}
		if ie := in.Instance; ie != nil {
			ie.TargetType, ie.TargetID = "org", o.ID
			ie.Summary = orgSummary(ie.Summary, o, email, copied)
			return tx.insertInstanceEvent(ctx, ie)
		}
		return nil
	})
	if err != nil {
		return Org{}, nil, err
	}
	return o, copied, nil
}

func orgSummary(m map[string]any, o Org, email string, c *apiv1.OrganizationCopy) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m["name"], m["orgId"], m["timezone"] = o.Name, o.ID, o.TimeZone
	if email != "" {
		m["administrator"] = email
	}
	if c != nil {
		m["template"], m["templateId"] = c.Template, c.TemplateID
		m["copied"] = fmt.Sprintf("%d approval policy rules, %d groups, %d scripts, %d automations, %d alert rules",
			c.ApprovalPolicies, c.Groups, c.Scripts, c.Automations, c.AlertRules)
	}
	return m
}

// templateOrg finds the template: for a checked creator only an
// organization it is a member of with a role holding every permission.
func (tx *Tx) templateOrg(ctx context.Context, in NewOrg) (Org, error) {
	var o Org
	var created int64
	var err error
	if in.Checked {
		var permText string
		err = tx.queryRow(ctx, `SELECT o.id, o.name, o.timezone, o.created_at, r.permissions FROM orgs o
			JOIN memberships m ON m.org_id = o.id AND m.user_id = ? JOIN roles r ON r.id = m.role_id
			WHERE o.id = ? OR o.name = ? ORDER BY (o.id = ?) DESC LIMIT 1`, in.CreatorID, in.TemplateRef, in.TemplateRef, in.TemplateRef).
			Scan(&o.ID, &o.Name, &o.TimeZone, &created, &permText)
		if err == nil {
			p, perr := perm.Parse(permText)
			if perr != nil || p&perm.All != perm.All {
				return Org{}, ErrTemplate
			}
		}
	} else {
		err = tx.queryRow(ctx, `SELECT id, name, timezone, created_at FROM orgs WHERE id = ? OR name = ? ORDER BY (id = ?) DESC LIMIT 1`,
			in.TemplateRef, in.TemplateRef, in.TemplateRef).Scan(&o.ID, &o.Name, &o.TimeZone, &created)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return Org{}, ErrTemplate
	}
	if err != nil {
		return Org{}, fmt.Errorf("store: read template organization: %w", err)
	}
	o.CreatedAt = fromMillis(created)
	return o, nil
}

// copyTemplate copies into o the template's approval policy and settings,
// remediation and compliance policies, groups (criteria and alert
// settings, never members), the scripts its automations run, its
// automations (new ids, groups and scripts remapped to the copies, run
// state reset) and its alert rules (without webhook secrets).
func (tx *Tx) copyTemplate(ctx context.Context, t, o Org, actor string, now time.Time) (*apiv1.OrganizationCopy, error) {
	c := &apiv1.OrganizationCopy{TemplateID: t.ID, Template: t.Name, SkippedAutomations: []string{}, DisabledAlertRules: []string{}}
	// Approval policy rows and settings.
	type policy struct {
		severity, source, action string
		delay                    int
		created                  int64
	}
	var policies []policy
	rows, err := tx.query(ctx, `SELECT severity, source, delay_days, action, created_at FROM approval_policies WHERE org_id = ? ORDER BY created_at, id`, t.ID)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var p policy
		if err := r.Scan(&p.severity, &p.source, &p.delay, &p.action, &p.created); err != nil {
			return err
		}
		policies = append(policies, p)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: read template approval policy: %w", err)
	}
	for _, p := range policies {
		if _, err := tx.exec(ctx, `INSERT INTO approval_policies (id, org_id, severity, source, delay_days, action, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			NewID(), o.ID, p.severity, p.source, p.delay, p.action, millis(now)); err != nil {
			return nil, fmt.Errorf("store: copy approval policy: %w", err)
		}
	}
	c.ApprovalPolicies = len(policies)
	for _, one := range []struct {
		flag *bool
		sql  string
	}{
		{&c.ApprovalSettings, `INSERT INTO approval_settings (org_id, decline_older) SELECT ?, decline_older FROM approval_settings WHERE org_id = ?`},
		{&c.RemediationPolicy, `INSERT INTO vuln_policies (org_id, critical_days, high_days, medium_days, low_days)
			SELECT ?, critical_days, high_days, medium_days, low_days FROM vuln_policies WHERE org_id = ?`},
		{&c.CompliancePolicy, `INSERT INTO compliance_policies (org_id, critical_days, important_days, moderate_days, low_days, unspecified_days)
			SELECT ?, critical_days, important_days, moderate_days, low_days, unspecified_days FROM compliance_policies WHERE org_id = ?`},
	} {
		res, err := tx.exec(ctx, one.sql, o.ID, t.ID)
		if err != nil {
			return nil, fmt.Errorf("store: copy policy: %w", err)
		}
		n, _ := res.RowsAffected()
		*one.flag = n > 0
	}

	// Groups: the custom ones with their criteria and alert settings; the
	// built-in ones exist already and take the template's alert settings.
	if err := tx.lockGroups(ctx, o.ID); err != nil {
		return nil, err
	}
	groupIDs := map[string]string{}
	rows, err = tx.query(ctx, `SELECT `+groupColumns+` FROM endpoint_groups WHERE org_id = ? ORDER BY created_at, id`, t.ID)
	var tgroups []Group
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		g, err := scanGroup(r)
		tgroups = append(tgroups, g)
		return err
	}); err != nil {
		return nil, fmt.Errorf("store: read template groups: %w", err)
	}
	for _, g := range tgroups {
		if g.Builtin != "" {
			var id string
			if err := tx.queryRow(ctx, `SELECT id FROM endpoint_groups WHERE org_id = ? AND builtin = ?`, o.ID, g.Builtin).Scan(&id); err != nil {
				return nil, fmt.Errorf("store: read built-in group: %w", err)
			}
			if _, err := tx.exec(ctx, `UPDATE endpoint_groups SET offline_alert_minutes = ?, online_alert = ? WHERE id = ?`,
				intOrNil(g.OfflineAlertMinutes), g.OnlineAlert, id); err != nil {
				return nil, fmt.Errorf("store: copy built-in group: %w", err)
			}
			groupIDs[g.ID] = id
			continue
		}
		// The criteria as stored, never the members.
		id := NewID()
		if _, err := tx.exec(ctx, `INSERT INTO endpoint_groups (id, org_id, name, description, kind, is_system, match_all, rules, exclude_rules,
			offline_alert_minutes, online_alert, members, created_at, updated_at)
			SELECT ?, ?, name, description, kind, is_system, match_all, rules, exclude_rules, offline_alert_minutes, online_alert, 0, ?, ?
			FROM endpoint_groups WHERE id = ? AND org_id = ?`, id, o.ID, millis(now), millis(now), g.ID, t.ID); err != nil {
			return nil, fmt.Errorf("store: copy group %q: %w", g.Name, err)
		}
		groupIDs[g.ID] = id
		c.Groups++
	}

	// Automations, and the stored scripts they run.
	rows, err = tx.query(ctx, `SELECT `+automationColumns+` FROM automations WHERE org_id = ? ORDER BY created_at, id`, t.ID)
	var autos []Automation
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		a, err := scanAutomation(r)
		autos = append(autos, a)
		return err
	}); err != nil {
		return nil, fmt.Errorf("store: read template automations: %w", err)
	}
	scriptIDs := map[string]string{}
	loc := Location(o.TimeZone)
	for _, a := range autos {
		if a.TargetMode == TargetEndpoints {
			c.SkippedAutomations = append(c.SkippedAutomations, a.Name)
			continue
		}
		payload, err := tx.remapScript(ctx, a.Payload, t.ID, o.ID, scriptIDs, now)
		if err != nil {
			return nil, err
		}
		n := Automation{OrgID: o.ID, Name: a.Name, Description: a.Description, ActionType: a.ActionType, Payload: payload, Kind: a.Kind,
			ScheduleKind: a.ScheduleKind, Freq: a.Freq, AtTime: a.AtTime, Weekday: a.Weekday, MonthDay: a.MonthDay, OffsetDays: a.OffsetDays,
			WindowMinutes: a.WindowMinutes, RunAt: a.RunAt, Enabled: a.Enabled, TargetMode: a.TargetMode, StartDate: a.StartDate,
			MinSuccessRate: a.MinSuccessRate, CreatedBy: actor}
		if a.GroupID != "" {
			if n.GroupID = groupIDs[a.GroupID]; n.GroupID == "" {
				c.SkippedAutomations = append(c.SkippedAutomations, a.Name) // its group is gone
				continue
			}
		}
		for _, ring := range a.Rings {
			ring.GroupID = groupIDs[ring.GroupID]
			n.Rings = append(n.Rings, ring)
		}
		// The schedule goes on in the new organization's time zone; a
		// one-time run already past is not run again there.
		if n.Enabled && (n.ScheduleKind != "ONCE" || (n.RunAt != nil && n.RunAt.After(now))) {
			n.NextRunAt = n.FirstRun(now, loc)
		}
		if err := tx.CreateAutomation(ctx, &n, now); err != nil {
			return nil, err
		}
		c.Automations++
	}
	c.Scripts = len(scriptIDs)

	// Alert rules: never the webhook secret (it signs the template's
	// deliveries); a rule that had one is copied disabled.
	type rule struct {
		name, trigger       string
		threshold, retry    int
		enabled, secret     bool
		email, hook, report sql.NullString
	}
	var rules []rule
	rows, err = tx.query(ctx, `SELECT name, trigger_kind, threshold, enabled, email_to, webhook_url, COALESCE(webhook_secret, '') <> '', report_key,
		webhook_retry_minutes FROM alert_rules WHERE org_id = ? ORDER BY created_at, id`, t.ID)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var x rule
		if err := r.Scan(&x.name, &x.trigger, &x.threshold, &x.enabled, &x.email, &x.hook, &x.secret, &x.report, &x.retry); err != nil {
			return err
		}
		rules = append(rules, x)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: read template alert rules: %w", err)
	}
	for _, x := range rules {
		enabled := x.enabled
		if x.secret {
			enabled = false
			c.DisabledAlertRules = append(c.DisabledAlertRules, x.name)
		}
		if _, err := tx.exec(ctx, `INSERT INTO alert_rules (id, org_id, name, trigger_kind, threshold, enabled, email_to, webhook_url, webhook_secret,
			report_key, created_by, created_at, updated_at, webhook_retry_minutes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?)`,
			NewID(), o.ID, x.name, x.trigger, x.threshold, enabled, x.email, x.hook, x.report, actor, millis(now), millis(now), x.retry); err != nil {
			return nil, fmt.Errorf("store: copy alert rule %q: %w", x.name, err)
		}
		c.AlertRules++
	}
	return c, nil
}

// remapScript answers an automation's payload with its stored script
// (payload.scriptId) replaced by the new organization's copy, made on
// first use (scriptIDs maps the template's ids to the copies).
func (tx *Tx) remapScript(ctx context.Context, payload json.RawMessage, fromOrg, toOrg string, scriptIDs map[string]string, now time.Time) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(payload, &m) != nil {
		return payload, nil
	}
	var id string
	if raw, ok := m["scriptId"]; !ok || json.Unmarshal(raw, &id) != nil || id == "" {
		return payload, nil
	}
	newID, ok := scriptIDs[id]
	if !ok {
		newID = NewID()
		res, err := tx.exec(ctx, `INSERT INTO scripts (id, org_id, name, language, code, parameters, reboot_exit_codes, timeout_seconds, created_at, updated_at)
			SELECT ?, ?, name, language, code, parameters, reboot_exit_codes, timeout_seconds, ?, ? FROM scripts WHERE org_id = ? AND id = ?`,
			newID, toOrg, millis(now), millis(now), fromOrg, id)
		if err != nil {
			return nil, fmt.Errorf("store: copy script: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			newID = "" // the script is gone: the copy fails as the template's would
		} else {
			scriptIDs[id] = newID
		}
	}
	raw, _ := json.Marshal(newID)
	m["scriptId"] = raw
	return json.Marshal(m)
}

// MemberByEmail finds the member of the organization with the e-mail
// address (dberr.ErrNotFound: none).
func (s *Store) MemberByEmail(ctx context.Context, orgID, email string) (ConsoleUser, error) {
	users, err := s.listConsoleUsers(ctx, "member by e-mail", `m.org_id = ? AND u.email = ?`, orgID, email)
	if err != nil {
		return ConsoleUser{}, err
	}
	if len(users) == 0 {
		return ConsoleUser{}, fmt.Errorf("store: member: %w", dberr.ErrNotFound)
	}
	return users[0], nil
}

// CredentialPerson finds the person an API credential acts for: the member
// of the credential's organization who created it (the credential's
// created_by is user:<e-mail>). dberr.ErrNotFound when it was made by the
// command line or the person has left the organization.
func (s *Store) CredentialPerson(ctx context.Context, orgID, credentialID string) (ConsoleUser, error) {
	var by sql.NullString
	err := s.queryRow(ctx, `SELECT created_by FROM credentials WHERE org_id = ? AND id = ?`, orgID, credentialID).Scan(&by)
	if errors.Is(err, sql.ErrNoRows) {
		return ConsoleUser{}, fmt.Errorf("store: credential: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return ConsoleUser{}, fmt.Errorf("store: read credential: %w", err)
	}
	email, ok := strings.CutPrefix(by.String, "user:")
	if !ok || email == "" {
		return ConsoleUser{}, fmt.Errorf("store: the credential was not made by a person: %w", dberr.ErrNotFound)
	}
	return s.MemberByEmail(ctx, orgID, email)
}
