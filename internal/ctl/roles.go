package ctl

import (
	"flag"
	"strconv"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

// Roles: patchd's additions under /api/v1/roles (roles holding every
// permission).

var roleCols = []column[apiv1.Role]{
	col("ID", func(r apiv1.Role) string { return r.ID }),
	col("NAME", func(r apiv1.Role) string { return r.Name }),
	col("BUILT-IN", func(r apiv1.Role) string { return yesNo(r.Builtin) }),
	col("USERS", func(r apiv1.Role) string { return strconv.Itoa(r.Users) }),
	col("CREDENTIALS", func(r apiv1.Role) string { return strconv.Itoa(r.Credentials) }),
	col("PERMISSIONS", func(r apiv1.Role) string { return strings.Join(r.Permissions, ",") }),
}

// permissionList reads --permissions a,b,c.
func permissionList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func roleCommands() []command {
	return []command{
		listCommand("roles list", "list the organization's roles with their permissions and use", roleCols, (*client.Client).ListRoles),
		{name: "roles create", args: "--name NAME --permissions P,…", summary: "create a custom role from the permissions (api.access, endpoints.view, …)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				name := fs.String("name", "", "the role's name (required)")
				perms := fs.String("permissions", "", "comma-separated permissions (required)")
				return withChecked("", func(*session, []string) (apiv1.RoleBody, error) {
					if *name == "" || *perms == "" {
						return apiv1.RoleBody{}, usagef("--name and --permissions are required")
					}
					return apiv1.RoleBody{Name: *name, Permissions: permissionList(*perms)}, nil
				}, func(s *session, c *client.Client, _ []string, body apiv1.RoleBody) error {
					r, err := c.CreateRole(s.ctx, body)
					if err != nil {
						return err
					}
					return s.done(r, "Role %s created (%s).", r.Name, r.ID)
				})
			}},
		{name: "roles update", args: "ID|NAME [--name NAME] [--permissions P,…]", summary: "rename a custom role or replace its permissions",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				name := fs.String("name", "", "the new name")
				perms := fs.String("permissions", "", "the new comma-separated permissions (replace the role's)")
				return withChecked("ID|NAME", func(*session, []string) (apiv1.RolePatch, error) {
					var body apiv1.RolePatch
					if *name != "" {
						body.Name = name
					}
					if *perms != "" {
						list := permissionList(*perms)
						body.Permissions = &list
					}
					if body.Name == nil && body.Permissions == nil {
						return body, usagef("give --name, --permissions or both")
					}
					return body, nil
				}, func(s *session, c *client.Client, args []string, body apiv1.RolePatch) error {
					r, err := c.PatchRole(s.ctx, args[0], body)
					if err != nil {
						return err
					}
					return s.done(r, "Role %s updated.", r.Name)
				})
			}},
		deleteCommand("roles delete", "ID|NAME", "delete a custom role that no user, credential or single sign-on setting holds", "Role %s deleted.", (*client.Client).DeleteRole),
	}
}

// orgCommands: patchd's addition POST /api/v1/organizations (a person
// holding the create-organizations permission).
func orgCommands() []command {
	return []command{
		{name: "org create", args: "--name NAME [--timezone TZ] [--template ORG]",
			summary: "create an organization you become Administrator of, optionally copying a template organization you administer",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				name := fs.String("name", "", "the organization's name (required, unique on the server)")
				tz := fs.String("timezone", "", "the IANA time zone of its schedules (default UTC)")
				template := fs.String("template", "", "an organization (id or name) you administer: its approval and remediation policies, groups, automations and alert rules are copied")
				return withChecked("", func(*session, []string) (apiv1.OrganizationBody, error) {
					if strings.TrimSpace(*name) == "" {
						return apiv1.OrganizationBody{}, usagef("--name is required")
					}
					return apiv1.OrganizationBody{Name: *name, TimeZone: *tz, Template: *template}, nil
				}, func(s *session, c *client.Client, _ []string, body apiv1.OrganizationBody) error {
					o, err := c.CreateOrganization(s.ctx, body)
					if err != nil {
						return err
					}
					if o.Copied != nil {
						return s.done(o, "Organization %s created (%s), copied from %s: %d groups, %d automations, %d alert rules.",
							o.Name, o.ID, o.Copied.Template, o.Copied.Groups, o.Copied.Automations, o.Copied.AlertRules)
					}
					return s.done(o, "Organization %s created (%s).", o.Name, o.ID)
				})
			}},
	}
}
