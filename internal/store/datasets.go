package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/patchd/patchd/internal/pool"
)

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// smallDataset is the size under which a dataset is stored as plain JSON:
// compressing it would cost more than it saves.
const smallDataset = 1024

// compressJSON is the stored form of a dataset: its rows as a JSON array,
// gzip-compressed unless it is small.
func compressJSON(plain []byte) ([]byte, error) {
	if len(plain) < smallDataset {
		return plain, nil
	}
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if _, err := zw.Write(plain); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decompressRows(b []byte) ([]map[string]any, error) {
	var rows []map[string]any
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		err := json.Unmarshal(b, &rows)
		return rows, err
	}
	zr, err := pool.Gunzip(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer pool.PutGunzip(zr)
	if err := json.NewDecoder(io.Reader(zr)).Decode(&rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// DatasetRows is one endpoint's rows of a dataset.
type DatasetRows struct {
	EndpointID   string
	EndpointName string
	CollectedAt  time.Time
	Rows         []map[string]any
}

// Datasets yields, endpoint by endpoint in name order, the rows of the named
// dataset across the organization (the raw material of reports). One
// endpoint's rows are in memory at a time.
func (s *Store) Datasets(ctx context.Context, orgID, name string) iter.Seq2[DatasetRows, error] {
	return func(yield func(DatasetRows, error) bool) {
		rows, err := s.query(ctx, `SELECT d.endpoint_id, COALESCE(e.display_name, e.hostname), d.collected_at, d.rows_gz
			FROM endpoint_datasets d JOIN endpoints e ON e.id = d.endpoint_id
			WHERE d.org_id = ? AND d.name = ? ORDER BY e.sort_name, e.id`, orgID, name)
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var d DatasetRows
			var at int64
			var blob []byte
			if err := r.Scan(&d.EndpointID, &d.EndpointName, &at, &blob); err != nil {
				return err
			}
			d.CollectedAt = fromMillis(at)
			var err error
			if d.Rows, err = decompressRows(blob); err != nil {
				yield(DatasetRows{}, fmt.Errorf("store: dataset %s of %s: %w", name, d.EndpointID, err))
				return errStopRows
			}
			if !yield(d, nil) {
				return errStopRows
			}
			return nil
		}); err != nil {
			yield(DatasetRows{}, fmt.Errorf("store: dataset %s: %w", name, err))
		}
	}
}

// decompressKeys is decompressRows keeping only the given keys of each
// row: a report reads a few keys of rows that have many, and decoding the
// others (a string allocated per key and per value) was most of its cost.
// A row without one of the keys has no entry for it, as in
// decompressRows.
func decompressKeys(b []byte, keys []string) ([]map[string]any, error) {
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		return decodeKeys(b, keys)
	}
	zr, err := pool.Gunzip(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer pool.PutGunzip(zr)
	buf := pool.Buffer()
	defer pool.PutBuffer(buf)
	if _, err := buf.ReadFrom(zr); err != nil {
		return nil, err
	}
	return decodeKeys(buf.Bytes(), keys)
}

// decodeKeys decodes a JSON array of objects as encoding/json decodes it
// into []map[string]any, keeping only the given keys of each object. The
// values kept are decoded as encoding/json decodes them; the others are
// skipped without being decoded. Strings are copied: b may be reused.
func decodeKeys(b []byte, keys []string) ([]map[string]any, error) {
	d := keyDecoder{b: b}
	d.space()
	if d.literal("null") {
		return nil, d.end()
	}
	if !d.consume('[') {
		return nil, d.errorf("a dataset is an array")
	}
	rows := []map[string]any{}
	d.space()
	if d.consume(']') {
		return rows, d.end()
	}
	for {
		d.space()
		row, err := d.object(keys)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
		d.space()
		if d.consume(']') {
			return rows, d.end()
		}
		if !d.consume(',') {
			return nil, d.errorf("expected , or ]")
		}
	}
}

type keyDecoder struct {
	b []byte
	i int
}

func (d *keyDecoder) errorf(format string, args ...any) error {
	return fmt.Errorf("dataset JSON at byte %d: %s", d.i, fmt.Sprintf(format, args...))
}

func (d *keyDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *keyDecoder) consume(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *keyDecoder) literal(s string) bool {
	if bytes.HasPrefix(d.b[d.i:], []byte(s)) {
		d.i += len(s)
		return true
	}
	return false
}

func (d *keyDecoder) end() error {
	d.space()
	if d.i != len(d.b) {
		return d.errorf("data after the array")
	}
	return nil
}

// object decodes an object (or null) keeping keys.
func (d *keyDecoder) object(keys []string) (map[string]any, error) {
	if d.literal("null") {
		return nil, nil
	}
	if !d.consume('{') {
		return nil, d.errorf("a dataset row is an object")
	}
	row := make(map[string]any, len(keys))
	d.space()
	if d.consume('}') {
		return row, nil
	}
	for {
		d.space()
		start := d.i
		if err := d.skipString(); err != nil {
			return nil, err
		}
		key := d.b[start+1 : d.i-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if err := json.Unmarshal(d.b[start:d.i], &k); err != nil {
				return nil, d.errorf("key: %v", err)
			}
			key = []byte(k)
		}
		d.space()
		if !d.consume(':') {
			return nil, d.errorf("expected :")
		}
		d.space()
		want := -1
		for i, k := range keys {
			if string(key) == k {
				want = i
				break
			}
		}
		start = d.i
		if err := d.skipValue(0); err != nil {
			return nil, err
		}
		if want >= 0 {
			v, err := d.value(d.b[start:d.i])
			if err != nil {
				return nil, err
			}
			row[keys[want]] = v
		}
		d.space()
		if d.consume('}') {
			return row, nil
		}
		if !d.consume(',') {
			return nil, d.errorf("expected , or }")
		}
	}
}

// value decodes one JSON value as encoding/json decodes it into any.
func (d *keyDecoder) value(raw []byte) (any, error) {
	switch raw[0] {
	case '"':
		if s, ok := unquote(raw[1 : len(raw)-1]); ok {
			return s, nil
		}
		return nil, d.errorf("invalid string %s", raw)
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'n':
		return nil, nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return nil, d.errorf("number %s: %v", raw, err)
		}
		return f, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, d.errorf("%v", err)
	}
	return v, nil
}

