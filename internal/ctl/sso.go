package ctl

import (
	"flag"
	"strings"

	"github.com/patchd/patchd/apiv1"
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
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				return func(s *session, args []string) error {
					if err := needArgs(args); err != nil {
						return err
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					p, err := c.SSO(s.ctx)
					if err != nil {
						return err
					}
					if s.format == "json" {
						return s.printJSON(p)
					}
					s.printPairs(ssoPairs(p))
					return nil
				}
			}},
		{name: "sso set", args: "-f FILE", summary: "set the single sign-on provider from an SSOBody JSON file (patchd addition)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				file := fs.String("f", "", "the provider as SSOBody JSON `FILE` (- for stdin); without clientSecret the stored secret is kept")
				return func(s *session, args []string) error {
					if err := needArgs(args); err != nil {
						return err
					}
					if *file == "" {
						return usagef("sso set needs -f FILE")
					}
					var body apiv1.SSOBody
					if err := readJSONFile(s, *file, &body); err != nil {
						return err
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					p, err := c.SetSSO(s.ctx, body)
					if err != nil {
						return err
					}
					return s.done(p, "Single sign-on with %s saved (%s).", p.ProviderName, map[bool]string{true: "enabled", false: "disabled"}[p.Enabled])
				}
			}},
		{name: "sso delete", args: "[--yes]", summary: "remove the single sign-on provider: users sign in with passwords only (patchd addition)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				yes := fs.Bool("yes", false, "do not ask for confirmation on a terminal")
				return func(s *session, args []string) error {
					if err := needArgs(args); err != nil {
						return err
					}
					if !*yes && s.io.IsTerminal(s.io.Stdin) {
						ok, err := s.confirm("Remove single sign-on? Its users then sign in with passwords only.")
						if err != nil || !ok {
							return err
						}
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					if err := c.DeleteSSO(s.ctx); err != nil {
						return err
					}
					return s.done(apiv1.OK{OK: true}, "Single sign-on removed.")
				}
			}},
	}
}
