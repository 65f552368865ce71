package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The two complete software reports on SQLite (installed-software,
// software-by-endpoint without a filter): 1.5 million rows for 10,000
// endpoints. Read a row at a time, most of their cost is the driver's:
// every column of every row is three calls into SQLite, each taking the
// connection's mutex, and a string. So SQLite answers one row per title
// (or endpoint) holding that title's (endpoint's) rows as one JSON array
// of arrays (json_group_array of a correlated subquery, read from an
// index in its order), and the rows are taken out of it here: a third of
// the CPU. One title's (endpoint's) rows are in memory at a time. A page
// of these reports, or PostgreSQL, runs the query of the source.

// softwareGroups are the rows of one title or endpoint: the JSON array of
// arrays SQLite built, decoded into reused rows of width values.
type softwareGroups struct {
	rows  [][]any
	width int
}

// decode decodes a group. Strings are copied (b may be reused), integers
// are int64, other numbers float64, null nil.
func (g *softwareGroups) decode(b []byte) error {
	g.rows = g.rows[:0]
	d := keyDecoder{b: b}
	d.space()
	if !d.consume('[') {
		return d.errorf("a group is an array")
	}
	d.space()
	if d.consume(']') {
		return d.end()
	}
	for {
		d.space()
		if !d.consume('[') {
			return d.errorf("a row is an array")
		}
		n := len(g.rows)
		if n < cap(g.rows) {
			g.rows = g.rows[:n+1]
		} else {
			g.rows = append(g.rows, nil)
		}
		if g.rows[n] == nil {
			g.rows[n] = make([]any, g.width)
		}
		row := g.rows[n]
		for i := range g.width {
			d.space()
			if i > 0 && !d.consume(',') {
				return d.errorf("a row has %d values", g.width)
			}
			d.space()
			start := d.i
			if err := d.skipValue(0); err != nil {
				return err
			}
			raw := d.b[start:d.i]
			switch c := raw[0]; {
			case c == '"' && bytes.IndexByte(raw, '\\') < 0:
				// As the driver answers text: the bytes, valid UTF-8 or not.
				row[i] = string(raw[1 : len(raw)-1])
				continue
			case c == '-' || c >= '0' && c <= '9':
				if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
					row[i] = n
					continue
				}
			}
			v, err := d.value(raw)
			if err != nil {
				return err
			}
			row[i] = v
		}
		d.space()
		if !d.consume(']') {
			return d.errorf("a row has %d values", g.width)
		}
		d.space()
		if d.consume(']') {
			return d.end()
		}
		if !d.consume(',') {
			return d.errorf("expected , or ]")
		}
	}
}

// text is a value of a group as a string ("" for null).
func text(v any) string {
	s, _ := v.(string)
	return s
}

// version is the report value of a version key: null for none.
func version(v any) any {
	if text(v) == "" {
		return nil
	}
	return v
}

// installedSoftware answers the whole software source on SQLite: for
// each title in name order, its installations by endpoint id and version
// (the order of the title index the subquery reads; checked, and sorted
// if SQLite ever answered otherwise).
func (s *Store) installedSoftware(ctx context.Context, p ReportParams) iter.Seq2[ReportRow, error] {
	return func(yield func(ReportRow, error) bool) {
		fail := func(err error) {
			yield(ReportRow{}, fmt.Errorf("store: report software: %w", err))
		}
		names, err := s.reportEndpointNames(ctx, p.OrgID)
		if err != nil {
			fail(err)
			return
		}
		// A title's rows come by endpoint id: its endpoints are found by
		// walking the ids in that order (a map lookup per row was a
		// sixth of the CPU).
		endpoints := endpointCursor{ids: slices.Sorted(maps.Keys(names))}
		endpoints.at = make([]reportEndpoint, len(endpoints.ids))
		for i, id := range endpoints.ids {
			endpoints.at[i] = names[id]
		}
		cond, args := softwareFilter(p)
		rows, err := s.query(ctx, `SELECT t.name, (SELECT json_group_array(json_array(es.endpoint_id, es.version_key, es.publisher,
				es.install_date, es.installed_for, es.install_type)) FROM endpoint_software es WHERE es.title_id = t.id)
			FROM software_titles t WHERE t.org_id = ? AND t.installs > 0`+cond+` ORDER BY t.name_lower, t.id`,
			append([]any{p.OrgID}, args...)...)
		g := softwareGroups{width: 6}
		var title string
		var group sql.RawBytes
		var values []any
		if err := eachRow(rows, err, func(row *sql.Rows) error {
			if err := row.Scan(&title, &group); err != nil {
				return err
			}
			if err := g.decode(group); err != nil {
				return err
			}
			less := func(a, b []any) int {
				return cmp.Or(strings.Compare(text(a[0]), text(b[0])), strings.Compare(text(a[1]), text(b[1])))
			}
			if !slices.IsSortedFunc(g.rows, less) {
				slices.SortStableFunc(g.rows, less)
			}
			name := any(title)
			endpoints.i = 0
			for _, r := range g.rows {
				if values == nil || !p.ReuseValues {
					values = make([]any, 8)
				}
				e := endpoints.find(text(r[0]))
				values[0], values[1], values[2], values[3] = name, version(r[1]), r[2], e.name
				values[4], values[5], values[6], values[7] = r[0], r[3], r[4], r[5]
				if !yield(ReportRow{Values: values, At: e.at}, nil) {
					return errStopRows
				}
			}
			return nil
		}); err != nil {
			fail(err)
		}
	}
}

