package ctl

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

var groupCols = []column[apiv1.Group]{
	col("ID", func(g apiv1.Group) string { return g.ID }),
	col("NAME", func(g apiv1.Group) string { return g.Name }),
	col("KIND", func(g apiv1.Group) string { return g.Kind }),
	numCol("MEMBERS", func(g apiv1.Group) string { return strconv.Itoa(g.Members) }),
	col("BUILT-IN", func(g apiv1.Group) string { return yesNo(g.System) }),
	col("RULES", func(g apiv1.Group) string { return rulesText(g) }),
}

func groupPairs(g apiv1.Group) [][2]string {
	offline := ""
	if g.OfflineAlertMinutes != nil {
		offline = strconv.Itoa(*g.OfflineAlertMinutes) + " min"
	}
	return [][2]string{{"ID", g.ID}, {"Name", g.Name}, {"Kind", g.Kind}, {"Members", strconv.Itoa(g.Members)}, {"Built-in", yesNo(g.System)},
		{"Description", str(g.Description)}, {"Match all", yesNo(g.MatchAll)}, {"Rules", rulesText(g)},
		{"Offline alert", offline}, {"Online alert", yesNo(g.OnlineAlert)}}
}

func rulesText(g apiv1.Group) string {
	var parts []string
	for _, r := range g.Rules {
		parts = append(parts, ruleText(r))
	}
	joiner := " or "
	if g.MatchAll {
		joiner = " and "
	}
	text := strings.Join(parts, joiner)
	for _, r := range g.ExcludeRules {
		text += " except " + ruleText(r)
	}
	return strings.TrimSpace(text)
}

func ruleText(r apiv1.GroupRule) string {
	if r.Value == "" {
		return r.Field + " " + r.Op
	}
	return fmt.Sprintf("%s %s %q", r.Field, r.Op, r.Value)
}

// ruleList is a repeatable FIELD:OP[:VALUE] flag.
type ruleList []apiv1.GroupRule

func (l *ruleList) String() string { return "" }

func (l *ruleList) Set(v string) error {
	parts := strings.SplitN(v, ":", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return fmt.Errorf("want FIELD:OP[:VALUE], e.g. hostname:startsWith:web")
	}
	r := apiv1.GroupRule{Field: parts[0], Op: parts[1]}
	if len(parts) == 3 {
		r.Value = parts[2]
	}
	*l = append(*l, r)
	return nil
}

// listFlag is a repeatable flag whose values may also be comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// readJSONFile decodes a file ("-" for stdin) into v, refusing unknown
// fields so that a misspelt key is not silently dropped.
func readJSONFile(s *session, name string, v any) error {
	data, err := readInput(s, name)
	if err != nil {
		return err
	}
	return decodeStrict(name, data, v)
}

// readInput reads a file, or stdin for "-".
func readInput(s *session, name string) ([]byte, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(s.io.Stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, usagef("read %s: %v", name, err)
	}
	return data, nil
}

func decodeStrict(name string, data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return usagef("%s: %v", name, err)
	}
	return nil
}

// groupFlags are the flags of groups create and update.
type groupFlags struct {
	fs          *flag.FlagSet
	file        string
	name        string
	description string
	matchAll    bool
	rules       ruleList
	exclude     ruleList
	members     listFlag
	offline     int
	online      bool
}

func (g *groupFlags) register(fs *flag.FlagSet) {
	g.fs = fs
	fs.StringVar(&g.file, "f", "", "GroupBody JSON `FILE` (- for stdin); flags override its fields")
	fs.StringVar(&g.name, "name", "", "group `NAME`")
	fs.StringVar(&g.description, "description", "", "description `TEXT`")
	fs.BoolVar(&g.matchAll, "match-all", false, "every include rule must match (default: any)")
	fs.Var(&g.rules, "rule", "include rule `FIELD:OP[:VALUE]` (repeatable), e.g. hostname:startsWith:web")
	fs.Var(&g.exclude, "exclude", "exclude rule `FIELD:OP[:VALUE]` (repeatable)")
	fs.Var(&g.members, "member", "manual member endpoint `ID` (repeatable or comma-separated)")
	fs.IntVar(&g.offline, "offline-alert-minutes", 0, "uptime alert after `N` minutes offline")
	fs.BoolVar(&g.online, "online-alert", false, "alert when a member comes back online")
}

// body builds the GroupBody from -f and the flags given on the command line.
func (g *groupFlags) body(s *session) (apiv1.GroupBody, error) {
	var b apiv1.GroupBody
	if g.file != "" {
		if err := readJSONFile(s, g.file, &b); err != nil {
			return b, err
		}
	}
	g.fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "name":
			b.Name = &g.name
		case "description":
			b.Description = &g.description
		case "match-all":
			b.MatchAll = &g.matchAll
		case "rule":
			rules := []apiv1.GroupRule(g.rules)
			b.Rules = &rules
		case "exclude":
			rules := []apiv1.GroupRule(g.exclude)
			b.ExcludeRules = &rules
		case "member":
			ids := []string(g.members)
			b.MachineIDs = &ids
		case "offline-alert-minutes":
			b.OfflineAlertMinutes = &g.offline
		case "online-alert":
			b.OnlineAlert = &g.online
		}
	})
	return b, nil
}

func groupCommands() []command {
	return []command{
		listCommand("groups list", "list endpoint groups", groupCols, (*client.Client).ListGroups),
		getCommand("groups get", "ID", "show a group with its criteria and member count", (*client.Client).GetGroup, groupCols, groupPairs),
		{name: "groups create", args: "--name NAME [--rule F:OP:V]… [--exclude F:OP:V]… [--match-all] [--member ID]… [-f group.json]",
			summary: "create a static (--member) or dynamic (--rule) group",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var g groupFlags
				g.register(fs)
				return withChecked("", func(s *session, _ []string) (apiv1.GroupBody, error) {
					body, err := g.body(s)
					if err == nil && (body.Name == nil || *body.Name == "") {
						err = usagef("a group needs --name (or a name in -f)")
					}
					return body, err
				}, func(s *session, c *client.Client, _ []string, body apiv1.GroupBody) error {
					res, err := c.CreateGroup(s.ctx, body)
					if err != nil {
						return err
					}
					return s.done(res, "Group %q created: %s", res.Group.Name, res.Group.ID)
				})
			}},
		{name: "groups update", args: "ID [--name NAME] [--rule F:OP:V]… [flags of create] [-f group.json]",
			summary: "change the fields of a group given as flags (a list flag replaces the whole list)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var g groupFlags
				g.register(fs)
				return withChecked("ID", func(s *session, _ []string) (apiv1.GroupBody, error) {
					body, err := g.body(s)
					if err == nil && body == (apiv1.GroupBody{}) {
						err = usagef("nothing to change: give -f or at least one field flag")
					}
					return body, err
				}, func(s *session, c *client.Client, args []string, body apiv1.GroupBody) error {
					res, err := c.PatchGroup(s.ctx, args[0], body)
					if err != nil {
						return err
					}
					return s.done(res, "Group %q updated: %s", res.Group.Name, res.Group.ID)
				})
			}},
		deleteCommand("groups delete", "ID", "delete a group (built-in groups cannot be deleted)", "Group %s deleted.", (*client.Client).DeleteGroup),
	}
}
