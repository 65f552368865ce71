package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
)

// adminCommand is one entry of the patchd admin command table. setup
// registers the command's own flags on fs (after --data, --db and
// --secret-key-file) and returns what runs once the store is open; its
// value is printed as one JSON line, or as one line per item when it is
// jsonLines.
type adminCommand struct {
	name  string // "org create", "user operator grant"
	setup func(c adminContext, fs *flag.FlagSet) adminRun
}

// adminContext is what a command's setup may capture.
type adminContext struct {
	ctx   context.Context
	stdio IO
	name  string // "patchd admin org create"
}

type adminRun func(s *store.Store) (any, error)

// jsonLines is printed one JSON line per item (audit entries).
type jsonLines []any

// adminCommands are the commands of patchd admin that open the store;
// backup and agent are dispatched before them.
var adminCommands []adminCommand

func init() {
	adminCommands = append(adminCommands, orgAdminCommands()...)
	adminCommands = append(adminCommands, credentialAdminCommands()...)
	adminCommands = append(adminCommands, enrollTokenAdminCommands()...)
	adminCommands = append(adminCommands, agentPolicyAdminCommands()...)
	adminCommands = append(adminCommands, userAdminCommands()...)
	adminCommands = append(adminCommands, approvalPolicyAdminCommands()...)
	adminCommands = append(adminCommands, auditAdminCommands()...)
	adminCommands = append(adminCommands, helperAdminCommands("vuln", []string{"accept", "list", "revoke", "policy"},
		func(c adminContext, verb string) (func(*flag.FlagSet), adminRun, error) {
			return vulnAdmin(c.ctx, verb)
		})...)
	adminCommands = append(adminCommands, helperAdminCommands("alert", []string{"list", "events", "failed", "resend", "update", "enable", "disable", "delete", "test"},
		func(c adminContext, verb string) (func(*flag.FlagSet), adminRun, error) {
			return alertAdmin(c.ctx, verb)
		})...)
	adminCommands = append(adminCommands, helperAdminCommands("secrets", []string{"rotate-key", "status"},
		func(c adminContext, verb string) (func(*flag.FlagSet), adminRun, error) {
			define, do := secretsAdmin(c.ctx, verb)
			return define, do, nil
		})...)
	adminCommands = append(adminCommands, helperAdminCommands("sso", []string{"set", "show", "delete"},
		func(c adminContext, verb string) (func(*flag.FlagSet), adminRun, error) {
			return ssoAdmin(c.ctx, verb, c.stdio)
		})...)
	for _, object := range []string{"script", "run"} {
		verbs := []string{"create", "update", "list", "delete"}
		if object == "run" {
			verbs = []string{"stop"}
		}
		adminCommands = append(adminCommands, helperAdminCommands(object, verbs,
			func(c adminContext, verb string) (func(*flag.FlagSet), adminRun, error) {
				define, do, _ := scriptAndRunAdmin(c.ctx, object, verb, c.stdio)
				return define, do, nil
			})...)
	}
}

