package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/endpointq"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/safecsv"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/updates"
)

// The endpoints list: filters, sortable columns, a choice of columns kept
// in a cookie, paging with totals, a CSV of exactly what is filtered, and
// actions on the selected endpoints or on every endpoint matching.

// endpointColumn is a column the list may show.
type endpointColumn struct {
	Key, Label string
	Sort       string // the store's sort for it, empty when not sortable
}

// Opt tells a secondary column, folded away on a phone (the patch state
// columns stay beside the name).
func (c endpointColumn) Opt() bool { return !slices.Contains(patchColumns, c.Key) }

var endpointColumns = []endpointColumn{
	{"missingCritical", "Missing critical", "missingCritical"},
	{"missingTotal", "Missing updates", "missingTotal"},
	{"overdue", "Overdue", "overdue"},
	{"risk", "Risk", "risk"},
	{"status", "Status", "status"},
	{"platform", "Platform", "platform"},
	{"os", "Operating system", "os"},
	{"type", "Type", "type"},
	{"ip", "IP addresses", ""},
	{"agent", "Agent", "agentVersion"},
	{"lastSeen", "Last seen", "lastSeen"},
	{"reboot", "Reboot", ""},
}

var defaultEndpointColumns = []string{"missingCritical", "missingTotal", "overdue", "risk", "status", "platform", "os", "agent", "lastSeen", "reboot"}

// patchColumns are the columns of an endpoint's patch state.
var patchColumns = []string{"missingCritical", "missingTotal", "overdue"}

// patchStates reads the patch state of the endpoints listed when a column
// shows it.
func (c *Console) patchStates(r *http.Request, s *session, cols []string, items []apiv1.Endpoint) (map[string]store.PatchState, error) {
	if !slices.ContainsFunc(cols, func(col string) bool { return slices.Contains(patchColumns, col) }) {
		return nil, nil
	}
	ids := make([]string, len(items))
	for i, e := range items {
		ids[i] = e.ID
	}
	return c.store.PatchStates(r.Context(), s.User.OrgID, ids, c.now())
}

// patchCell is an endpoint's value in a patch-state column.
func patchCell(st store.PatchState, col string) string {
	switch col {
	case "missingCritical":
		return strconv.Itoa(st.MissingCritical)
	case "missingTotal":
		return strconv.Itoa(st.MissingTotal)
	}
	return strconv.Itoa(st.Overdue)
}

// colsCookie keeps the columns a user chose for the endpoints list.
const colsCookie = "patchd_endpoint_columns"

// notSeenChoices are the "not seen for" filter's days.
var notSeenChoices = []int{1, 7, 30, 90}

// endpointQuery reads the list's filters, sort and order from v as the
// API reads them; a value the list does not offer is refused.
func (c *Console) endpointQuery(v url.Values, orgID string) (store.EndpointQuery, error) {
	q, err := endpointq.Parse(v, orgID, c.now(), c.connectedSince())
	if err != nil {
		return q, badRequest("The list cannot show that: " + err.Error() + ".")
	}
	return q, nil
}

