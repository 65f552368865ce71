package ctl

import (
	"bytes"
	"strings"
	"testing"
)

// TestApprovalKeysFromOwnCSV: keys read back from patchctl's own -o csv
// lose the quote the CSV writer put before a key that starts like a formula.
func TestApprovalKeysFromOwnCSV(t *testing.T) {
	var csv bytes.Buffer
	s := &session{format: "csv", io: IO{Stdout: &csv}}
	type row struct{ key string }
	cols := []column[row]{col("KEY", func(r row) string { return r.key }), col("TITLE", func(r row) string { return "t" })}
	if err := printList(s, cols, sliceSeq([]row{{"KB5048685"}, {"-weird@1.0"}, {"@scope/pkg@2"}})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(csv.String(), "'-weird@1.0") {
		t.Fatalf("the CSV does not quote the key: %s", csv.String())
	}
	s.io.Stdin = &csv
	keys, err := approvalKeys(s, []string{"-"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range keys {
		got = append(got, k.Key)
	}
	if strings.Join(got, " ") != "KB5048685 -weird@1.0 @scope/pkg@2" {
		t.Fatalf("keys %q", got)
	}
}
