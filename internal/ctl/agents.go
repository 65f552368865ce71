package ctl

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

var agentVersionCols = []column[apiv1.AgentVersionCount]{
	col("PLATFORM", func(c apiv1.AgentVersionCount) string { return c.Platform }),
	col("ARCH", func(c apiv1.AgentVersionCount) string { return c.Arch }),
	col("AGENT VERSION", func(c apiv1.AgentVersionCount) string { return c.AgentVersion }),
	numCol("ENDPOINTS", func(c apiv1.AgentVersionCount) string { return strconv.Itoa(c.Endpoints) }),
	col("WANTED", func(c apiv1.AgentVersionCount) string { return str(c.WantedVersion) }),
	col("BEHIND", func(c apiv1.AgentVersionCount) string { return yesNo(c.Behind) }),
}

var agentFailureCols = []column[apiv1.AgentUpdateFailure]{
	col("AT", func(f apiv1.AgentUpdateFailure) string { return when(&f.At) }),
	col("ENDPOINT", func(f apiv1.AgentUpdateFailure) string { return f.EndpointID }),
	col("HOSTNAME", func(f apiv1.AgentUpdateFailure) string { return f.Hostname }),
	col("RUNS", func(f apiv1.AgentUpdateFailure) string { return f.AgentVersion }),
	col("FAILED TO", func(f apiv1.AgentUpdateFailure) string { return f.Version }),
	col("REASON", func(f apiv1.AgentUpdateFailure) string { return f.Reason }),
}

var agentRingCols = []column[apiv1.AgentRing]{
	numCol("RING", func(r apiv1.AgentRing) string { return strconv.Itoa(r.Position + 1) }),
	col("GROUP", func(r apiv1.AgentRing) string {
		if r.GroupName == nil {
			return "(all other endpoints)"
		}
		return *r.GroupName
	}),
	col("STATE", func(r apiv1.AgentRing) string { return strings.ReplaceAll(r.State, "_", " ") }),
	numCol("ENDPOINTS", func(r apiv1.AgentRing) string { return strconv.Itoa(r.Endpoints) }),
	numCol("UPDATED", func(r apiv1.AgentRing) string { return strconv.Itoa(r.Updated) }),
	numCol("FAILED", func(r apiv1.AgentRing) string { return strconv.Itoa(r.Failed) }),
	col("STARTED", func(r apiv1.AgentRing) string { return when(r.StartedAt) }),
}

// parseDelayHours reads a staged policy's delay: hours ("12h") or days ("3d").
func parseDelayHours(v string) (int, error) {
	v = strings.TrimSpace(v)
	unit := 1
	switch {
	case strings.HasSuffix(v, "d"):
		unit, v = 24, strings.TrimSuffix(v, "d")
	case strings.HasSuffix(v, "h"):
		v = strings.TrimSuffix(v, "h")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, usagef("--delay wants hours or days: 12h, 3d")
	}
	return n * unit, nil
}

// printAgentVersions writes GET /api/v1/agent-versions: JSON as the server
// sent it, CSV as the version rows, a table as the policy, the releases,
// the version rows and the failures.
func printAgentVersions(s *session, v apiv1.AgentVersions) error {
	switch s.format {
	case "json":
		return s.printJSON(v)
	case "csv":
		return printList(s, agentVersionCols, sliceSeq(v.Versions))
	}
	releases := make([]string, 0, len(v.Releases))
	for _, r := range v.Releases {
		releases = append(releases, r.OS+"/"+r.Arch+" "+r.Version)
	}
	target := "none (agents are left as they are)"
	if v.Target != nil {
		target = *v.Target
	}
	s.printPairs([][2]string{{"Policy", v.Policy}, {"Target", target}, {"Releases", strings.Join(releases, ", ")},
		{"Endpoints", strconv.Itoa(v.Endpoints)}, {"Behind", strconv.Itoa(v.Behind)}})
	fmt.Fprintln(s.io.Stdout)
	if ro := v.Rollout; ro != nil {
		fmt.Fprintf(s.io.Stdout, "Staged rollout of %s: each ring after the one before has run it %d hours with %d %% success.\n", ro.Version, ro.DelayHours, ro.SuccessRate)
		if err := printList(s, agentRingCols, sliceSeq(ro.Rings)); err != nil {
			return err
		}
		fmt.Fprintln(s.io.Stdout)
	}
	if err := printList(s, agentVersionCols, sliceSeq(v.Versions)); err != nil {
		return err
	}
	if len(v.Failures) == 0 {
		_, err := fmt.Fprintln(s.io.Stdout, "\nNo update failures reported.")
		return err
	}
	fmt.Fprintln(s.io.Stdout, "\nUpdate failures:")
	return printList(s, agentFailureCols, sliceSeq(v.Failures))
}

