package ctl

import (
	"flag"
	"strconv"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

func alertPairs(a apiv1.AlertRule) [][2]string {
	return [][2]string{{"ID", a.ID}, {"Name", a.Name}, {"Trigger", a.Trigger}, {"Threshold", strconv.Itoa(a.Threshold)},
		{"Enabled", yesNo(a.Enabled)}, {"Email to", str(a.EmailTo)}, {"Webhook", str(a.WebhookURL)},
		{"Signed", yesNo(a.HasWebhookSecret)}, {"Report", str(a.ReportKey)}, {"Events", strconv.Itoa(a.Events)}, {"Created", when(a.CreatedAt)}}
}

var alertEventCols = []column[apiv1.AlertEvent]{
	col("RAISED", func(e apiv1.AlertEvent) string { return when(&e.RaisedAt) }),
	col("EVENT", func(e apiv1.AlertEvent) string { return e.Event }),
	col("SEVERITY", func(e apiv1.AlertEvent) string { return e.Severity }),
	col("TITLE", func(e apiv1.AlertEvent) string { return e.Title }),
	col("EMAIL", func(e apiv1.AlertEvent) string { return str(e.EmailOutcome) }),
	col("WEBHOOK", func(e apiv1.AlertEvent) string { return str(e.WebhookOutcome) }),
	col("ENDPOINT ID", func(e apiv1.AlertEvent) string { return str(e.EndpointID) }),
	col("ID", func(e apiv1.AlertEvent) string { return e.ID }),
}

// alertOpCommands are the commands on one alert rule (patchd additions of
// the API): get, update, delete, enable, disable, test, events.
func alertOpCommands() []command {
	oneRule := func(name, summary string, do func(s *session, c *client.Client, id string) error) command {
		return command{name: name, args: "RULE_ID", summary: summary,
			setup: noFlags(withClient("RULE_ID", func(s *session, c *client.Client, args []string) error {
				return do(s, c, args[0])
			}))}
	}
	switchRule := func(on bool) func(s *session, c *client.Client, id string) error {
		return func(s *session, c *client.Client, id string) error {
			r, err := c.SetAlertRuleEnabled(s.ctx, id, on)
			if err != nil {
				return err
			}
			if on {
				return s.done(r, "Alert rule %q enabled.", r.Name)
			}
			return s.done(r, "Alert rule %q disabled: it raises no events until enabled again.", r.Name)
		}
	}
	return []command{
		getCommand("alerts get", "RULE_ID", "show an alert rule", (*client.Client).GetAlertRule, alertCols, alertPairs),
		{name: "alerts update", args: "RULE_ID [--name NAME] [--threshold N] [--email-to A,B] [--webhook-url URL] [--webhook-secret-stdin | --no-webhook-secret] [--report-key KEY]",
			summary: "change the given settings of an alert rule (an empty value removes --email-to, --webhook-url or --report-key)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				name := fs.String("name", "", "rule `NAME`")
				threshold := fs.Int("threshold", 0, "trigger threshold `N`")
				emailTo := fs.String("email-to", "", "comma-separated `RECIPIENTS` (\"\" removes)")
				webhookURL := fs.String("webhook-url", "", "HTTPS webhook `URL` (\"\" removes)")
				secretStdin := fs.Bool("webhook-secret-stdin", false, "read a new webhook signing secret from the first line of stdin")
				noSecret := fs.Bool("no-webhook-secret", false, "send webhook deliveries unsigned")
				reportKey := fs.String("report-key", "", "REPORT_ROWS: the report `KEY`")
				return withChecked("RULE_ID", func(s *session, _ []string) (apiv1.AlertRulePatch, error) {
					var body apiv1.AlertRulePatch
					if *secretStdin && *noSecret {
						return body, usagef("--webhook-secret-stdin and --no-webhook-secret contradict each other")
					}
					var setErr error
					changed := false
					fs.Visit(func(f *flag.Flag) {
						changed = true
						switch f.Name {
						case "name":
							body.Name = name
						case "threshold":
							body.Threshold = threshold
						case "email-to":
							body.EmailTo = emailTo
						case "webhook-url":
							body.WebhookURL = webhookURL
						case "report-key":
							body.ReportKey = reportKey
						case "no-webhook-secret":
							empty := ""
							body.WebhookSecret = &empty
						case "webhook-secret-stdin":
							secret, err := readSecretLine(s, "--webhook-secret-stdin")
							body.WebhookSecret, setErr = &secret, err
						}
					})
					if setErr != nil {
						return body, setErr
					}
					if !changed {
						return body, usagef("nothing to change: give at least one of --name, --threshold, --email-to, --webhook-url, --webhook-secret-stdin, --no-webhook-secret, --report-key")
					}
					return body, nil
				}, func(s *session, c *client.Client, args []string, body apiv1.AlertRulePatch) error {
					r, err := c.UpdateAlertRule(s.ctx, args[0], body)
					if err != nil {
						return err
					}
					return s.done(r, "Alert rule %q updated.", r.Name)
				})
			}},
		deleteCommand("alerts delete", "RULE_ID", "delete an alert rule with its events", "Alert rule %s deleted with its events.", (*client.Client).DeleteAlertRule),
		oneRule("alerts enable", "enable an alert rule", switchRule(true)),
		oneRule("alerts disable", "disable an alert rule: it raises no events until enabled again", switchRule(false)),
		oneRule("alerts test", "raise a TEST event of an alert rule, delivered like any other", func(s *session, c *client.Client, id string) error {
			ev, err := c.TestAlertRule(s.ctx, id)
			if err != nil {
				return err
			}
			return s.done(ev, "Test event %s raised: alerts events %s shows its delivery results.", ev.ID, id)
		}),
		{name: "alerts events", args: "RULE_ID [--limit N]", summary: "list an alert rule's events, newest first, with their delivery results",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var p pageFlags
				p.register(fs)
				return withChecked("RULE_ID", func(*session, []string) (struct{}, error) {
					return struct{}{}, p.check()
				}, func(s *session, c *client.Client, args []string, _ struct{}) error {
					return printList(s, alertEventCols, walk(s, "alert events", p, func(q client.PageQuery) (apiv1.Page[apiv1.AlertEvent], error) {
						return c.ListAlertEvents(s.ctx, args[0], q)
					}))
				})
			}},
	}
}
