package inventory

import (
	"encoding/json"
	"errors"
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
