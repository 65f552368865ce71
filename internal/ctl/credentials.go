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
		setup: noFlags(withClient("ID|CLIENT-ID|NAME", func(s *session, c *client.Client, args []string) error {
			cred, err := c.SetCredentialDisabled(s.ctx, args[0], disable)
			if err != nil {
				return err
			}
			return s.done(cred, text, cred.Name)
		}))}
}

func credentialCommands() []command {
	return []command{
		listCommand("credentials list", "list the organization's API credentials (never their secrets)", credentialCols, (*client.Client).ListCredentials),
		{name: "credentials create", args: "--name NAME --role ROLE", summary: "create an API credential; prints its secret, shown only this once",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				name := fs.String("name", "", "the credential's name (required)")
				role := fs.String("role", "", "a role id or name holding api.access (required)")
				return withChecked("", func(*session, []string) (apiv1.CredentialBody, error) {
					if *name == "" || *role == "" {
						return apiv1.CredentialBody{}, usagef("--name and --role are required")
					}
					return apiv1.CredentialBody{Name: *name, Role: *role}, nil
				}, func(s *session, c *client.Client, _ []string, body apiv1.CredentialBody) error {
					nc, err := c.CreateCredential(s.ctx, body)
					if err != nil {
						return err
					}
					return s.done(nc, "Credential %s created with the role %s. Copy the secret now, it is not shown again:\nclient_id:     %s\nclient_secret: %s",
						nc.Name, nc.Role, nc.ClientID, nc.ClientSecret)
				})
			}},
		credentialSwitch(true),
		credentialSwitch(false),
		deleteCommand("credentials delete", "ID|CLIENT-ID|NAME", "delete an API credential (its tokens stop working)", "Credential %s deleted.", (*client.Client).DeleteCredential),
		{name: "sign-in-policy get", summary: "show the organization's sign-in policy",
			setup: noFlags(withClient("", func(s *session, c *client.Client, _ []string) error {
				p, err := c.SignInPolicy(s.ctx)
				if err != nil {
					return err
				}
				return s.done(p, "Require a second factor: %s", yesNo(*p.RequireSecondFactor))
			}))},
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
				return withChecked("", func(*session, []string) (bool, error) {
					if require == nil {
						return false, usagef("--require-second-factor=true|false is required")
					}
					return *require, nil
				}, func(s *session, c *client.Client, _ []string, require bool) error {
					p, err := c.SetSignInPolicy(s.ctx, require)
					if err != nil {
						return err
					}
					return s.done(p, "Require a second factor: %s", yesNo(*p.RequireSecondFactor))
				})
			}},
	}
}
