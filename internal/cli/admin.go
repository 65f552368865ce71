package cli

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
)

// runAdmin dispatches patchd admin OBJECT VERB [flags].
func runAdmin(ctx context.Context, args []string, stdio IO) error {
	if len(args) > 0 && args[0] == "backup" { // an object without a verb
		return runBackup(ctx, args[1:], stdio)
	}
	if len(args) < 2 {
		return usagef("admin needs an object and a verb, for example: patchd admin org create --name Acme")
	}
	object, verb, rest := args[0], args[1], args[2:]
	if object == "user" && verb == "operator" {
		if len(rest) == 0 {
			return usagef("patchd admin user operator needs a verb: grant, revoke, list, sso-allow or sso-deny")
		}
		verb, rest = "operator "+rest[0], rest[1:]
	}
	if object == "agent" {
		return runAgentAdmin(ctx, verb, rest, stdio)
	}
	name := "patchd admin " + object + " " + verb
	var (
		org, nameFlag, tz, role, perms, clientID, email, expires, id, actor, action string
		limit                                                                       int
		passwordStdin, operator, instance                                           bool
	)
	str := func(fs *flag.FlagSet, p *string, flagName, help string) { fs.StringVar(p, flagName, "", help) }
	var define func(fs *flag.FlagSet)
	var do func(s *store.Store) (any, error)

	switch object + " " + verb {
	case "org create":
		define = func(fs *flag.FlagSet) {
			str(fs, &nameFlag, "name", "organization name")
			fs.StringVar(&tz, "timezone", "UTC", "IANA time zone for schedules")
		}
		do = func(s *store.Store) (any, error) { return admin.CreateOrg(ctx, s, nameFlag, tz) }
	case "org list":
		do = func(s *store.Store) (any, error) {
			orgs, err := s.ListOrgs(ctx)
			return map[string]any{"items": nonNil(orgs), "total": len(orgs)}, err
		}
	case "role create":
		define = func(fs *flag.FlagSet) {
			str(fs, &org, "org", "organization id or name")
			str(fs, &nameFlag, "name", "role name")
			str(fs, &perms, "permissions", "comma-separated permissions")
		}
		do = func(s *store.Store) (any, error) { return admin.CreateRole(ctx, s, org, nameFlag, perms) }
	case "credential create":
		define = func(fs *flag.FlagSet) {
			str(fs, &org, "org", "organization id or name")
			str(fs, &nameFlag, "name", "credential name (audited as api:<name>)")
			str(fs, &role, "role", "role id or name")
		}
		do = func(s *store.Store) (any, error) {
			return admin.CreateCredential(ctx, s, admin.ActorCLI, org, nameFlag, role)
		}
	case "credential list":
		define = func(fs *flag.FlagSet) { str(fs, &org, "org", "organization id or name") }
		do = func(s *store.Store) (any, error) {
			o, err := s.FindOrg(ctx, org)
			if err != nil {
				return nil, err
			}
			list, err := s.ListCredentials(ctx, o.ID)
			return map[string]any{"items": nonNil(list), "total": len(list)}, err
		}
	case "credential disable", "credential enable", "credential delete":
		define = func(fs *flag.FlagSet) {
			str(fs, &org, "org", "organization id or name")
			str(fs, &clientID, "client-id", "the credential's client id")
		}
		do = func(s *store.Store) (any, error) {
			if verb == "delete" {
				return admin.DeleteCredential(ctx, s, admin.ActorCLI, org, clientID)
			}
			return admin.SetCredentialDisabled(ctx, s, admin.ActorCLI, org, clientID, verb == "disable")
		}
	case "enroll-token create":
		var base string
		define = func(fs *flag.FlagSet) {
			str(fs, &org, "org", "organization id or name")
			fs.StringVar(&expires, "expires", "720h", "validity, a duration such as 720h, or never")
			fs.StringVar(&base, "base-url", config.Env("PATCHD_BASE_URL", defaultBaseURL), "the server's public address, for the installers (env PATCHD_BASE_URL)")
		}
		do = func(s *store.Store) (any, error) {
			d, err := parseExpires(expires)
			if err != nil {
				return nil, err
			}
			if err := agentdist.CheckServerURL(base); err != nil {
				return nil, usagef("--base-url: %v", err)
			}
			t, err := admin.CreateEnrollToken(ctx, s, admin.ActorCLI, org, d)
			if err != nil {
				return nil, err
			}
			// The installers carry the token with its pin ("<secret>.<pin>").
			return enrollTokenOutput{t, agentdist.InstallersFor(base, t.Secret(), t.CASHA256)}, nil
		}
	case "enroll-token list":
		define = func(fs *flag.FlagSet) { str(fs, &org, "org", "organization id or name") }
		do = func(s *store.Store) (any, error) {
			o, err := s.FindOrg(ctx, org)
			if err != nil {
				return nil, err
			}
			list, err := s.ListEnrollTokens(ctx, o.ID)
			return map[string]any{"items": nonNil(list), "total": len(list)}, err
		}
	case "agent-policy set":
		// The API's body: a flag not given is a field not sent, so that
		// the same checks say what is missing or out of place.
		var policy string
		var version, delay *string
		var rings listFlag
		var rate *int
		define = func(fs *flag.FlagSet) {
			str(fs, &org, "org", "organization id or name")
			str(fs, &policy, "policy", "latest (the published release), pinned (--version), staged (--version through --ring groups) or none (agents are left as they are)")
			fs.Func("version", "with --policy pinned or staged: the agent version", func(v string) error { version = &v; return nil })
			fs.Var(&rings, "ring", "with --policy staged: an endpoint group (id or name), a ring, in order (repeat the flag); the endpoints in none form the last ring")
			fs.Func("delay", "with --policy staged: how long a ring runs the version before the next gets it, hours (12h) or days (3d)", func(v string) error { delay = &v; return nil })
			fs.Func("success-rate", "with --policy staged: the percent of a ring's endpoints that must run the version before the next ring gets it", func(v string) error {
				n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(v, "%")))
				if err != nil {
					return errors.New("wants a percent: 0 to 100")
				}
				rate = &n
				return nil
			})
		}
		do = func(s *store.Store) (any, error) {
			o, err := s.FindOrg(ctx, org)
			if err != nil {
				return nil, err
			}
			body := apiv1.AgentPolicyBody{Policy: policy, Version: version, SuccessRate: rate}
			if delay != nil {
				h, err := parseDelayHours(*delay)
				if err != nil {
					return nil, usagef("%s: --delay %q: %v", name, *delay, err)
				}
				body.DelayHours = &h
			}
			if len(rings) > 0 {
				if body.Rings, err = ringGroupIDs(ctx, s, o.ID, rings); err != nil {
					return nil, err
				}
			}
			p, err := admin.CheckAgentPolicy(ctx, s, o.ID, body, time.Now())
			if err == nil {
				e := &store.AuditEntry{OrgID: o.ID, Actor: admin.ActorCLI, Action: "agent_policy.set", TargetType: "org", TargetID: o.ID}
				err = s.SetAgentPolicy(ctx, e, o.ID, p, time.Now())
			}
			if err != nil {
				return nil, agentPolicyProblems(name, rings, err)
			}
			return agentPolicyOut(ctx, s, o.ID, p)
		}
	case "agent-policy get":
		define = func(fs *flag.FlagSet) { str(fs, &org, "org", "organization id or name") }
		do = func(s *store.Store) (any, error) {
			o, err := s.FindOrg(ctx, org)
			if err != nil {
				return nil, err
			}
			p, err := s.AgentPolicyOf(ctx, o.ID)
			if err != nil {
				return nil, err
			}
			return agentPolicyOut(ctx, s, o.ID, p)
		}
	case "enroll-token revoke":
		define = func(fs *flag.FlagSet) {
			str(fs, &org, "org", "organization id or name")
			str(fs, &id, "id", "enrollment token id")
		}
		do = func(s *store.Store) (any, error) {
			o, err := s.FindOrg(ctx, org)
			if err != nil {
				return nil, err
			}
			e := &store.AuditEntry{OrgID: o.ID, Actor: admin.ActorCLI, Action: "enroll_token.revoke", TargetType: "enroll_token", TargetID: id}
			if err := s.RevokeEnrollToken(ctx, e, o.ID, id); err != nil {
				return nil, err
			}
			return map[string]any{"id": id, "revoked": true}, nil
		}
	case "user create":
		define = func(fs *flag.FlagSet) {
			str(fs, &org, "org", "organization id or name")
			str(fs, &email, "email", "the user's e-mail address (sign-in name)")
			str(fs, &role, "role", "role id or name")
			fs.BoolVar(&passwordStdin, "password-stdin", false, "read the password from standard input")
			fs.BoolVar(&operator, "instance-operator", false, "make the user an instance operator (may change the vulnerability feeds every organization shares)")
		}
		do = func(s *store.Store) (any, error) {
			pw, err := readPassword(stdio, passwordStdin)
			if err != nil {
				return nil, err
			}
			if operator {
				return admin.CreateOperator(ctx, s, admin.ActorCLI, admin.InstanceActor{Actor: cliActor()}, org, email, role, pw)
			}
			return admin.CreateUser(ctx, s, admin.ActorCLI, org, email, role, pw)
		}
	case "user operator grant", "user operator revoke":
		define = func(fs *flag.FlagSet) {
			str(fs, &email, "email", "the user's e-mail address")
			str(fs, &org, "org", "organization id or name (when the address is a user of several)")
		}
		do = func(s *store.Store) (any, error) {
			return admin.SetOperator(ctx, s, admin.InstanceActor{Actor: cliActor()}, org, email, verb == "operator grant")
		}
	case "user operator sso-allow", "user operator sso-deny":
		define = func(fs *flag.FlagSet) {
			str(fs, &email, "email", "the operator's e-mail address")
			str(fs, &org, "org", "organization id or name (when the address is a user of several)")
		}
		do = func(s *store.Store) (any, error) {
			return admin.SetOperatorSSO(ctx, s, admin.InstanceActor{Actor: cliActor()}, org, email, verb == "operator sso-allow")
		}
	case "user list":
		define = func(fs *flag.FlagSet) { str(fs, &org, "org", "organization id or name") }
		do = func(s *store.Store) (any, error) {
			list, err := admin.ListUsers(ctx, s, org)
			return map[string]any{"items": nonNil(list), "total": len(list)}, err
		}
	case "user role", "user disable", "user enable", "user reset-password", "user reset-mfa":
		mustChange := true
		define = func(fs *flag.FlagSet) {
			str(fs, &email, "email", "the user's e-mail address")
			str(fs, &org, "org", "organization id or name (when the address is a user of several)")
			switch verb {
			case "role":
				str(fs, &role, "role", "role id or name")
			case "reset-password":
				fs.BoolVar(&passwordStdin, "password-stdin", false, "read the new password from standard input")
				fs.BoolVar(&mustChange, "must-change", true, "a one-time password: the user chooses a new one at the next sign-in")
			}
		}
		do = func(s *store.Store) (any, error) {
			u, err := admin.FindUser(ctx, s, org, email)
			if err != nil {
				return nil, err
			}
			by := admin.By{Actor: admin.ActorCLI}
			switch verb {
			case "role":
				if role == "" {
					return nil, usagef("--role is required")
				}
				_, err = admin.ChangeRole(ctx, s, by, u, role)
			case "disable", "enable":
				err = admin.SetDisabled(ctx, s, by, u, verb == "disable")
			case "reset-password":
				pw, perr := readPassword(stdio, passwordStdin)
				if perr != nil {
					return nil, perr
				}
				err = admin.ResetPassword(ctx, s, by, u, pw, mustChange)
			case "reset-mfa":
				err = admin.ResetSecondFactor(ctx, s, by, u)
			}
			if err != nil {
				return nil, err
			}
			return admin.ListedUser(ctx, s, u.OrgID, u.ID)
		}
	case "org second-factor":
		var require string
		define = func(fs *flag.FlagSet) {
			str(fs, &org, "org", "organization id or name")
			str(fs, &require, "require", "true: password users must have a second factor; false: it is optional")
		}
		do = func(s *store.Store) (any, error) {
			on, err := strconv.ParseBool(require)
			if err != nil {
				return nil, usagef("--require must be true or false")
			}
			if err := admin.SetRequireSecondFactor(ctx, s, admin.By{Actor: admin.ActorCLI}, org, on); err != nil {
				return nil, err
			}
			return map[string]any{"org": org, "requireSecondFactor": on}, nil
		}
	case "user operator list":
		do = func(s *store.Store) (any, error) {
			list, err := admin.ListOperators(ctx, s)
			return map[string]any{"items": nonNil(list), "total": len(list)}, err
		}
	case "approval-policy set", "approval-policy list", "approval-policy delete":
		var req admin.PolicyRequest
		define = func(fs *flag.FlagSet) {
			str(fs, &req.Org, "org", "organization id or name")
			if verb != "list" {
				str(fs, &req.Severity, "severity", "Critical, Important, Moderate, Low, Unspecified or ANY")
				str(fs, &req.Source, "source", "OS, THIRD_PARTY or ANY")
			}
			if verb == "set" {
				fs.IntVar(&req.DelayDays, "delay-days", 0, "approve this many days after the update is first seen (0: at once)")
				str(fs, &req.DeclineOlder, "decline-older", "true or false: approving an application version declines its older versions")
			}
		}
		do = func(s *store.Store) (any, error) {
			req.Verb = verb
			return admin.ApprovalPolicy(ctx, s, admin.ActorCLI, req)
		}
	case "audit list":
		define = func(fs *flag.FlagSet) {
			str(fs, &org, "org", "organization id or name")
			fs.BoolVar(&instance, "instance", false, "the instance's Audit Trail (feed imports and syncs, instance operators) instead of an organization's")
			fs.IntVar(&limit, "limit", 100, "how many entries, newest first")
			str(fs, &actor, "actor", "only this actor, for example api:ci")
			str(fs, &action, "action", "only this action, for example group.create")
		}
	case "vuln accept", "vuln list", "vuln revoke", "vuln policy":
		var err error
		if define, do, err = vulnAdmin(ctx, verb); err != nil {
			return err
		}
	case "alert list", "alert events", "alert failed", "alert resend", "alert update", "alert enable", "alert disable", "alert delete", "alert test":
		var err error
		if define, do, err = alertAdmin(ctx, verb); err != nil {
			return err
		}
	case "secrets rotate-key", "secrets status":
		define, do = secretsAdmin(ctx, verb)
	case "sso set", "sso show", "sso delete":
		define, do, _ = ssoAdmin(ctx, verb, stdio)
	case "script create", "script update", "script list", "script delete", "run stop":
		define, do, _ = scriptAndRunAdmin(ctx, object, verb, stdio)
	default:
		return usagef("unknown admin command %q", object+" "+verb)
	}

	s, _, err := openStore(ctx, name, rest, define)
	if err != nil {
		return err
	}
	defer s.Close()
	if object == "audit" && instance {
		if org != "" {
			return usagef("--instance and --org exclude each other")
		}
		if limit < 1 {
			return usagef("--limit must be at least 1")
		}
		f := store.InstanceEventFilter{Actor: actor, Limit: limit}
		if action != "" {
			f.Actions = []string{action}
		}
		events, err := s.ListInstanceEvents(ctx, f)
		if err != nil {
			return err
		}
		for _, e := range events {
			if err := printJSON(stdio.Out, e); err != nil {
				return err
			}
		}
		return nil
	}
	if object == "audit" {
		o, err := s.FindOrg(ctx, org)
		if err != nil {
			return err
		}
		if limit < 1 {
			return usagef("--limit must be at least 1")
		}
		entries, err := s.ListAudit(ctx, o.ID, store.AuditFilter{Actor: actor, Action: action, Limit: limit})
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := printJSON(stdio.Out, e); err != nil {
				return err
			}
		}
		return nil
	}
	v, err := do(s)
	if err != nil {
		return err
	}
	return printJSON(stdio.Out, v)
}

func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// cliActor is the instance Audit Trail actor of the command line:
// cli:<the operating system user>, or cli when it is unknown.
func cliActor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	if name := os.Getenv("USER"); name != "" {
		return "cli:" + name
	}
	return "cli"
}

// enrollTokenOutput is the new token with the one-line installers that
// carry it (installLinux, installWindows, …).
type enrollTokenOutput struct {
	admin.NewEnrollToken
	agentdist.Installers
}
