//go:build linux

package collect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// TestLinuxInventoryOfThisMachine collects the real inventory of the test
// machine (a Debian system with dpkg).
func TestLinuxInventoryOfThisMachine(t *testing.T) {
	if !fileExists("/var/lib/dpkg/status") {
		t.Skip("needs a dpkg-based system")
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// How long it takes is BenchmarkLinuxInventory's business (see
	// docs/performance.md): a test on a busy machine asserts behaviour only.
	inv := Inventory(context.Background(), Options{Logger: log})
	t.Logf("inventory: %d software, %d updates, %d disks", len(inv.Software), len(inv.Updates), len(inv.Disks))
	if inv.System.Hostname == "" {
		t.Error("no hostname")
	}
	if h, _ := os.Hostname(); inv.System.Hostname != h {
		t.Errorf("hostname %q, want %q", inv.System.Hostname, h)
	}
	if len(inv.Software) <= 100 {
		t.Errorf("%d software rows, want > 100", len(inv.Software))
	}
	var bash *agentproto.Software
	for i := range inv.Software {
		if inv.Software[i].Name == "bash" {
			bash = &inv.Software[i]
		}
	}
	if bash == nil {
		t.Fatal("bash is not in the software list")
	}
	if bash.Version == nil || *bash.Version == "" || deref(bash.InstallType) != "deb" || bash.InstallDate == nil {
		t.Errorf("bash row incomplete: %+v", *bash)
	}
	if len(inv.Disks) == 0 {
		t.Error("no disk")
	}
	for _, d := range inv.Disks {
		if d.SizeGB == nil || *d.SizeGB <= 0 {
			t.Errorf("disk %s has no size", d.Drive)
		}
	}
	if inv.System.OS == nil || inv.System.OSVersion == nil || inv.System.OSBuild == nil {
		t.Errorf("os fields missing: %+v", inv.System)
	}
	if inv.System.RAMGB == nil || *inv.System.RAMGB <= 0 || inv.System.Cores == nil || *inv.System.Cores <= 0 {
		t.Errorf("ram or cores missing: %+v", inv.System)
	}
	for _, name := range []string{agentproto.DatasetProcesses, agentproto.DatasetLocalUsers, agentproto.DatasetLocalGroups, agentproto.DatasetOSInformation, agentproto.DatasetLogicalDisks, agentproto.DatasetEnvironmentVariables} {
		if len(inv.Datasets[name]) == 0 {
			t.Errorf("dataset %s is empty", name)
		}
	}
	for _, name := range []string{datasetProcessors, datasetMotherboards, datasetNetworkConnections, datasetDiskPartitions, datasetDiskVolumes,
		datasetDiskEncryption, datasetSharedFolders, datasetProfiles, agentproto.DatasetFirmware, agentproto.DatasetTimeZone,
		// Sent on every Linux computer, empty where the source is absent
		// (no journal, wtmp, graphics, USB or sound in a container).
		datasetLogonHistory, datasetEventLogSummary, datasetInstalledUpdates, datasetMonitors, datasetUSBDevices, datasetSoundDevices, datasetSCSIControllers} {
		if _, ok := inv.Datasets[name]; !ok {
			t.Errorf("dataset %s not sent", name)
		}
	}
	// The package upgrades of this machine are in dpkg.log when it has one.
	if fileExists("/var/log/dpkg.log") {
		if ups := parseDpkgLog(readTrimBytes("/var/log/dpkg.log"), time.Local); len(ups) > 0 && len(inv.Datasets[datasetInstalledUpdates]) == 0 {
			t.Errorf("dpkg.log holds %d upgrades, installed-updates is empty", len(ups))
		}
	}
	for name, rows := range inv.Datasets {
		for _, r := range rows {
			assertKeys(t, name, r)
		}
		t.Logf("%-22s %4d rows", name, len(rows))
	}
	if rows := inv.Datasets[agentproto.DatasetProcesses]; len(rows) > 0 {
		t.Logf("process %v", rows[0])
	}
	for _, row := range inv.Datasets[agentproto.DatasetEnvironmentVariables] {
		if secretName.MatchString(row["name"].(string)) {
			t.Errorf("environment variable %s leaked", row["name"])
		}
	}
	for _, u := range inv.Updates {
		if u.PackageName == nil || u.LatestVersion == nil || u.Source == "" || len(u.Categories) == 0 {
			t.Errorf("update row incomplete: %+v", u)
		}
	}
	b, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	var back agentproto.Inventory
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if Hash(inv) != Hash(&back) {
		t.Error("the hash changes through a JSON round trip")
	}
}

// BenchmarkLinuxInventory measures a whole collection on this machine
// (the figure in docs/performance.md):
//
//	go test ./agent/collect/ -run '^$' -bench LinuxInventory -benchtime 5x
func BenchmarkLinuxInventory(b *testing.B) {
	if !fileExists("/var/lib/dpkg/status") {
		b.Skip("needs a dpkg-based system")
	}
	for b.Loop() {
		if inv := Inventory(context.Background(), Options{}); len(inv.Software) == 0 {
			b.Fatal("no software collected")
		}
	}
}

func TestLinuxCheckinFactsAndIdentity(t *testing.T) {
	f := CheckinFacts(context.Background(), Options{})
	if f.LastBootAt == nil || f.LastBootAt.After(time.Now()) {
		t.Errorf("last boot %v", f.LastBootAt)
	}
	id, err := MachineIdentity(context.Background())
	if errors.Is(err, ErrNoMachineID) {
		// A container without /etc/machine-id: the agent makes its own.
		if id.MachineUID != "" || id.Hostname == "" || id.OS == "" {
			t.Errorf("identity without machine id %+v", id)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if id.MachineUID == "" || id.Platform != "linux" || id.OS == "" {
		t.Errorf("identity %+v", id)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func readTrimBytes(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

// TestLinuxHistoryAndDevicesOfThisMachine runs the history and device
// collectors on the test machine, whatever it is: each sends its dataset
// (empty where the source is absent, as in a container) with the
// contract's keys, and none fails for another reason than a missing
// source.
func TestLinuxHistoryAndDevicesOfThisMachine(t *testing.T) {
	h := &recordHandler{}
	c := newCollector(Options{Logger: slog.New(h)})
	collectLinuxHistory(context.Background(), c)
	c.wg.Wait()
	c.finish()
	for _, r := range h.records {
		var name string
		var err error
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "collector":
				name = a.Value.String()
			case "err":
				err, _ = a.Value.Any().(error)
			case "panic":
				err = fmt.Errorf("panic: %v", a.Value.Any())
			}
			return true
		})
		// A missing source is an errNotFound, logged at debug; anything
		// at warn or above is a real failure.
		var missing errNotFound
		switch {
		case r.Level >= slog.LevelWarn:
			t.Errorf("collector %s: %s %v", name, r.Message, err)
		case errors.As(err, &missing):
			t.Logf("collector %s: %v", name, err)
		}
	}
	for _, name := range []string{datasetLogonHistory, datasetEventLogSummary, datasetInstalledUpdates, datasetMonitors,
		datasetUSBDevices, datasetSCSIControllers, datasetSoundDevices} {
		rows, ok := c.inv.Datasets[name]
		if !ok || rows == nil {
			t.Errorf("dataset %s not sent", name)
		}
		for _, r := range rows {
			assertKeys(t, name, r)
		}
		t.Logf("%-18s %d rows", name, len(rows))
	}
}

func TestFirstMachineID(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"}, "0123456789abcdef0123456789abcdef"},
		{[]string{"", "fedcba9876543210fedcba9876543210"}, "fedcba9876543210fedcba9876543210"},
		{[]string{"uninitialized", "fedcba9876543210fedcba9876543210"}, "fedcba9876543210fedcba9876543210"},
		{[]string{"uninitialized", ""}, ""},
		{[]string{"", ""}, ""},
	} {
		if got := firstMachineID(tc.in...); got != tc.want {
			t.Errorf("firstMachineID(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
