package agentdist_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/agentdist"
)

// buildPackage publishes content as the agent for linux or windows/amd64,
// released as version, and builds the package typ of it into dir.
func buildPackage(t *testing.T, h *agentdist.Host, typ, version string, content []byte, dir string) string {
	t.Helper()
	p := agentdist.Platform{OS: "linux", Arch: "amd64"}
	if typ == "msi" {
		p.OS = "windows"
	}
	publishFake(t, h, p, content, version)
	pkg, err := h.Packages.Build(context.Background(), agentdist.PackageRequest{Type: typ, Arch: "amd64", Server: "https://patchd.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, pkg.Name)
	if b, err := exec.Command("cp", pkg.Path, out).CombinedOutput(); err != nil {
		t.Fatal(err, string(b))
	}
	return out
}

func agentOf(version string) []byte {
	return append(append([]byte(nil), fakeELF...), "release "+version...)
}

// TestPackageVersions: a package carries the version of the agent's
// release, not the server's; prereleases sort before their release.
func TestPackageVersions(t *testing.T) {
	need(t, "dpkg-deb", "rpm")
	_, h := newEnv(t)
	dir := t.TempDir()
	for _, c := range []struct{ release, deb, rpm string }{
		{"1.5.0", "1.5.0", "1.5.0-1"},
		{"2.0.0-rc.1", "2.0.0~rc.1", "2.0.0~rc.1-1"},
		{"2.1.0+build-7", "2.1.0+build.7", "2.1.0+build.7-1"},
	} {
		deb := buildPackage(t, h, "deb", c.release, agentOf(c.release), dir)
		if out, _ := exec.Command("dpkg-deb", "-f", deb, "Version").Output(); strings.TrimSpace(string(out)) != c.deb {
			t.Errorf("release %s: deb version %q, want %q", c.release, out, c.deb)
		}
		rpm := buildPackage(t, h, "rpm", c.release, agentOf(c.release), dir)
		if out, _ := exec.Command("rpm", "-qp", "--queryformat", "%{VERSION}-%{RELEASE}", rpm).Output(); string(out) != c.rpm {
			t.Errorf("release %s: rpm version %q, want %q", c.release, out, c.rpm)
		}
	}
	// dpkg orders them as the releases are ordered.
	for _, pair := range [][2]string{{"1.5.0", "2.0.0~rc.1"}, {"2.0.0~rc.1", "2.0.0"}, {"2.0.0", "2.1.0+build.7"}} {
		if err := exec.Command("dpkg", "--compare-versions", pair[0], "lt", pair[1]).Run(); err != nil {
			t.Errorf("dpkg: %s is not older than %s", pair[0], pair[1])
		}
	}
	for _, bad := range []string{"latest", "1.5.0 beta", "1..2", "1.2_3"} {
		p := agentdist.Platform{OS: "linux", Arch: "amd64"}
		if _, err := h.Store.SetRelease(p, bad, "test-signature", nil); err != nil {
			continue // refused before packaging already
		}
		_, err := h.Packages.Build(context.Background(), agentdist.PackageRequest{Type: "deb", Arch: "amd64"})
		var perr *agentdist.PackageError
		if !errors.As(err, &perr) || !strings.Contains(err.Error(), "cannot be a package version") {
			t.Errorf("release %q: %v", bad, err)
		}
	}
}

// TestDebUpgradeInDebianRoot: the .deb of a newer release upgrades an
// installed older one with apt-get and with dpkg, in a Debian root; an
// older one does not replace it through apt.
func TestDebUpgradeInDebianRoot(t *testing.T) {
	root := debianRoot(t)
	os.WriteFile(filepath.Join(root, "usr/sbin/policy-rc.d"), []byte("#!/bin/sh\nexit 101\n"), 0o755)
	_, h := newEnv(t)
	tmp := filepath.Join(root, "tmp")
	old := buildPackage(t, h, "deb", "1.4.0", agentOf("1.4.0"), tmp)
	newer := buildPackage(t, h, "deb", "1.5.0", agentOf("1.5.0"), tmp)
	installed := func(want string) {
		t.Helper()
		out, err := chroot(t, root, nil, "dpkg-query -W -f '${Version} ${Status}' patchd-agent")
		if err != nil || out != want+" install ok installed" {
			t.Errorf("installed: %q %v, want %s", out, err, want)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "usr/bin/patchd-agent")); !bytes.Equal(b, agentOf(want)) {
			t.Errorf("/usr/bin/patchd-agent is not the %s agent", want)
		}
	}
	if out, err := chroot(t, root, nil, "dpkg -i /tmp/"+filepath.Base(old)); err != nil {
		t.Fatalf("dpkg -i: %v\n%s", err, out)
	}
	installed("1.4.0")
	if out, err := chroot(t, root, nil, "apt-get install -y /tmp/"+filepath.Base(newer)); err != nil || strings.Contains(out, "already the newest") {
		t.Fatalf("apt-get install the newer package: %v\n%s", err, out)
	}
	installed("1.5.0")
	if out, err := chroot(t, root, nil, "apt-get install -y /tmp/"+filepath.Base(old)); err == nil {
		t.Errorf("apt-get installed the older package over the newer one:\n%s", out)
	}
	installed("1.5.0")
	// dpkg alone: back to 1.4.0 (dpkg -i downgrades), then up again.
	chroot(t, root, nil, "dpkg -i /tmp/"+filepath.Base(old))
	installed("1.4.0")
	if out, err := chroot(t, root, nil, "dpkg -i /tmp/"+filepath.Base(newer)); err != nil {
		t.Fatalf("dpkg -i the newer package: %v\n%s", err, out)
	}
	installed("1.5.0")
	if !exists(root, "etc/rc2.d/S01patchd-agent") {
		t.Error("the init script's links are gone after the upgrade")
	}
	if out, err := chroot(t, root, nil, "dpkg --purge patchd-agent"); err != nil {
		t.Fatalf("dpkg --purge: %v\n%s", err, out)
	}
	for _, p := range []string{"usr/bin/patchd-agent", "etc/init.d/patchd-agent", "etc/rc2.d/S01patchd-agent", "var/lib/patchd-agent"} {
		if exists(root, p) {
			t.Errorf("%s left after purge", p)
		}
	}
}

// TestRPMUpgradeInRoot: rpm -U of the .rpm of a newer release upgrades the
// older one, in a scratch root (a Debian root: rpm runs the scriptlets
// there with its shell); rpm -U of an older one is refused; rpm -e
// removes the files and keeps the state.
func TestRPMUpgradeInRoot(t *testing.T) {
	need(t, "rpm")
	root := debianRoot(t)
	_, h := newEnv(t)
	dir := t.TempDir()
	old := buildPackage(t, h, "rpm", "1.4.0", agentOf("1.4.0"), dir)
	newer := buildPackage(t, h, "rpm", "1.5.0", agentOf("1.5.0"), dir)
	rpm := func(args ...string) (string, error) {
		out, err := exec.Command("rpm", append([]string{"--root", root}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := rpm("--initdb"); err != nil {
		t.Fatalf("rpm --initdb: %v %s", err, out)
	}
	installed := func(want string) {
		t.Helper()
		out, err := rpm("-q", "patchd-agent")
		if err != nil || out != "patchd-agent-"+want+"-1.x86_64\n" {
			t.Errorf("rpm -q: %q %v, want %s", out, err, want)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "usr/bin/patchd-agent")); !bytes.Equal(b, agentOf(want)) {
			t.Errorf("/usr/bin/patchd-agent is not the %s agent", want)
		}
	}
	// --nodeps: the root's own packages are dpkg's, not in rpm's database.
	if out, err := rpm("-U", "--nodeps", old); err != nil || !strings.Contains(out, "not enrolled yet") {
		t.Fatalf("rpm -U %s: %v\n%s", filepath.Base(old), err, out)
	}
	installed("1.4.0")
	if out, err := rpm("-U", "--nodeps", newer); err != nil {
		t.Fatalf("rpm -U %s: %v\n%s", filepath.Base(newer), err, out)
	}
	installed("1.5.0")
	if out, err := rpm("-U", "--nodeps", old); err == nil || !strings.Contains(out, "newer") {
		t.Errorf("rpm -U of the older package: %v\n%s", err, out)
	}
	installed("1.5.0")
	os.WriteFile(filepath.Join(root, "var/lib/patchd-agent/state.json"), []byte("{}"), 0o600)
	if out, err := rpm("-e", "--nodeps", "patchd-agent"); err != nil {
		t.Fatalf("rpm -e: %v\n%s", err, out)
	}
	if exists(root, "usr/bin/patchd-agent") || exists(root, "etc/init.d/patchd-agent") || !exists(root, "var/lib/patchd-agent/state.json") {
		t.Error("rpm -e: the files should be gone and the state kept")
	}
}

// TestMSIUpgrade: the MSI's ProductVersion is the release's, its
// UpgradeCode never changes, and its Upgrade table makes it a major
// upgrade of every older or equal version and refuses a newer one.
func TestMSIUpgrade(t *testing.T) {
	need(t, "wixl", "msiinfo")
	_, h := newEnv(t)
	dir := t.TempDir()
	exe := func(v string) []byte { return append([]byte("MZ"), []byte(strings.Repeat("windows agent "+v, 300))...) }
	table := func(msi, name string) map[string][]string {
		out, err := exec.Command("msiinfo", "export", msi, name).CombinedOutput()
		if err != nil {
			t.Fatalf("msiinfo export %s: %v %s", name, err, out)
		}
		rows := map[string][]string{}
		for i, l := range strings.Split(strings.ReplaceAll(string(out), "\r", ""), "\n") {
			if f := strings.Split(l, "\t"); i >= 3 && len(f) > 1 {
				rows[f[0]+"\t"+f[len(f)-1]] = f
			}
		}
		return rows
	}
	props := func(msi string) map[string]string {
		m := map[string]string{}
		for _, f := range table(msi, "Property") {
			m[f[0]] = f[1]
		}
		return m
	}
	old := buildPackage(t, h, "msi", "1.4.0", exe("1.4.0"), dir)
	newer := buildPackage(t, h, "msi", "1.5.0", exe("1.5.0"), dir)
	po, pn := props(old), props(newer)
	if po["ProductVersion"] != "1.4.0" || pn["ProductVersion"] != "1.5.0" {
		t.Errorf("ProductVersion %q and %q, want 1.4.0 and 1.5.0", po["ProductVersion"], pn["ProductVersion"])
	}
	if po["UpgradeCode"] == "" || po["UpgradeCode"] != pn["UpgradeCode"] || po["ProductCode"] == pn["ProductCode"] {
		t.Errorf("UpgradeCode %q/%q ProductCode %q/%q", po["UpgradeCode"], pn["UpgradeCode"], po["ProductCode"], pn["ProductCode"])
	}
	// Upgrade: UpgradeCode, VersionMin, VersionMax, Language, Attributes,
	// Remove, ActionProperty.
	var upgrades, refuses bool
	for _, f := range table(newer, "Upgrade") {
		if len(f) < 7 || f[0] != pn["UpgradeCode"] {
			continue
		}
		attrs := 0
		for _, c := range f[4] {
			attrs = attrs*10 + int(c-'0')
		}
		const onlyDetect, minInclusive, maxInclusive = 2, 256, 512
		switch {
		case f[1] == "" && f[2] == "1.5.0" && attrs&onlyDetect == 0 && attrs&maxInclusive != 0:
			upgrades = true // 1.4.0 and a rebuilt 1.5.0 are removed
		case f[1] == "1.5.0" && f[2] == "" && attrs&onlyDetect != 0 && attrs&minInclusive == 0:
			refuses = true // a newer one is detected, and the downgrade refused
		}
	}
	if !upgrades || !refuses {
		t.Errorf("Upgrade table (upgrades older: %v, refuses newer: %v):\n%v", upgrades, refuses, table(newer, "Upgrade"))
	}
	if lc := table(newer, "LaunchCondition"); lc["NOT WIX_DOWNGRADE_DETECTED\tA newer patchd agent is installed."] == nil {
		t.Errorf("no launch condition refusing a downgrade: %v", lc)
	}
	seq := table(newer, "InstallExecuteSequence")
	var removes bool
	for _, f := range seq {
		removes = removes || f[0] == "RemoveExistingProducts"
	}
	if !removes {
		t.Errorf("no RemoveExistingProducts in the sequence: %v", seq)
	}
}
