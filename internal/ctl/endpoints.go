package ctl

import (
	"bufio"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

// needArgs checks the number of positional arguments.
func needArgs(args []string, names ...string) error {
	if len(args) != len(names) {
		return usagef("want %d argument(s): %s", len(names), strings.Join(names, " "))
	}
	return nil
}

var endpointCols = []column[apiv1.Endpoint]{
	col("ID", func(e apiv1.Endpoint) string { return e.ID }),
	col("NAME", func(e apiv1.Endpoint) string { return e.Name }),
	col("HOSTNAME", func(e apiv1.Endpoint) string { return e.Hostname }),
	col("PLATFORM", func(e apiv1.Endpoint) string { return e.Platform }),
	statusCol("STATUS", func(e apiv1.Endpoint) string { return e.Status }),
	col("OS", func(e apiv1.Endpoint) string { return strings.TrimSpace(str(e.OS) + " " + str(e.OSVersion)) }),
	col("TYPE", func(e apiv1.Endpoint) string { return e.Type }),
	col("REBOOT", func(e apiv1.Endpoint) string { return yesNo(e.PendingReboot) }),
	col("LAST SEEN", func(e apiv1.Endpoint) string { return when(e.LastSeenAt) }),
	numCol("RISK", func(e apiv1.Endpoint) string { return strconv.FormatFloat(e.RiskScore, 'f', -1, 64) }),
}

// endpointRisk is the endpoint's risk score with how it is made.
func endpointRisk(e apiv1.Endpoint) string {
	score := strconv.FormatFloat(e.RiskScore, 'f', -1, 64)
	if e.RiskReason == "" {
		return score
	}
	return score + " (" + e.RiskReason + ")"
}

func endpointPairs(e apiv1.Endpoint) [][2]string {
	pairs := [][2]string{
		{"ID", e.ID}, {"Name", e.Name}, {"Hostname", e.Hostname}, {"Platform", e.Platform}, {"Status", e.Status},
		{"OS", strings.TrimSpace(str(e.OS) + " " + str(e.OSVersion) + " " + str(e.OSBuild))}, {"Type", e.Type},
		{"Domain", str(e.Domain)}, {"User", str(e.User)}, {"Model", strings.TrimSpace(str(e.Manufacturer) + " " + str(e.Model))},
		{"Serial", str(e.SerialNumber)}, {"CPU", str(e.CPU)}, {"Cores", integer(e.Cores)}, {"RAM GB", num(e.RAMGB)},
		{"IP addresses", strings.Join(e.IPAddresses, ", ")}, {"Antivirus", str(e.Antivirus)},
		{"Pending reboot", yesNo(e.PendingReboot)}, {"Agent", str(e.AgentVersion)}, {"Channel", channel(e.InsecureChannel)},
		{"Last boot", when(e.LastBootAt)}, {"Last seen", when(e.LastSeenAt)}, {"Enrolled", when(e.EnrolledAt)},
		{"Comment", str(e.Comment)}, {"Risk", endpointRisk(e)},
	}
	keys := make([]string, 0, len(e.Attributes))
	for k := range e.Attributes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return attrIndex(keys[i]) < attrIndex(keys[j]) })
	for _, k := range keys {
		pairs = append(pairs, [2]string{k, e.Attributes[k]})
	}
	return pairs
}

// channel names how the endpoint's agent talks to the server.
func channel(insecure bool) string {
	if insecure {
		return "plain HTTP (enrolled with --insecure-http)"
	}
	return "HTTPS or loopback"
}

// attrIndex orders attr1 … attr30 numerically.
func attrIndex(k string) int {
	n := 0
	fmt.Sscanf(strings.TrimPrefix(k, "attr"), "%d", &n)
	return n
}

