package ctl

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/safecsv"
)

// ANSI colours, written only when the session has colour.
const (
	bold   = "1"
	red    = "31"
	green  = "32"
	yellow = "33"
	dim    = "2"
)

func (s *session) paint(code, text string) string {
	if !s.color || code == "" || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// statusColor colours the values of status-like columns.
func statusColor(v string) string {
	switch v {
	case "connected", "SUCCESS", "COMPLETED", "APPROVED", "true":
		return green
	case "disconnected", "FAILED", "DECLINED", "Critical", "Overdue", "STOPPED":
		return red
	case "RUNNING", "PENDING", "Important", "Due soon", "NEW":
		return yellow
	case "CANCELLED", "false":
		return dim
	}
	return ""
}

// column is one column of a list: its header and how to read a value.
type column[T any] struct {
	head   string
	get    func(T) string
	status bool // colour the values with statusColor
	number bool // the values are numbers (CSV writes them as they are)
}

func col[T any](head string, get func(T) string) column[T] { return column[T]{head: head, get: get} }

// numCol is a column of numbers.
func numCol[T any](head string, get func(T) string) column[T] {
	return column[T]{head: head, get: get, number: true}
}

func statusCol[T any](head string, get func(T) string) column[T] {
	return column[T]{head: head, get: get, status: true}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func when(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func num(p *float64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatFloat(*p, 'f', -1, 64)
}

func integer(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

func yesNo(b bool) string { return strconv.FormatBool(b) }

// printList writes items in the session's format: a JSON array streamed
// item by item, CSV rows with a header, or an aligned table.
func printList[T any](s *session, cols []column[T], items iter.Seq2[T, error]) error {
	switch s.format {
	case "json":
		return printJSONList(s, items)
	case "csv":
		w := safecsv.NewWriter(s.io.Stdout)
		head := make([]string, len(cols))
		for i, c := range cols {
			head[i] = c.head
		}
		w.WriteText(head)
		n := 0
		row := make([]any, len(cols))
		for item, err := range items {
			if err != nil {
				w.Flush()
				return err
			}
			for i, c := range cols {
				if v := c.get(item); c.number {
					row[i] = safecsv.Number(v)
				} else {
					row[i] = v
				}
			}
			w.Write(row)
			if n++; n%200 == 0 {
				w.Flush()
			}
		}
		w.Flush()
		return w.Error()
	default:
		t := s.newTable(len(cols))
		for i, c := range cols {
			t.head[i] = c.head
		}
		for item, err := range items {
			if err != nil {
				s.progressDone()
				t.write(s.io.Stdout)
				return err
			}
			row := make([]cell, len(cols))
			for i, c := range cols {
				v := c.get(item)
				row[i] = cell{text: v}
				if c.status {
					row[i].color = statusColor(v)
				}
			}
			t.rows = append(t.rows, row)
		}
		s.progressDone()
		t.write(s.io.Stdout)
		return nil
	}
}

func printJSONList[T any](s *session, items iter.Seq2[T, error]) error {
	w := s.io.Stdout
	n := 0
	for item, err := range items {
		if err != nil {
			return err
		}
		b, err := json.MarshalIndent(item, "  ", "  ")
		if err != nil {
			return err
		}
		sep := ",\n  "
		if n == 0 {
			sep = "[\n  "
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return err
		}
		w.Write(b)
		n++
	}
	if n == 0 {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	_, err := io.WriteString(w, "\n]\n")
	return err
}

// printJSON writes one value as indented JSON.
func (s *session) printJSON(v any) error {
	enc := json.NewEncoder(s.io.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// sliceSeq turns a slice into the sequence printList takes.
func sliceSeq[T any](items []T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, it := range items {
			if !yield(it, nil) {
				return
			}
		}
	}
}

// printOne writes one object: JSON as the server sent it, CSV as a
// one-row list, a table as "field: value" lines from pairs.
func printOne[T any](s *session, v T, cols []column[T], pairs func(T) [][2]string) error {
	switch s.format {
	case "json":
		return s.printJSON(v)
	case "csv":
		return printList(s, cols, sliceSeq([]T{v}))
	default:
		s.printPairs(pairs(v))
		return nil
	}
}

func (s *session) printPairs(pairs [][2]string) {
	width := 0
	for _, p := range pairs {
		width = max(width, utf8.RuneCountInString(p[0]))
	}
	for _, p := range pairs {
		label := p[0] + ":" + strings.Repeat(" ", width-utf8.RuneCountInString(p[0]))
		fmt.Fprintf(s.io.Stdout, "%s %s\n", s.paint(bold, label), s.paint(statusColor(p[1]), p[1]))
	}
}

// done prints the outcome of a write: the server's answer as JSON, or a
// sentence on a table or CSV session.
func (s *session) done(answer any, format string, args ...any) error {
	if s.format == "json" {
		return s.printJSON(answer)
	}
	_, err := fmt.Fprintf(s.io.Stdout, format+"\n", args...)
	return err
}

type cell struct {
	text  string
	color string
}

type table struct {
	s    *session
	head []string
	rows [][]cell
}

func (s *session) newTable(columns int) *table {
	return &table{s: s, head: make([]string, columns)}
}

// write aligns the columns on the visible width of the cells, so colours
// do not shift them.
func (t *table) write(w io.Writer) {
	widths := make([]int, len(t.head))
	for i, h := range t.head {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(oneLine(c.text)))
		}
	}
	var b strings.Builder
	line := func(cells []cell) {
		for i, c := range cells {
			text := oneLine(c.text)
			b.WriteString(t.s.paint(c.color, text))
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(text)+2))
			}
		}
		b.WriteByte('\n')
		io.WriteString(w, b.String())
		b.Reset()
	}
	head := make([]cell, len(t.head))
	for i, h := range t.head {
		head[i] = cell{text: h, color: bold}
	}
	line(head)
	for _, r := range t.rows {
		line(r)
	}
}

// oneLine keeps a table cell on one line.
func oneLine(s string) string {
	if strings.ContainsAny(s, "\r\n\t") {
		s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace(s)
	}
	return s
}

// progressf shows a progress line on a terminal's stderr.
func (s *session) progressf(format string, args ...any) {
	if !s.progress {
		return
	}
	fmt.Fprintf(s.io.Stderr, "\r\x1b[K"+format, args...)
	s.progressShown = true
}

// progressDone clears the progress line.
func (s *session) progressDone() {
	if s.progressShown {
		io.WriteString(s.io.Stderr, "\r\x1b[K")
		s.progressShown = false
	}
}

// pageFlags are the paging flags of list commands.
type pageFlags struct {
	limit    int
	pageSize int
}

func (p *pageFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&p.limit, "limit", 0, "stop after `N` items (default: every item)")
	fs.IntVar(&p.pageSize, "page-size", 500, "items per request, 1 to 500")
}

func (p *pageFlags) check() error {
	if p.limit < 0 {
		return usagef("--limit must not be negative")
	}
	if p.pageSize < 1 || p.pageSize > 500 {
		return usagef("--page-size must be between 1 and 500")
	}
	return nil
}

// walk pages through a list with the spec's client loop (until offset +
// items >= total), stopping after p.limit items, and shows progress once a
// walk needs more than one page.
func walk[T any](s *session, noun string, p pageFlags, fetch func(q client.PageQuery) (apiv1.Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		q := client.PageQuery{Limit: p.pageSize}
		if p.limit > 0 && p.limit < q.Limit {
			q.Limit = p.limit
		}
		n := 0
		for {
			page, err := fetch(q)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range page.Items {
				if !yield(item, nil) {
					return
				}
				if n++; p.limit > 0 && n >= p.limit {
					return
				}
			}
			q.Offset = page.Offset + len(page.Items)
			if len(page.Items) == 0 || q.Offset >= page.Total {
				return
			}
			if p.limit > 0 {
				s.progressf("%s: %d of %d (limit %d)…", noun, n, page.Total, p.limit)
			} else {
				s.progressf("%s: %d of %d…", noun, n, page.Total)
			}
		}
	}
}
