package ctl

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

var automationCols = []column[apiv1.Automation]{
	col("ID", func(a apiv1.Automation) string { return a.ID }),
	col("NAME", func(a apiv1.Automation) string { return a.Name }),
	col("ACTION", func(a apiv1.Automation) string { return a.Action }),
	col("KIND", func(a apiv1.Automation) string { return a.Kind }),
	col("SCHEDULE", scheduleText),
	statusCol("ENABLED", func(a apiv1.Automation) string { return yesNo(a.Enabled) }),
	col("TARGET", targetText),
	col("NEXT RUN", func(a apiv1.Automation) string { return when(a.NextRunAt) }),
	col("LAST RUN", func(a apiv1.Automation) string { return when(a.LastRunAt) }),
}

func scheduleText(a apiv1.Automation) string {
	parts := []string{str(a.ScheduleKind)}
	if a.Freq != nil {
		parts = append(parts, *a.Freq)
		if *a.Freq == "PATCH_TUESDAY" && a.OffsetDays != 0 {
			parts = append(parts, fmt.Sprintf("+%dd", a.OffsetDays))
		}
	}
	if a.AtTime != nil {
		parts = append(parts, *a.AtTime)
	}
	if a.RunAt != nil {
		parts = append(parts, when(a.RunAt))
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

func targetText(a apiv1.Automation) string {
	switch {
	case a.GroupID != nil:
		return "group " + *a.GroupID
	case len(a.EndpointIDs) > 0:
		return fmt.Sprintf("%d endpoint(s)", len(a.EndpointIDs))
	}
	return a.TargetMode
}

func automationPairs(a apiv1.Automation) [][2]string {
	pairs := [][2]string{
		{"ID", a.ID}, {"Name", a.Name}, {"Description", str(a.Description)}, {"Action", a.Action + " (" + a.ActionLabel + ")"},
		{"Kind", a.Kind}, {"Schedule", scheduleText(a)}, {"Window minutes", integer(a.WindowMinutes)},
		{"Enabled", yesNo(a.Enabled)}, {"Target", a.TargetMode}, {"Group", str(a.GroupID)},
		{"Endpoints", strings.Join(a.EndpointIDs, ", ")}, {"Next run", when(a.NextRunAt)}, {"Last run", when(a.LastRunAt)},
		{"Created by", str(a.CreatedBy)},
	}
	for _, r := range a.Rings {
		pairs = append(pairs, [2]string{"Ring " + r.Name, fmt.Sprintf("group %s, +%d day(s)", r.GroupID, r.OffsetDays)})
	}
	if len(a.Payload) > 0 {
		var buf bytes.Buffer
		if json.Indent(&buf, a.Payload, "", "  ") == nil {
			pairs = append(pairs, [2]string{"Payload", buf.String()})
		}
	}
	return pairs
}

func automationCommands() []command {
	setEnabled := func(enabled bool) func(s *session, c *client.Client, args []string) error {
		return func(s *session, c *client.Client, args []string) error {
			res, err := c.PatchAutomation(s.ctx, args[0], apiv1.AutomationPatch{Enabled: &enabled})
			if err != nil {
				return err
			}
			word := "disabled"
			if enabled {
				word = "enabled"
			}
			return s.done(res, "Automation %q %s.", res.Automation.Name, word)
		}
	}
	return []command{
		listCommand("automations list", "list automations", automationCols, (*client.Client).ListAutomations),
		getCommand("automations get", "ID", "show an automation with its payload", (*client.Client).GetAutomation, automationCols, automationPairs),
		{name: "automations create", args: "-f automation.json [--watch]",
			summary: "create an automation from an AutomationBody file (scheduleKind NOW runs it at once)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				file := fs.String("f", "", "AutomationBody JSON `FILE` (- for stdin)")
				var w watchFlags
				w.register(fs)
				return withChecked("", func(s *session, _ []string) (apiv1.AutomationBody, error) {
					var body apiv1.AutomationBody
					if *file == "" {
						return body, usagef("automations create needs -f FILE")
					}
					err := readJSONFile(s, *file, &body)
					return body, err
				}, func(s *session, c *client.Client, _ []string, body apiv1.AutomationBody) error {
					res, err := c.CreateAutomation(s.ctx, body)
					if err != nil {
						return err
					}
					if res.Automation.RunID != nil && w.watch {
						s.notef("Automation %q created: %s; run %s queued on %d endpoint(s).", res.Automation.Name, res.Automation.ID, *res.Automation.RunID, res.Automation.Queued)
						return watchRun(s, *res.Automation.RunID, w)
					}
					if res.Automation.RunID != nil {
						return s.done(res, "Automation %q created: %s\nRun %s queued on %d endpoint(s); follow it with: patchctl runs get %s --watch",
							res.Automation.Name, res.Automation.ID, *res.Automation.RunID, res.Automation.Queued, *res.Automation.RunID)
					}
					return s.done(res, "Automation %q created: %s", res.Automation.Name, res.Automation.ID)
				})
			}},
		{name: "automations update", args: "ID [-f automation.json] [--name NAME] [--description TEXT]",
			summary: "replace an automation (-f with an actionType) or change its name or description",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				file := fs.String("f", "", "JSON `FILE` (- for stdin): a full AutomationBody, or an AutomationPatch")
				name := fs.String("name", "", "new `NAME`")
				description := fs.String("description", "", "new description `TEXT`")
				return withChecked("ID", func(s *session, _ []string) (any, error) {
					return automationChange(s, fs, *file, *name, *description)
				}, func(s *session, c *client.Client, args []string, body any) error {
					res, err := c.PatchAutomation(s.ctx, args[0], body)
					if err != nil {
						return err
					}
					return s.done(res, "Automation %q updated.", res.Automation.Name)
				})
			}},
		{name: "automations enable", args: "ID", summary: "enable an automation", setup: noFlags(withClient("ID", setEnabled(true)))},
		{name: "automations disable", args: "ID", summary: "disable an automation", setup: noFlags(withClient("ID", setEnabled(false)))},
		{name: "automations run", args: "ID [--watch]", summary: "run an automation now",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var w watchFlags
				w.register(fs)
				return withClient("ID", func(s *session, c *client.Client, args []string) error {
					res, err := c.RunAutomation(s.ctx, args[0])
					if err != nil {
						return err
					}
					return startedRun(s, res, w)
				})
			}},
		deleteCommand("automations delete", "ID", "delete an automation", "Automation %s deleted.", (*client.Client).DeleteAutomation),
	}
}

