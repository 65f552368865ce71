package ctl_test

import (
	"slices"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

// TestCSVNeutralisesFormulas: -o csv of a list and the report CSV the
// server streams both write agent-reported text that starts with =, +, -
// or @ with a single quote in front.
func TestCSVNeutralisesFormulas(t *testing.T) {
	e := apitest.New(t)
	const name, version = `=HYPERLINK("https://evil.example/","Click")`, `-1+cmd|' /C calc'!A0`
	doc := apitest.Sample("ws-formula", "windows")
	v := version
	doc.Software = append(doc.Software, agentproto.Software{Name: name, Version: &v})
	e.Enroll("ctl-csv", "ws-formula", "windows").MustInventory(doc)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	has := func(rows [][]string, cells ...string) bool {
		return slices.ContainsFunc(rows, func(r []string) bool {
			for _, c := range cells {
				if !slices.Contains(r, c) {
					return false
				}
			}
			return true
		})
	}
	rows := decodeCSV(t, h.ok("software", "list", "-o", "csv"))
	if !has(rows, "'"+name, "'"+version) || has(rows, name) {
		t.Errorf("software list -o csv: %q", rows)
	}
	rows = decodeCSV(t, h.ok("reports", "get", "installed-software", "--csv"))
	if !has(rows, "'"+name, "'"+version) || has(rows, name) {
		t.Errorf("reports get --csv: %q", rows)
	}
}
