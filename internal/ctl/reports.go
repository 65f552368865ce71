package ctl

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

var reportMetaCols = []column[apiv1.ReportMeta]{
	col("KEY", func(r apiv1.ReportMeta) string { return r.Key }),
	col("CATEGORY", func(r apiv1.ReportMeta) string { return r.Category }),
	col("TITLE", func(r apiv1.ReportMeta) string { return r.Title }),
	col("DESCRIPTION", func(r apiv1.ReportMeta) string { return r.Description }),
}

var failedDeliveryCols = []column[apiv1.FailedDelivery]{
	col("ID", func(f apiv1.FailedDelivery) string { return f.ID }),
	col("FAILED", func(f apiv1.FailedDelivery) string { return f.FailedAt.UTC().Format(time.RFC3339) }),
	col("CHANNEL", func(f apiv1.FailedDelivery) string { return f.Channel }),
	col("EVENT", func(f apiv1.FailedDelivery) string { return f.Title }),
	numCol("ATTEMPTS", func(f apiv1.FailedDelivery) string { return strconv.Itoa(f.Attempts) }),
	col("ERROR", func(f apiv1.FailedDelivery) string { return f.Error }),
}

var alertCols = []column[apiv1.AlertRule]{
	col("ID", func(a apiv1.AlertRule) string { return a.ID }),
	col("NAME", func(a apiv1.AlertRule) string { return a.Name }),
	col("TRIGGER", func(a apiv1.AlertRule) string { return a.Trigger }),
	numCol("THRESHOLD", func(a apiv1.AlertRule) string { return strconv.Itoa(a.Threshold) }),
	statusCol("ENABLED", func(a apiv1.AlertRule) string { return yesNo(a.Enabled) }),
	col("EMAIL TO", func(a apiv1.AlertRule) string { return str(a.EmailTo) }),
	col("WEBHOOK", func(a apiv1.AlertRule) string { return str(a.WebhookURL) }),
	numCol("RETRY MIN", func(a apiv1.AlertRule) string { return strconv.Itoa(a.WebhookRetryMinutes) }),
	col("REPORT", func(a apiv1.AlertRule) string { return str(a.ReportKey) }),
	numCol("EVENTS", func(a apiv1.AlertRule) string { return strconv.Itoa(a.Events) }),
}

var alertTriggers = []string{"GROUP_UPTIME", "NEW_ENDPOINT", "ENDPOINT_REENROLLED", "AGENT_UPDATE_FAILED", "CRITICAL_VULN", "MISSING_CRITICAL_UPDATE", "ENDPOINT_OFFLINE", "REBOOT_REQUIRED", "REPORT_ROWS"}

// cellText renders a report value: JSON numbers without exponent, null as
// empty.
func cellText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

func reportCommands() []command {
	return []command{
		listCommand("reports list", "list the built-in reports", reportMetaCols, (*client.Client).ReportCatalog),
		{name: "reports get", args: "KEY [--csv]", summary: "show a report; --csv (or -o csv) streams the server's CSV",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				asCSV := fs.Bool("csv", false, "download the report as CSV, as the server writes it")
				return withClient("KEY", func(s *session, c *client.Client, args []string) error {
					if *asCSV || s.format == "csv" {
						resp, err := c.ReportCSV(s.ctx, args[0])
						if err != nil {
							return err
						}
						defer resp.Body.Close()
						_, err = io.Copy(s.io.Stdout, resp.Body)
						return err
					}
					r, err := c.Report(s.ctx, args[0])
					if err != nil {
						return err
					}
					return printReport(s, r)
				})
			}},
	}
}

// printReport shows a report as JSON or a table; CSV is the server's own
// (reports get --csv or -o csv streams it).
func printReport(s *session, r apiv1.Report) error {
	if s.format == "json" {
		return s.printJSON(r)
	}
	fmt.Fprintf(s.io.Stdout, "%s (%d rows", s.paint(bold, r.Title), r.Total)
	if r.CollectedAt != nil {
		fmt.Fprintf(s.io.Stdout, ", collected %s", when(r.CollectedAt))
	}
	fmt.Fprint(s.io.Stdout, ")\n\n")
	t := s.newTable(len(r.Columns))
	copy(t.head, r.Columns)
	for _, row := range r.Rows {
		cells := make([]cell, len(r.Columns))
		for i := range cells {
			if i < len(row) {
				cells[i] = cell{text: cellText(row[i])}
			}
		}
		t.rows = append(t.rows, cells)
	}
	t.write(s.io.Stdout)
	return nil
}

