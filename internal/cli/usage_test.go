package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// adminCommandsOutsideTheTable are the admin commands runAdmin handles
// before it looks in its command table.
// (agent: runAgentAdmin, which needs no database).
var adminCommandsOutsideTheTable = []string{"backup", "restore"}

// threeWords matches a usage line's fifth word when it is the last word of a
// three-word command (lower-case verbs, alternatives split by '|'), not a
// flag or an upper-case placeholder.
var threeWords = regexp.MustCompile(`^[a-z][a-z-]*(\|[a-z][a-z-]*)*$`)

// TestUsageListsEveryAdminCommand takes the names of runAdmin's command
// table and wants each "object verb" in the usage text, as
// "patchd admin OBJECT VERB" or with VERB among an a|b|c list.
// (approval-policy was once missing.)
func TestUsageListsEveryAdminCommand(t *testing.T) {
	commands := append(adminTableNames(), adminCommandsOutsideTheTable...)
	commands = append(commands, agentVerbCases(t)...)
	if len(commands) < 20 {
		t.Fatalf("found only %d admin commands: %q", len(commands), commands)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(usage, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "patchd" || f[1] != "admin" {
			continue
		}
		if len(f) == 3 || strings.HasPrefix(f[3], "-") {
			listed[f[2]] = true
			continue
		}
		if len(f) > 4 && threeWords.MatchString(f[4]) {
			// "patchd admin user operator grant|revoke": a three-word command.
			for _, verb := range strings.Split(f[4], "|") {
				listed[f[2]+" "+f[3]+" "+verb] = true
			}
			continue
		}
		for _, verb := range strings.Split(f[3], "|") {
			listed[f[2]+" "+verb] = true
		}
	}
	for _, c := range commands {
		if !listed[c] {
			t.Errorf("patchd admin %s is not in the usage text", c)
		}
	}
	for c := range listed {
		if !slices.Contains(commands, c) {
			t.Errorf("the usage text lists patchd admin %s, which runAdmin does not handle", c)
		}
	}
}

// adminTableNames answers the names of runAdmin's command table.
func adminTableNames() []string {
	var names []string
	for _, c := range adminCommands {
		names = append(names, c.name)
	}
	return names
}

// agentVerbCases answers "agent VERB" for the string cases of the switch on
// verb in runAgentAdmin (agent.go), which runAdmin hands "agent" to.
func agentVerbCases(t *testing.T) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "agent.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var cases []string
	ast.Inspect(file, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "runAgentAdmin" {
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			sw, ok := n.(*ast.SwitchStmt)
			if !ok {
				return true
			}
			if id, ok := sw.Tag.(*ast.Ident); !ok || id.Name != "verb" {
				return true
			}
			for _, stmt := range sw.Body.List {
				for _, e := range stmt.(*ast.CaseClause).List {
					if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatal(err)
						}
						cases = append(cases, "agent "+v)
					}
				}
			}
			return false
		})
		return false
	})
	if len(cases) == 0 {
		t.Fatal("found no verb of runAgentAdmin in agent.go")
	}
	return cases
}
