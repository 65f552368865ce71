package ctl

import (
	"flag"
	"strconv"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

func runPairs(r apiv1.Run) [][2]string {
	return [][2]string{{"ID", r.ID}, {"Name", r.Name}, {"Action", r.ActionType}, {"Status", r.Status},
		{"Total", strconv.Itoa(r.Total)}, {"Succeeded", strconv.Itoa(r.Succeeded)}, {"Failed", strconv.Itoa(r.Failed)},
		{"Started", when(r.StartedAt)}, {"Finished", when(r.FinishedAt)}, {"Created by", str(r.CreatedBy)},
		{"Automation", str(r.AutomationName)}, {"Automation ID", str(r.AutomationID)}, {"Detail", str(r.Detail)}}
}

// runOpCommands are the commands on one run: show, stop, retry.
func runOpCommands() []command {
	return []command{
		getCommand("runs show", "RUN_ID", "show a run's status and counters (runs get lists its per-endpoint results)", (*client.Client).GetRun, runCols, runPairs),
		{name: "runs stop", args: "RUN_ID", summary: "stop a running run: commands not started yet are cancelled",
			setup: noFlags(withClient("RUN_ID", func(s *session, c *client.Client, args []string) error {
				r, err := c.StopRun(s.ctx, args[0])
				if err != nil {
					return err
				}
				return s.done(r, "Run %s stopped: %d succeeded, %d failed of %d.", r.ID, r.Succeeded, r.Failed, r.Total)
			}))},
		{name: "runs retry", args: "RUN_ID [--watch]", summary: "run a run's action again on the endpoints whose command failed",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var w watchFlags
				w.register(fs)
				return withClient("RUN_ID", func(s *session, c *client.Client, args []string) error {
					res, err := c.RetryRun(s.ctx, args[0])
					if err != nil {
						return err
					}
					return startedRun(s, res, w)
				})
			}},
	}
}