func alertCommands() []command {
	return []command{
		listCommand("alerts list", "list alert rules", alertCols, (*client.Client).ListAlertRules),
		{name: "alerts failed", args: "RULE_ID", summary: "list an alert rule's failed deliveries with their error",
			setup: noFlags(withClient("RULE_ID", func(s *session, c *client.Client, args []string) error {
				l, err := c.FailedDeliveries(s.ctx, args[0])
				if err != nil {
					return err
				}
				return printList(s, failedDeliveryCols, sliceSeq(l.Items))
			}))},
		{name: "alerts resend", args: "RULE_ID DELIVERY_ID", summary: "send a failed delivery's event again (audited)",
			setup: noFlags(withClient("RULE_ID DELIVERY_ID", func(s *session, c *client.Client, args []string) error {
				res, err := c.ResendDelivery(s.ctx, args[0], args[1])
				if err != nil {
					return err
				}
				return s.done(res, "Delivery queued again: %s", res.Delivery)
			}))},
		{name: "alerts create", args: "--name NAME --trigger TRIGGER [--threshold N] [--email-to A,B] [--webhook-url URL [--webhook-secret-stdin] [--retry-minutes M]] [--report-key KEY] [-f rule.json]",
			summary: "create an alert rule delivered by email and/or HTTPS webhook",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				file := fs.String("f", "", "AlertRuleBody JSON `FILE` (- for stdin); flags override its fields")
				name := fs.String("name", "", "rule `NAME`")
				trigger := fs.String("trigger", "", "`TRIGGER`: GROUP_UPTIME, NEW_ENDPOINT, ENDPOINT_REENROLLED, AGENT_UPDATE_FAILED, CRITICAL_VULN, MISSING_CRITICAL_UPDATE, ENDPOINT_OFFLINE, REBOOT_REQUIRED or REPORT_ROWS")
				threshold := fs.Int("threshold", 0, "trigger threshold `N`")
				emailTo := fs.String("email-to", "", "comma-separated `RECIPIENTS`")
				webhookURL := fs.String("webhook-url", "", "HTTPS webhook `URL`")
				secretStdin := fs.Bool("webhook-secret-stdin", false, "read the webhook signing secret from the first line of stdin")
				reportKey := fs.String("report-key", "", "REPORT_ROWS: the report `KEY`")
				retry := fs.Int("retry-minutes", 0, "retry failed webhooks for `M` minutes with back-off (0-1440; default 0: one try, the spec's rule; a patchd addition)")
				return withChecked("", func(s *session, _ []string) (apiv1.AlertRuleBody, error) {
					var body apiv1.AlertRuleBody
					if *file != "" {
						if *file == "-" && *secretStdin {
							return body, usagef("-f - and --webhook-secret-stdin both read stdin")
						}
						if err := readJSONFile(s, *file, &body); err != nil {
							return body, err
						}
					}
					var setErr error
					fs.Visit(func(f *flag.Flag) {
						switch f.Name {
						case "name":
							body.Name = *name
						case "trigger":
							body.Trigger = *trigger
						case "threshold":
							body.Threshold = threshold
						case "email-to":
							body.EmailTo = emailTo
						case "webhook-url":
							body.WebhookURL = webhookURL
						case "report-key":
							body.ReportKey = reportKey
						case "retry-minutes":
							body.WebhookRetryMinutes = retry
						case "webhook-secret-stdin":
							secret, err := readSecretLine(s, "--webhook-secret-stdin")
							body.WebhookSecret, setErr = &secret, err
						}
					})
					if setErr != nil {
						return body, setErr
					}
					if body.Name == "" || body.Trigger == "" {
						return body, usagef("an alert rule needs --name and --trigger")
					}
					return body, oneOf("trigger", body.Trigger, alertTriggers)
				}, func(s *session, c *client.Client, _ []string, body apiv1.AlertRuleBody) error {
					res, err := c.CreateAlertRule(s.ctx, body)
					if err != nil {
						return err
					}
					return s.done(res, "Alert rule %q created: %s", res.Rule.Name, res.Rule.ID)
				})
			}},
	}
}