// runAdmin dispatches patchd admin OBJECT VERB [flags].
func runAdmin(ctx context.Context, args []string, stdio IO) error {
	if len(args) > 0 && args[0] == "backup" { // an object without a verb
		return runBackup(ctx, args[1:], stdio)
	}
	if len(args) > 0 && args[0] == "restore" {
		return runRestore(ctx, args[1:], stdio)
	}
	if len(args) == 0 || isHelp(args[0]) {
		return usagef("admin needs an object and a verb, for example: patchd admin org create --name Acme")
	}
	if len(args) < 2 || isHelp(args[1]) {
		return objectHelp(args[0], stdio)
	}
	object, verb, rest := args[0], args[1], args[2:]
	if object == "user" && verb == "operator" {
		if len(rest) == 0 {
			return usagef("patchd admin user operator needs a verb: grant, revoke, list, sso-allow or sso-deny")
		}
		verb, rest = "operator "+rest[0], rest[1:]
	}
	if object == "user" && verb == "create-orgs" {
		if len(rest) == 0 {
			return usagef("patchd admin user create-orgs needs a verb: grant, revoke or list")
		}
		verb, rest = "create-orgs "+rest[0], rest[1:]
	}
	if object == "agent" {
		return runAgentAdmin(ctx, verb, rest, stdio)
	}
	cmd, ok := findAdminCommand(object + " " + verb)
	if !ok {
		return usagef("unknown admin command %q", object+" "+verb)
	}
	c := adminContext{ctx: ctx, stdio: stdio, name: "patchd admin " + cmd.name}
	var do adminRun
	s, _, err := openStore(ctx, c.name, rest, func(fs *flag.FlagSet) { do = cmd.setup(c, fs) })
	if err != nil {
		return err
	}
	defer s.Close()
	v, err := do(s)
	if err != nil {
		return err
	}
	if lines, ok := v.(jsonLines); ok {
		for _, line := range lines {
			if err := printJSON(stdio.Out, line); err != nil {
				return err
			}
		}
		return nil
	}
	return printJSON(stdio.Out, v)
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// objectHelp answers `patchd admin OBJECT` and `patchd admin OBJECT
// --help`: the object's commands, each with -h for its flags.
func objectHelp(object string, stdio IO) error {
	var names []string
	for _, c := range adminCommands {
		if strings.HasPrefix(c.name, object+" ") {
			names = append(names, c.name)
		}
	}
	if object == "agent" {
		for verb := range agentVerbHelp {
			names = append(names, "agent "+verb)
		}
	}
	if len(names) == 0 {
		return usagef("unknown admin object %q", object)
	}
	slices.Sort(names)
	fmt.Fprintf(stdio.Out, "patchd admin %s commands (each takes -h for its flags):\n", object)
	for _, n := range names {
		fmt.Fprintf(stdio.Out, "  patchd admin %s\n", n)
	}
	return nil
}

func findAdminCommand(name string) (adminCommand, bool) {
	for _, c := range adminCommands {
		if c.name == name {
			return c, true
		}
	}
	return adminCommand{}, false
}

// helperAdminCommands makes an entry per verb of a family whose flags and
// action one function defines by verb.
func helperAdminCommands(object string, verbs []string, helper func(c adminContext, verb string) (func(*flag.FlagSet), adminRun, error)) []adminCommand {
	var cmds []adminCommand
	for _, verb := range verbs {
		cmds = append(cmds, adminCommand{object + " " + verb, func(c adminContext, fs *flag.FlagSet) adminRun {
			define, do, err := helper(c, verb)
			if err != nil {
				return func(*store.Store) (any, error) { return nil, err }
			}
			if define != nil {
				define(fs)
			}
			return do
		}})
	}
	return cmds
}

func orgFlag(fs *flag.FlagSet) *string { return fs.String("org", "", "organization id or name") }

// listed is the JSON of a list: its items and their count.
func listed[T any](list []T, err error) (any, error) {
	return map[string]any{"items": nonNil(list), "total": len(list)}, err
}

// inOrg finds --org's organization, then runs do in it.
func inOrg(c adminContext, org *string, do func(s *store.Store, o store.Org) (any, error)) adminRun {
	return func(s *store.Store) (any, error) {
		o, err := s.FindOrg(c.ctx, *org)
		if err != nil {
			return nil, err
		}
		return do(s, o)
	}
}

func orgAdminCommands() []adminCommand {
	return []adminCommand{
		{"org create", func(c adminContext, fs *flag.FlagSet) adminRun {
			name := fs.String("name", "", "organization name")
			tz := fs.String("timezone", "UTC", "IANA time zone for schedules")
			template := fs.String("template", "", "copy this organization's (id or name) approval and remediation policies, groups, automations and alert rules")
			adminEmail := fs.String("admin-email", "", "make this person the new organization's Administrator")
			adminOrg := fs.String("admin-org", "", "with --admin-email: one of the person's organizations (when the address has accounts in several)")
			return func(s *store.Store) (any, error) {
				if strings.TrimSpace(*name) == "" {
					return nil, errors.New("--name is required")
				}
				req := admin.OrgRequest{Name: *name, TimeZone: *tz, Template: *template, By: admin.By{Actor: admin.ActorCLI}, Instance: cliActor()}
				if *adminEmail != "" {
					u, err := admin.FindUser(c.ctx, s, *adminOrg, *adminEmail)
					if err != nil {
						return nil, err
					}
					req.Creator = &u
				}
				return admin.CreateOrgAs(c.ctx, s, req)
			}
		}},
		{"org list", func(c adminContext, fs *flag.FlagSet) adminRun {
			return func(s *store.Store) (any, error) { return listed(s.ListOrgs(c.ctx)) }
		}},
		{"role create", func(c adminContext, fs *flag.FlagSet) adminRun {
			org := orgFlag(fs)
			name := fs.String("name", "", "role name")
			perms := fs.String("permissions", "", "comma-separated permissions")
			return func(s *store.Store) (any, error) { return admin.CreateRole(c.ctx, s, *org, *name, *perms) }
		}},
		{"org second-factor", func(c adminContext, fs *flag.FlagSet) adminRun {
			org := orgFlag(fs)
			require := fs.String("require", "", "true: password users must have a second factor; false: it is optional")
			return func(s *store.Store) (any, error) {
				on, err := strconv.ParseBool(*require)
				if err != nil {
					return nil, usagef("--require must be true or false")
				}
				if err := admin.SetRequireSecondFactor(c.ctx, s, admin.By{Actor: admin.ActorCLI}, *org, on); err != nil {
					return nil, err
				}
				return map[string]any{"org": *org, "requireSecondFactor": on}, nil
			}
		}},
	}
}

func credentialAdminCommands() []adminCommand {
	cmds := []adminCommand{
		{"credential create", func(c adminContext, fs *flag.FlagSet) adminRun {
			org := orgFlag(fs)
			name := fs.String("name", "", "credential name (audited as api:<name>)")
			role := fs.String("role", "", "role id or name")
			return func(s *store.Store) (any, error) {
				return admin.CreateCredential(c.ctx, s, admin.ActorCLI, *org, *name, *role)
			}
		}},
		{"credential list", func(c adminContext, fs *flag.FlagSet) adminRun {
			org := orgFlag(fs)
			return inOrg(c, org, func(s *store.Store, o store.Org) (any, error) {
				return listed(s.ListCredentials(c.ctx, o.ID))
			})
		}},
	}
	for _, verb := range []string{"disable", "enable", "delete"} {
		cmds = append(cmds, adminCommand{"credential " + verb, func(c adminContext, fs *flag.FlagSet) adminRun {
			org := orgFlag(fs)
			clientID := fs.String("client-id", "", "the credential's client id")
			return func(s *store.Store) (any, error) {
				if verb == "delete" {
					return admin.DeleteCredential(c.ctx, s, admin.ActorCLI, *org, *clientID)
				}
				return admin.SetCredentialDisabled(c.ctx, s, admin.ActorCLI, *org, *clientID, verb == "disable")
			}
		}})
	}
	return cmds
}

func enrollTokenAdminCommands() []adminCommand {
	return []adminCommand{
		{"enroll-token create", func(c adminContext, fs *flag.FlagSet) adminRun {
			org := orgFlag(fs)
			expires := fs.String("expires", "720h", "validity, a duration such as 720h, or never")
			base := fs.String("base-url", config.Env("PATCHD_BASE_URL", defaultBaseURL), "the server's public address, for the installers (env PATCHD_BASE_URL)")
			return func(s *store.Store) (any, error) {
				d, err := parseExpires(*expires)
				if err != nil {
					return nil, err
				}
				if err := agentdist.CheckServerURL(*base); err != nil {
					return nil, usagef("--base-url: %v", err)
				}
				t, err := admin.CreateEnrollToken(c.ctx, s, admin.ActorCLI, *org, d)
				if err != nil {
					return nil, err
				}
				// The installers carry the token with its pin ("<secret>.<pin>").
				return enrollTokenOutput{t, agentdist.InstallersFor(*base, t.Secret(), t.CASHA256)}, nil
			}
		}},
		{"enroll-token list", func(c adminContext, fs *flag.FlagSet) adminRun {
			org := orgFlag(fs)
			return inOrg(c, org, func(s *store.Store, o store.Org) (any, error) {
				return listed(s.ListEnrollTokens(c.ctx, o.ID))
			})
		}},
		{"enroll-token revoke", func(c adminContext, fs *flag.FlagSet) adminRun {
			org := orgFlag(fs)
			id := fs.String("id", "", "enrollment token id")
			return inOrg(c, org, func(s *store.Store, o store.Org) (any, error) {
				e := &store.AuditEntry{OrgID: o.ID, Actor: admin.ActorCLI, Action: "enroll_token.revoke", TargetType: "enroll_token", TargetID: *id}
				if err := s.RevokeEnrollToken(c.ctx, e, o.ID, *id); err != nil {
					return nil, err
				}
				return map[string]any{"id": *id, "revoked": true}, nil
			})
		}},
	}
}

func agentPolicyAdminCommands() []adminCommand {
	return []adminCommand{
		{"agent-policy set", func(c adminContext, fs *flag.FlagSet) adminRun {
			// The API's body: a flag not given is a field not sent, so that
			// the same checks say what is missing or out of place.
			var version, delay *string
			var rings listFlag
			var rate *int
			org := orgFlag(fs)
			policy := fs.String("policy", "", "latest (the published release), pinned (--version), staged (--version through --ring groups) or none (agents are left as they are)")
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
			return inOrg(c, org, func(s *store.Store, o store.Org) (any, error) {
				body := apiv1.AgentPolicyBody{Policy: *policy, Version: version, SuccessRate: rate}
				if delay != nil {
					h, err := parseDelayHours(*delay)
					if err != nil {
						return nil, usagef("%s: --delay %q: %v", c.name, *delay, err)
					}
					body.DelayHours = &h
				}
				var err error
				if len(rings) > 0 {
					if body.Rings, err = ringGroupIDs(c.ctx, s, o.ID, rings); err != nil {
						return nil, err
					}
				}
				p, err := admin.CheckAgentPolicy(c.ctx, s, o.ID, body, time.Now())
				if err == nil {
					e := &store.AuditEntry{OrgID: o.ID, Actor: admin.ActorCLI, Action: "agent_policy.set", TargetType: "org", TargetID: o.ID}
					err = s.SetAgentPolicy(c.ctx, e, o.ID, p, time.Now())
				}
				if err != nil {
					return nil, agentPolicyProblems(c.name, rings, err)
				}
				return agentPolicyOut(c.ctx, s, o.ID, p)
			})
		}},
		{"agent-policy get", func(c adminContext, fs *flag.FlagSet) adminRun {
			org := orgFlag(fs)
			return inOrg(c, org, func(s *store.Store, o store.Org) (any, error) {
				p, err := s.AgentPolicyOf(c.ctx, o.ID)
				if err != nil {
					return nil, err
				}
				return agentPolicyOut(c.ctx, s, o.ID, p)
			})
		}},
	}
}

func userAdminCommands() []adminCommand {
	// emailAndOrg registers --email and the optional --org of a user command.
	emailAndOrg := func(fs *flag.FlagSet, who string) (email, org *string) {
		email = fs.String("email", "", who)
		org = fs.String("org", "", "organization id or name (when the address is a user of several)")
		return email, org
	}
	cmds := []adminCommand{
		{"user create", func(c adminContext, fs *flag.FlagSet) adminRun {
			org := orgFlag(fs)
			email := fs.String("email", "", "the user's e-mail address (sign-in name)")
			role := fs.String("role", "", "role id or name")
			passwordStdin := fs.Bool("password-stdin", false, "read the password from standard input")
			operator := fs.Bool("instance-operator", false, "make the user an instance operator (may change the vulnerability feeds every organization shares)")
			return func(s *store.Store) (any, error) {
				pw, err := readPassword(c.stdio, *passwordStdin)
				if err != nil {
					return nil, err
				}
				if *operator {
					return admin.CreateOperator(c.ctx, s, admin.ActorCLI, admin.InstanceActor{Actor: cliActor()}, *org, *email, *role, pw)
				}
				return admin.CreateUser(c.ctx, s, admin.ActorCLI, *org, *email, *role, pw)
			}
		}},
		{"user list", func(c adminContext, fs *flag.FlagSet) adminRun {
			org := orgFlag(fs)
			return func(s *store.Store) (any, error) { return listed(admin.ListUsers(c.ctx, s, *org)) }
		}},
		{"user operator list", func(c adminContext, fs *flag.FlagSet) adminRun {
			return func(s *store.Store) (any, error) { return listed(admin.ListOperators(c.ctx, s)) }
		}}, {"user create-orgs list", func(c adminContext, fs *flag.FlagSet) adminRun {
			return func(s *store.Store) (any, error) { return listed(admin.ListOrgCreators(c.ctx, s)) }
		}},
	}
	for _, verb := range []string{"grant", "revoke"} {
		cmds = append(cmds, adminCommand{"user create-orgs " + verb, func(c adminContext, fs *flag.FlagSet) adminRun {
			email, org := emailAndOrg(fs, "the person's e-mail address")
			return func(s *store.Store) (any, error) {
				return admin.SetCreateOrgs(c.ctx, s, admin.InstanceActor{Actor: cliActor()}, *org, *email, verb == "grant")
			}
		}})
	}
	for _, verb := range []string{"grant", "revoke"} {
		cmds = append(cmds, adminCommand{"user operator " + verb, func(c adminContext, fs *flag.FlagSet) adminRun {
			email, org := emailAndOrg(fs, "the user's e-mail address")
			return func(s *store.Store) (any, error) {
				return admin.SetOperator(c.ctx, s, admin.InstanceActor{Actor: cliActor()}, *org, *email, verb == "grant")
			}
		}})
	}
	for _, verb := range []string{"sso-allow", "sso-deny"} {
		cmds = append(cmds, adminCommand{"user operator " + verb, func(c adminContext, fs *flag.FlagSet) adminRun {
			email, org := emailAndOrg(fs, "the operator's e-mail address")
			return func(s *store.Store) (any, error) {
				return admin.SetOperatorSSO(c.ctx, s, admin.InstanceActor{Actor: cliActor()}, *org, *email, verb == "sso-allow")
			}
		}})
	}
	// userChange is a command that changes one user and prints it:
	// flags adds its own flags and returns the change.
	userChange := func(verb string, flags func(c adminContext, fs *flag.FlagSet) func(s *store.Store, by admin.By, u store.ConsoleUser) error) adminCommand {
		return adminCommand{"user " + verb, func(c adminContext, fs *flag.FlagSet) adminRun {
			email, org := emailAndOrg(fs, "the user's e-mail address")
			change := flags(c, fs)
			return func(s *store.Store) (any, error) {
				u, err := admin.FindUser(c.ctx, s, *org, *email)
				if err != nil {
					return nil, err
				}
				if err := change(s, admin.By{Actor: admin.ActorCLI}, u); err != nil {
					return nil, err
				}
				return admin.ListedUser(c.ctx, s, u.OrgID, u.ID)
			}
		}}
	}
	cmds = append(cmds, adminCommand{"user member-add", func(c adminContext, fs *flag.FlagSet) adminRun {
		email, org := emailAndOrg(fs, "the person's e-mail address")
		toOrg := fs.String("to-org", "", "the organization (id or name) the person joins")
		role := fs.String("role", "", "its role there (id or name)")
		return func(s *store.Store) (any, error) {
			if *toOrg == "" || *role == "" {
				return nil, usagef("--to-org and --role are required")
			}
			u, err := admin.FindUser(c.ctx, s, *org, *email)
			if err != nil {
				return nil, err
			}
			return admin.AddMembership(c.ctx, s, admin.By{Actor: admin.ActorCLI}, u, *toOrg, *role)
		}
	}})
	cmds = append(cmds, adminCommand{"user member-remove", func(c adminContext, fs *flag.FlagSet) adminRun {
		email, org := emailAndOrg(fs, "the person's e-mail address")
		return func(s *store.Store) (any, error) {
			if *org == "" {
				return nil, usagef("--org (the organization the person leaves) is required")
			}
			u, err := admin.FindUser(c.ctx, s, *org, *email)
			if err != nil {
				return nil, err
			}
			if err := admin.RemoveMembership(c.ctx, s, admin.By{Actor: admin.ActorCLI}, u); err != nil {
				return nil, err
			}
			return map[string]any{"email": u.Email, "leftOrgId": u.OrgID}, nil
		}
	}})
	cmds = append(cmds,
		userChange("role", func(c adminContext, fs *flag.FlagSet) func(*store.Store, admin.By, store.ConsoleUser) error {
			role := fs.String("role", "", "role id or name")
			return func(s *store.Store, by admin.By, u store.ConsoleUser) error {
				if *role == "" {
					return usagef("--role is required")
				}
				_, err := admin.ChangeRole(c.ctx, s, by, u, *role)
				return err
			}
		}),
		userChange("disable", func(c adminContext, fs *flag.FlagSet) func(*store.Store, admin.By, store.ConsoleUser) error {
			return func(s *store.Store, by admin.By, u store.ConsoleUser) error {
				return admin.SetDisabled(c.ctx, s, by, u, true)
			}
		}),
		userChange("enable", func(c adminContext, fs *flag.FlagSet) func(*store.Store, admin.By, store.ConsoleUser) error {
			return func(s *store.Store, by admin.By, u store.ConsoleUser) error {
				return admin.SetDisabled(c.ctx, s, by, u, false)
			}
		}),
		userChange("reset-password", func(c adminContext, fs *flag.FlagSet) func(*store.Store, admin.By, store.ConsoleUser) error {
			passwordStdin := fs.Bool("password-stdin", false, "read the new password from standard input")
			mustChange := fs.Bool("must-change", true, "a one-time password: the user chooses a new one at the next sign-in")
			return func(s *store.Store, by admin.By, u store.ConsoleUser) error {
				pw, err := readPassword(c.stdio, *passwordStdin)
				if err != nil {
					return err
				}
				return admin.ResetPassword(c.ctx, s, by, u, pw, *mustChange)
			}
		}),
		userChange("reset-mfa", func(c adminContext, fs *flag.FlagSet) func(*store.Store, admin.By, store.ConsoleUser) error {
			return func(s *store.Store, by admin.By, u store.ConsoleUser) error {
				return admin.ResetSecondFactor(c.ctx, s, by, u)
			}
		}),
	)
	return cmds
}

func approvalPolicyAdminCommands() []adminCommand {
	var cmds []adminCommand
	for _, verb := range []string{"set", "list", "delete"} {
		cmds = append(cmds, adminCommand{"approval-policy " + verb, func(c adminContext, fs *flag.FlagSet) adminRun {
			req := admin.PolicyRequest{Verb: verb}
			fs.StringVar(&req.Org, "org", "", "organization id or name")
			if verb != "list" {
				fs.StringVar(&req.Severity, "severity", "", "Critical, Important, Moderate, Low, Unspecified or ANY")
				fs.StringVar(&req.Source, "source", "", "OS, THIRD_PARTY or ANY")
			}
			if verb == "set" {
				fs.IntVar(&req.DelayDays, "delay-days", 0, "approve this many days after the update is first seen (0: at once)")
				fs.StringVar(&req.DeclineOlder, "decline-older", "", "true or false: approving an application version declines its older versions")
			}
			return func(s *store.Store) (any, error) { return admin.ApprovalPolicy(c.ctx, s, admin.ActorCLI, req) }
		}})
	}
	return cmds
}

func auditAdminCommands() []adminCommand {
	return []adminCommand{
		{"audit list", func(c adminContext, fs *flag.FlagSet) adminRun {
			org := orgFlag(fs)
			instance := fs.Bool("instance", false, "the instance's Audit Trail (feed imports and syncs, instance operators) instead of an organization's")
			limit := fs.Int("limit", 100, "how many entries, newest first")
			actor := fs.String("actor", "", "only this actor, for example api:ci")
			action := fs.String("action", "", "only this action, for example group.create")
			return func(s *store.Store) (any, error) {
				if *instance {
					if *org != "" {
						return nil, usagef("--instance and --org exclude each other")
					}
					if *limit < 1 {
						return nil, usagef("--limit must be at least 1")
					}
					f := store.InstanceEventFilter{Actor: *actor, Limit: *limit}
					if *action != "" {
						f.Actions = []string{*action}
					}
					return lines(s.ListInstanceEvents(c.ctx, f))
				}
				o, err := s.FindOrg(c.ctx, *org)
				if err != nil {
					return nil, err
				}
				if *limit < 1 {
					return nil, usagef("--limit must be at least 1")
				}
				return lines(s.ListAudit(c.ctx, o.ID, store.AuditFilter{Actor: *actor, Action: *action, Limit: *limit}))
			}
		}},
	}
}

// lines is a list printed one JSON line per item.
func lines[T any](list []T, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	out := make(jsonLines, len(list))
	for i, e := range list {
		out[i] = e
	}
	return out, nil
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
