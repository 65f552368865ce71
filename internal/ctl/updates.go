package ctl

import (
	"bufio"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/safecsv"
)

var updateCols = []column[apiv1.Update]{
	col("KEY", func(u apiv1.Update) string { return u.Key }),
	col("ENDPOINT", func(u apiv1.Update) string { return u.Endpoint }),
	col("TITLE", func(u apiv1.Update) string { return u.Title }),
	statusCol("SEVERITY", func(u apiv1.Update) string { return u.Severity }),
	col("SOURCE", func(u apiv1.Update) string { return u.Source }),
	col("INSTALLED", func(u apiv1.Update) string { return str(u.InstalledVersion) }),
	col("LATEST", func(u apiv1.Update) string { return str(u.LatestVersion) }),
	statusCol("APPROVAL", func(u apiv1.Update) string { return u.Approval }),
	col("ENDPOINT ID", func(u apiv1.Update) string { return u.EndpointID }),
	col("CVES", func(u apiv1.Update) string { return strings.Join(u.CVEs, " ") }),
	numCol("RISK", func(u apiv1.Update) string { return strconv.FormatFloat(u.RiskScore, 'f', -1, 64) }),
	col("WHY", func(u apiv1.Update) string { return u.SeverityReason }),
}

var softwareCols = []column[apiv1.SoftwareRow]{
	col("ENDPOINT", func(r apiv1.SoftwareRow) string { return r.Endpoint }),
	col("NAME", func(r apiv1.SoftwareRow) string { return r.Name }),
	col("VERSION", func(r apiv1.SoftwareRow) string { return str(r.Version) }),
	col("PUBLISHER", func(r apiv1.SoftwareRow) string { return str(r.Publisher) }),
	col("INSTALLED", func(r apiv1.SoftwareRow) string { return str(r.InstallDate) }),
	col("ENDPOINT ID", func(r apiv1.SoftwareRow) string { return r.EndpointID }),
}

var titleCols = []column[apiv1.SoftwareTitle]{
	col("NAME", func(t apiv1.SoftwareTitle) string { return t.Name }),
	col("PUBLISHER", func(t apiv1.SoftwareTitle) string { return str(t.Publisher) }),
	numCol("HOSTS", func(t apiv1.SoftwareTitle) string { return strconv.Itoa(t.Hosts) }),
	numCol("VERSIONS", func(t apiv1.SoftwareTitle) string { return strconv.Itoa(t.VersionCount) }),
	col("TOP VERSIONS", func(t apiv1.SoftwareTitle) string {
		var parts []string
		for i, v := range t.Versions {
			if i == 3 {
				parts = append(parts, "…")
				break
			}
			ver := "(none)"
			if v.Version != nil {
				ver = *v.Version
			}
			parts = append(parts, fmt.Sprintf("%s (%d)", ver, v.Hosts))
		}
		return strings.Join(parts, ", ")
	}),
}

var vulnCols = []column[apiv1.Vulnerability]{
	col("CVE", func(v apiv1.Vulnerability) string { return v.CVEID }),
	numCol("CVSS", func(v apiv1.Vulnerability) string { return num(v.CVSSScore) }),
	statusCol("SEVERITY", func(v apiv1.Vulnerability) string { return str(v.Severity) }),
	col("KEV", func(v apiv1.Vulnerability) string { return yesNo(v.CISAKEV) }),
	statusCol("REMEDIATION", func(v apiv1.Vulnerability) string { return str(v.RemediationStatus) }),
	col("DEADLINE", func(v apiv1.Vulnerability) string { return when(v.RemediationDeadline) }),
	numCol("ENDPOINTS", func(v apiv1.Vulnerability) string { return strconv.Itoa(len(v.Endpoints)) }),
	col("SOFTWARE", func(v apiv1.Vulnerability) string { return strings.Join(v.Software, "; ") }),
	col("FIXED BY", func(v apiv1.Vulnerability) string { return fixedBy(v.RemediatedBy) }),
}

