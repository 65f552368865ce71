package store

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"
)

// softwareByEndpoint answers the whole software-by-endpoint source (no
// filter, no page) on SQLite: the organization's software in the table's own order,
// endpoint by endpoint, each endpoint's applications sorted in memory by
// name and version, with the title names and endpoint names read once.
// The query with the order in SQL joins the title of every row and sorts
// each endpoint's rows in a temporary B-tree; this reads the rows once.
// (Not on PostgreSQL, whose collation may order names otherwise than the
// byte order used here: there the query stays.)
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
		endpoints, err := s.reportEndpointList(ctx, p.OrgID)
		if err != nil {
			fail(err)
			return
		}
		byID := make(map[string]int, len(endpoints))
		for i, e := range endpoints {
			byID[e.id] = i
		}
		// The rows of each endpoint are contiguous: the order names e.id
		// last.
		rows, err := s.query(ctx, `SELECT es.endpoint_id, es.title_id, es.version_key, es.publisher, es.install_date, es.installed_for, es.install_type
			FROM endpoints e JOIN endpoint_software es ON es.endpoint_id = e.id
			WHERE e.org_id = ? ORDER BY e.sort_name, e.id`, p.OrgID)
		if err != nil {
			fail(err)
			return
		}
		defer rows.Close()
		var (
			current reportEndpointRow
			skip    bool // the current endpoint enrolled after the list was read
			apps    []softwareRow
			values  []any
		)
		// flush yields the current endpoint's applications in order.
		flush := func() bool {
			slices.SortFunc(apps, func(a, b softwareRow) int {
				ta, tb := titles[a.title], titles[b.title]
				return cmp.Or(strings.Compare(ta.lower, tb.lower), strings.Compare(a.version.text(), b.version.text()), cmp.Compare(a.title, b.title))
			})
			for i := range apps {
				a := &apps[i]
				if values == nil || !p.ReuseValues {
					values = make([]any, 8)
				}
				values[0], values[1], values[2] = current.name, current.id, titles[a.title].name
				values[3] = a.version.v
				if a.version.text() == "" {
					values[3] = nil // NULLIF(version_key, '')
				}
				values[4], values[5], values[6], values[7] = a.publisher.v, a.installDate.v, a.installedFor.v, a.installType.v
				if !yield(ReportRow{Values: values, At: current.at}, nil) {
					return false
				}
			}
			apps = apps[:0]
			return true
		}
		var id string
		var a softwareRow
		for rows.Next() {
			if err := rows.Scan(&id, &a.title, &a.version, &a.publisher, &a.installDate, &a.installedFor, &a.installType); err != nil {
				fail(err)
				return
			}
			if id != current.id {
				if !flush() {
					return
				}
				i, ok := byID[id]
				current, skip = reportEndpointRow{id: id}, !ok
				if ok {
					current = endpoints[i]
				}
			}
			if !skip {
				apps = append(apps, a)
			}
		}
		if err := rows.Err(); err != nil {
			fail(err)
			return
		}
		flush()
	}
}

// softwareRow is one application of an endpoint.
type softwareRow struct {
	title                                             int64
	version                                           nullText
	publisher, installDate, installedFor, installType nullText
}

// nullText is a nullable text column, as the report value: a string or
// nil. It keeps the interface the driver boxed the string in, so that the
// row's value needs no second allocation.
type nullText struct{ v any }

func (n *nullText) Scan(src any) error {
	switch x := src.(type) {
	case nil, string:
		n.v = src
	case []byte:
		n.v = string(x)
	default:
		return fmt.Errorf("value %T is not text", src)
	}
	return nil
}

// text is the string, "" for NULL.
func (n nullText) text() string {
	s, _ := n.v.(string)
	return s
}

// reportTitle is a software title's name and the lowercase name the
// reports sort by.
type reportTitle struct{ name, lower string }

func (s *Store) reportTitles(ctx context.Context, orgID string) (map[int64]reportTitle, error) {
	rows, err := s.query(ctx, `SELECT id, name, name_lower FROM software_titles WHERE org_id = ?`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]reportTitle{}
	for rows.Next() {
		var id int64
		var t reportTitle
		if err := rows.Scan(&id, &t.name, &t.lower); err != nil {
			return nil, err
		}
		out[id] = t
	}
	return out, rows.Err()
}

// reportEndpointRow is an endpoint of a report, in name order.
type reportEndpointRow struct {
	id, name string
	at       time.Time
}

// reportEndpointList lists the organization's endpoints in name order.
func (s *Store) reportEndpointList(ctx context.Context, orgID string) ([]reportEndpointRow, error) {
	rows, err := s.query(ctx, `SELECT id, COALESCE(display_name, hostname), inventory_at FROM endpoints WHERE org_id = ? ORDER BY sort_name, id`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []reportEndpointRow
	for rows.Next() {
		var e reportEndpointRow
		var at *int64
		if err := rows.Scan(&e.id, &e.name, &at); err != nil {
			return nil, err
		}
		if at != nil {
			e.at = fromMillis(*at)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
