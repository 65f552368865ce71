package inventory

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
)

func s(v string) *string { return &v }

func sample() agentproto.Inventory {
	return agentproto.Inventory{
		System:   agentproto.System{Hostname: " web-01 ", OS: s("Debian GNU/Linux"), Type: ""},
		Disks:    []agentproto.Disk{{Drive: "/"}},
		Software: []agentproto.Software{{Name: "bash", Version: s("5.2")}, {Name: "bash", Version: s("5.2")}, {Name: "curl", Version: s("7.88"), Publisher: s("  ")}},
		Updates: []agentproto.Update{
			{Title: "openssl", PackageName: s("openssl"), LatestVersion: s("3.0.15"), Source: "OS - Mandatory", Severity: s("important")},
			{Title: "openssl again", PackageName: s("openssl"), LatestVersion: s("3.0.15"), Source: "OS - Mandatory"},
		},
	}
}

func TestCheckNormalises(t *testing.T) {
	doc := sample()
	now := time.Now()
	n, err := Check(&doc, "linux", "debian", now)
	if err != nil {
		t.Fatal(err)
	}
	if doc.System.Hostname != "web-01" || doc.System.Type != "workstation" || !doc.CollectedAt.Equal(now) {
		t.Fatalf("system: %+v", doc.System)
	}
	if len(doc.Software) != 2 || doc.Software[1].Publisher != nil {
		t.Fatalf("software: duplicates kept or blank publisher not cleared: %+v", doc.Software)
	}
	if len(n.Updates) != 1 || n.Updates[0].Key != "debian:openssl@3.0.15" || n.Updates[0].Severity != "Important" || n.Updates[0].Categories == nil {
		t.Fatalf("updates: %+v", n.Updates)
	}
}

func TestCheckProblems(t *testing.T) {
	for _, c := range []struct {
		field string
		mut   func(*agentproto.Inventory)
	}{
		{"system.hostname", func(d *agentproto.Inventory) { d.System.Hostname = "" }},
		{"system.hostname", func(d *agentproto.Inventory) { d.System.Hostname = strings.Repeat("h", 300) }},
		{"system.type", func(d *agentproto.Inventory) { d.System.Type = "tablet" }},
		{"system.cores", func(d *agentproto.Inventory) { n := -1; d.System.Cores = &n }},
		{"system.os", func(d *agentproto.Inventory) { d.System.OS = s(strings.Repeat("x", MaxText+1)) }},
		{"disks[0].drive", func(d *agentproto.Inventory) { d.Disks[0].Drive = " " }},
		{"disks[0].drive", func(d *agentproto.Inventory) { d.Disks[0].Drive = "/" + strings.Repeat("d", MaxDrive) }},
		{"disks[0].drive", func(d *agentproto.Inventory) { d.Disks[0].Drive = "/mnt/\x00" }},
		{"system.macAddresses[1]", func(d *agentproto.Inventory) {
			d.System.MACAddresses = []string{"00:11:22:33:44:55", strings.Repeat("m", MaxMACAddress+1)}
		}},
		{"system.hostname", func(d *agentproto.Inventory) { d.System.Hostname = "web\x00" }},
		{"software[0].name", func(d *agentproto.Inventory) { d.Software[0].Name = "a\x00b" }},
		{"software[0].version", func(d *agentproto.Inventory) { d.Software[0].Version = s("1\x00") }},
		{"updates[0].categories[0]", func(d *agentproto.Inventory) { d.Updates[0].Categories = []string{strings.Repeat("c", MaxText+1)} }},
		{"software[0].name", func(d *agentproto.Inventory) { d.Software[0].Name = "" }},
		{"software[0].name", func(d *agentproto.Inventory) { d.Software[0].Name = "bad\xffutf8" }},
		{"updates[0].title", func(d *agentproto.Inventory) { d.Updates[0].Title = "" }},
		{"updates[0].source", func(d *agentproto.Inventory) { d.Updates[0].Source = "Drivers" }},
		{"updates[0]", func(d *agentproto.Inventory) { d.Updates[0].PackageName = nil }},
		{"datasets", func(d *agentproto.Inventory) { d.Datasets = map[string][]map[string]any{"UPPER": nil} }},
	} {
		doc := sample()
		c.mut(&doc)
		_, err := Check(&doc, "linux", "debian", time.Now())
		var p *Problem
		if !errors.As(err, &p) || p.Field != c.field {
			t.Errorf("%s: %v", c.field, err)
		}
	}
}

// FuzzCheck feeds arbitrary documents through the agent's decoder and the
// checks: whatever arrives, the answer is a document or a Problem, never a
// panic.
func FuzzCheck(f *testing.F) {
	doc := sample()
	b, _ := json.Marshal(doc)
	f.Add(b, "linux")
	f.Add([]byte(`{"system":{"hostname":"x","cores":-5,"ramGB":1e308},"updates":[{"title":"t","source":"Applications"}]}`), "windows")
	f.Add([]byte(`{"system":{"hostname":"m"},"updates":[{"title":"macOS 15","source":"OS - Optional","productKey":"x"}],"datasets":{"a":[{"k":[1,{"x":null}]}]}}`), "macos")
	f.Add([]byte(`{"software":[{"name":"\u0000"}],"disks":[{"drive":"C:","sizeGB":-1}]}`), "windows")
	f.Fuzz(func(t *testing.T, body []byte, platform string) {
		var doc agentproto.Inventory
		if json.Unmarshal(body, &doc) != nil {
			return
		}
		n, err := Check(&doc, platform, "debian", time.Now())
		var p *Problem
		if err != nil && !errors.As(err, &p) {
			t.Fatalf("error that is not a Problem: %v", err)
		}
		if err == nil {
			if doc.System.Hostname == "" {
				t.Fatal("accepted without hostname")
			}
			for _, u := range n.Updates {
				if u.Key == "" {
					t.Fatal("accepted update without key")
				}
			}
		}
	})
}