func agentCommands() []command {
	return []command{
		{name: "agents versions", summary: "the fleet's agent versions, the published releases, the update policy, who is behind and update failures (patchd addition)",
			setup: noFlags(withClient("", func(s *session, c *client.Client, _ []string) error {
				v, err := c.AgentVersions(s.ctx)
				if err != nil {
					return err
				}
				return printAgentVersions(s, v)
			}))},
		// "agents policy set": the command is "agents policy", set its word.
		{name: "agents policy", args: "set --policy latest|pinned|staged|none [--version V] [--ring GROUP]… [--delay 3d|12h] [--success-rate PERCENT]",
			summary: "set the organization's agent update policy: latest release, a pinned version, a version staged through rings of groups, or none (patchd addition)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				policy := fs.String("policy", "", "`POLICY`: latest (the published release), pinned (--version), staged (--version through --ring groups) or none (agents are left as they are)")
				version := fs.String("version", "", "with --policy pinned or staged: the agent `VERSION`")
				var rings listFlag
				fs.Var(&rings, "ring", "with --policy staged: an endpoint `GROUP` (id or name), a ring, in order; the endpoints in none form the last ring")
				delay := fs.String("delay", "", "with --policy staged: how long a ring runs the version before the next gets it, `HOURS` (12h) or days (3d)")
				rate := fs.Int("success-rate", -1, "with --policy staged: the `PERCENT` of a ring's endpoints that must run the version before the next ring gets it")
				const want = "want --policy latest, --policy pinned --version V, --policy staged --version V --ring GROUP… --delay 3d --success-rate 90, or --policy none"
				return func(s *session, args []string) error {
					if len(args) != 1 || args[0] != "set" {
						return usagef("want: agents policy set --policy latest|pinned|staged|none [--version V] [--ring GROUP]… [--delay 3d] [--success-rate 90]")
					}
					body := apiv1.AgentPolicyBody{Policy: *policy}
					staged := len(rings) > 0 || *delay != "" || *rate >= 0
					switch {
					case *policy == "pinned" && *version != "" && !staged:
						body.Version = version
					case (*policy == "latest" || *policy == "none") && *version == "" && !staged:
					case *policy == "staged" && *version != "" && len(rings) > 0 && *delay != "" && *rate >= 0:
						body.Version = version
						hours, err := parseDelayHours(*delay)
						if err != nil {
							return err
						}
						body.DelayHours, body.SuccessRate = &hours, rate
					default:
						return usagef(want)
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					if len(rings) > 0 {
						if body.Rings, err = groupIDs(s, rings); err != nil {
							return err
						}
					}
					v, err := c.SetAgentPolicy(s.ctx, body)
					if err != nil {
						return err
					}
					target := "agents are left as they are"
					if v.Target != nil {
						target = "agents are told " + *v.Target
					}
					if v.Rollout != nil {
						target += " ring by ring, the first ring now"
					}
					return s.done(v, "Agent update policy set to %s: %s; %d of %d endpoints behind.", v.Policy, target, v.Behind, v.Endpoints)
				}
			}},
	}
}

// groupIDs answers the ids of groups given by id or by name (a name that
// two groups share is refused).
func groupIDs(s *session, refs []string) ([]string, error) {
	c, err := s.client()
	if err != nil {
		return nil, err
	}
	list, err := c.ListGroups(s.ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(refs))
	for _, ref := range refs {
		id := ""
		for _, g := range list.Items {
			if g.ID == ref {
				id = g.ID
				break
			}
			if g.Name == ref {
				if id != "" {
					return nil, usagef("two groups are named %q: give the id", ref)
				}
				id = g.ID
			}
		}
		if id == "" {
			id = ref // the server answers which is unknown
		}
		out = append(out, id)
	}
	return out, nil
}