// fixedBy renders Vulnerability.remediatedBy: "KB5071417 (3); openssl
// 3.0.15-1~deb12u1 (2)".
func fixedBy(rs []apiv1.Remediation) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		p := r.Key
		if r.Kind != "kb" && r.FixedIn != nil {
			p += " " + *r.FixedIn
		}
		parts = append(parts, p+" ("+strconv.Itoa(r.Endpoints)+")")
	}
	return strings.Join(parts, "; ")
}

var severities = []string{"Critical", "Important", "Moderate", "Low", "Unspecified"}

func oneOf(flagName, value string, allowed []string) error {
	if value == "" {
		return nil
	}
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return usagef("--%s %q: want one of %s", flagName, value, strings.Join(allowed, ", "))
}

func updateCommands() []command {
	cmds := []command{
		{name: "updates list", args: "[--endpoint ID] [--severity S] [--source OS|THIRD_PARTY] [--sort key|risk] [--limit N]",
			summary: "list missing updates, one row per endpoint and update",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var p pageFlags
				p.register(fs)
				endpoint := fs.String("endpoint", "", "only the updates of endpoint `ID`")
				severity := fs.String("severity", "", "only `SEVERITY`: Critical, Important, Moderate, Low or Unspecified")
				source := fs.String("source", "", "only `SOURCE`: OS or THIRD_PARTY")
				sort := fs.String("sort", "", "`ORDER`: key (the default) or risk (highest risk score first; patchd addition)")
				return withChecked("", func(*session, []string) (client.UpdateQuery, error) {
					q := client.UpdateQuery{EndpointID: *endpoint, Severity: *severity, Source: *source, Sort: *sort}
					if err := oneOf("sort", *sort, []string{"key", "risk"}); err != nil {
						return q, err
					}
					if err := p.check(); err != nil {
						return q, err
					}
					if err := oneOf("severity", *severity, severities); err != nil {
						return q, err
					}
					return q, oneOf("source", *source, []string{"OS", "THIRD_PARTY"})
				}, func(s *session, c *client.Client, _ []string, q client.UpdateQuery) error {
					return printList(s, updateCols, walk(s, "updates", p, func(pq client.PageQuery) (apiv1.Page[apiv1.Update], error) {
						q.PageQuery = pq
						return c.ListUpdates(s.ctx, q)
					}))
				})
			}},
	}
	for _, v := range []struct{ verb, status, summary string }{
		{"approve", "APPROVED", "approve update keys (third-party keys end in @<version>)"},
		{"decline", "DECLINED", "decline update keys"},
		{"reset", "NEW", "clear the decision stored under update keys"},
	} {
		cmds = append(cmds, command{name: "updates " + v.verb, args: "KEY… (or - to read keys from stdin, one a line)", summary: v.summary,
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				return func(s *session, args []string) error {
					keys, err := approvalKeys(s, args)
					if err != nil {
						return err
					}
					if len(keys) == 0 {
						// "-" on an empty list: a pipeline with nothing to do.
						return s.done(apiv1.ApprovalResult{OK: true, Status: v.status}, "No update keys on stdin; nothing changed.")
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					res, err := c.SetApproval(s.ctx, apiv1.ApprovalBody{Keys: keys, Status: v.status})
					if err != nil {
						return err
					}
					return s.done(res, "%d key(s) set to %s; %d decision(s) changed.", res.Count, res.Status, res.Changed)
				}
			}})
	}
	return cmds
}

// approvalKeys reads keys from the arguments, or from stdin for "-" (the
// first column of each line, so `updates list -o csv | cut -d, -f1` works;
// a "KEY" header line is skipped, and the quote -o csv puts before a key
// that starts like a formula is taken off).
func approvalKeys(s *session, args []string) ([]apiv1.ApprovalKey, error) {
	if len(args) == 0 {
		return nil, usagef("want at least one update KEY (or - to read them from stdin)")
	}
	var raw []string
	for _, a := range args {
		if a != "-" {
			raw = append(raw, a)
			continue
		}
		sc := bufio.NewScanner(s.io.Stdin)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			f := strings.FieldsFunc(line, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
			if len(f) > 0 && f[0] != "KEY" {
				raw = append(raw, safecsv.Untext(f[0]))
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read keys from stdin: %w", err)
		}
	}
	seen := map[string]bool{}
	var keys []apiv1.ApprovalKey
	for _, k := range raw {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, apiv1.ApprovalKey{Key: k})
		}
	}
	return keys, nil
}

