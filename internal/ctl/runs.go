package ctl

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

var actionTypes = []string{"RUN_SCRIPT", "DEPLOY_UPDATES", "REBOOT", "DEPLOY_SOFTWARE", "UNINSTALL_SOFTWARE"}

var runCols = []column[apiv1.Run]{
	col("ID", func(r apiv1.Run) string { return r.ID }),
	col("NAME", func(r apiv1.Run) string { return r.Name }),
	col("ACTION", func(r apiv1.Run) string { return r.ActionType }),
	statusCol("STATUS", func(r apiv1.Run) string { return r.Status }),
	numCol("TOTAL", func(r apiv1.Run) string { return strconv.Itoa(r.Total) }),
	numCol("OK", func(r apiv1.Run) string { return strconv.Itoa(r.Succeeded) }),
	numCol("FAILED", func(r apiv1.Run) string { return strconv.Itoa(r.Failed) }),
	col("STARTED", func(r apiv1.Run) string { return when(r.StartedAt) }),
	col("FINISHED", func(r apiv1.Run) string { return when(r.FinishedAt) }),
	col("BY", func(r apiv1.Run) string { return str(r.CreatedBy) }),
}

var runCommandCols = []column[apiv1.RunCommand]{
	col("ENDPOINT", func(c apiv1.RunCommand) string { return c.Endpoint }),
	statusCol("STATUS", func(c apiv1.RunCommand) string { return c.Status }),
	col("STARTED", func(c apiv1.RunCommand) string { return when(c.StartedAt) }),
	col("FINISHED", func(c apiv1.RunCommand) string { return when(c.FinishedAt) }),
	col("RESULT", func(c apiv1.RunCommand) string { return firstLine(str(c.Result), 80) }),
	col("ENDPOINT ID", func(c apiv1.RunCommand) string { return c.MachineID }),
}

// firstLine shortens a log to its first line, at most n characters.
func firstLine(s string, n int) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	} else if cut {
		return s + " …"
	}
	return s
}

func finished(status string) bool {
	return status == "SUCCESS" || status == "FAILED" || status == "CANCELLED"
}

func runCommands() []command {
	return []command{
		{name: "actions run", args: "--type TYPE --endpoints ID,… [--payload JSON | --payload-file F | --script TEXT | --fix-cve ID… | --fix-kev | --fix-min-cvss N | --fix-min-epss P] [--watch]",
			summary: "queue a one-off action on endpoints",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				typ := fs.String("type", "", "action `TYPE`: "+strings.Join(actionTypes, ", "))
				var endpoints listFlag
				fs.Var(&endpoints, "endpoints", "endpoint `IDS`, comma-separated or repeated")
				label := fs.String("label", "", "`LABEL` shown in the execution history")
				payload := fs.String("payload", "", "action payload as `JSON`")
				payloadFile := fs.String("payload-file", "", "action payload JSON `FILE` (- for stdin)")
				script := fs.String("script", "", "RUN_SCRIPT: the script `TEXT`")
				language := fs.String("language", "", "RUN_SCRIPT: the script `LANGUAGE` (powershell, cmd, bash, sh…)")
				var fixCVEs listFlag
				fs.Var(&fixCVEs, "fix-cve", "DEPLOY_UPDATES: on each endpoint, the updates that fix the CVE `IDS` (comma-separated or repeated; a patchd addition)")
				fixKEV := fs.Bool("fix-kev", false, "DEPLOY_UPDATES: on each endpoint, the updates that fix a CVE in CISA's KEV catalog (a patchd addition)")
				minCVSS := fs.Float64("fix-min-cvss", -1, "DEPLOY_UPDATES: on each endpoint, the updates that fix a CVE of CVSS base score at least `N` (0-10; a patchd addition)")
				minEPSS := fs.Float64("fix-min-epss", -1, "DEPLOY_UPDATES: on each endpoint, the updates that fix a CVE of EPSS probability at least `P` (0-1; a patchd addition)")
				var w watchFlags
				w.register(fs)
				return withChecked("", func(s *session, _ []string) (apiv1.ActionBody, error) {
					body := apiv1.ActionBody{EndpointIDs: endpoints, Type: *typ, Label: *label}
					if *typ == "" {
						return body, usagef("actions run needs --type")
					}
					if err := oneOf("type", *typ, actionTypes); err != nil {
						return body, err
					}
					if len(endpoints) == 0 {
						return body, usagef("actions run needs --endpoints")
					}
					var err error
					if len(fixCVEs) > 0 || *fixKEV || *minCVSS >= 0 || *minEPSS >= 0 {
						if *typ != "DEPLOY_UPDATES" || *payload != "" || *payloadFile != "" {
							return body, usagef("--fix-cve, --fix-kev, --fix-min-cvss and --fix-min-epss go with --type DEPLOY_UPDATES, without --payload")
						}
						filters := map[string]any{}
						if len(fixCVEs) > 0 {
							filters["cves"] = []string(fixCVEs)
						}
						if *fixKEV {
							filters["kev"] = true
						}
						if *minCVSS >= 0 {
							filters["minCvss"] = *minCVSS
						}
						if *minEPSS >= 0 {
							filters["minEpss"] = *minEPSS
						}
						body.Payload, _ = json.Marshal(map[string]any{"mode": "filters", "filters": filters})
					} else {
						body.Payload, err = actionPayload(s, *typ, *payload, *payloadFile, *script, *language)
					}
					return body, err
				}, func(s *session, c *client.Client, _ []string, body apiv1.ActionBody) error {
					res, err := c.RunAction(s.ctx, body)
					if err != nil {
						return err
					}
					return startedRun(s, res, w)
				})
			}},
		{name: "runs list", args: "[--automation ID] [--endpoint ID] [--failed] [--limit N]", summary: "list the most recent runs of automations and actions",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				automation := fs.String("automation", "", "only the runs of automation `ID`")
				endpoint := fs.String("endpoint", "", "only the runs that reached endpoint `ID`")
				failed := fs.Bool("failed", false, "only the runs where a command failed")
				limit := fs.Int("limit", 0, "at most `N` runs, 1 to 500 (default: the server's, 100)")
				return withChecked("", func(*session, []string) (client.RunQuery, error) {
					if *limit < 0 || *limit > 500 {
						return client.RunQuery{}, usagef("--limit must be between 1 and 500")
					}
					return client.RunQuery{AutomationID: *automation, EndpointID: *endpoint, Limit: *limit, Failed: *failed}, nil
				}, func(s *session, c *client.Client, _ []string, q client.RunQuery) error {
					l, err := c.ListRuns(s.ctx, q)
					if err != nil {
						return err
					}
					return printList(s, runCols, sliceSeq(l.Items))
				})
			}},
		{name: "runs get", args: "RUN_ID [--endpoint ID] [--status S] [--search TEXT] [--watch [--interval 2s] [--timeout D]]",
			summary: "show the per-endpoint results of a run, or follow it to its end",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				endpoint := fs.String("endpoint", "", "only the result of endpoint `ID`")
				status := fs.String("status", "", "only the results of status `S` (FAILED, SUCCESS, RUNNING, PENDING, CANCELLED)")
				search := fs.String("search", "", "only the results whose endpoint name or log contains `TEXT`")
				var w watchFlags
				w.register(fs)
				return func(s *session, args []string) error {
					if err := needArgs(args, "RUN_ID"); err != nil {
						return err
					}
					if w.watch {
						return watchRun(s, args[0], w, *endpoint)
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					l, err := c.RunCommands(s.ctx, args[0], client.RunQuery{EndpointID: *endpoint, Limit: 500, Status: *status, Search: *search})
					if err != nil {
						return err
					}
					return printRunCommands(s, args[0], l)
				}
			}},
	}
}

