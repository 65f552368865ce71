package ctl

import (
	"flag"
	"strconv"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

var complianceCols = []column[apiv1.ComplianceDay]{
	col("DATE", func(d apiv1.ComplianceDay) string { return d.Date }),
	numCol("ENDPOINTS", func(d apiv1.ComplianceDay) string { return strconv.Itoa(d.Endpoints) }),
	numCol("FULLY PATCHED", func(d apiv1.ComplianceDay) string { return strconv.Itoa(d.FullyPatched) }),
	numCol("COMPLIANT %", func(d apiv1.ComplianceDay) string { return compliancePct(d) }),
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

func complianceCommands() []command {
	return []command{
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
