package console

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// TestMenuByPermission: the menu shows a signed-in user only the pages
// their role opens, and leaves out sections with none.
func TestMenuByPermission(t *testing.T) {
	labels := func(v *view) (sections, pages []string) {
		for _, sec := range v.Menu() {
			sections = append(sections, sec.Label)
			for _, it := range sec.Items {
				pages = append(pages, it.Label)
			}
		}
		return
	}
	admin := &view{S: &session{ConsoleSession: store.ConsoleSession{User: store.ConsoleUser{User: store.User{InstanceOperator: true}, Permissions: perm.All}}}}
	sections, pages := labels(admin)
	if !slices.Equal(sections, []string{"Overview", "Fleet", "Patching", "Security", "Administration"}) || !slices.Contains(pages, "Instance audit") {
		t.Errorf("an instance operator's menu: %v %v", sections, pages)
	}
	viewer := &view{S: &session{ConsoleSession: store.ConsoleSession{User: store.ConsoleUser{Permissions: perm.Set(perm.EndpointsView)}}}}
	sections, pages = labels(viewer)
	if !slices.Equal(sections, []string{"Overview", "Fleet"}) || !slices.Equal(pages, []string{"Dashboard", "Endpoints", "Groups", "Software", "Agents", "Compliance"}) {
		t.Errorf("an endpoints.view-only menu: %v %v", sections, pages)
	}
	if (&view{}).Menu() != nil {
		t.Error("a page without a session has a menu")
	}
}

// TestCrumbs: a menu page ends the trail at its menu entry; a page below
// it links back to it and names itself; a page's data adds its steps.
func TestCrumbs(t *testing.T) {
	s := &session{ConsoleSession: store.ConsoleSession{User: store.ConsoleUser{Permissions: perm.All}}}
	trail := func(v *view) string {
		var parts []string
		for _, c := range v.Crumbs() {
			parts = append(parts, c.Label+"<"+c.Href+">")
		}
		return strings.Join(parts, " ")
	}
	for _, tc := range []struct {
		v    *view
		want string
	}{
		{&view{S: s, Nav: "endpoints", Path: "/console/endpoints", Title: "Endpoints"}, "Fleet<> Endpoints<>"},
		{&view{S: s, Nav: "endpoints", Path: "/console/endpoints/e1", Title: "WS-0001"}, "Fleet<> Endpoints</console/endpoints> WS-0001<>"},
		{&view{S: s, Nav: "agents", Path: "/console/agents", Title: "Agent versions"}, "Fleet<> Agents<>"},
		{&view{S: s, Nav: "automations", Path: "/console/automations/a1/edit", Title: "Edit Nightly",
			Data: automationEdit{F: map[string][]string{}, A: &store.Automation{ID: "a1", Name: "Nightly"}}},
			"Patching<> Automations</console/automations> Nightly</console/automations/a1> Edit Nightly<>"},
		{&view{S: s, Nav: "account", Path: "/console/account", Title: "Your account"}, ""},
		{&view{Nav: "endpoints", Path: "/console/endpoints", Title: "Endpoints"}, ""},
	} {
		if got := trail(tc.v); got != tc.want {
			t.Errorf("%s: crumbs %q, want %q", tc.v.Path, got, tc.want)
		}
	}
}

// TestEveryNavIsInTheMenu: every nav name a handler renders with is a menu
// entry (or one of the few pages outside the menu), so no page loses its
// place in the sidebar and its breadcrumbs.
func TestEveryNavIsInTheMenu(t *testing.T) {
	known := map[string]bool{"": true, "account": true}
	for _, sec := range menu {
		for _, it := range sec.Items {
			known[it.Key] = true
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`c\.render\(w, r, [^,]+, [^,]+, "[a-z_]+", "[a-z]*", [^,]+, "([a-z-]*)"`)
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			seen++
			if !known[m[1]] {
				t.Errorf("%s renders a page with nav %q, which the menu does not have", f, m[1])
			}
		}
	}
	if seen < 30 {
		t.Fatalf("found only %d render calls; the pattern no longer matches the code", seen)
	}
}
