package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/updates"
)

// The drill-downs: from an update to the endpoints missing it, from a CVE
// to the endpoints it affects and the updates that fix it, each ending in
// the action that resolves it (deploy), run through the API's operation as
// every console action is.

// affected is a page of the endpoints a drill-down is about, and the
// endpoint-list filter that selects all of them (for "all N" actions and
// the link to the full list).
type affected struct {
	Items  []apiv1.Endpoint
	Page   pager
	Filter string
}

func (c *Console) affectedEndpoints(r *http.Request, s *session, q store.EndpointQuery, filter url.Values) (affected, error) {
	p, err := newPager(r, 50)
	if err != nil {
		return affected{}, err
	}
	q.OrgID, q.Limit, q.Offset, q.ConnectedSince = s.User.OrgID, p.Limit, p.Offset, c.connectedSince()
	items, total, err := c.store.FindEndpoints(r.Context(), q)
	if err != nil {
		return affected{}, err
	}
	p.Total = total
	return affected{Items: items, Page: p, Filter: filter.Encode()}, nil
}

type updateData struct {
	U         store.UpdateKeyRow
	Endpoints affected
	// Fixes are the CVEs the update removes, with where.
	Fixes     []store.UpdateFix
	ShowVulns bool
	Back      string // this page
}

// updateDetail is one update: what it is, its approval, the CVEs it fixes,
// the endpoints missing it, and deploying it to all of them.
func (c *Console) updateDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	key := r.PathValue("key")
	rows, _, err := c.store.ListUpdateKeys(r.Context(), store.UpdateKeyQuery{OrgID: s.User.OrgID, Key: key, Limit: 1})
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return notFound("update missing on an endpoint")
	}
	d := updateData{U: rows[0], Back: "/console/updates/" + url.PathEscape(key)}
	if s.can(perm.EndpointsView) {
		if d.Endpoints, err = c.affectedEndpoints(r, s, store.EndpointQuery{UpdateKey: key}, url.Values{"updateKey": {key}}); err != nil {
			return err
		}
	}
	if s.can(perm.VulnerabilitiesView) {
		d.ShowVulns = true
		if d.Fixes, err = c.store.FixedCVEs(r.Context(), s.User.OrgID, key); err != nil {
			return err
		}
	}
	return c.render(w, r, s, http.StatusOK, "update", "", d.U.Title, "updates", d)
}

type vulnData struct {
	V         apiv1.Vulnerability
	Endpoints affected
	Fixes     []store.UpdateFix
}

// vulnDetail is one CVE on the fleet: its record, remediation and
// decision, the endpoints it affects with their vulnerable software, the
// missing updates that fix it, and deploying them to the affected
// endpoints.
func (c *Console) vulnDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	cve, err := admin.CheckCVE(r.PathValue("cve"))
	if err != nil {
		return badRequest("That is not a CVE id.")
	}
	var items []apiv1.Vulnerability
	items, _, err = c.store.ListVulnerabilities(r.Context(), store.VulnQuery{OrgID: s.User.OrgID, CVEID: cve, IncludeAccepted: true, Limit: 1, Now: c.now()})
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return notFound("CVE on your fleet")
	}
	d := vulnData{V: items[0]}
	if s.can(perm.EndpointsView) {
		if d.Endpoints, err = c.affectedEndpoints(r, s, store.EndpointQuery{CVE: cve}, url.Values{"cve": {cve}}); err != nil {
			return err
		}
	}
	if d.Fixes, err = c.store.FixingUpdates(r.Context(), s.User.OrgID, cve); err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "vuln", "", cve, "vulns", d)
}

type titleData struct {
	T         apiv1.SoftwareTitle
	Endpoints affected
	// Version is the version the endpoints are narrowed to, if any.
	Version string
	Back    string // this page
	// Newest is the newest version known: of the update missing on the
	// fleet if there is one (Update), else the newest installed.
	Newest string
	Update *store.UpdateKeyRow
}

// titleUpdate is the newest third-party update of the application name
// missing on the organization's endpoints (its title is the name), if any.
func (c *Console) titleUpdate(r *http.Request, s *session, name string) (*store.UpdateKeyRow, string, error) {
	src, _ := updates.SourcesOf("THIRD_PARTY")
	rows, _, err := c.store.ListUpdateKeys(r.Context(), store.UpdateKeyQuery{OrgID: s.User.OrgID, Q: name, Sources: src, Limit: 50})
	if err != nil {
		return nil, "", err
	}
	var best *store.UpdateKeyRow
	newest := ""
	for i := range rows {
		_, ver, ok := updates.SplitThirdParty(rows[i].Key)
		if !ok || !strings.EqualFold(strings.TrimSpace(rows[i].Title), strings.TrimSpace(name)) {
			continue
		}
		if best == nil || updates.CompareVersions(ver, newest) > 0 {
			best, newest = &rows[i], ver
		}
	}
	return best, newest, nil
}

// softwareTitle is one application: its versions with their endpoints, the
// endpoints that have it (or one version of it), and uninstalling it from
// them.
func (c *Console) softwareTitle(w http.ResponseWriter, r *http.Request, s *session) error {
	name, version := r.URL.Query().Get("name"), r.URL.Query().Get("version")
	if name == "" {
		return badRequest("Which application? The link lacks its name.")
	}
	t, err := c.store.SoftwareTitleByName(r.Context(), s.User.OrgID, name)
	if isNotFound(err) {
		return notFound("application on your endpoints")
	}
	if err != nil {
		return err
	}
	d := titleData{T: t, Version: version}
	filter, here := url.Values{"software": {name}}, url.Values{"name": {name}}
	if version != "" {
		filter.Set("softwareVersion", version)
		here.Set("version", version)
	}
	d.Back = "/console/software/title?" + here.Encode()
	if s.can(perm.UpdatesView) {
		if d.Update, d.Newest, err = c.titleUpdate(r, s, name); err != nil {
			return err
		}
	}
	if d.Newest == "" {
		for _, v := range t.Versions {
			if v.Version != nil && (d.Newest == "" || updates.CompareVersions(*v.Version, d.Newest) > 0) {
				d.Newest = *v.Version
			}
		}
	}
	if d.Endpoints, err = c.affectedEndpoints(r, s, store.EndpointQuery{Software: name, SoftwareVersion: version}, filter); err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "software_title", "", t.Name, "software", d)
}
