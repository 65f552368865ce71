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

	// top is set for the report's own source only (nested sources get a
	// copy of Env without it, see nested): how the rows are consumed.
	top *consumer
}

// consumer is what the reader of a report's rows allows its source.
type consumer struct {
	// reuse: each row is used before the next is asked for, so a source
	// may yield the same slice every time.
	reuse bool
	// paging asks for rows [offset, offset+limit) (limit < 0: to the
	// end). A source that can, applies it and sets applied and total
	// before yielding its first row.
	paging        bool
	applied       bool
	total         int
	limit, offset int
}

// nested is env for a source read by another source: it neither pages nor
// reuses rows, since the outer source may filter, combine or keep them.
func (env Env) nested() Env {
	env.top = nil
	return env
}

// window answers the page asked of a top-level source, if any.
func (env Env) window() (limit, offset int, ok bool) {
	if env.top == nil || !env.top.paging {
		return 0, 0, false
	}
	return env.top.limit, env.top.offset, true
}

// paged records that the source applied the page and how many rows the
// whole report has.
func (env Env) paged(total int) {
	env.top.applied, env.top.total = true, total
}

// reuse tells whether the source may yield one slice for every row.
func (env Env) reuse() bool { return env.top != nil && env.top.reuse }

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
	top       consumer
	collected time.Time
}

// Open starts reading the report for env.
func (d *Definition) Open(env Env) *Run {
	r := &Run{def: d, env: env}
	r.env.top = &r.top
	return r
}

// Streamed tells the report that its reader uses each row before asking
// for the next (it writes the row out): the source may then yield the same
// slice, refilled, for every row.
func (r *Run) Streamed() { r.top.reuse = true }

// Page asks for the rows [offset, offset+limit) only (limit < 0: to the
// end). Sources that can locate a page without reading the rows before it
// (SQL sources, dataset projections without a filter) apply it; see Paged.
func (r *Run) Page(limit, offset int) {
	r.top.paging, r.top.limit, r.top.offset = true, limit, offset
}

// Paged tells, once Rows has started (or ended), whether the source
// applied the page: then Rows yields only the page and total counts every
// row of the report. Otherwise Rows yields every row and the reader pages.
func (r *Run) Paged() (total int, ok bool) { return r.top.total, r.top.applied }

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
			p := store.ReportParams{OrgID: env.OrgID, Now: env.Now, ConnectedSince: env.ConnectedSince, Arg: arg, Patterns: patterns, Exclude: exclude,
				ReuseValues: env.reuse()}
			if limit, offset, ok := env.window(); ok {
				total, err := env.Store.ReportCount(ctx, name, p)
				if err != nil {
					yield(nil, err)
					return
				}
				env.paged(total)
				if limit == 0 {
					return
				}
				p.Limit, p.Offset = max(limit, 0), offset
			}
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
			for row, err := range src(ctx, env.nested(), seen) {
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

// chain yields the rows of each source in turn.
func chain(srcs ...Source) Source {
	return func(ctx context.Context, env Env, seen func(time.Time)) iter.Seq2[[]any, error] {
		return func(yield func([]any, error) bool) {
			for _, src := range srcs {
				for row, err := range src(ctx, env.nested(), seen) {
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
			// Rows are decoded with only the keys shown, unless a
			// function reads them (it may read any key).
			var keys []string
			if p.where == nil && p.derive == nil && p.expand == nil {
				keys = p.keys
			}
			datasets := env.Store.ReportDatasets(ctx, env.OrgID, p.dataset, p.platform, keys)
			// A page of a projection without filter or expansion is found
			// from the stored row counts: one report row per dataset row.
			skip, left := 0, -1
			if limit, offset, ok := env.window(); ok && p.where == nil && p.expand == nil {
				page, err := env.Store.ReportDatasetPage(ctx, env.OrgID, p.dataset, p.platform, keys, offset)
				if err != nil {
					yield(nil, err)
					return
				}
				env.paged(page.Total)
				if limit == 0 {
					return
				}
				datasets, skip, left = page.Rows, page.Skip, limit
			}
			width := 2 + len(p.keys)
			var out []any
			for d, err := range datasets {
				if err != nil {
					yield(nil, err)
					return
				}
				seen(d.CollectedAt)
				rows := d.Rows
				if skip > 0 {
					rows = rows[min(skip, len(rows)):]
					skip = 0
				}
				for _, row := range rows {
					if left == 0 {
						return
					}
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
					if out == nil || !env.reuse() {
						out = make([]any, 0, width+2)
					}
					out = append(out[:0], d.EndpointName, d.EndpointID)
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
					if left > 0 {
						left--
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
			rows, err := fn(ctx, env.nested(), seen)
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

// eachDataset calls fn with every endpoint's rows of a dataset; with keys,
// each row holds only those keys.
func eachDataset(ctx context.Context, env Env, seen func(time.Time), name, platform string, fn func(d store.ReportDataset), keys ...string) error {
	for d, err := range env.Store.ReportDatasets(ctx, env.OrgID, name, platform, keys) {
		if err != nil {
			return err
		}
		seen(d.CollectedAt)
		fn(d)
	}
	return nil
}