// actionPayload builds the payload from --payload, --payload-file or the
// RUN_SCRIPT shortcut flags.
func actionPayload(s *session, typ, payload, file, script, language string) (json.RawMessage, error) {
	given := 0
	for _, v := range []string{payload, file, script} {
		if v != "" {
			given++
		}
	}
	if given > 1 {
		return nil, usagef("give only one of --payload, --payload-file and --script")
	}
	switch {
	case payload != "":
		if !json.Valid([]byte(payload)) {
			return nil, usagef("--payload is not valid JSON")
		}
		return json.RawMessage(payload), nil
	case file != "":
		data, err := readInput(s, file)
		if err != nil {
			return nil, err
		}
		if !json.Valid(data) {
			return nil, usagef("%s is not valid JSON", file)
		}
		return json.RawMessage(data), nil
	case script != "":
		if typ != "RUN_SCRIPT" {
			return nil, usagef("--script goes with --type RUN_SCRIPT")
		}
		if language == "" {
			return nil, usagef("--script needs --language")
		}
		return json.Marshal(map[string]string{"script": script, "language": language})
	}
	return nil, nil
}

// runSummary counts commands by status: "3 commands: 2 SUCCESS, 1 FAILED".
func runSummary(items []apiv1.RunCommand) (string, int, int) {
	counts := map[string]int{}
	done, failed := 0, 0
	for _, c := range items {
		counts[c.Status]++
		if finished(c.Status) {
			done++
		}
		if c.Status == "FAILED" {
			failed++
		}
	}
	var parts []string
	for _, st := range []string{"SUCCESS", "FAILED", "CANCELLED", "RUNNING", "PENDING"} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	return fmt.Sprintf("%d command(s): %s", len(items), strings.Join(parts, ", ")), done, failed
}

func printRunCommands(s *session, runID string, l apiv1.List[apiv1.RunCommand]) error {
	if s.format == "json" {
		return s.printJSON(l)
	}
	if s.format == "table" {
		summary, _, _ := runSummary(l.Items)
		fmt.Fprintf(s.io.Stdout, "%s %s\n\n", s.paint(bold, "Run "+runID+":"), summary)
	}
	return printList(s, runCommandCols, sliceSeq(l.Items))
}

// watchRun polls a run's commands until every one has finished, then
// prints them; failed commands make the exit code 5.
func watchRun(s *session, runID string, w watchFlags, endpoint ...string) error {
	if w.interval < 100*time.Millisecond {
		return usagef("--interval must be at least 100ms")
	}
	c, err := s.client()
	if err != nil {
		return err
	}
	ctx := s.ctx
	if w.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.timeout)
		defer cancel()
	}
	q := client.RunQuery{Limit: 500}
	if len(endpoint) > 0 {
		q.EndpointID = endpoint[0]
	}
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for {
		l, err := c.RunCommands(ctx, runID, q)
		if err != nil {
			if ctx.Err() != nil && s.ctx.Err() == nil {
				return fmt.Errorf("run %s still unfinished after %s", runID, w.timeout)
			}
			return err
		}
		summary, done, failed := runSummary(l.Items)
		if len(l.Items) > 0 && done == len(l.Items) {
			s.progressDone()
			if err := printRunCommands(s, runID, l); err != nil {
				return err
			}
			if failed > 0 {
				return &runFailedError{failed: failed}
			}
			return nil
		}
		s.progressf("run %s: %d/%d finished; %s", runID, done, len(l.Items), summary)
		select {
		case <-ctx.Done():
			if s.ctx.Err() == nil {
				return fmt.Errorf("run %s still unfinished after %s: %s", runID, w.timeout, summary)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}
