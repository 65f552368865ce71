package api

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/reports"
	"github.com/patchd/patchd/internal/safecsv"
)

// flushEvery is how many rows a report stream writes between flushes.
const flushEvery = 4096

// getReport is operation 24: the catalog (key _list), or a report as JSON
// or, with format=csv, as a CSV download. Both stream from the report's
// row iterator: a report is never held in memory. JSON takes the optional
// limit and offset parameters (an extension: without them every row is
// answered); total counts every row of the report.
func (a *API) getReport(w http.ResponseWriter, r *http.Request) error {
	key := r.PathValue("key")
	if key == "_list" {
		httpx.WriteJSON(w, http.StatusOK, listOf(reports.Catalog(), (*reports.Definition).Meta))
		return nil
	}
	def, ok := reports.Lookup(key)
	if !ok {
		return httpx.NotFound("report " + strconv.Quote(key))
	}
	q := r.URL.Query()
	csvFormat := strings.EqualFold(strings.TrimSpace(q.Get("format")), "csv")
	limit, offset := -1, 0
	if !csvFormat {
		var err error
		if limit, err = optionalInt(q.Get("limit"), "limit", -1); err != nil {
			return err
		}
		if offset, err = optionalInt(q.Get("offset"), "offset", 0); err != nil {
			return err
		}
	}
	now := time.Now()
	run := def.Open(reports.Env{Store: a.store, OrgID: principal(r).OrgID, Now: now, ConnectedSince: a.connectedSince()})
	run.Streamed() // both writers encode a row before asking for the next
	if csvFormat {
		return writeReportCSV(w, r, def, run, now)
	}
	return writeReportJSON(w, r, def, run, limit, offset)
}

func optionalInt(s, name string, def int) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, httpx.InvalidRequest(name + " must be a non-negative integer")
	}
	return n, nil
}

// streamFailed ends an answer whose status was already sent: the client
// sees a truncated body, never a complete-looking one.
func streamFailed(r *http.Request, key string, err error) {
	slog.ErrorContext(r.Context(), "report stream failed", "report", key, "err", err)
	panic(http.ErrAbortHandler)
}

// reportBuffer is the size of the buffered writer under a report stream.
const reportBuffer = 64 << 10

func writeReportCSV(w http.ResponseWriter, r *http.Request, def *reports.Definition, run *reports.Run, now time.Time) error {
	rc := http.NewResponseController(w)
	var bw *bufio.Writer
	var cw *safecsv.Writer
	start := func() {
		h := w.Header()
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", `attachment; filename="`+def.Key+"-"+now.UTC().Format("2006-01-02")+`.csv"`)
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		bw = bufio.NewWriterSize(w, reportBuffer)
		cw = safecsv.NewWriter(bw)
		cw.WriteText(def.Columns)
	}
	n := 0
	for row, err := range run.Rows(r.Context()) {
		if err != nil {
			if cw == nil {
				return err
			}
			streamFailed(r, def.Key, err)
		}
		if cw == nil {
			start()
		}
		if err := cw.Write(row); err != nil {
			return nil // the client went away
		}
		if n++; n%flushEvery == 0 {
			cw.Flush()
			if cw.Error() != nil || bw.Flush() != nil {
				return nil
			}
			rc.Flush()
		}
	}
	if cw == nil {
		start()
	}
	cw.Flush()
	bw.Flush()
	return nil
}

func writeReportJSON(w http.ResponseWriter, r *http.Request, def *reports.Definition, run *reports.Run, limit, offset int) error {
	var bw *bufio.Writer
	rc := http.NewResponseController(w)
	start := func() {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		bw = bufio.NewWriterSize(w, reportBuffer)
		title, _ := json.Marshal(def.Title)
		columns, _ := json.Marshal(def.Columns)
		bw.WriteString(`{"title":`)
		bw.Write(title)
		bw.WriteString(`,"columns":`)
		bw.Write(columns)
		bw.WriteString(`,"rows":[`)
	}
	if limit >= 0 || offset > 0 {
		run.Page(limit, offset)
	}
	var buf []byte
	total, written := 0, 0
	for row, err := range run.Rows(r.Context()) {
		if err != nil {
			if bw == nil {
				return err
			}
			streamFailed(r, def.Key, err)
		}
		if bw == nil {
			start()
		}
		if _, paged := run.Paged(); !paged {
			total++
			if total <= offset || (limit >= 0 && written >= limit) {
				continue
			}
		}
		buf = buf[:0]
		if written > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONRow(buf, row)
		bw.Write(buf)
		if written++; written%flushEvery == 0 {
			if bw.Flush() != nil {
				return nil
			}
			rc.Flush()
		}
	}
	if bw == nil {
		start()
	}
	if t, paged := run.Paged(); paged {
		total = t
	}
	collected, _ := json.Marshal(run.CollectedAt())
	bw.WriteString(`],"total":`)
	bw.WriteString(strconv.Itoa(total))
	bw.WriteString(`,"collectedAt":`)
	bw.Write(collected)
	bw.WriteString("}\n")
	bw.Flush()
	return nil
}

// appendJSONRow appends a row as a JSON array. Report values are null,
// strings, booleans and numbers; strings without characters to escape are
// copied as they are, the others go through encoding/json.
func appendJSONRow(buf []byte, row []any) []byte {
	buf = append(buf, '[')
	for i, v := range row {
		if i > 0 {
			buf = append(buf, ',')
		}
		switch x := v.(type) {
		case nil:
			buf = append(buf, "null"...)
		case string:
			if plainJSON(x) {
				buf = append(buf, '"')
				buf = append(buf, x...)
				buf = append(buf, '"')
			} else {
				b, _ := json.Marshal(x)
				buf = append(buf, b...)
			}
		case bool:
			buf = strconv.AppendBool(buf, x)
		case int64:
			buf = strconv.AppendInt(buf, x, 10)
		case int:
			buf = strconv.AppendInt(buf, int64(x), 10)
		default:
			// float64 (encoding/json picks between the plain and the
			// exponent form) and anything unexpected.
			b, err := json.Marshal(x)
			if err != nil {
				b = []byte("null")
			}
			buf = append(buf, b...)
		}
	}
	return append(buf, ']')
}

// plainJSON tells whether s can be written between quotes as it is: ASCII
// without control characters, quotes, backslashes or the characters
// encoding/json escapes for HTML (<, >, &).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