// endpointCursor finds endpoints by id in increasing id order.
type endpointCursor struct {
	ids []string // sorted
	at  []reportEndpoint
	i   int // ids before i are below the last id asked for
}

// find answers the endpoint id, which is not below the last one asked for
// since i was reset (zero if there is none: enrolled since the ids were
// read).
func (c *endpointCursor) find(id string) reportEndpoint {
	for c.i < len(c.ids) && c.ids[c.i] < id {
		c.i++
	}
	if c.i < len(c.ids) && c.ids[c.i] == id {
		return c.at[c.i]
	}
	return reportEndpoint{}
}

// softwareByEndpoint answers the whole software-by-endpoint source (no
// filter) on SQLite: endpoint by endpoint in name order, its applications
// sorted here by name and version (Go's byte order is SQLite's BINARY
// collation; PostgreSQL's may differ, so there the query stays).
func (s *Store) softwareByEndpoint(ctx context.Context, p ReportParams) iter.Seq2[ReportRow, error] {
	return func(yield func(ReportRow, error) bool) {
		fail := func(err error) {
			yield(ReportRow{}, fmt.Errorf("store: report software-by-endpoint: %w", err))
		}
		titles, err := s.reportTitles(ctx, p.OrgID)
		if err != nil {
			fail(err)
			return
		}
		rows, err := s.query(ctx, `SELECT e.id, COALESCE(e.display_name, e.hostname), e.inventory_at,
				(SELECT json_group_array(json_array(es.title_id, es.version_key, es.publisher, es.install_date, es.installed_for, es.install_type))
				FROM endpoint_software es WHERE es.endpoint_id = e.id)
			FROM endpoints e WHERE e.org_id = ? ORDER BY e.sort_name, e.id`, p.OrgID)
		g := softwareGroups{width: 6}
		var group sql.RawBytes
		var values []any
		if err := eachRow(rows, err, func(row *sql.Rows) error {
			var id, name string
			var at *int64
			if err := row.Scan(&id, &name, &at, &group); err != nil {
				return err
			}
			if err := g.decode(group); err != nil {
				return err
			}
			var r ReportRow
			if at != nil {
				r.At = fromMillis(*at)
			}
			slices.SortFunc(g.rows, func(a, b []any) int {
				ia, _ := a[0].(int64)
				ib, _ := b[0].(int64)
				return cmp.Or(strings.Compare(titles[ia].lower, titles[ib].lower), strings.Compare(text(a[1]), text(b[1])), cmp.Compare(ia, ib))
			})
			endpointName, endpointID := any(name), any(id)
			for _, a := range g.rows {
				if values == nil || !p.ReuseValues {
					values = make([]any, 8)
				}
				title, _ := a[0].(int64)
				values[0], values[1], values[2], values[3] = endpointName, endpointID, titles[title].name, version(a[1])
				values[4], values[5], values[6], values[7] = a[2], a[3], a[4], a[5]
				r.Values = values
				if !yield(r, nil) {
					return errStopRows
				}
			}
			return nil
		}); err != nil {
			fail(err)
		}
	}
}

// reportTitle is a software title's name and the lowercase name the
// reports sort by.
type reportTitle struct{ name, lower string }

func (s *Store) reportTitles(ctx context.Context, orgID string) (map[int64]reportTitle, error) {
	rows, err := s.query(ctx, `SELECT id, name, name_lower FROM software_titles WHERE org_id = ?`, orgID)
	out := map[int64]reportTitle{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id int64
		var t reportTitle
		if err := r.Scan(&id, &t.name, &t.lower); err != nil {
			return err
		}
		out[id] = t
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}