// chosenColumns is the columns asked for in v (and then remembered), or
// those remembered, or the default ones.
func chosenColumns(w http.ResponseWriter, r *http.Request) []string {
	pick := func(keys []string) []string {
		var out []string
		for _, col := range endpointColumns {
			if slices.Contains(keys, col.Key) {
				out = append(out, col.Key)
			}
		}
		return out
	}
	if v := r.URL.Query(); v.Has("cols") {
		cols := pick(v["cols"])
		http.SetCookie(w, &http.Cookie{Name: colsCookie, Value: strings.Join(cols, "."), Path: "/console/", MaxAge: 365 * 24 * 3600,
			HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
		return cols
	}
	if ck, err := r.Cookie(colsCookie); err == nil {
		return pick(strings.Split(ck.Value, "."))
	}
	return defaultEndpointColumns
}

type endpointsData struct {
	Items    []apiv1.Endpoint
	State    map[string]store.PatchState
	F        url.Values // the filters as asked
	Filter   string     // the filters as a query string ("select all N matching")
	Sort     string
	Desc     bool
	Cols     []string
	Columns  []endpointColumn
	Groups   []store.Group
	NotSeen  []int
	Page     pager
	CSV      string
	Selected int
	// NoneApproved: no approved update is missing on the fleet (a fresh
	// install), so deploying approved updates would install nothing.
	NoneApproved bool
}

// Has tells the template whether a column is shown.
func (d endpointsData) Has(col string) bool { return slices.Contains(d.Cols, col) }

// SortLink is the address of the list sorted by a column: ascending, or
// reversed when it is sorted by that column already.
func (d endpointsData) SortLink(sort string) string {
	v := endpointq.Filters(d.F)
	if d.Page.Limit != 50 {
		v.Set("limit", strconv.Itoa(d.Page.Limit))
	}
	v.Set("sort", sort)
	if d.sortKey() == sort && !d.Desc {
		v.Set("order", "desc")
	}
	return "/console/endpoints?" + v.Encode()
}

// SortState is a column's aria-sort value.
func (d endpointsData) SortState(sort string) string {
	switch {
	case d.sortKey() != sort:
		return ""
	case d.Desc:
		return "descending"
	}
	return "ascending"
}

func (d endpointsData) sortKey() string {
	if d.Sort == "" {
		return "name"
	}
	return d.Sort
}

func (c *Console) endpointList(w http.ResponseWriter, r *http.Request, s *session) error {
	p, err := newPager(r, 50)
	if err != nil {
		return err
	}
	v := r.URL.Query()
	q, err := c.endpointQuery(v, s.User.OrgID)
	if err != nil {
		return err
	}
	q.Limit, q.Offset = p.Limit, p.Offset
	items, total, err := c.store.FindEndpoints(r.Context(), q)
	if err != nil {
		return err
	}
	_, gl, err := c.groupNames(r, s)
	if err != nil {
		return err
	}
	p.Total = total
	delete(p.Query, "cols")
	f := endpointq.Filters(v)
	cols := chosenColumns(w, r)
	state, err := c.patchStates(r, s, cols, items)
	if err != nil {
		return err
	}
	d := endpointsData{Items: items, State: state, F: v, Filter: f.Encode(), Sort: q.Sort, Desc: q.Desc, Cols: cols, Columns: endpointColumns,
		Groups: gl, NotSeen: notSeenChoices, Page: p, CSV: "/console/endpoints.csv?" + f.Encode()}
	if s.can(perm.AutomationsRun) && len(items) > 0 {
		_, approved, err := c.store.ListUpdateKeys(r.Context(), store.UpdateKeyQuery{OrgID: s.User.OrgID, Approval: updates.StatusApproved, Limit: 1})
		if err != nil {
			return err
		}
		d.NoneApproved = approved == 0
	}
	return c.render(w, r, s, http.StatusOK, "endpoints", "", "Endpoints", "endpoints", d)
}

// endpointCSV answers every endpoint the filters select (no paging), in
// the list's order, with the columns chosen for the list.
func (c *Console) endpointCSV(w http.ResponseWriter, r *http.Request, s *session) error {
	q, err := c.endpointQuery(r.URL.Query(), s.User.OrgID)
	if err != nil {
		return err
	}
	items, _, err := c.store.FindEndpoints(r.Context(), q)
	if err != nil {
		return err
	}
	cols := chosenColumns(w, r)
	state, err := c.patchStates(r, s, cols, items)
	if err != nil {
		return err
	}
	head := []string{"id", "name", "hostname"}
	for _, col := range endpointColumns {
		if slices.Contains(cols, col.Key) {
			head = append(head, col.Label)
		}
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="endpoints.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	cw := safecsv.NewWriter(w)
	if err := cw.WriteText(head); err != nil {
		return nil
	}
	for _, e := range items {
		row := []string{e.ID, e.Name, e.Hostname}
		for _, col := range endpointColumns {
			switch {
			case !slices.Contains(cols, col.Key):
			case slices.Contains(patchColumns, col.Key):
				row = append(row, patchCell(state[e.ID], col.Key))
			default:
				row = append(row, endpointCell(e, col.Key))
			}
		}
		if err := cw.WriteText(row); err != nil {
			return nil // the client went away
		}
	}
	cw.Flush()
	return nil
}

// endpointCell is an endpoint's value in a CSV column.
func endpointCell(e apiv1.Endpoint, col string) string {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	switch col {
	case "risk":
		return strconv.FormatFloat(e.RiskScore, 'f', 1, 64)
	case "status":
		return e.Status
	case "platform":
		return e.Platform
	case "os":
		return strings.TrimSpace(str(e.OS) + " " + str(e.OSVersion))
	case "type":
		return e.Type
	case "ip":
		return strings.Join(e.IPAddresses, " ")
	case "agent":
		return str(e.AgentVersion)
	case "lastSeen":
		if e.LastSeenAt == nil {
			return ""
		}
		return e.LastSeenAt.UTC().Format(time.RFC3339)
	case "reboot":
		if e.PendingReboot {
			return "pending"
		}
		return ""
	}
	panic(fmt.Sprintf("console: no endpoint column %q", col))
}

// selectedEndpoints is what an action on the endpoints list acts on: the
// endpoints ticked, or with "all" every endpoint the carried filters
// select.
func (c *Console) selectedEndpoints(r *http.Request, s *session) ([]string, error) {
	if r.PostFormValue("all") != "1" {
		return r.PostForm["endpointIds"], nil
	}
	v, err := url.ParseQuery(r.PostFormValue("filter"))
	if err != nil {
		return nil, badRequest("The list's filters could not be read.")
	}
	q, err := c.endpointQuery(v, s.User.OrgID)
	if err != nil {
		return nil, err
	}
	return c.store.FindEndpointIDs(r.Context(), q)
}
