package safecsv

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"
)

func TestCell(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{`=HYPERLINK("https://evil.example/","Click")`, `'=HYPERLINK("https://evil.example/","Click")`},
		{`+cmd|' /C calc'!A0`, `'+cmd|' /C calc'!A0`},
		{"-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"},
		{"@SUM(1+1)*cmd|' /C calc'!A0", "'@SUM(1+1)*cmd|' /C calc'!A0"},
		{"\t=1+1", "'\t=1+1"},
		{"\r=1+1", "'\r=1+1"},
		{"-1", "'-1"}, // text that looks like a number is still text
		{"Google Chrome", "Google Chrome"},
		{"131.0.6778.86", "131.0.6778.86"},
		{"a=b", "a=b"},
		{"", ""},
		{nil, ""},
		{true, "true"},
		{-5, "-5"},
		{int64(-12), "-12"},
		{-2.5, "-2.5"},
		{1e21, "1000000000000000000000"},
		{Number("-3"), "-3"},
		{Number("-3.25e-4"), "-3.25e-4"},
		{Number("7"), "7"},
		{Number("-1+cmd|' /C calc'!A0"), "'-1+cmd|' /C calc'!A0"},
		{Number("-Inf"), "'-Inf"},
		{Number(""), ""},
		{time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), `"2026-03-01T00:00:00Z"`},
	} {
		if got := Cell(tc.in); got != tc.want {
			t.Errorf("Cell(%#v) = %q, want %q", tc.in, got, tc.want)
		}
		if s, ok := tc.in.(string); ok && Untext(Cell(s)) != s {
			t.Errorf("Untext(%q) = %q, want %q", Cell(s), Untext(Cell(s)), s)
		}
	}
}

func TestUntextKeepsOtherQuotes(t *testing.T) {
	for _, s := range []string{"'quoted'", "'", "''", "it's"} {
		if got := Untext(s); got != s {
			t.Errorf("Untext(%q) = %q", s, got)
		}
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	w.WriteText([]string{"name", "=head"})
	w.Write([]any{"=1+1", -4})
	w.Write([]any{"line\nbreak, \"quoted\"", Number("-0.5")})
	w.Flush()
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"name", "'=head"}, {"'=1+1", "-4"}, {"line\nbreak, \"quoted\"", "-0.5"}}
	if len(recs) != len(want) {
		t.Fatalf("records %q", recs)
	}
	for i := range want {
		if strings.Join(recs[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("record %d: %q, want %q", i, recs[i], want[i])
		}
	}
}
