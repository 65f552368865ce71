package ctl

import (
	"encoding/json"
	"flag"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

var auditCols = []column[apiv1.AuditEntry]{
	col("AT", func(e apiv1.AuditEntry) string { return when(&e.At) }),
	col("ACTOR", func(e apiv1.AuditEntry) string { return e.Actor }),
	col("ACTION", func(e apiv1.AuditEntry) string { return e.Action }),
	col("TARGET", func(e apiv1.AuditEntry) string { return e.TargetType }),
	col("TARGET ID", func(e apiv1.AuditEntry) string { return str(e.TargetID) }),
	col("SUMMARY", func(e apiv1.AuditEntry) string {
		if len(e.Summary) == 0 {
			return ""
		}
		b, _ := json.Marshal(e.Summary)
		return string(b)
	}),
	col("ID", func(e apiv1.AuditEntry) string { return e.ID }),
}

// auditTime reads --since or --until: an RFC 3339 date-time, a date
// (midnight UTC) or a duration back from now (24h).
func auditTime(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usagef("--%s %q: want a date-time (2026-11-24T09:00:00Z), a date (2026-11-24) or a duration back from now (24h)", name, v)
}

func auditCommands() []command {
	return []command{
		{name: "audit list", args: "[--actor A] [--action X] [--since T] [--until T] [--limit N]",
			summary: "list the Audit Trail, newest first",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var p pageFlags
				p.register(fs)
				actor := fs.String("actor", "", "only entries of `ACTOR`, e.g. api:deploy-bot or user:alice@example.com")
				action := fs.String("action", "", "only entries of `ACTION`, e.g. script.create")
				since := fs.String("since", "", "only entries at or after `T`: date-time, date or duration back from now (24h)")
				until := fs.String("until", "", "only entries before `T` (same forms as --since)")
				return withChecked("", func(*session, []string) (client.AuditQuery, error) {
					q := client.AuditQuery{Actor: *actor, Action: *action}
					if err := p.check(); err != nil {
						return q, err
					}
					now := time.Now()
					var err error
					if q.Since, err = auditTime("since", *since, now); err != nil {
						return q, err
					}
					q.Until, err = auditTime("until", *until, now)
					return q, err
				}, func(s *session, c *client.Client, _ []string, q client.AuditQuery) error {
					return printList(s, auditCols, walk(s, "audit entries", p, func(pq client.PageQuery) (apiv1.Page[apiv1.AuditEntry], error) {
						q.PageQuery = pq
						return c.ListAudit(s.ctx, q)
					}))
				})
			}},
	}
}
