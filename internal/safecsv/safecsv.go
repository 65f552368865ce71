// Package safecsv is the one CSV writer of patchd (report downloads of the
// API and the console, and patchctl -o csv): encoding/csv with text cells a
// spreadsheet cannot read as a formula. Software names, versions, update
// titles and user names come from agents; a cell such as
// =HYPERLINK("https://x","Click") or +cmd|' /C calc'!A0 would run when the
// file is opened. As OWASP's CSV Injection page describes, a text cell that
// starts with =, +, -, @, a tab or a carriage return is written with a
// single quote in front, which spreadsheets show as text. Numbers, booleans
// and empty cells are written as they are: -5 typed as a number stays a
// number; "-5" typed as text is text. The package imports nothing of the
// server, so patchctl uses it too.
package safecsv

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
)

// Text answers a text cell as it is written: with a single quote in front
// when it starts with a character a spreadsheet reads as a formula.
func Text(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

// Untext reverses Text: a cell read back from a CSV this package wrote
// (patchctl updates approve - reads keys from patchctl's own CSV).
func Untext(s string) string {
	if len(s) > 1 && s[0] == '\'' {
		if t := s[1:]; Text(t) != t {
			return t
		}
	}
	return s
}

// Number is a cell holding a number already formatted (a typed number of a
// column of numbers). A Number that is not a plain decimal (-12, 3.5, 1e-7)
// is text.
type Number string

// Writer writes CSV records.
type Writer struct {
	w   *csv.Writer
	rec []string
}

// NewWriter writes to w (buffered: call Flush).
func NewWriter(w io.Writer) *Writer { return &Writer{w: csv.NewWriter(w)} }

// WriteText writes a record of text cells.
func (w *Writer) WriteText(cells []string) error {
	w.rec = w.rec[:0]
	for _, c := range cells {
		w.rec = append(w.rec, Text(c))
	}
	return w.w.Write(w.rec)
}

// Write writes a record of typed values: nil (empty), string (text), Number,
// bool, int, int64 and float64 (numbers, as they are); any other value is
// written as its JSON text.
func (w *Writer) Write(values []any) error {
	w.rec = w.rec[:0]
	for _, v := range values {
		w.rec = append(w.rec, Cell(v))
	}
	return w.w.Write(w.rec)
}

// Cell answers how one typed value is written.
func Cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return Text(x)
	case Number:
		if !isDecimal(string(x)) {
			return Text(string(x))
		}
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return Text(string(b))
}

// isDecimal tells whether s is a plain decimal number: an optional minus,
// digits with an optional fraction, an optional exponent (no Inf, NaN or
// hexadecimal, which strconv would accept).
func isDecimal(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	n := digits()
	if i < len(s) && s[i] == '.' {
		i++
		n += digits()
	}
	if n == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// Flush writes what is buffered.
func (w *Writer) Flush() { w.w.Flush() }

// Error answers the error of an earlier Write or Flush.
func (w *Writer) Error() error { return w.w.Error() }
