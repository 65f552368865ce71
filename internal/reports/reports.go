// Package reports owns the catalog of built-in reports (operation 24 of the
// REST API): each report is a small declarative definition — key, title,
// category, description, columns and a row source. A source is an iterator
// of rows in column order: a projection of a dataset the agents send, a SQL
// source of the store (endpoints, software, updates, run history,
// vulnerabilities), or a small combination of them. Rows stream one at a
// time, so a report of millions of rows is never held in memory.
package reports

import (
	"context"
	"encoding/json"
	"iter"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/store"
)

// Env is what a report reads: the store, the organization, and the time of
// the request.
type Env struct {
	Store *store.Store
	OrgID string
	Now   time.Time
	// ConnectedSince: an endpoint seen at or after it is connected.
	ConnectedSince time.Time
}

// Source yields a report's rows in column order and tells seen when the data
// behind each row was collected.
type Source func(ctx context.Context, env Env, seen func(time.Time)) iter.Seq2[[]any, error]

// Definition is one report of the catalog.
type Definition struct {
	Key, Title, Category, Description string
	Columns                           []string
	Source                            Source
}

// Meta is the catalog entry of the report.
func (d *Definition) Meta() apiv1.ReportMeta {
	return apiv1.ReportMeta{Key: d.Key, Title: d.Title, Category: d.Category, Description: d.Description}
}

// Run is one reading of a report.
type Run struct {
	def       *Definition
	env       Env
	collected time.Time
}

// Open starts reading the report for env.
func (d *Definition) Open(env Env) *Run { return &Run{def: d, env: env} }

// Rows yields the report's rows; each has len(Columns) values.
func (r *Run) Rows(ctx context.Context) iter.Seq2[[]any, error] {
	return r.def.Source(ctx, r.env, func(t time.Time) {
		if t.After(r.collected) {
			r.collected = t
		}
	})
}

// CollectedAt is when the newest data behind the rows read so far was
// collected; nil when none was.
func (r *Run) CollectedAt() *time.Time {
	if r.collected.IsZero() {
		return nil
	}
	t := r.collected.UTC()
	return &t
}

var byKey = func() map[string]*Definition {
	m := make(map[string]*Definition, len(catalog))
	for _, d := range catalog {
		if _, dup := m[d.Key]; dup {
			panic("reports: duplicate key " + d.Key)
		}
		m[d.Key] = d
	}
	return m
}()

// Lookup finds a report by key.
func Lookup(key string) (*Definition, bool) {
	d, ok := byKey[key]
	return d, ok
}

// Catalog lists every report, in catalog order.
func Catalog() []*Definition { return catalog }