func endpointCommands() []command {
	return []command{
		{name: "endpoints list", args: "[-q TEXT] [--search TEXT] [--status S] [--platform P] [--os TEXT] [--group ID] [--missing critical|other|any|none] [--reboot-pending] [--not-seen-days N] [--agent-version V] [--update KEY] [--cve ID] [--software NAME [--software-version V]] [--sort COL|risk] [--desc] [--limit N]",
			summary: "list endpoints (every page, or up to --limit), filtered and sorted as the console's list",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var p pageFlags
				p.register(fs)
				var eq client.EndpointQuery
				q := fs.String("q", "", "only endpoints whose hostname or name contains `TEXT`")
				fs.StringVar(&eq.Search, "search", "", "only endpoints whose name, hostname, an IP address or OS contains `TEXT`")
				fs.StringVar(&eq.Status, "status", "", "`connected` or disconnected")
				fs.StringVar(&eq.Platform, "platform", "", "`windows`, linux or macos")
				fs.StringVar(&eq.OS, "os", "", "only endpoints whose operating system contains `TEXT`")
				fs.StringVar(&eq.GroupID, "group", "", "only members of the group `ID`")
				fs.StringVar(&eq.Missing, "missing", "", "`critical` (a critical update missing), other (updates missing, none critical), any, or none (fully patched)")
				fs.BoolVar(&eq.PendingReboot, "reboot-pending", false, "only endpoints waiting for a reboot")
				fs.IntVar(&eq.NotSeenDays, "not-seen-days", 0, "only endpoints not seen for `N` days")
				fs.StringVar(&eq.AgentVersion, "agent-version", "", "only endpoints whose agent is version `V`")
				fs.StringVar(&eq.UpdateKey, "update", "", "only endpoints missing the update of key `KEY`")
				fs.StringVar(&eq.CVE, "cve", "", "only endpoints the CVE `ID` affects")
				fs.StringVar(&eq.Software, "software", "", "only endpoints with the software title `NAME` (exact)")
				fs.StringVar(&eq.SoftwareVersion, "software-version", "", "with --software: only that version `V`")
				fs.StringVar(&eq.Sort, "sort", "", "order by `COL`: name, status, platform, os, type, lastSeen, agentVersion, missingCritical, missingTotal, overdue, risk (with --desc, the riskiest first)")
				fs.BoolVar(&eq.Desc, "desc", false, "reverse the order")
				return withChecked("", func(*session, []string) (struct{}, error) {
					return struct{}{}, p.check()
				}, func(s *session, c *client.Client, _ []string, _ struct{}) error {
					return printList(s, endpointCols, walk(s, "endpoints", p, func(pq client.PageQuery) (apiv1.Page[apiv1.Endpoint], error) {
						eq.PageQuery, eq.Q = pq, *q
						return c.ListEndpoints(s.ctx, eq)
					}))
				})
			}},
		{name: "endpoints get", args: "ID", summary: "show an endpoint with its disks, software and missing updates",
			setup: noFlags(withClient("ID", func(s *session, c *client.Client, args []string) error {
				d, err := c.GetEndpoint(s.ctx, args[0])
				if err != nil {
					return err
				}
				return printEndpointDetail(s, d)
			}))},
		{name: "endpoints rename", args: "ID NAME", summary: "set an endpoint's display name (\"\" goes back to the hostname)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				return func(s *session, args []string) error {
					if err := needArgs(args, "ID", "NAME"); err != nil {
						return err
					}
					return patchEndpoint(s, args[0], apiv1.EndpointPatch{Name: &args[1]}, "Endpoint %s renamed.")
				}
			}},
		{name: "endpoints comment", args: "ID TEXT", summary: "set an endpoint's comment",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				return func(s *session, args []string) error {
					if err := needArgs(args, "ID", "TEXT"); err != nil {
						return err
					}
					return patchEndpoint(s, args[0], apiv1.EndpointPatch{Comment: &args[1]}, "Comment of endpoint %s set.")
				}
			}},
		{name: "endpoints set-attr", args: "ID attrN=VALUE…", summary: "set custom attributes attr1 … attr30 of an endpoint",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				return func(s *session, args []string) error {
					if len(args) < 2 {
						return usagef("want an endpoint ID and at least one attrN=VALUE")
					}
					attrs := map[string]string{}
					for _, a := range args[1:] {
						k, v, ok := strings.Cut(a, "=")
						if !ok || k == "" {
							return usagef("bad attribute %q: want attrN=VALUE", a)
						}
						attrs[k] = v
					}
					return patchEndpoint(s, args[0], apiv1.EndpointPatch{Attributes: attrs}, "Attributes of endpoint %s set.")
				}
			}},
		{name: "endpoints scan", args: "ID", summary: "have an endpoint's agent refresh its package lists and send its inventory now",
			setup: noFlags(withClient("ID", func(s *session, c *client.Client, args []string) error {
				if err := c.ScanEndpoint(s.ctx, args[0]); err != nil {
					return err
				}
				return s.done(apiv1.OK{OK: true}, "Scan of endpoint %s requested; its agent refreshes its package lists and sends its inventory at its next check-in.", args[0])
			}))},
		{name: "endpoints remove", args: "ID [--yes]", summary: "remove an endpoint; its agent uninstalls itself at its next check-in",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				yes := fs.Bool("yes", false, "do not ask for confirmation on a terminal")
				return withChecked("ID", confirmUnless(yes, "Remove endpoint %s and uninstall its agent?"), func(s *session, c *client.Client, args []string, _ struct{}) error {
					if err := c.DeleteEndpoint(s.ctx, args[0]); err != nil {
						return err
					}
					return s.done(apiv1.OK{OK: true}, "Endpoint %s removed; its agent uninstalls at its next check-in.", args[0])
				})
			}},
	}
}

