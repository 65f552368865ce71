package ctl

import (
	"flag"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

// People: patchd's additions under /api/v1/users (roles holding every
// permission).

var userCols = []column[apiv1.User]{
	col("ID", func(u apiv1.User) string { return u.ID }),
	col("EMAIL", func(u apiv1.User) string { return u.Email }),
	col("ROLE", func(u apiv1.User) string { return u.Role }),
	col("DISABLED", func(u apiv1.User) string { return yesNo(u.Disabled) }),
	col("SECOND-FACTOR", func(u apiv1.User) string { return yesNo(u.SecondFactor) }),
	col("MUST-CHANGE-PASSWORD", func(u apiv1.User) string { return yesNo(u.MustChangePassword) }),
	col("INSTANCE-OPERATOR", func(u apiv1.User) string { return yesNo(u.InstanceOperator) }),
}

// userCommand is a users command on one user ID.
func userCommand(name, args, summary string, flags func(fs *flag.FlagSet) func(s *session, c *client.Client, id string, rest []string) (apiv1.User, error), text string) command {
	return command{name: name, args: args, summary: summary,
		setup: func(fs *flag.FlagSet) func(*session, []string) error {
			run := flags(fs)
			return func(s *session, args []string) error {
				if len(args) < 1 {
					return usagef("want the user's ID (patchctl users list)")
				}
				c, err := s.client()
				if err != nil {
					return err
				}
				u, err := run(s, c, args[0], args[1:])
				if err != nil {
					return err
				}
				return s.done(u, text, u.Email)
			}
		}}
}

func userCommands() []command {
	return []command{
		listCommand("users list", "list the organization's console users", userCols, (*client.Client).ListUsers),
		userCommand("users role", "ID ROLE", "give a user another role (id or name)", func(fs *flag.FlagSet) func(*session, *client.Client, string, []string) (apiv1.User, error) {
			return func(s *session, c *client.Client, id string, rest []string) (apiv1.User, error) {
				if err := needArgs(rest, "ROLE"); err != nil {
					return apiv1.User{}, err
				}
				return c.PatchUser(s.ctx, id, apiv1.UserPatch{Role: &rest[0]})
			}
		}, "%s has the new role."),
		userCommand("users disable", "ID", "disable a user (its sessions end)", func(fs *flag.FlagSet) func(*session, *client.Client, string, []string) (apiv1.User, error) {
			return func(s *session, c *client.Client, id string, rest []string) (apiv1.User, error) {
				if err := needArgs(rest); err != nil {
					return apiv1.User{}, err
				}
				yes := true
				return c.PatchUser(s.ctx, id, apiv1.UserPatch{Disabled: &yes})
			}
		}, "%s is disabled."),
		userCommand("users enable", "ID", "enable a disabled user", func(fs *flag.FlagSet) func(*session, *client.Client, string, []string) (apiv1.User, error) {
			return func(s *session, c *client.Client, id string, rest []string) (apiv1.User, error) {
				if err := needArgs(rest); err != nil {
					return apiv1.User{}, err
				}
				no := false
				return c.PatchUser(s.ctx, id, apiv1.UserPatch{Disabled: &no})
			}
		}, "%s is enabled."),
		userCommand("users reset-password", "ID [--must-change=false] < password", "set a user's password from standard input (one-time by default); its sessions end",
			func(fs *flag.FlagSet) func(*session, *client.Client, string, []string) (apiv1.User, error) {
				mustChange := fs.Bool("must-change", true, "a one-time password: the user chooses a new one at the next sign-in")
				return func(s *session, c *client.Client, id string, rest []string) (apiv1.User, error) {
					if err := needArgs(rest); err != nil {
						return apiv1.User{}, err
					}
					data, err := readInput(s, "-")
					if err != nil {
						return apiv1.User{}, err
					}
					pw := strings.TrimRight(string(data), "\r\n")
					if pw == "" {
						return apiv1.User{}, usagef("give the new password on standard input")
					}
					return c.ResetUserPassword(s.ctx, id, apiv1.PasswordReset{Password: pw, MustChange: mustChange})
				}
			}, "The password of %s is reset."),
		userCommand("users reset-mfa", "ID", "remove a user's second factors: authenticator app, recovery codes and passkeys (a lost phone or key)", func(fs *flag.FlagSet) func(*session, *client.Client, string, []string) (apiv1.User, error) {
			return func(s *session, c *client.Client, id string, rest []string) (apiv1.User, error) {
				if err := needArgs(rest); err != nil {
					return apiv1.User{}, err
				}
				return c.ResetUserSecondFactor(s.ctx, id)
			}
		}, "The second factor of %s is removed."),
	}
}
