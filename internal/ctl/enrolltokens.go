package ctl

import (
	"flag"
	"strconv"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
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
		listCommand("enroll-tokens list", "list enrollment tokens with their uses (never the tokens)", enrollTokenCols, (*client.Client).ListEnrollTokens),
		{name: "enroll-tokens create", args: "[--expires 168h]",
			summary: "create an enrollment token, shown only now (<secret>.<CA SHA-256> when agents pin the server's CA)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				expires := fs.Duration("expires", 0, "how long the token is valid, in whole hours, e.g. 720h (0: it never expires)")
				return withChecked("", func(*session, []string) (apiv1.EnrollTokenBody, error) {
					if *expires < 0 || *expires%time.Hour != 0 {
						return apiv1.EnrollTokenBody{}, usagef("--expires must be a whole number of hours, 0 or more")
					}
					return apiv1.EnrollTokenBody{ExpiresInHours: int(*expires / time.Hour)}, nil
				}, func(s *session, c *client.Client, _ []string, body apiv1.EnrollTokenBody) error {
					t, err := c.CreateEnrollToken(s.ctx, body)
					if err != nil {
						return err
					}
					return printOne(s, t, newEnrollTokenCols, func(t apiv1.NewEnrollToken) [][2]string {
						return [][2]string{{"ID", t.ID}, {"Token", t.Token}, {"CA SHA-256", t.CASHA256}, {"Expires", when(t.ExpiresAt)}}
					})
				})
			}},
		deleteCommand("enroll-tokens revoke", "ID", "revoke an enrollment token (enrolled agents stay enrolled)", "Enrollment token %s revoked.", (*client.Client).RevokeEnrollToken),
	}
}