// confirm asks a yes/no question on the terminal.
// confirmUnless is the check of a command that asks before it acts, on a
// terminal and without --yes: question (with the command's arguments for
// its %s verbs); a "no" ends the command with nothing done.
func confirmUnless(yes *bool, question string) func(*session, []string) (struct{}, error) {
	return func(s *session, args []string) (struct{}, error) {
		if *yes || !s.io.IsTerminal(s.io.Stdin) {
			return struct{}{}, nil
		}
		vals := make([]any, len(args))
		for i, a := range args {
			vals[i] = a
		}
		ok, err := s.confirm(fmt.Sprintf(question, vals...))
		if err == nil && !ok {
			err = errNothingDone
		}
		return struct{}{}, err
	}
}

func (s *session) confirm(question string) (bool, error) {
	fmt.Fprintf(s.io.Stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(s.io.Stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	fmt.Fprintln(s.io.Stderr, "Nothing done.")
	return false, nil
}

func patchEndpoint(s *session, id string, patch apiv1.EndpointPatch, message string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.PatchEndpoint(s.ctx, id, patch); err != nil {
		return err
	}
	return s.done(apiv1.OK{OK: true}, message, id)
}

func printEndpointDetail(s *session, d apiv1.EndpointDetail) error {
	switch s.format {
	case "json":
		return s.printJSON(d)
	case "csv":
		return printList(s, endpointCols, sliceSeq([]apiv1.Endpoint{d.Endpoint}))
	}
	s.printPairs(endpointPairs(d.Endpoint))
	section := func(title string, n int) bool {
		if n == 0 {
			return false
		}
		fmt.Fprintf(s.io.Stdout, "\n%s (%d)\n", s.paint(bold, title), n)
		return true
	}
	if section("Disks", len(d.Disks)) {
		t := s.newTable(3)
		copy(t.head, []string{"DRIVE", "SIZE GB", "FREE GB"})
		for _, k := range d.Disks {
			t.rows = append(t.rows, []cell{{text: k.Drive}, {text: num(k.SizeGB)}, {text: num(k.FreeGB)}})
		}
		t.write(s.io.Stdout)
	}
	if section("Missing updates", len(d.MissingUpdates)) {
		t := s.newTable(5)
		copy(t.head, []string{"TITLE", "KB", "SEVERITY", "SOURCE", "LATEST"})
		for _, u := range d.MissingUpdates {
			t.rows = append(t.rows, []cell{{text: u.Title}, {text: str(u.KB)}, {text: str(u.Severity), color: statusColor(str(u.Severity))},
				{text: u.Source}, {text: str(u.LatestVersion)}})
		}
		t.write(s.io.Stdout)
	}
	if section("Software", len(d.Software)) {
		t := s.newTable(3)
		copy(t.head, []string{"NAME", "VERSION", "PUBLISHER"})
		for _, sw := range d.Software {
			t.rows = append(t.rows, []cell{{text: sw.Name}, {text: str(sw.Version)}, {text: str(sw.Publisher)}})
		}
		t.write(s.io.Stdout)
	}
	return nil
}