// skipString moves past the string at d.i.
func (d *keyDecoder) skipString() error {
	if !d.consume('"') {
		return d.errorf("expected a string")
	}
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			d.i++
			return nil
		case c == '\\':
			d.i += 2
		case c < 0x20:
			return d.errorf("control character in a string")
		default:
			d.i++
		}
	}
	return d.errorf("unterminated string")
}

// maxDepth bounds the nesting skipValue follows, as encoding/json does.
const maxDepth = 10000

// skipValue moves past the value at d.i, checking its structure; the
// values kept are then decoded in full, which checks them entirely.
func (d *keyDecoder) skipValue(depth int) error {
	if depth > maxDepth {
		return d.errorf("nested too deeply")
	}
	if d.i >= len(d.b) {
		return d.errorf("unexpected end")
	}
	switch c := d.b[d.i]; {
	case c == '"':
		return d.skipString()
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		d.i++
		d.space()
		if d.consume(closing) {
			return nil
		}
		for {
			d.space()
			if c == '{' {
				if err := d.skipString(); err != nil {
					return err
				}
				d.space()
				if !d.consume(':') {
					return d.errorf("expected :")
				}
				d.space()
			}
			if err := d.skipValue(depth + 1); err != nil {
				return err
			}
			d.space()
			if d.consume(closing) {
				return nil
			}
			if !d.consume(',') {
				return d.errorf("expected , or %c", closing)
			}
		}
	case c == 't':
		if d.literal("true") {
			return nil
		}
	case c == 'f':
		if d.literal("false") {
			return nil
		}
	case c == 'n':
		if d.literal("null") {
			return nil
		}
	case c == '-' || c >= '0' && c <= '9':
		start := d.i
		for d.i < len(d.b) && strings.IndexByte("+-0123456789.eE", d.b[d.i]) >= 0 {
			d.i++
		}
		if !json.Valid(d.b[start:d.i]) {
			return d.errorf("invalid number")
		}
		return nil
	}
	return d.errorf("unexpected %q", d.b[d.i])
}

// unquote decodes the inside of a JSON string as encoding/json does:
// escapes decoded (an invalid surrogate becomes U+FFFD), invalid UTF-8
// coerced to U+FFFD; false if the string is not valid JSON.
func unquote(s []byte) (string, bool) {
	plain := true
	for _, c := range s {
		if c == '\\' || c == '"' || c < ' ' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(s), true
	}
	b := make([]byte, 0, len(s))
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			r++
			if r >= len(s) {
				return "", false
			}
			switch s[r] {
			case '"', '\\', '/':
				b = append(b, s[r])
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := hex4(s[r+1:])
				if rr < 0 {
					return "", false
				}
				r += 4
				if utf16.IsSurrogate(rr) {
					if r+2 < len(s) && s[r+1] == '\\' && s[r+2] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+3:])); dec != unicode.ReplacementChar {
							r += 6
							b = utf8.AppendRune(b, dec)
							break
						}
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
			default:
				return "", false
			}
			r++
		case c == '"' || c < ' ':
			return "", false
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			b = utf8.AppendRune(b, rr)
			r += size
		}
	}
	return string(b), true
}

// hex4 reads 4 hex digits as a rune; -1 if they are not.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
