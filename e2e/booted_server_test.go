package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/bootedtest"
)

// serverPackageBefore is a commit whose server has the package's flags
// (--first-secrets-file) and a schema older than this tree's (050, without
// the migrations 044-048 and 055 that came after it).
const serverPackageBefore = "85838e6"

// newestMigration is the number of this tree's newest migration.
func newestMigration(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(agentdist.ModuleRoot("."), "internal/store/migrations/*/*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v", err)
	}
	slices.SortFunc(files, func(a, b string) int { return strings.Compare(filepath.Base(a), filepath.Base(b)) })
	n, err := strconv.Atoi(strings.SplitN(filepath.Base(files[len(files)-1]), "_", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBootedServerDeb: on a booted Debian with systemd, the server's .deb
// installs, creates its user and starts the patchd service, which answers
// /readyz and writes its first start's secrets to the root-only file and
// not to the journal; the service survives a restart, a newer .deb
// (of a later commit, with migrations the older lacks) upgrades it keeping
// its data (the credential of the first start still works, the database
// migrated by the new version), systemctl stop stops
// it cleanly, and purge leaves no state, configuration or unit.
func TestBootedServerDeb(t *testing.T) {
	m := bootedtest.Boot(t, bootedtest.Systemd)
	ctx := context.Background()
	dir := t.TempDir()
	// deb builds the package of version with the server of the source
	// tree root.
	deb := func(root, version string) string {
		t.Helper()
		bin := filepath.Join(dir, "patchd-"+version)
		if err := agentdist.BuildServerBinary(ctx, root, "amd64", version, bin); err != nil {
			t.Fatal(err)
		}
		pkg, err := agentdist.BuildServerPackage(ctx, agentdist.ServerPackageRequest{Type: "deb", Binary: bin, Arch: "amd64",
			Version: version, Maintainer: "patchd <patchd@example.com>", Out: dir})
		if err != nil {
			t.Fatal(err)
		}
		m.Copy(pkg.Path, "/tmp/"+pkg.Name, 0o644)
		return "/tmp/" + pkg.Name
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := m.Run("journalctl --no-pager -n 60 -u patchd 2>/dev/null")
			t.Logf("server journal:\n%s", out)
		}
	})
	run := func(script string) string {
		t.Helper()
		out, err := m.Run(script)
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return out
	}
	// The machine shares this one's network: a port of its own.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	run("mkdir -p /etc/systemd/system/patchd.service.d && printf '[Service]\\nEnvironment=PATCHD_ADDR=" + addr + "\\n' > /etc/systemd/system/patchd.service.d/addr.conf")
	base := "http://" + addr
	ready := func() { t.Helper(); waitReady(t, base) }
	mainPID := func() string {
		t.Helper()
		pid := strings.TrimSpace(run("systemctl show -p MainPID --value patchd"))
		if pid == "" || pid == "0" {
			t.Fatal("the service has no main process")
		}
		return pid
	}

	// 1.0.0 is the server of an earlier commit, its schema older: the
	// upgrade to this tree's 1.1.0 migrates the database.
	v1, v2 := deb(exportCommit(t, serverPackageBefore), "1.0.0"), deb(agentdist.ModuleRoot("."), "1.1.0")
	run("dpkg -i " + v1)
	ready()
	if out := run("systemctl is-enabled patchd; stat -c '%U %a' /var/lib/patchd /var/lib/patchd/first-start-secrets; stat -c '%U:%G %a' /etc/patchd/patchd.env; stat -c %U /proc/" + mainPID()); out != "enabled\npatchd 700\npatchd 600\nroot:patchd 640\npatchd\n" {
		t.Errorf("installed: %q", out)
	}
	secrets := run("cat /var/lib/patchd/first-start-secrets")
	id := regexp.MustCompile(`API client_id:\s+(\S+)`).FindStringSubmatch(secrets)
	secret := regexp.MustCompile(`API client_secret:\s+(\S+)`).FindStringSubmatch(secrets)
	token := regexp.MustCompile(`Enrollment token:\s+(\S+)`).FindStringSubmatch(secrets)
	if id == nil || secret == nil || token == nil {
		t.Fatalf("the first start's secrets file:\n%s", secrets)
	}
	journal := run("journalctl --no-pager -o cat -u patchd")
	for _, s := range []string{secret[1], token[1]} {
		if strings.Contains(journal, s) {
			t.Errorf("the journal holds a first start secret:\n%s", journal)
		}
	}
	if !strings.Contains(journal, "/var/lib/patchd/first-start-secrets") {
		t.Errorf("the journal does not say where the secrets are:\n%s", journal)
	}
	c := client.New(base, id[1], secret[1])
	if _, err := c.ListEndpoints(ctx, client.EndpointQuery{}); err != nil {
		t.Fatalf("the first start's credential: %v", err)
	}

	pid := mainPID()
	run("systemctl restart patchd")
	ready()
	if mainPID() == pid {
		t.Error("the restart left the same process")
	}

	run("dpkg -i " + v2)
	ready()
	if out := run("/usr/bin/patchd version; runuser -u patchd -- /usr/bin/patchd migrate --data /var/lib/patchd"); !strings.Contains(out, "patchd 1.1.0") ||
		!strings.Contains(out, `"migratedBy":"1.1.0"`) || !strings.Contains(out, fmt.Sprintf(`"schemaVersion":%d`, newestMigration(t))) {
		t.Errorf("after the upgrade: %s", out)
	}
	if _, err := client.New(base, id[1], secret[1]).ListEndpoints(ctx, client.EndpointQuery{}); err != nil {
		t.Fatalf("the first start's credential after the upgrade: %v", err)
	}
	if run("cat /var/lib/patchd/first-start-secrets") != secrets {
		t.Error("the upgrade changed the first start's secrets file")
	}

	run("systemctl stop patchd")
	if out, _ := m.Run("systemctl is-active patchd; systemctl show -p Result --value patchd"); out != "inactive\nsuccess\n" {
		t.Errorf("after systemctl stop: %q", out)
	}
	if _, err := http.Get(base + "/readyz"); err == nil {
		t.Error("the server still answers after systemctl stop")
	}

	run("dpkg --purge patchd")
	for _, p := range []string{"/var/lib/patchd", "/etc/patchd", "/usr/bin/patchd", "/usr/lib/systemd/system/patchd.service"} {
		if m.Exists(p) {
			t.Errorf("%s is left after purge", p)
		}
	}
	if out, _ := m.Run("systemctl list-unit-files patchd.service --no-legend | wc -l"); strings.TrimSpace(out) != "0" {
		t.Errorf("systemd still knows patchd.service: %s", out)
	}
}
