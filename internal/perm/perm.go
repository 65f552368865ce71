// Package perm names the permissions of the REST API v1 (spec section 5) and
// holds sets of them as bit masks, so a permission check costs one AND.
package perm

import (
	"fmt"
	"sort"
	"strings"
)

// Permission is one grant of the spec's permission table.
type Permission uint16

// The eleven permissions of spec section 5.
const (
	APIAccess Permission = 1 << iota
	EndpointsView
	EndpointsManage
	UpdatesView
	VulnerabilitiesView
	AutomationsView
	AutomationsRun
	AutomationsManage
	UpdatesManage
	ReportsView
	ReportsManage
)

var names = map[Permission]string{
	APIAccess:           "api.access",
	EndpointsView:       "endpoints.view",
	EndpointsManage:     "endpoints.manage",
	UpdatesView:         "updates.view",
	VulnerabilitiesView: "vulnerabilities.view",
	AutomationsView:     "automations.view",
	AutomationsRun:      "automations.run",
	AutomationsManage:   "automations.manage",
	UpdatesManage:       "updates.manage",
	ReportsView:         "reports.view",
	ReportsManage:       "reports.manage",
}

var byName = func() map[string]Permission {
	m := make(map[string]Permission, len(names))
	for p, n := range names {
		m[n] = p
	}
	return m
}()

// String is the spec's name of the permission.
func (p Permission) String() string { return names[p] }

// Set is a set of permissions.
type Set uint16

// All holds every permission (the built-in Administrator role).
const All = Set(APIAccess | EndpointsView | EndpointsManage | UpdatesView | VulnerabilitiesView |
	AutomationsView | AutomationsRun | AutomationsManage | UpdatesManage | ReportsView | ReportsManage)

// ReadOnly holds api.access and every *.view permission (the built-in
// Read-only role).
const ReadOnly = Set(APIAccess | EndpointsView | UpdatesView | VulnerabilitiesView | AutomationsView | ReportsView)

// Has tells whether the set grants p.
func (s Set) Has(p Permission) bool { return s&Set(p) == Set(p) }

// Names lists the set's permissions by name, sorted.
func (s Set) Names() []string {
	out := make([]string, 0, len(names))
	for p, n := range names {
		if s.Has(p) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// String is the stored form: names joined by commas.
func (s Set) String() string { return strings.Join(s.Names(), ",") }

// Parse reads a comma-separated list of permission names; an unknown name
// is an error naming it.
func Parse(list string) (Set, error) {
	var s Set
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		p, ok := byName[n]
		if !ok {
			return 0, fmt.Errorf("unknown permission %q (known: %s)", n, All.String())
		}
		s |= Set(p)
	}
	return s, nil
}

// Lookup finds a permission by its name.
func Lookup(name string) (Permission, bool) {
	p, ok := byName[name]
	return p, ok
}