func inventoryCommands() []command {
	return []command{
		{name: "software list", args: "[-q NAME] [--endpoint ID] [--limit N]", summary: "list installed software, one row per endpoint and application",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var p pageFlags
				p.register(fs)
				q := fs.String("q", "", "only applications whose name contains `TEXT`")
				endpoint := fs.String("endpoint", "", "only the software of endpoint `ID`")
				return withChecked("", func(*session, []string) (client.SoftwareQuery, error) {
					return client.SoftwareQuery{Q: *q, EndpointID: *endpoint}, p.check()
				}, func(s *session, c *client.Client, _ []string, sq client.SoftwareQuery) error {
					return printList(s, softwareCols, walk(s, "software", p, func(pq client.PageQuery) (apiv1.Page[apiv1.SoftwareRow], error) {
						sq.PageQuery = pq
						return c.ListSoftware(s.ctx, sq)
					}))
				})
			}},
		{name: "software titles", args: "[-q NAME] [--publisher TEXT] [--sort hosts|name] [--limit N]",
			summary: "list software by title with the number of endpoints of each title and version (patchd addition)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var p pageFlags
				p.register(fs)
				q := fs.String("q", "", "only applications whose name contains `TEXT`")
				publisher := fs.String("publisher", "", "only applications whose publisher contains `TEXT`")
				sort := fs.String("sort", "hosts", "`ORDER`: hosts (most endpoints first) or name")
				return withChecked("", func(*session, []string) (client.SoftwareTitleQuery, error) {
					tq := client.SoftwareTitleQuery{Q: *q, Publisher: *publisher, Sort: *sort}
					if err := p.check(); err != nil {
						return tq, err
					}
					if *sort != "hosts" && *sort != "name" {
						return tq, usagef("--sort %q: want hosts or name", *sort)
					}
					return tq, nil
				}, func(s *session, c *client.Client, _ []string, tq client.SoftwareTitleQuery) error {
					return printList(s, titleCols, walk(s, "software titles", p, func(pq client.PageQuery) (apiv1.Page[apiv1.SoftwareTitle], error) {
						tq.PageQuery = pq
						return c.ListSoftwareTitles(s.ctx, tq)
					}))
				})
			}},
		{name: "vulns list", args: "[--min-cvss N] [--kev] [--remediation overdue|due-soon|due-later] [--limit N]", summary: "list vulnerabilities present on the fleet",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var p pageFlags
				p.register(fs)
				minCVSS := fs.String("min-cvss", "", "only CVSS scores of at least `SCORE`")
				kev := fs.Bool("kev", false, "only known exploited vulnerabilities (CISA KEV)")
				remediation := fs.String("remediation", "", "only the vulnerabilities of remediation status `S`: overdue, due-soon or due-later")
				return withChecked("", func(*session, []string) (client.VulnerabilityQuery, error) {
					vq := client.VulnerabilityQuery{MinCVSS: *minCVSS, KEV: *kev}
					if err := p.check(); err != nil {
						return vq, err
					}
					if *minCVSS != "" {
						if f, err := strconv.ParseFloat(*minCVSS, 64); err != nil || f < 0 || f > 10 {
							return vq, usagef("--min-cvss %q: want a score from 0 to 10", *minCVSS)
						}
					}
					rem, ok := remediationStatuses[*remediation]
					if !ok {
						return vq, usagef("--remediation %q: want overdue, due-soon or due-later", *remediation)
					}
					vq.Remediation = rem
					return vq, nil
				}, func(s *session, c *client.Client, _ []string, vq client.VulnerabilityQuery) error {
					return printList(s, vulnCols, walk(s, "vulnerabilities", p, func(pq client.PageQuery) (apiv1.Page[apiv1.Vulnerability], error) {
						vq.PageQuery = pq
						return c.ListVulnerabilities(s.ctx, vq)
					}))
				})
			}},
	}
}

// remediationStatuses are the --remediation values and the statuses the
// API names.
var remediationStatuses = map[string]string{"": "", "overdue": "Overdue", "due-soon": "Due soon", "due-later": "Due later"}
