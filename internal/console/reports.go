package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/reports"
)

// The reports page: the catalog by category, one report as a paged table,
// and its CSV download.
//
// A page of a report reads the report's row iterator directly and stops
// after the page's last row (and one more, to know whether there is a next
// page): a report of 1.5 million rows costs a page what its first rows
// cost, never the whole report. The page does not count the rows; the CSV
// download is where the whole report is read.
//
// The CSV download is the REST API's own CSV code (GET
// /api/v1/reports/{key}?format=csv through API.ServeAs), writing straight
// to the browser's connection and flushing every few thousand rows. It has
// no Content-Length, so the download starts as soon as the first rows are
// written and the browser's download bar shows the bytes received while it
// runs: that is the export's progress, with nothing polled and nothing
// buffered on the server.

type reportGroup struct {
	Category string
	Reports  []*reports.Definition
}

// catalogGroups answers the catalog by category, categories in the order
// of their first report.
func catalogGroups() []reportGroup {
	var out []reportGroup
	pos := map[string]int{}
	for _, d := range reports.Catalog() {
		i, ok := pos[d.Category]
		if !ok {
			i = len(out)
			pos[d.Category] = i
			out = append(out, reportGroup{Category: d.Category})
		}
		out[i].Reports = append(out[i].Reports, d)
	}
	return out
}

func (c *Console) reportList(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.render(w, r, s, http.StatusOK, "reports", "", "Reports", "reports", catalogGroups())
}

type reportData struct {
	Def         *reports.Definition
	Rows        [][]string
	Offset      int
	Limit       int
	More        bool
	CollectedAt *time.Time
}

// Trail names the report's category in the breadcrumbs.
func (d reportData) Trail() []crumb { return []crumb{{Label: d.Def.Category}} }

// First and Last number the page's rows from 1.
func (d reportData) First() int { return d.Offset + 1 }
func (d reportData) Last() int  { return d.Offset + len(d.Rows) }

func (d reportData) at(offset int) string {
	q := url.Values{}
	q.Set("offset", strconv.Itoa(max(offset, 0)))
	q.Set("limit", strconv.Itoa(d.Limit))
	return "?" + q.Encode()
}

func (d reportData) Prev() string { return d.at(d.Offset - d.Limit) }
func (d reportData) Next() string { return d.at(d.Offset + d.Limit) }

// reportFile serves /console/reports/{key} (a page of the report) and
// /console/reports/{key}.csv (the download).
func (c *Console) reportFile(w http.ResponseWriter, r *http.Request, s *session) error {
	name := r.PathValue("file")
	if key, ok := strings.CutSuffix(name, ".csv"); ok {
		if _, ok := reports.Lookup(key); !ok {
			return notFound("report")
		}
		return c.reportCSV(w, r, s, key)
	}
	def, ok := reports.Lookup(name)
	if !ok {
		return notFound("report")
	}
	p, err := newPager(r, 100)
	if err != nil {
		return err
	}
	d := reportData{Def: def, Offset: p.Offset, Limit: p.Limit}
	run := def.Open(reports.Env{Store: c.store, OrgID: s.User.OrgID, Now: c.now(), ConnectedSince: c.connectedSince()})
	n := 0
	for row, err := range run.Rows(r.Context()) {
		if err != nil {
			return err
		}
		n++
		if n <= d.Offset {
			continue
		}
		if len(d.Rows) == d.Limit {
			d.More = true
			break
		}
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = reportCell(v)
		}
		d.Rows = append(d.Rows, cells)
	}
	d.CollectedAt = run.CollectedAt()
	return c.render(w, r, s, http.StatusOK, "report", "", def.Title, "reports", d)
}

// reportCSV streams the report through the REST API's CSV code, as the
// session's user.
func (c *Console) reportCSV(w http.ResponseWriter, r *http.Request, s *session, key string) error {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, "/api/v1/reports/"+url.PathEscape(key)+"?format=csv", nil)
	if err != nil {
		return err
	}
	req.RemoteAddr = r.RemoteAddr
	c.cfg.API.ServeAs(w, req, s.principal())
	return nil
}

// reportCell shows a report value as text, as the CSV answer does but for
// booleans, which read better as yes and no.
func reportCell(v any) string {
	if b, ok := v.(bool); ok {
		if b {
			return "yes"
		}
		return "no"
	}
	return reports.Text(v)
}
