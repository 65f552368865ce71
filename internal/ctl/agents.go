package ctl

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/patchd/patchd/apiv1"
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
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				return func(s *session, args []string) error {
					if err := needArgs(args); err != nil {
						return err
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					v, err := c.AgentVersions(s.ctx)
					if err != nil {
						return err
					}
					return printAgentVersions(s, v)
				}
			}},
		// "agents policy set": the command is "agents policy", set its word.
		{name: "agents policy", args: "set --policy latest|pinned|none [--version V]",
			summary: "set the organization's agent update policy: latest release, a pinned version, or none (patchd addition)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				policy := fs.String("policy", "", "`POLICY`: latest (the published release), pinned (--version) or none (agents are left as they are)")
				version := fs.String("version", "", "with --policy pinned: the agent `VERSION`")
				return func(s *session, args []string) error {
					if len(args) != 1 || args[0] != "set" {
						return usagef("want: agents policy set --policy latest|pinned|none [--version V]")
					}
					body := apiv1.AgentPolicyBody{Policy: *policy}
					switch {
					case *policy == "pinned" && *version != "":
						body.Version = version
					case (*policy == "latest" || *policy == "none") && *version == "":
					default:
						return usagef("want --policy latest, --policy pinned --version V, or --policy none")
					}
					c, err := s.client()
					if err != nil {
						return err
					}
					v, err := c.SetAgentPolicy(s.ctx, body)
					if err != nil {
						return err
					}
					target := "agents are left as they are"
					if v.Target != nil {
						target = "agents are told " + *v.Target
					}
					return s.done(v, "Agent update policy set to %s: %s; %d of %d endpoints behind.", v.Policy, target, v.Behind, v.Endpoints)
				}
			}},
	}
}