// automationChange builds the PATCH body: a full AutomationBody when the
// file holds an actionType, else a light AutomationPatch; --name and
// --description override the file.
func automationChange(s *session, fs *flag.FlagSet, file, name, description string) (any, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if file == "" && !set["name"] && !set["description"] {
		return nil, usagef("nothing to change: give -f FILE, --name or --description")
	}
	var full apiv1.AutomationBody
	var light apiv1.AutomationPatch
	if file != "" {
		data, err := readInput(s, file)
		if err != nil {
			return nil, err
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(data, &probe); err != nil {
			return nil, usagef("%s: %v", file, err)
		}
		if _, ok := probe["actionType"]; ok {
			if err := decodeStrict(file, data, &full); err != nil {
				return nil, err
			}
			if set["name"] {
				full.Name = name
			}
			if set["description"] {
				full.Description = &description
			}
			return full, nil
		}
		if err := decodeStrict(file, data, &light); err != nil {
			return nil, err
		}
	}
	if set["name"] {
		light.Name = &name
	}
	if set["description"] {
		light.Description = &description
	}
	return light, nil
}

// notef writes a line for people: on stderr when stdout carries JSON or
// CSV for a script.
func (s *session) notef(format string, args ...any) {
	w := s.io.Stdout
	if s.format != "table" {
		w = s.io.Stderr
	}
	fmt.Fprintf(w, format+"\n", args...)
}

// watchFlags are the flags that follow a run to its end.
type watchFlags struct {
	watch    bool
	interval time.Duration
	timeout  time.Duration
}

func (w *watchFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&w.watch, "watch", false, "follow the run until every endpoint has finished")
	fs.DurationVar(&w.interval, "interval", 2*time.Second, "time between polls with --watch")
	fs.DurationVar(&w.timeout, "timeout", 0, "give up watching after this `DURATION` (0: never)")
}

// startedRun reports a run an action or automation started, and follows it
// with --watch.
func startedRun(s *session, res apiv1.RunStarted, w watchFlags) error {
	if w.watch {
		s.notef("Run %s queued on %d endpoint(s).", res.RunID, res.Queued)
		return watchRun(s, res.RunID, w)
	}
	return s.done(res, "Run %s queued on %d endpoint(s); follow it with: patchctl runs get %s --watch", res.RunID, res.Queued, res.RunID)
}
