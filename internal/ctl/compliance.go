package ctl

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

var complianceCols = []column[apiv1.ComplianceDay]{
	col("DATE", func(d apiv1.ComplianceDay) string { return d.Date }),
	numCol("ENDPOINTS", func(d apiv1.ComplianceDay) string { return strconv.Itoa(d.Endpoints) }),
	numCol("FULLY PATCHED", func(d apiv1.ComplianceDay) string { return strconv.Itoa(d.FullyPatched) }),
	numCol("PATCHED %", func(d apiv1.ComplianceDay) string { return compliancePct(d) }),
	numCol("COMPLIANT", func(d apiv1.ComplianceDay) string {
		if d.Compliant == nil {
			return ""
		}
		return strconv.Itoa(*d.Compliant)
	}),
	numCol("MISSING CRITICAL", func(d apiv1.ComplianceDay) string { return strconv.Itoa(d.MissingCritical) }),
	numCol("MISSING OTHER", func(d apiv1.ComplianceDay) string { return strconv.Itoa(d.MissingOther) }),
	numCol("CRITICAL CVES", func(d apiv1.ComplianceDay) string { return strconv.Itoa(d.CriticalCVEs) }),
	numCol("OVERDUE CVES", func(d apiv1.ComplianceDay) string { return strconv.Itoa(d.OverdueCVEs) }),
}

// compliancePct is the share of a day's endpoints fully patched, in whole
// percent ("" without endpoints).
func compliancePct(d apiv1.ComplianceDay) string {
	if d.Endpoints == 0 {
		return ""
	}
	return strconv.Itoa(d.FullyPatched * 100 / d.Endpoints)
}

func compliancePolicyPairs(p apiv1.CompliancePolicy) [][2]string {
	days := func(n int) string { return strconv.Itoa(n) + " days" }
	return [][2]string{{"Critical", days(p.CriticalDays)}, {"Important", days(p.ImportantDays)}, {"Moderate", days(p.ModerateDays)},
		{"Low", days(p.LowDays)}, {"Unspecified", days(p.UnspecifiedDays)}, {"Fixes a KEV CVE", days(p.KEVDays)}, {"Meaning", p.Description}}
}

var compliancePolicyCols = []column[apiv1.CompliancePolicy]{
	numCol("CRITICAL DAYS", func(p apiv1.CompliancePolicy) string { return strconv.Itoa(p.CriticalDays) }),
	numCol("IMPORTANT DAYS", func(p apiv1.CompliancePolicy) string { return strconv.Itoa(p.ImportantDays) }),
	numCol("MODERATE DAYS", func(p apiv1.CompliancePolicy) string { return strconv.Itoa(p.ModerateDays) }),
	numCol("LOW DAYS", func(p apiv1.CompliancePolicy) string { return strconv.Itoa(p.LowDays) }),
	numCol("UNSPECIFIED DAYS", func(p apiv1.CompliancePolicy) string { return strconv.Itoa(p.UnspecifiedDays) }),
	numCol("KEV DAYS", func(p apiv1.CompliancePolicy) string { return strconv.Itoa(p.KEVDays) }),
}

var groupComplianceCols = []column[apiv1.GroupCompliance]{
	col("GROUP", func(g apiv1.GroupCompliance) string { return g.Name }),
	numCol("ENDPOINTS", func(g apiv1.GroupCompliance) string { return strconv.Itoa(g.Endpoints) }),
	numCol("COMPLIANT", func(g apiv1.GroupCompliance) string { return strconv.Itoa(g.Compliant) }),
	numCol("COMPLIANT %", func(g apiv1.GroupCompliance) string {
		if g.Endpoints == 0 {
			return ""
		}
		return strconv.Itoa(g.Compliant * 100 / g.Endpoints)
	}),
	numCol("MISSING CRITICAL", func(g apiv1.GroupCompliance) string { return strconv.Itoa(g.MissingCritical) }),
	col("ID", func(g apiv1.GroupCompliance) string { return g.GroupID }),
}

func complianceCommands() []command {
	return []command{
		{name: "compliance policy", args: "get | set [--critical-days N] [--important-days N] [--moderate-days N] [--low-days N] [--unspecified-days N] [--kev-days N]",
			summary: "read or change how many days each severity, and an update fixing a KEV CVE, may stay missing before an endpoint is out of compliance (patchd addition; set takes every permission)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var days [6]int
				for i, name := range []string{"critical", "important", "moderate", "low", "unspecified"} {
					fs.IntVar(&days[i], name+"-days", 0, "days a "+name+" update may stay missing (`N`, 1 to 3650)")
				}
				fs.IntVar(&days[5], "kev-days", 0, "days an update that fixes a CVE in CISA's KEV catalog may stay missing (`N`, 1 to 3650)")
				return func(s *session, args []string) error {
					if len(args) != 1 || (args[0] != "get" && args[0] != "set") {
						return usagef("want: compliance policy get, or compliance policy set [--critical-days N] … [--unspecified-days N]")
					}
					changes := days != [6]int{}
					if args[0] == "get" && changes {
						return usagef("compliance policy get takes no flags")
					}
					if args[0] == "set" && !changes {
						return usagef("compliance policy set: nothing to change; give --critical-days, --important-days, --moderate-days, --low-days, --unspecified-days or --kev-days")
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					p, err := c.CompliancePolicy(s.ctx)
					if err != nil {
						return err
					}
					if args[0] == "get" {
						return printOne(s, p, compliancePolicyCols, compliancePolicyPairs)
					}
					for i, dst := range []*int{&p.CriticalDays, &p.ImportantDays, &p.ModerateDays, &p.LowDays, &p.UnspecifiedDays, &p.KEVDays} {
						if days[i] != 0 {
							*dst = days[i]
						}
					}
					if p, err = c.SetCompliancePolicy(s.ctx, p); err != nil {
						return err
					}
					return s.done(p, "%s", p.Description)
				}
			}},
		{name: "compliance groups", summary: "every group's endpoints compliant under the compliance policy (patchd addition)",
			setup: noFlags(withClient("", func(s *session, c *client.Client, _ []string) error {
				r, err := c.ComplianceByGroup(s.ctx)
				if err != nil {
					return err
				}
				if s.format == "" || s.format == "table" {
					fmt.Fprintln(s.io.Stderr, r.Policy.Description)
				}
				return printList(s, groupComplianceCols, sliceSeq(r.Items))
			}))},
		{name: "compliance history", args: "[--days N]",
			summary: "the fleet's compliance day by day: fully patched, missing critical, critical and overdue CVEs (patchd addition)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				days := fs.Int("days", 30, "the last `N` days, 1 to 400")
				return withChecked("", func(*session, []string) (int, error) {
					if *days < 1 || *days > 400 {
						return 0, usagef("--days %d: want 1 to 400", *days)
					}
					return *days, nil
				}, func(s *session, c *client.Client, _ []string, days int) error {
					l, err := c.ComplianceHistory(s.ctx, days)
					if err != nil {
						return err
					}
					return printList(s, complianceCols, sliceSeq(l.Items))
				})
			}},
	}
}
