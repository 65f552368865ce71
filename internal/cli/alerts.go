package cli

import (
	"context"
	"flag"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/store"
)

// alertAdmin defines the flags and the action of patchd admin alert
// list|events|failed|resend|update|enable|disable|delete|test. Rules are created through
// the API (POST /api/v1/alerts); the webhook secret is never printed.
func alertAdmin(ctx context.Context, verb string) (func(fs *flag.FlagSet), func(s *store.Store) (any, error), error) {
	var org, id, name, emailTo, webhook, secret, reportKey, delivery string
	var threshold, limit, retryMinutes int
	var flags *flag.FlagSet
	define := func(fs *flag.FlagSet) {
		flags = fs
		fs.StringVar(&org, "org", "", "organization id or name")
		if verb != "list" {
			fs.StringVar(&id, "id", "", "alert rule id")
		}
		switch verb {
		case "update":
			fs.StringVar(&name, "name", "", "rule name")
			fs.IntVar(&threshold, "threshold", 0, "threshold (its meaning depends on the trigger: docs/alerts.md)")
			fs.StringVar(&emailTo, "email-to", "", "comma-separated recipients; empty removes e-mail delivery")
			fs.StringVar(&webhook, "webhook-url", "", "HTTPS webhook URL; empty removes webhook delivery")
			fs.StringVar(&secret, "webhook-secret", "", "secret the webhook body is signed with; empty removes it")
			fs.StringVar(&reportKey, "report-key", "", "report watched by REPORT_ROWS")
			fs.IntVar(&retryMinutes, "retry-minutes", 0, "minutes a failed webhook is tried again with back-off (0-1440; 0: one try, the spec's rule; a patchd addition)")
		case "resend":
			fs.StringVar(&delivery, "delivery", "", "failed delivery id (patchd admin alert failed lists them)")
		case "events", "failed":
			fs.IntVar(&limit, "limit", 50, "how many events, newest first")
		}
	}
	entry := func(o store.Org, action string) *store.AuditEntry {
		return &store.AuditEntry{OrgID: o.ID, Actor: admin.ActorCLI, Action: action, TargetType: "alert"}
	}
	do := func(s *store.Store) (any, error) {
		o, err := s.FindOrg(ctx, org)
		if err != nil {
			return nil, err
		}
		if verb != "list" && id == "" {
			return nil, usagef("--id is required")
		}
		now := time.Now()
		switch verb {
		case "list":
			rules, err := s.ListAlertRules(ctx, o.ID)
			return map[string]any{"items": rules, "total": len(rules)}, err
		case "events":
			if limit < 1 {
				return nil, usagef("--limit must be at least 1")
			}
			if _, err := s.GetAlertRule(ctx, o.ID, id); err != nil {
				return nil, err
			}
			evs, err := s.ListAlertEvents(ctx, o.ID, id, limit)
			return map[string]any{"items": evs, "total": len(evs)}, err
		case "failed":
			if limit < 1 {
				return nil, usagef("--limit must be at least 1")
			}
			if _, err := s.GetAlertRule(ctx, o.ID, id); err != nil {
				return nil, err
			}
			failed, err := s.ListFailedDeliveries(ctx, o.ID, id, limit)
			return map[string]any{"items": failed, "total": len(failed)}, err
		case "resend":
			if delivery == "" {
				return nil, usagef("--delivery is required")
			}
			newID, err := s.ResendDelivery(ctx, entry(o, "alert.resend"), o.ID, id, delivery, now)
			if err != nil {
				return nil, err
			}
			return map[string]any{"id": id, "delivery": delivery, "queued": newID}, nil
		case "test":
			return s.TestAlertRule(ctx, o.ID, id, now)
		case "delete":
			if err := s.DeleteAlertRule(ctx, entry(o, "alert.delete"), o.ID, id); err != nil {
				return nil, err
			}
			return map[string]any{"id": id, "deleted": true}, nil
		}
		r, err := s.GetAlertRule(ctx, o.ID, id)
		if err != nil {
			return nil, err
		}
		in := r.Rule()
		var enabled *bool
		action := "alert.update"
		switch verb {
		case "enable", "disable":
			on := verb == "enable"
			enabled, action = &on, "alert."+verb
		case "update":
			flags.Visit(func(f *flag.Flag) {
				switch f.Name {
				case "name":
					in.Name = name
				case "threshold":
					in.Threshold = &threshold
				case "email-to":
					in.EmailTo = emailTo
				case "webhook-url":
					in.WebhookURL = webhook
				case "webhook-secret":
					in.WebhookSecret = secret
				case "report-key":
					in.ReportKey = reportKey
				case "retry-minutes":
					in.WebhookRetryMinutes = retryMinutes
				}
			})
		}
		if err := in.Check(); err != nil {
			return nil, usagef("%v", err)
		}
		return s.UpdateAlertRule(ctx, entry(o, action), o.ID, id, in, enabled, now)
	}
	switch verb {
	case "list", "events", "failed", "resend", "update", "enable", "disable", "delete", "test":
		return define, do, nil
	}
	return nil, nil, usagef("unknown admin command %q", "alert "+verb)
}