// rawDoc decodes body as the agent API does: datasets kept as JSON.
type rawDoc struct {
	agentproto.Inventory
	Datasets map[string]json.RawMessage `json:"datasets"`
}

func TestCountRows(t *testing.T) {
	for _, c := range []struct {
		json string
		rows int
		ok   bool
	}{
		{`null`, 0, true},
		{`[]`, 0, true},
		{` [ ] `, 0, true},
		{`[{}]`, 1, true},
		{`[{"a":[1,2,{"b":"]},{"}],"c":null},null,{"d":"\"x\\"}]`, 3, true},
		{"[\n {\"a\": 1e308},\n {\"b\": -0.5E-3}\n]", 2, true},
		{`[{"a":1e400}]`, 0, false},
		{`[{"a":[-1e309]}]`, 0, false},
		{`[{"a":"1e400"}]`, 1, true},
		{`{}`, 0, false},
		{`"rows"`, 0, false},
		{`5`, 0, false},
		{`[1]`, 0, false},
		{`[{}, 2]`, 0, false},
		{`["x"]`, 0, false},
		{`[[]]`, 0, false},
		{`[true]`, 0, false},
		{`[{}, false]`, 0, false},
	} {
		rows, ok := countRows([]byte(c.json))
		if rows != c.rows || ok != c.ok {
			t.Errorf("%s: %d %v, want %d %v", c.json, rows, ok, c.rows, c.ok)
		}
	}
}

// TestCheckRawMatchesCheck: a document checked with its datasets kept as
// JSON stores the same rows, counts and distribution as one whose
// datasets were decoded.
func TestCheckRawMatchesCheck(t *testing.T) {
	doc := sample()
	doc.Updates = nil
	doc.Datasets = map[string][]map[string]any{
		agentproto.DatasetOSInformation: {{"id": "Ubuntu", "version": "24.04"}},
		"services":                      {{"name": "ssh", "pid": 12.0, "args": []any{"-D", map[string]any{"x": nil}}}, nil, {}},
		"empty":                         {},
	}
	body, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var decoded agentproto.Inventory
	var raw rawDoc
	if err := json.Unmarshal(body, &decoded); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	want, err := Check(&decoded, "linux", "", now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := CheckRaw(&raw.Inventory, raw.Datasets, "linux", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Distro != "ubuntu" || want.Distro != "ubuntu" {
		t.Fatalf("distro: raw %q, decoded %q", got.Distro, want.Distro)
	}
	if len(got.Datasets) != 3 || len(want.Datasets) != 3 {
		t.Fatalf("datasets: raw %d, decoded %d", len(got.Datasets), len(want.Datasets))
	}
	for i, g := range got.Datasets {
		w := want.Datasets[i]
		var gv, wv any
		json.Unmarshal(g.JSON, &gv)
		json.Unmarshal(w.JSON, &wv)
		if g.Name != w.Name || g.Rows != w.Rows || !reflect.DeepEqual(gv, wv) {
			t.Errorf("dataset %d: raw %s %d %s, decoded %s %d %s", i, g.Name, g.Rows, g.JSON, w.Name, w.Rows, w.JSON)
		}
	}
	for _, bad := range []string{`{"a":{}}`, `{"a":[1]}`, `{"a":[{"n":1e999}]}`, `{"Bad Name":[]}`, `{"os-information":[{"id":5}],"b":"x"}`} {
		var r rawDoc
		if err := json.Unmarshal([]byte(`{"system":{"hostname":"h"},"datasets":`+bad+`}`), &r); err != nil {
			t.Fatal(err)
		}
		var p *Problem
		if _, err := CheckRaw(&r.Inventory, r.Datasets, "linux", "", now); !errors.As(err, &p) || !strings.HasPrefix(p.Field, "datasets") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// FuzzCheckRaw: whatever the agent API accepts with its datasets kept as
// JSON can be read back: every stored dataset decodes into rows, as many
// as were counted.
func FuzzCheckRaw(f *testing.F) {
	f.Add([]byte(`{"system":{"hostname":"m"},"datasets":{"a":[{"k":[1,{"x":null}]},null],"os-information":[{"id":"Debian"}]}}`))
	f.Add([]byte(`{"system":{"hostname":"m"},"datasets":{"a":[{"k":1e400}]}}`))
	f.Add([]byte(`{"system":{"hostname":"m"},"datasets":{"a":[{"k":"\"]"}, {"l":[[],{}]}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var doc rawDoc
		if json.Unmarshal(body, &doc) != nil {
			return
		}
		n, err := CheckRaw(&doc.Inventory, doc.Datasets, "linux", "debian", time.Now())
		var p *Problem
		if err != nil && !errors.As(err, &p) {
			t.Fatalf("error that is not a Problem: %v", err)
		}
		if err != nil {
			return
		}
		for _, d := range n.Datasets {
			var rows []map[string]any
			if err := json.Unmarshal(d.JSON, &rows); err != nil || len(rows) != d.Rows {
				t.Fatalf("dataset %s (%s) stored unreadable: %v, %d rows of %d", d.Name, d.JSON, err, len(rows), d.Rows)
			}
		}
	})
}
