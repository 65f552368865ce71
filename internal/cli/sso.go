package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"strconv"
	"strings"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/sso"
	"github.com/patchd/patchd/internal/store"
)

// listFlag is a flag given any number of times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// ssoAdmin defines the flags and the action of patchd admin sso
// set|show|delete: an organization's OpenID Connect provider (docs/sso.md).
// set changes the flags it is given and keeps the rest; the client secret
// is read from standard input (--client-secret-stdin), never printed.
func ssoAdmin(ctx context.Context, verb string, stdio IO) (func(fs *flag.FlagSet), func(s *store.Store) (any, error), error) {
	var org, providerName, issuer, clientID, domains, scopes, roleClaim, defaultRole, jit, enabled, verifies, baseURL string
	var roleMap listFlag
	var secretStdin bool
	var flags *flag.FlagSet
	define := func(fs *flag.FlagSet) {
		flags = fs
		fs.StringVar(&org, "org", "", "organization id or name")
		if verb == "delete" {
			return
		}
		fs.StringVar(&baseURL, "base-url", config.Env("PATCHD_BASE_URL", ""), "the server's public address, to print the redirect URI and the sign-in link (env PATCHD_BASE_URL)")
		if verb != "set" {
			return
		}
		fs.StringVar(&providerName, "provider-name", "", "the name on the sign-in button (Sign in with NAME)")
		fs.StringVar(&issuer, "issuer", "", "the provider's issuer URL (https://…)")
		fs.StringVar(&clientID, "client-id", "", "the client (application) id the provider made for patchd")
		fs.BoolVar(&secretStdin, "client-secret-stdin", false, "read the client secret from standard input (one line)")
		fs.StringVar(&domains, "allowed-domains", "", "comma-separated e-mail domains whose users may sign in")
		fs.StringVar(&scopes, "scopes", "", "extra scopes beyond openid email profile, comma- or space-separated (for example groups)")
		fs.StringVar(&roleClaim, "role-claim", "", "the claim the role mappings read (groups, roles, realm_access.roles)")
		fs.Var(&roleMap, "role-map", "VALUE=ROLE: users whose role claim holds VALUE get ROLE (repeat; the first match wins; --role-map '' clears)")
		fs.StringVar(&defaultRole, "default-role", "", "role of a user no mapping matches ('' for none: such a user may not sign in)")
		fs.StringVar(&jit, "just-in-time", "", "true: create a user at the first sign-in; false: only users an administrator added")
		fs.StringVar(&enabled, "enabled", "", "true or false (saving an enabled provider reads its discovery document)")
		fs.StringVar(&verifies, "provider-verifies-email", "", "true: the provider verifies every address it gives, so an ID token without email_verified counts as verified (Entra ID); false: such a token is unverified")
	}
	do := func(s *store.Store) (any, error) {
		switch verb {
		case "show":
			out, err := admin.ShowSSO(ctx, s, org)
			admin.SSOLinks(&out, strings.TrimRight(baseURL, "/"))
			return out, err
		case "delete":
			return admin.DeleteSSO(ctx, s, admin.ActorCLI, org)
		}
		in := sso.Settings{Enabled: true, RoleClaim: "groups"}
		o, err := s.FindOrg(ctx, org)
		if err != nil {
			return nil, err
		}
		if cur, err := s.GetSSOConfig(ctx, o.ID); err == nil {
			in = admin.SSOSettingsOf(cur)
		} else if !errors.Is(err, dberr.ErrNotFound) {
			return nil, err
		}
		var problem error
		flags.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "provider-name":
				in.ProviderName = providerName
			case "issuer":
				in.Issuer = issuer
			case "client-id":
				in.ClientID = clientID
			case "allowed-domains":
				in.AllowedDomains = splitFlag(domains)
			case "scopes":
				in.Scopes = splitFlag(scopes)
			case "role-claim":
				in.RoleClaim = roleClaim
			case "default-role":
				in.DefaultRole = defaultRole
			case "role-map":
				in.RoleMap = nil
				for _, m := range roleMap {
					if strings.TrimSpace(m) == "" {
						continue
					}
					value, role, ok := strings.Cut(m, "=")
					if !ok {
						problem = usagef("--role-map %q: give VALUE=ROLE", m)
					}
					in.RoleMap = append(in.RoleMap, sso.Mapping{Value: value, Role: role})
				}
			case "just-in-time", "enabled", "provider-verifies-email":
				on, err := strconv.ParseBool(f.Value.String())
				if err != nil {
					problem = usagef("--%s must be true or false", f.Name)
				}
				switch f.Name {
				case "enabled":
					in.Enabled = on
				case "just-in-time":
					in.JustInTime = on
				default:
					in.ProviderVerifiesEmail = on
				}
			}
		})
		if problem != nil {
			return nil, problem
		}
		if secretStdin {
			line, err := bufio.NewReader(stdio.In).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			secret := strings.TrimRight(line, "\r\n")
			if secret == "" {
				return nil, usagef("--client-secret-stdin: standard input held no secret")
			}
			in.ClientSecret = &secret
		}
		out, err := admin.SetSSO(ctx, s, admin.ActorCLI, o.ID, in)
		admin.SSOLinks(&out, strings.TrimRight(baseURL, "/"))
		return out, err
	}
	return define, do, nil
}

func splitFlag(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}
