package console

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/safecsv"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulns"
)

// The view across organizations: for each organization the person
// belongs to, a few figures, each read by the same per-organization
// queries as that organization's pages and only where the person's role
// there allows them (a figure the role does not allow is not read). Each
// number opens that organization's list (switching the session to it).

// failedRunDays is the period of the failed deployments counted.
const failedRunDays = 7

// orgFigure is one figure of an organization: shown when Allowed, and
// opening List in that organization.
type orgFigure struct {
	Allowed bool
	N       int
	List    string
}

type orgRow struct {
	store.Membership
	Current bool
	// Compliance is the share of endpoints missing no update, in percent
	// (Compliance.N; Endpoints.N == 0: no figure).
	Endpoints, Compliance, OverdueCritical, FailedRuns, NotSeen orgFigure
}

// Figures are the row's figures in the table's order.
func (r orgRow) Figures() []orgFigure {
	return []orgFigure{r.Endpoints, r.Compliance, r.OverdueCritical, r.FailedRuns, r.NotSeen}
}

type orgsData struct {
	Rows          []orgRow
	NotSeenDays   int
	FailedRunDays int
	// Create: the person may create organizations (an instance-level
	// permission); CreateHere: its role here holds every permission, which
	// the creation takes; Templates: the organizations it administers.
	Create, CreateHere bool
	Templates          []store.Membership
}

// compliancePercent is the organization's compliance figure: the share of
// its endpoints missing no update (store.Compliance), in percent, and
// whether it has endpoints at all. Every view across organizations reads
// compliance through it.
func (c *Console) compliancePercent(ctx context.Context, orgID string, now time.Time) (int, bool, error) {
	d, err := c.store.Compliance(ctx, orgID, now)
	if err != nil || d.Endpoints == 0 {
		return 0, false, err
	}
	return d.FullyPatched * 100 / d.Endpoints, true, nil
}

// orgRows reads the figures of every organization of the person, each
// under the person's role in it.
func (c *Console) orgRows(ctx context.Context, s *session) ([]orgRow, error) {
	mems, err := c.store.Memberships(ctx, s.User.ID)
	if err != nil {
		return nil, err
	}
	now := c.now()
	out := make([]orgRow, 0, len(mems))
	for _, m := range mems {
		row := orgRow{Membership: m, Current: m.OrgID == s.User.OrgID}
		can := m.Permissions.Has
		if can(perm.EndpointsView) {
			_, n, err := c.store.FindEndpoints(ctx, store.EndpointQuery{OrgID: m.OrgID, Limit: 1})
			if err != nil {
				return nil, err
			}
			row.Endpoints = orgFigure{Allowed: true, N: n, List: "/console/endpoints"}
			_, n, err = c.store.FindEndpoints(ctx, store.EndpointQuery{OrgID: m.OrgID, NotSeenSince: now.AddDate(0, 0, -notSeenDays), Limit: 1})
			if err != nil {
				return nil, err
			}
			row.NotSeen = orgFigure{Allowed: true, N: n, List: "/console/endpoints?notSeenDays=" + strconv.Itoa(notSeenDays)}
			if can(perm.UpdatesView) {
				pct, ok, err := c.compliancePercent(ctx, m.OrgID, now)
				if err != nil {
					return nil, err
				}
				row.Compliance = orgFigure{Allowed: ok, N: pct, List: "/console/"}
			}
		}
		if can(perm.VulnerabilitiesView) {
			critical := 9.0
			_, n, err := c.store.ListVulnerabilities(ctx, store.VulnQuery{OrgID: m.OrgID, MinCVSS: &critical, Remediation: vulns.StatusOverdue, Now: now, Limit: 1})
			if err != nil {
				return nil, err
			}
			row.OverdueCritical = orgFigure{Allowed: true, N: n, List: "/console/vulnerabilities?remediation=Overdue&minCvss=9"}
		}
		if can(perm.AutomationsView) {
			_, n, err := c.store.ListRuns(ctx, store.RunQuery{OrgID: m.OrgID, WithFailures: true, Since: now.AddDate(0, 0, -failedRunDays), Limit: 1})
			if err != nil {
				return nil, err
			}
			row.FailedRuns = orgFigure{Allowed: true, N: n, List: "/console/runs?failed=1&days=" + strconv.Itoa(failedRunDays)}
		}
		out = append(out, row)
	}
	return out, nil
}

func (c *Console) orgsPage(w http.ResponseWriter, r *http.Request, s *session) error {
	rows, err := c.orgRows(r.Context(), s)
	if err != nil {
		return err
	}
	d := orgsData{Rows: rows, NotSeenDays: notSeenDays, FailedRunDays: failedRunDays, Create: s.User.CreateOrgs,
		CreateHere: s.User.Permissions&perm.All == perm.All}
	if d.Create {
		for _, row := range rows {
			if row.Permissions&perm.All == perm.All {
				d.Templates = append(d.Templates, row.Membership)
			}
		}
	}
	return c.render(w, r, s, http.StatusOK, "organizations", "", "Your organizations", "organizations", d)
}

// orgsCSV is the report across organizations: one line per organization,
// the organization a column; a figure the role there does not allow is
// empty.
func (c *Console) orgsCSV(w http.ResponseWriter, r *http.Request, s *session) error {
	rows, err := c.orgRows(r.Context(), s)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="organizations.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	cw := safecsv.NewWriter(w)
	cell := func(f orgFigure) any {
		if !f.Allowed {
			return ""
		}
		return f.N
	}
	cw.WriteText([]string{"organization", "role", "endpoints", "compliance_percent", "overdue_critical_cves",
		"failed_runs_" + strconv.Itoa(failedRunDays) + "d", "not_seen_" + strconv.Itoa(notSeenDays) + "d"})
	for _, row := range rows {
		cw.Write([]any{row.OrgName, row.RoleName, cell(row.Endpoints), cell(row.Compliance), cell(row.OverdueCritical), cell(row.FailedRuns), cell(row.NotSeen)})
	}
	cw.Flush()
	return cw.Error()
}
