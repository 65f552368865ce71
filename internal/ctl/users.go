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
	col("INVITED", func(u apiv1.User) string { return yesNo(u.InvitationExpiresAt != nil) }),
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

// createUserCommand is users create and users invite.
func createUserCommand(invite bool) command {
	name, args, summary := "users create", "--email E --role ROLE < password", "create a console user with a one-time password from standard input (changed at the first sign-in)"
	if invite {
		name, args, summary = "users invite", "--email E --role ROLE [--expires-hours N]", "invite a console user: prints a single-use link (shown once) through which the user sets its password"
	}
	return command{name: name, args: args, summary: summary,
		setup: func(fs *flag.FlagSet) func(*session, []string) error {
			email := fs.String("email", "", "the user's e-mail address (required)")
			role := fs.String("role", "", "the role's id or name (required; patchctl roles list)")
			var hours *int
			if invite {
				hours = fs.Int("expires-hours", 72, "how long the link works, 1-720 hours")
			}
			return withChecked("", func(s *session, _ []string) (apiv1.UserCreate, error) {
				if *email == "" || *role == "" {
					return apiv1.UserCreate{}, usagef("--email and --role are required")
				}
				body := apiv1.UserCreate{Email: *email, Role: *role, Invite: invite}
				if invite {
					if *hours < 1 || *hours > 720 {
						return body, usagef("--expires-hours must be 1 to 720")
					}
					body.ExpiresInHours = *hours
				} else {
					data, err := readInput(s, "-")
					if err != nil {
						return body, err
					}
					if body.Password = strings.TrimRight(string(data), "\r\n"); body.Password == "" {
						return body, usagef("give the one-time password on standard input")
					}
				}
				return body, nil
			}, func(s *session, c *client.Client, _ []string, body apiv1.UserCreate) error {
				u, err := c.CreateUser(s.ctx, body)
				if err != nil {
					return err
				}
				if u.Invitation != nil {
					return s.done(u, "Invited %s (%s). Send this link (it works once, until %s; it is not shown again):\n%s",
						u.Email, u.ID, u.Invitation.ExpiresAt.Format("2006-01-02 15:04 MST"), u.Invitation.URL)
				}
				return s.done(u, "Created %s (%s); the user chooses its own password at the first sign-in.", u.Email, u.ID)
			})
		}}
}

func userCommands() []command {
	return []command{
		listCommand("users list", "list the organization's console users", userCols, (*client.Client).ListUsers),
		createUserCommand(false),
		createUserCommand(true),
		deleteCommand("users delete", "ID", "delete a console user (its sessions end)", "User %s deleted.", (*client.Client).DeleteUser),
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
