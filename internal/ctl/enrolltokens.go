package ctl

import (
	"flag"
	"strconv"
	"time"

	"github.com/patchd/patchd/apiv1"
)

var enrollTokenCols = []column[apiv1.EnrollToken]{
	col("ID", func(t apiv1.EnrollToken) string { return t.ID }),
	col("CREATED", func(t apiv1.EnrollToken) string { return when(&t.CreatedAt) }),
	col("EXPIRES", func(t apiv1.EnrollToken) string { return when(t.ExpiresAt) }),
	numCol("USES", func(t apiv1.EnrollToken) string { return strconv.Itoa(t.Uses) }),
	statusCol("REVOKED", func(t apiv1.EnrollToken) string { return yesNo(t.Revoked) }),
}

var newEnrollTokenCols = []column[apiv1.NewEnrollToken]{
	col("ID", func(t apiv1.NewEnrollToken) string { return t.ID }),
	col("TOKEN", func(t apiv1.NewEnrollToken) string { return t.Token }),
	col("CA SHA256", func(t apiv1.NewEnrollToken) string { return t.CASHA256 }),
	col("EXPIRES", func(t apiv1.NewEnrollToken) string { return when(t.ExpiresAt) }),
}

func enrollTokenCommands() []command {
	return []command{
		{name: "enroll-tokens list", args: "", summary: "list enrollment tokens with their uses (never the tokens)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				return func(s *session, args []string) error {
					if err := needArgs(args); err != nil {
						return err
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					l, err := c.ListEnrollTokens(s.ctx)
					if err != nil {
						return err
					}
					return printList(s, enrollTokenCols, sliceSeq(l.Items))
				}
			}},
		{name: "enroll-tokens create", args: "[--expires 168h]",
			summary: "create an enrollment token, shown only now (<secret>.<CA SHA-256> when agents pin the server's CA)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				expires := fs.Duration("expires", 0, "how long the token is valid, in whole hours, e.g. 720h (0: it never expires)")
				return func(s *session, args []string) error {
					if err := needArgs(args); err != nil {
						return err
					}
					if *expires < 0 || *expires%time.Hour != 0 {
						return usagef("--expires must be a whole number of hours, 0 or more")
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					t, err := c.CreateEnrollToken(s.ctx, apiv1.EnrollTokenBody{ExpiresInHours: int(*expires / time.Hour)})
					if err != nil {
						return err
					}
					return printOne(s, t, newEnrollTokenCols, func(t apiv1.NewEnrollToken) [][2]string {
						return [][2]string{{"ID", t.ID}, {"Token", t.Token}, {"CA SHA-256", t.CASHA256}, {"Expires", when(t.ExpiresAt)}}
					})
				}
			}},
		{name: "enroll-tokens revoke", args: "ID", summary: "revoke an enrollment token (enrolled agents stay enrolled)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				return func(s *session, args []string) error {
					if err := needArgs(args, "ID"); err != nil {
						return err
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					if err := c.RevokeEnrollToken(s.ctx, args[0]); err != nil {
						return err
					}
					return s.done(apiv1.OK{OK: true}, "Enrollment token %s revoked.", args[0])
				}
			}},
	}
}
