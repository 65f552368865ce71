package ctl

import (
	"flag"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

// ssoPairs are a provider's fields as a table shows them.
func ssoPairs(p apiv1.SSO) [][2]string {
	roles := make([]string, 0, len(p.RoleMap))
	for _, m := range p.RoleMap {
		roles = append(roles, m.Value+" = "+m.Role)
	}
	secret := "none"
	if p.HasClientSecret {
		secret = "stored"
	}
	return [][2]string{{"provider", p.ProviderName}, {"issuer", p.Issuer}, {"client id", p.ClientID}, {"client secret", secret},
		{"allowed domains", strings.Join(p.AllowedDomains, ", ")}, {"scopes", strings.Join(p.Scopes, ", ")}, {"role claim", p.RoleClaim},
		{"role map", strings.Join(roles, "; ")}, {"default role", p.DefaultRole}, {"just in time", yesNo(p.JustInTime)},
		{"provider verifies e-mail", yesNo(p.ProviderVerifiesEmail)},
		{"enabled", yesNo(p.Enabled)}, {"updated", when(&p.UpdatedAt) + " by " + p.UpdatedBy}}
}

func ssoCommands() []command {
	return []command{
		{name: "sso get", summary: "the organization's single sign-on provider, without its secret (patchd addition)",
			setup: noFlags(withClient("", func(s *session, c *client.Client, _ []string) error {
				p, err := c.SSO(s.ctx)
				if err != nil {
					return err
				}
				if s.format == "json" {
					return s.printJSON(p)
				}
				s.printPairs(ssoPairs(p))
				return nil
			}))},
		{name: "sso set", args: "-f FILE", summary: "set the single sign-on provider from an SSOBody JSON file (patchd addition)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				file := fs.String("f", "", "the provider as SSOBody JSON `FILE` (- for stdin); without clientSecret the stored secret is kept")
				return withChecked("", func(s *session, _ []string) (apiv1.SSOBody, error) {
					var body apiv1.SSOBody
					if *file == "" {
						return body, usagef("sso set needs -f FILE")
					}
					return body, readJSONFile(s, *file, &body)
				}, func(s *session, c *client.Client, _ []string, body apiv1.SSOBody) error {
					p, err := c.SetSSO(s.ctx, body)
					if err != nil {
						return err
					}
					return s.done(p, "Single sign-on with %s saved (%s).", p.ProviderName, map[bool]string{true: "enabled", false: "disabled"}[p.Enabled])
				})
			}},
		{name: "sso delete", args: "[--yes]", summary: "remove the single sign-on provider: users sign in with passwords only (patchd addition)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				yes := fs.Bool("yes", false, "do not ask for confirmation on a terminal")
				return withChecked("", confirmUnless(yes, "Remove single sign-on? Its users then sign in with passwords only."),
					func(s *session, c *client.Client, _ []string, _ struct{}) error {
						if err := c.DeleteSSO(s.ctx); err != nil {
							return err
						}
						return s.done(apiv1.OK{OK: true}, "Single sign-on removed.")
					})
			}},
	}
}
