// Package deplist holds, for each program patchd ships, the list of the
// packages outside the standard library that the program is built from
// (patchd.txt, patchd-agent.txt, patchctl.txt), and the test that keeps
// the lists true. A change that gives a program a new dependency changes
// its list in the same commit, so the new dependency shows in review;
// `go test ./internal/deplist -update` writes the lists anew.
package deplist

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write the dependency lists anew")

// programs are the binaries whose dependencies are listed.
var programs = []string{"patchd", "patchd-agent", "patchctl"}

// deps answers the non-standard packages the program's main package is
// built from, for the target given as GOOS/GOARCH (the agent's imports
// differ per system).
func deps(t *testing.T, program, goos string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "../../cmd/"+program)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/%s for %s: %v", program, goos, err)
	}
	var list []string
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			list = append(list, line)
		}
	}
	return list
}

// union is every package the program is built from on Linux, Windows or
// macOS, sorted, each once.
func union(t *testing.T, program string) []string {
	var all []string
	for _, goos := range []string{"linux", "windows", "darwin"} {
		all = append(all, deps(t, program, goos)...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

func TestDependencyLists(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	for _, program := range programs {
		t.Run(program, func(t *testing.T) {
			got := union(t, program)
			file := program + ".txt"
			text := "# " + program + ": the packages outside the standard library it is built from (Linux, Windows, macOS).\n" +
				"# Written by `go test ./internal/deplist -update`; review every line this file gains.\n" +
				strings.Join(got, "\n") + "\n"
			if *update {
				if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v: run go test ./internal/deplist -update and commit %s", err, filepath.Join("internal/deplist", file))
			}
			var want []string
			for _, line := range strings.Split(string(b), "\n") {
				if line != "" && !strings.HasPrefix(line, "#") {
					want = append(want, line)
				}
			}
			for _, p := range got {
				if !slices.Contains(want, p) {
					t.Errorf("%s is now built from %s, which internal/deplist/%s does not list: review the new dependency, then go test ./internal/deplist -update", program, p, file)
				}
			}
			for _, p := range want {
				if !slices.Contains(got, p) {
					t.Errorf("%s is no longer built from %s: go test ./internal/deplist -update", program, p)
				}
			}
		})
	}
}

// TestServerLinksNoAgent: the server packages, signs and serves the agent
// but runs none of its code; what both need (the version, the service
// definitions) lives in a package of its own.
func TestServerLinksNoAgent(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	for _, p := range union(t, "patchd") {
		if p == "github.com/patchd/patchd/agent" || strings.HasPrefix(p, "github.com/patchd/patchd/agent/") {
			t.Errorf("patchd is built from the agent's package %s", p)
		}
	}
}
