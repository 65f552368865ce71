package console

// The console's navigation: one grouped menu, the sidebar on wide screens
// and a folded "Menu" on phones, and the breadcrumb trail above every page,
// both drawn from the same table.

// navItem is one page of the menu. Need is what view.Can takes: a
// permission name, "admin", "operator", "feeds" or "orgs" (a person of
// several organizations); empty for everyone signed in.
type navItem struct {
	Key   string // the nav name a handler passes to render
	Label string
	Href  string
	Need  string
}

// navSection is a heading of the menu with its pages.
type navSection struct {
	Label string
	Items []navItem
}

// menu is the console's whole navigation, in the order shown.
var menu = []navSection{
	{Label: "Overview", Items: []navItem{
		{Key: "dashboard", Label: "Dashboard", Href: "/console/"},
		{Key: "organizations", Label: "All organizations", Href: "/console/organizations", Need: "orgs"},
	}},
	{Label: "Fleet", Items: []navItem{
		{Key: "endpoints", Label: "Endpoints", Href: "/console/endpoints", Need: "endpoints.view"},
		{Key: "groups", Label: "Groups", Href: "/console/groups", Need: "endpoints.view"},
		{Key: "software", Label: "Software", Href: "/console/software", Need: "endpoints.view"},
		{Key: "agents", Label: "Agents", Href: "/console/agents", Need: "endpoints.view"},
		{Key: "compliance", Label: "Compliance", Href: "/console/compliance", Need: "endpoints.view"},
		{Key: "enrollment", Label: "Enrollment", Href: "/console/enrollment", Need: "admin"},
	}},
	{Label: "Patching", Items: []navItem{
		{Key: "updates", Label: "Updates", Href: "/console/updates", Need: "updates.view"},
		{Key: "automations", Label: "Automations", Href: "/console/automations", Need: "automations.view"},
		{Key: "runs", Label: "Runs", Href: "/console/runs", Need: "automations.view"},
		{Key: "scripts", Label: "Scripts", Href: "/console/scripts", Need: "automations.view"},
	}},
	{Label: "Security", Items: []navItem{
		{Key: "vulns", Label: "Vulnerabilities", Href: "/console/vulnerabilities", Need: "vulnerabilities.view"},
		{Key: "reports", Label: "Reports", Href: "/console/reports", Need: "reports.view"},
		{Key: "alerts", Label: "Alert rules", Href: "/console/alerts", Need: "reports.view"},
		{Key: "audit", Label: "Audit Trail", Href: "/console/audit", Need: "reports.view"},
	}},
	{Label: "Administration", Items: []navItem{
		{Key: "users", Label: "Users & API Credentials", Href: "/console/users", Need: "admin"},
		{Key: "sso", Label: "Single sign-on", Href: "/console/settings/sso", Need: "admin"},
		{Key: "feeds", Label: "Vulnerability feeds", Href: "/console/feeds", Need: "feeds"},
		{Key: "instance-people", Label: "People & organizations", Href: "/console/instance/people", Need: "operator"},
		{Key: "instance-audit", Label: "Instance audit", Href: "/console/instance/audit", Need: "operator"},
	}},
}

// Menu is the part of the menu the signed-in user may open: sections
// without a page for them are left out.
func (v *view) Menu() []navSection {
	if v.S == nil {
		return nil
	}
	var out []navSection
	for _, sec := range menu {
		var items []navItem
		for _, it := range sec.Items {
			if it.Need == "" || v.Can(it.Need) {
				items = append(items, it)
			}
		}
		if len(items) > 0 {
			out = append(out, navSection{Label: sec.Label, Items: items})
		}
	}
	return out
}

// crumb is one step of the breadcrumb trail; the last one is the page
// itself and has no link.
type crumb struct {
	Label string
	Href  string
}

// trail is what a page's data implements to put steps between its menu
// page and itself (an automation between Automations and its edit form).
type trail interface {
	Trail() []crumb
}

// Crumbs is the breadcrumb trail of the page: its menu section, its menu
// page, the steps its data adds, and the page's own title (a menu page
// itself ends at its menu entry). A page outside
// the menu (the account page, errors) has none.
func (v *view) Crumbs() []crumb {
	if v.S == nil || v.Nav == "" {
		return nil
	}
	for _, sec := range menu {
		for _, it := range sec.Items {
			if it.Key != v.Nav {
				continue
			}
			out := []crumb{{Label: sec.Label}}
			if v.Path == it.Href {
				return append(out, crumb{Label: it.Label})
			}
			out = append(out, crumb{Label: it.Label, Href: it.Href})
			if t, ok := v.Data.(trail); ok {
				out = append(out, t.Trail()...)
			}
			return append(out, crumb{Label: v.Title})
		}
	}
	return nil
}
