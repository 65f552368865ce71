package ctl

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

// The organization's policies and decisions about CVEs (patchd additions):
// approvals policy, vulns exceptions, vulns accept, vulns revoke, vulns
// policy.

var approvalRuleCols = []column[apiv1.ApprovalPolicyRule]{
	col("SEVERITY", func(r apiv1.ApprovalPolicyRule) string { return r.Severity }),
	col("SOURCE", func(r apiv1.ApprovalPolicyRule) string { return r.Source }),
	numCol("DELAY DAYS", func(r apiv1.ApprovalPolicyRule) string { return strconv.Itoa(r.DelayDays) }),
}

// printApprovalPolicy writes the policy: JSON as the server sent it, CSV
// as the rules, a table as declineOlder and the rules.
func printApprovalPolicy(s *session, p apiv1.ApprovalPolicy) error {
	switch s.format {
	case "json":
		return s.printJSON(p)
	case "csv":
		return printList(s, approvalRuleCols, sliceSeq(p.Rules))
	}
	s.printPairs([][2]string{{"Decline older", yesNo(p.DeclineOlder)}, {"Rules", strconv.Itoa(len(p.Rules))}})
	if len(p.Rules) == 0 {
		_, err := fmt.Fprintln(s.io.Stdout, "\nNo rule: updates are approved by hand only.")
		return err
	}
	fmt.Fprintln(s.io.Stdout)
	return printList(s, approvalRuleCols, sliceSeq(p.Rules))
}

// parseRule reads SEVERITY:SOURCE[:DAYS] (days 0 when absent); the server
// checks the values.
func parseRule(v string, withDays bool) (apiv1.ApprovalPolicyRule, error) {
	parts := strings.Split(v, ":")
	var r apiv1.ApprovalPolicyRule
	switch {
	case withDays && (len(parts) == 2 || len(parts) == 3), !withDays && len(parts) == 2:
	default:
		if withDays {
			return r, usagef("--rule %q: want SEVERITY:SOURCE[:DAYS], e.g. Critical:OS:0", v)
		}
		return r, usagef("--remove %q: want SEVERITY:SOURCE, e.g. Critical:OS", v)
	}
	r.Severity, r.Source = parts[0], parts[1]
	if len(parts) == 3 {
		d, err := strconv.Atoi(parts[2])
		if err != nil {
			return r, usagef("--rule %q: the delay %q is not a number of days", v, parts[2])
		}
		r.DelayDays = d
	}
	return r, nil
}

// sameRule compares severity and source as the server does (case aside).
func sameRule(a, b apiv1.ApprovalPolicyRule) bool {
	norm := func(s string) string {
		s = strings.ToUpper(strings.TrimSpace(s))
		if s == "*" {
			return "ANY"
		}
		return strings.ReplaceAll(s, "-", "_")
	}
	return norm(a.Severity) == norm(b.Severity) && norm(a.Source) == norm(b.Source)
}

var exceptionCols = []column[apiv1.VulnException]{
	col("CVE", func(x apiv1.VulnException) string { return x.CVEID }),
	col("KIND", func(x apiv1.VulnException) string { return x.Kind }),
	col("ACTIVE", func(x apiv1.VulnException) string { return yesNo(x.Active) }),
	col("EXPIRES", func(x apiv1.VulnException) string {
		if x.ExpiresAt == nil {
			return "never"
		}
		return when(x.ExpiresAt)
	}),
	numCol("ENDPOINTS", func(x apiv1.VulnException) string { return strconv.Itoa(x.Endpoints) }),
	col("BY", func(x apiv1.VulnException) string { return x.CreatedBy }),
	col("REASON", func(x apiv1.VulnException) string { return x.Reason }),
}

func remediationPairs(p apiv1.RemediationPolicy) [][2]string {
	days := func(n int) string { return strconv.Itoa(n) + " days" }
	return [][2]string{{"Critical", days(p.CriticalDays)}, {"High", days(p.HighDays)}, {"Medium", days(p.MediumDays)}, {"Low", days(p.LowDays)}}
}

var remediationCols = []column[apiv1.RemediationPolicy]{
	numCol("CRITICAL DAYS", func(p apiv1.RemediationPolicy) string { return strconv.Itoa(p.CriticalDays) }),
	numCol("HIGH DAYS", func(p apiv1.RemediationPolicy) string { return strconv.Itoa(p.HighDays) }),
	numCol("MEDIUM DAYS", func(p apiv1.RemediationPolicy) string { return strconv.Itoa(p.MediumDays) }),
	numCol("LOW DAYS", func(p apiv1.RemediationPolicy) string { return strconv.Itoa(p.LowDays) }),
}

