package ctl

import (
	"flag"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

// API credentials and the sign-in policy: patchd's additions under
// /api/v1/credentials and /api/v1/sign-in-policy (roles holding every
// permission).

var credentialCols = []column[apiv1.Credential]{
	col("ID", func(c apiv1.Credential) string { return c.ID }),
	col("NAME", func(c apiv1.Credential) string { return c.Name }),
	col("CLIENT-ID", func(c apiv1.Credential) string { return c.ClientID }),
	col("ROLE", func(c apiv1.Credential) string { return c.Role }),
	col("DISABLED", func(c apiv1.Credential) string { return yesNo(c.Disabled) }),
}

// credentialSwitch is credentials disable and credentials enable.
func credentialSwitch(disable bool) command {
	name, summary, text := "credentials enable", "enable a disabled API credential", "Credential %s enabled."
	if disable {
		name, summary, text = "credentials disable", "disable an API credential: its tokens stop working at once", "Credential %s disabled."
	}
	return command{name: name, args: "ID|CLIENT-ID|NAME", summary: summary,
		setup: func(fs *flag.FlagSet) func(*session, []string) error {
			return func(s *session, args []string) error {
				if err := needArgs(args, "ID|CLIENT-ID|NAME"); err != nil {
					return err
				}
				c, err := s.client()
				if err != nil {
					return err
				}
				cred, err := c.SetCredentialDisabled(s.ctx, args[0], disable)
				if err != nil {
					return err
				}
				return s.done(cred, text, cred.Name)
			}
		}}
}

func credentialCommands() []command {
	return []command{
		listCommand("credentials list", "list the organization's API credentials (never their secrets)", credentialCols, (*client.Client).ListCredentials),
		{name: "credentials create", args: "--name NAME --role ROLE", summary: "create an API credential; prints its secret, shown only this once",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				name := fs.String("name", "", "the credential's name (required)")
				role := fs.String("role", "", "a role id or name holding api.access (required)")
				return func(s *session, args []string) error {
					if err := needArgs(args); err != nil {
						return err
					}
					if *name == "" || *role == "" {
						return usagef("--name and --role are required")
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					nc, err := c.CreateCredential(s.ctx, apiv1.CredentialBody{Name: *name, Role: *role})
					if err != nil {
						return err
					}
					return s.done(nc, "Credential %s created with the role %s. Copy the secret now, it is not shown again:\nclient_id:     %s\nclient_secret: %s",
						nc.Name, nc.Role, nc.ClientID, nc.ClientSecret)
				}
			}},
		credentialSwitch(true),
		credentialSwitch(false),
		{name: "credentials delete", args: "ID|CLIENT-ID|NAME", summary: "delete an API credential (its tokens stop working)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				return func(s *session, args []string) error {
					if err := needArgs(args, "ID|CLIENT-ID|NAME"); err != nil {
						return err
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					if err := c.DeleteCredential(s.ctx, args[0]); err != nil {
						return err
					}
					return s.done(apiv1.OK{OK: true}, "Credential %s deleted.", args[0])
				}
			}},
		{name: "sign-in-policy get", summary: "show the organization's sign-in policy",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				return func(s *session, args []string) error {
					if err := needArgs(args); err != nil {
						return err
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					p, err := c.SignInPolicy(s.ctx)
					if err != nil {
						return err
					}
					return s.done(p, "Require a second factor: %s", yesNo(*p.RequireSecondFactor))
				}
			}},
		{name: "sign-in-policy set", args: "--require-second-factor=true|false", summary: "set whether password users must have a second factor",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var require *bool
				fs.Func("require-second-factor", "true or false (required)", func(v string) error {
					switch v {
					case "true", "false":
						on := v == "true"
						require = &on
						return nil
					}
					return usagef("--require-second-factor is true or false")
				})
				return func(s *session, args []string) error {
					if err := needArgs(args); err != nil {
						return err
					}
					if require == nil {
						return usagef("--require-second-factor=true|false is required")
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					p, err := c.SetSignInPolicy(s.ctx, *require)
					if err != nil {
						return err
					}
					return s.done(p, "Require a second factor: %s", yesNo(*p.RequireSecondFactor))
				}
			}},
	}
}