// cell turns a dataset value into a report value: a string, number,
// boolean or null; anything else is written as JSON text.
func cell(v any) any {
	switch v.(type) {
	case nil, string, bool, float64, int64, int:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return string(b)
}

// sql is a SQL source of the store; arg and patterns narrow it (see
// store.ReportParams).
func sql(name, arg string, patterns ...string) Source {
	return sqlExcluding(name, arg, patterns, nil)
}

func sqlExcluding(name, arg string, patterns, exclude []string) Source {
	if !store.HasReportSource(name) {
		panic("reports: no SQL source " + name)
	}
	return func(ctx context.Context, env Env, seen func(time.Time)) iter.Seq2[[]any, error] {
		return func(yield func([]any, error) bool) {
			p := store.ReportParams{OrgID: env.OrgID, Now: env.Now, ConnectedSince: env.ConnectedSince, Arg: arg, Patterns: patterns, Exclude: exclude}
			for r, err := range env.Store.ReportRows(ctx, name, p) {
				if err != nil {
					yield(nil, err)
					return
				}
				seen(r.At)
				if !yield(r.Values, nil) {
					return
				}
			}
		}
	}
}

// mapped transforms the rows of src; f answers false to drop a row.
func mapped(src Source, f func(in []any) ([]any, bool)) Source {
	return func(ctx context.Context, env Env, seen func(time.Time)) iter.Seq2[[]any, error] {
		return func(yield func([]any, error) bool) {
			for row, err := range src(ctx, env, seen) {
				if err != nil {
					yield(nil, err)
					return
				}
				out, ok := f(row)
				if ok && !yield(out, nil) {
					return
				}
			}
		}
	}
}

// pick keeps the values at the given indexes.
func pick(idx ...int) func([]any) ([]any, bool) {
	return func(in []any) ([]any, bool) {
		out := make([]any, len(idx))
		for i, j := range idx {
			out[i] = in[j]
		}
		return out, true
	}
}

// chain yields the rows of each source in turn.
func chain(srcs ...Source) Source {
	return func(ctx context.Context, env Env, seen func(time.Time)) iter.Seq2[[]any, error] {
		return func(yield func([]any, error) bool) {
			for _, src := range srcs {
				for row, err := range src(ctx, env, seen) {
					if !yield(row, err) || err != nil {
						return
					}
				}
			}
		}
	}
}

// projection is a dataset source: endpoint name and id, then the values of
// keys of each row, then derived values.
type projection struct {
	dataset, platform string
	keys              []string
	where             func(row map[string]any) bool
	derive            func(row map[string]any, env Env) []any
	// expand, when set, replaces keys and derive: each dataset row gives
	// any number of report rows.
	expand func(row map[string]any) [][]any
}

func dataset(name string, keys ...string) projection { return projection{dataset: name, keys: keys} }

func (p projection) only(platform string) projection { p.platform = platform; return p }

func (p projection) filter(f func(row map[string]any) bool) projection { p.where = f; return p }

func (p projection) plus(f func(row map[string]any, env Env) []any) projection {
	p.derive = f
	return p
}

func (p projection) each(f func(row map[string]any) [][]any) projection { p.expand = f; return p }

func (p projection) source() Source {
	return func(ctx context.Context, env Env, seen func(time.Time)) iter.Seq2[[]any, error] {
		return func(yield func([]any, error) bool) {
			for d, err := range env.Store.ReportDatasets(ctx, env.OrgID, p.dataset, p.platform) {
				if err != nil {
					yield(nil, err)
					return
				}
				seen(d.CollectedAt)
				for _, row := range d.Rows {
					if p.where != nil && !p.where(row) {
						continue
					}
					if p.expand != nil {
						for _, vals := range p.expand(row) {
							if !yield(append([]any{d.EndpointName, d.EndpointID}, vals...), nil) {
								return
							}
						}
						continue
					}
					out := make([]any, 0, 2+len(p.keys)+2)
					out = append(out, d.EndpointName, d.EndpointID)
					for _, k := range p.keys {
						out = append(out, cell(row[k]))
					}
					if p.derive != nil {
						for _, v := range p.derive(row, env) {
							out = append(out, cell(v))
						}
					}
					if !yield(out, nil) {
						return
					}
				}
			}
		}
	}
}

// collect runs fn, which fills rows from whatever it reads, and yields them.
// It suits reports whose output is small (aggregates, per-endpoint joins of
// small datasets).
func collect(fn func(ctx context.Context, env Env, seen func(time.Time)) ([][]any, error)) Source {
	return func(ctx context.Context, env Env, seen func(time.Time)) iter.Seq2[[]any, error] {
		return func(yield func([]any, error) bool) {
			rows, err := fn(ctx, env, seen)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, r := range rows {
				if !yield(r, nil) {
					return
				}
			}
		}
	}
}

// eachDataset calls fn with every endpoint's rows of a dataset.
func eachDataset(ctx context.Context, env Env, seen func(time.Time), name, platform string, fn func(d store.ReportDataset)) error {
	for d, err := range env.Store.ReportDatasets(ctx, env.OrgID, name, platform) {
		if err != nil {
			return err
		}
		seen(d.CollectedAt)
		fn(d)
	}
	return nil
}