func policyCommands() []command {
	return []command{
		{name: "approvals policy", args: "get | set [--rule SEVERITY:SOURCE:DAYS]… [--remove SEVERITY:SOURCE]… [--decline-older true|false] [--clear] [-f policy.json]",
			summary: "read or change the automatic approval policy (patchd addition)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var add, remove listFlag
				fs.Var(&add, "rule", "add or replace the rule `SEVERITY:SOURCE:DAYS` (repeatable), e.g. Critical:OS:0 or ANY:THIRD_PARTY:7")
				fs.Var(&remove, "remove", "remove the rule of `SEVERITY:SOURCE` (repeatable)")
				decline := fs.String("decline-older", "", "`true` or false: approving a third-party version declines its older versions")
				clear := fs.Bool("clear", false, "start from no rule and decline-older false instead of the current policy")
				file := fs.String("f", "", "the whole policy as ApprovalPolicy JSON `FILE` (- for stdin), instead of the current one")
				return func(s *session, args []string) error {
					if len(args) != 1 || (args[0] != "get" && args[0] != "set") {
						return usagef("want: approvals policy get, or approvals policy set [--rule S:SRC:DAYS]… [--remove S:SRC]… [--decline-older B] [--clear] [-f FILE]")
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					if args[0] == "get" {
						if len(add)+len(remove) > 0 || *decline != "" || *clear || *file != "" {
							return usagef("approvals policy get takes no flags")
						}
						p, err := c.ApprovalPolicy(s.ctx)
						if err != nil {
							return err
						}
						return printApprovalPolicy(s, p)
					}
					if len(add)+len(remove) == 0 && *decline == "" && !*clear && *file == "" {
						return usagef("approvals policy set: nothing to change; give --rule, --remove, --decline-older, --clear or -f")
					}
					if *clear && *file != "" {
						return usagef("give --clear or -f, not both")
					}
					// The policy to change: the file, nothing, or the current one.
					var p apiv1.ApprovalPolicy
					switch {
					case *file != "":
						if err := readJSONFile(s, *file, &p); err != nil {
							return err
						}
					case !*clear:
						if p, err = c.ApprovalPolicy(s.ctx); err != nil {
							return err
						}
					}
					for _, v := range remove {
						r, err := parseRule(v, false)
						if err != nil {
							return err
						}
						n := len(p.Rules)
						p.Rules = deleteFunc(p.Rules, func(x apiv1.ApprovalPolicyRule) bool { return sameRule(x, r) })
						if n == len(p.Rules) {
							return usagef("--remove %s: the policy has no such rule", v)
						}
					}
					for _, v := range add {
						r, err := parseRule(v, true)
						if err != nil {
							return err
						}
						p.Rules = append(deleteFunc(p.Rules, func(x apiv1.ApprovalPolicyRule) bool { return sameRule(x, r) }), r)
					}
					if *decline != "" {
						on, err := strconv.ParseBool(*decline)
						if err != nil {
							return usagef("--decline-older %q: want true or false", *decline)
						}
						p.DeclineOlder = on
					}
					out, err := c.SetApprovalPolicy(s.ctx, p)
					if err != nil {
						return err
					}
					return s.done(out, "Approval policy saved: %d rule(s), decline older %s.", len(out.Rules), yesNo(out.DeclineOlder))
				}
			}},
		{name: "vulns exceptions", args: "list [--kind accepted|compensating_control]",
			summary: "list accepted risks and compensating controls, expired ones too (patchd addition)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				kind := fs.String("kind", "", "only the decisions of `KIND`: accepted or compensating_control")
				return func(s *session, args []string) error {
					if len(args) != 1 || args[0] != "list" {
						return usagef("want: vulns exceptions list [--kind K]")
					}
					if *kind != "" && *kind != "accepted" && *kind != "compensating_control" {
						return usagef("--kind %q: want accepted or compensating_control", *kind)
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					list, err := c.VulnExceptions(s.ctx, *kind)
					if err != nil {
						return err
					}
					return printList(s, exceptionCols, sliceSeq(list.Items))
				}
			}},
		{name: "vulns accept", args: "CVE --reason TEXT [--kind accepted|compensating_control] [--days N | --expires TIME]",
			summary: "accept a CVE's risk or record a compensating control; replaces the CVE's decision (patchd addition; every permission)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				reason := fs.String("reason", "", "why the risk is accepted, or the control in place (`TEXT`)")
				kind := fs.String("kind", "accepted", "`KIND`: accepted or compensating_control")
				days := fs.Int("days", 0, "the decision holds `N` days (1 to 3650); no expiry without --days or --expires")
				expires := fs.String("expires", "", "the decision ends at `TIME` (RFC 3339, or a date YYYY-MM-DD, UTC midnight)")
				return withChecked("CVE", func(*session, []string) (apiv1.VulnExceptionBody, error) {
					body := apiv1.VulnExceptionBody{Kind: *kind, Reason: *reason}
					if strings.TrimSpace(*reason) == "" {
						return body, usagef("vulns accept needs --reason")
					}
					switch {
					case *days != 0 && *expires != "":
						return body, usagef("give --days or --expires, not both")
					case *days != 0:
						body.ValidDays = days
					case *expires != "":
						t, err := time.Parse(time.RFC3339, *expires)
						if err != nil {
							if t, err = time.Parse(time.DateOnly, *expires); err != nil {
								return body, usagef("--expires %q: want RFC 3339 (2027-01-31T00:00:00Z) or a date (2027-01-31)", *expires)
							}
						}
						body.ExpiresAt = &t
					}
					return body, nil
				}, func(s *session, c *client.Client, args []string, body apiv1.VulnExceptionBody) error {
					x, err := c.AcceptVulnRisk(s.ctx, args[0], body)
					if err != nil {
						return err
					}
					until := "no expiry"
					if x.ExpiresAt != nil {
						until = "until " + when(x.ExpiresAt)
					}
					return s.done(x, "%s: %s recorded, %s; %d endpoint(s) have it.", x.CVEID, strings.ReplaceAll(x.Kind, "_", " "), until, x.Endpoints)
				})
			}},
		{name: "vulns revoke", args: "CVE", summary: "revoke a CVE's accepted risk or compensating control: it counts again (patchd addition; every permission)",
			setup: noFlags(withClient("CVE", func(s *session, c *client.Client, args []string) error {
				if err := c.RevokeVulnRisk(s.ctx, args[0]); err != nil {
					return err
				}
				return s.done(apiv1.OK{OK: true}, "%s: the decision was revoked; the CVE counts again.", strings.ToUpper(args[0]))
			}))},
		{name: "vulns policy", args: "get | set [--critical-days N] [--high-days N] [--medium-days N] [--low-days N]",
			summary: "read or change the remediation periods by severity (patchd addition; set takes every permission)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				critical := fs.Int("critical-days", 0, "days to fix a Critical CVE (`N`, 1 to 3650)")
				high := fs.Int("high-days", 0, "days to fix a High one (`N`)")
				medium := fs.Int("medium-days", 0, "days to fix a Medium one (`N`)")
				low := fs.Int("low-days", 0, "days to fix a Low one (`N`)")
				return func(s *session, args []string) error {
					if len(args) != 1 || (args[0] != "get" && args[0] != "set") {
						return usagef("want: vulns policy get, or vulns policy set [--critical-days N] [--high-days N] [--medium-days N] [--low-days N]")
					}
					changes := *critical != 0 || *high != 0 || *medium != 0 || *low != 0
					if args[0] == "get" && changes {
						return usagef("vulns policy get takes no flags")
					}
					if args[0] == "set" && !changes {
						return usagef("vulns policy set: nothing to change; give --critical-days, --high-days, --medium-days or --low-days")
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					p, err := c.RemediationPolicy(s.ctx)
					if err != nil {
						return err
					}
					if args[0] == "get" {
						return printOne(s, p, remediationCols, remediationPairs)
					}
					for _, f := range []struct {
						n   int
						dst *int
					}{{*critical, &p.CriticalDays}, {*high, &p.HighDays}, {*medium, &p.MediumDays}, {*low, &p.LowDays}} {
						if f.n != 0 {
							*f.dst = f.n
						}
					}
					if p, err = c.SetRemediationPolicy(s.ctx, p); err != nil {
						return err
					}
					return s.done(p, "Remediation periods: critical %d, high %d, medium %d, low %d days.", p.CriticalDays, p.HighDays, p.MediumDays, p.LowDays)
				}
			}},
	}
}

// deleteFunc is slices.DeleteFunc on a copy, so the caller's slice stays.
func deleteFunc[T any](s []T, del func(T) bool) []T {
	out := make([]T, 0, len(s))
	for _, v := range s {
		if !del(v) {
			out = append(out, v)
		}
	}
	return out
}
