package agentdist_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
)

// debianRoot is a throwaway copy of a minimal Debian (debootstrap
// --variant=minbase stable, with curl), built once a day into a cache
// folder under os.TempDir() and copied for each test. The test machine's
// own packages are never touched: everything runs in the copy (chroot).
func debianRoot(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the Debian root tests need root (chroot, dpkg --root)")
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		t.Skip("debootstrap is not installed (apt-get install debootstrap): the .deb and install.sh tests need a Debian root")
	}
	cache := filepath.Join(os.TempDir(), "patchd-debian-root-"+time.Now().UTC().Format("20060102"))
	root := filepath.Join(cache, "root")
	if _, err := os.Stat(filepath.Join(root, "usr/bin/curl")); err != nil {
		os.MkdirAll(cache, 0o755)
		lock, err := os.OpenFile(filepath.Join(cache, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
		if _, err := os.Stat(filepath.Join(root, "usr/bin/curl")); err != nil {
			build := filepath.Join(cache, "build")
			os.RemoveAll(build)
			t.Logf("debootstrap --variant=minbase stable into %s (once a day; a few minutes)", build)
			out, err := exec.Command("debootstrap", "--variant=minbase", "--include=curl,ca-certificates", "stable", build, "http://deb.debian.org/debian").CombinedOutput()
			if err != nil {
				t.Skipf("debootstrap cannot build a Debian root here (%v): %s", err, lastLines(string(out), 5))
			}
			if err := os.Rename(build, root); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := filepath.Join(t.TempDir(), "root")
	if out, err := exec.Command("cp", "-a", root, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the Debian root: %v %s", err, out)
	}
	return dir
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func chroot(t *testing.T, root string, env []string, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("chroot", root, "/bin/sh", "-c", script)
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C"}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func exists(root, p string) bool {
	_, err := os.Lstat(filepath.Join(root, p))
	return err == nil
}

// TestDebInDebianRoot installs the .deb with dpkg -i into a Debian root:
// the binary, unit, init script and state folder are where they belong,
// postinst linked the init script (no systemd there) and said how to
// enroll; purge removes the state.
func TestDebInDebianRoot(t *testing.T) {
	root := debianRoot(t)
	_, h := newEnv(t)
	publishFake(t, h, agentdist.Platform{OS: "linux", Arch: "amd64"}, fakeELF, "1.4.0")
	pkg, err := h.Packages.Build(context.Background(), agentdist.PackageRequest{Type: "deb", Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "tmp"), 0o1777)
	if out, err := exec.Command("cp", pkg.Path, filepath.Join(root, "tmp/agent.deb")).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	out, err := chroot(t, root, nil, "dpkg -i /tmp/agent.deb")
	if err != nil {
		t.Fatalf("dpkg -i: %v\n%s", err, out)
	}
	if !strings.Contains(out, "not enrolled yet") {
		t.Errorf("postinst did not say how to enroll:\n%s", out)
	}
	for _, p := range []string{"usr/bin/patchd-agent", "usr/lib/systemd/system/patchd-agent.service", "etc/init.d/patchd-agent", "var/lib/patchd-agent", "etc/rc2.d/S01patchd-agent"} {
		if !exists(root, p) {
			t.Errorf("%s missing after dpkg -i", p)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "var/lib/patchd-agent")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state folder mode %v", fi)
	}
	unit, _ := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system/patchd-agent.service"))
	if !strings.Contains(string(unit), "ExecStart=/usr/bin/patchd-agent run --state /var/lib/patchd-agent\n") {
		t.Errorf("unit:\n%s", unit)
	}
	if out, err := chroot(t, root, nil, "dpkg -s patchd-agent && dpkg -L patchd-agent && ls /var/lib/dpkg/info/patchd-agent.*"); err != nil ||
		!strings.Contains(out, "Status: install ok installed") || !strings.Contains(out, "patchd-agent.postinst") || !strings.Contains(out, "patchd-agent.prerm") || !strings.Contains(out, "patchd-agent.conffiles") {
		t.Errorf("dpkg -s/-L: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(root, "var/lib/patchd-agent/state.json"), []byte("{}"), 0o600)
	if out, err := chroot(t, root, nil, "dpkg --purge patchd-agent"); err != nil {
		t.Fatalf("dpkg --purge: %v\n%s", err, out)
	}
	for _, p := range []string{"usr/bin/patchd-agent", "etc/init.d/patchd-agent", "var/lib/patchd-agent", "etc/rc2.d/S01patchd-agent"} {
		if exists(root, p) {
			t.Errorf("%s left after purge", p)
		}
	}
}

// TestInstallWithoutServiceManager: on a Debian root without any service
// manager, patchd-agent install fails before writing anything and says
// what to do.
func TestInstallWithoutServiceManager(t *testing.T) {
	root := debianRoot(t)
	os.Remove(filepath.Join(root, "usr/sbin/update-rc.d"))
	_, h := newEnv(t)
	b, err := h.Store.BuildFromSource(context.Background(), agentdist.ModuleRoot("."), agentdist.Platform{OS: "linux", Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", b.Path, filepath.Join(root, "tmp/patchd-agent")).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	out, err := chroot(t, root, nil, "/tmp/patchd-agent install")
	if err == nil || !strings.Contains(out, "no service manager found") || !strings.Contains(out, "nothing was changed") {
		t.Errorf("install without a service manager: %v\n%s", err, out)
	}
	for _, p := range []string{"usr/local/bin/patchd-agent", "etc/init.d/patchd-agent", "etc/systemd/system/patchd-agent.service", "etc/default/patchd-agent"} {
		if exists(root, p) {
			t.Errorf("%s written by a failed install", p)
		}
	}
}

// TestInstallShWithoutServiceManager runs install.sh in a Debian root
// with no service manager: it enrolls, keeps the agent installed, exits
// non-zero with one line naming the command that runs it, and that
// command works: the agent it starts checks in. /tmp is left as it was.
func TestInstallShWithoutServiceManager(t *testing.T) {
	root := debianRoot(t)
	os.Remove(filepath.Join(root, "usr/sbin/update-rc.d"))
	if err := syscall.Mount("proc", filepath.Join(root, "proc"), "proc", 0, ""); err != nil {
		t.Skipf("cannot mount /proc in the Debian root: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(filepath.Join(root, "proc"), syscall.MNT_DETACH) })
	os.WriteFile(filepath.Join(root, "etc/machine-id"), []byte("2f1e2d3c4b5a69788796a5b4c3d2e1f0\n"), 0o444)
	e, h := newEnv(t)
	if _, err := h.Store.BuildFromSource(context.Background(), agentdist.ModuleRoot("."), agentdist.Platform{OS: "linux", Arch: "amd64"}); err != nil {
		t.Fatal(err)
	}
	before := rootTmp(t, root)
	out, err := chroot(t, root, nil, "curl -fsSL "+e.URL+"/install.sh | sh -s -- --token "+e.EnrollToken)
	var failures []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "patchd install: downloading") && !strings.HasPrefix(l, "enrolled as endpoint") {
			failures = append(failures, l)
		}
	}
	const advice = "start it with /usr/local/bin/patchd-agent run --state '/var/lib/patchd-agent' from what starts programs at boot here"
	if err == nil || len(failures) != 1 || !strings.Contains(failures[0], "found no service manager") || !strings.Contains(failures[0], advice) {
		t.Fatalf("install.sh without a service manager: %v\n%s", err, out)
	}
	for _, p := range []string{"usr/local/bin/patchd-agent", "var/lib/patchd-agent/state.json"} {
		if !exists(root, p) {
			t.Errorf("/%s missing: the printed command cannot work", p)
		}
	}
	if exists(root, "usr/local/bin/patchd-agent.new") {
		t.Error("patchd-agent.new left behind")
	}
	if after := rootTmp(t, root); !slices.Equal(before, after) {
		t.Errorf("install.sh left /tmp holding %v (was %v)", after, before)
	}
	// The advice, followed: the agent checks in.
	checksInFromRoot(t, e, root, "/usr/local/bin/patchd-agent", "run", "--state", "/var/lib/patchd-agent")
}

// TestInstallShInDebianRoot runs the served install.sh as root in a Debian
// root against a server started here: it downloads and checks the real
// agent, installs it, enrolls, registers the SysV service (no systemd
// there) and starts it; the agent checks in. Running it again upgrades
// in place and keeps the enrollment; patchd-agent uninstall removes it.
func TestInstallShInDebianRoot(t *testing.T) {
	root := debianRoot(t)
	if err := syscall.Mount("proc", filepath.Join(root, "proc"), "proc", 0, ""); err != nil {
		t.Skipf("cannot mount /proc in the Debian root: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(filepath.Join(root, "proc"), syscall.MNT_DETACH) })
	// A booted Debian has a machine id (systemd-machine-id-setup); the
	// debootstrapped root has none yet.
	if err := os.WriteFile(filepath.Join(root, "etc/machine-id"), []byte("0f1e2d3c4b5a69788796a5b4c3d2e1f0\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	e, h := newEnv(t)
	src := agentdist.ModuleRoot(".")
	if _, err := h.Store.BuildFromSource(context.Background(), src, agentdist.Platform{OS: "linux", Arch: "amd64"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the agent must not outlive a failed test
		if b, err := os.ReadFile(filepath.Join(root, "run/patchd-agent.pid")); err == nil {
			var pid int
			fmt.Sscan(string(b), &pid)
			if pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	// A forward proxy: install.sh --proxy sends its downloads through it
	// and records it for the service.
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.URL.IsAbs() {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		proxied.Add(1)
		out := r.Clone(r.Context())
		out.RequestURI = ""
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	defer proxy.Close()
	out, err := chroot(t, root, nil, "curl -fsSL "+e.URL+"/install.sh | sh -s -- --token pde_wrong")
	if err == nil || !strings.Contains(out, "enrollment failed; nothing was installed") {
		t.Errorf("install.sh with a wrong token: %v\n%s", err, out)
	}
	for _, p := range []string{"usr/local/bin/patchd-agent", "usr/local/bin/patchd-agent.new", "etc/init.d/patchd-agent", "var/lib/patchd-agent/state.json"} {
		if exists(root, p) {
			t.Errorf("%s left by a failed install.sh", p)
		}
	}
	line := "curl -fsSL " + e.URL + "/install.sh | sh -s -- --token " + e.EnrollToken
	out, err = chroot(t, root, nil, line+" --proxy "+proxy.URL)
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	if exists(root, "usr/local/bin/patchd-agent.new") {
		t.Error("install.sh left patchd-agent.new behind")
	}
	if proxied.Load() < 2 {
		t.Errorf("install.sh --proxy: %d requests went through the proxy", proxied.Load())
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/default/patchd-agent")); !strings.Contains(string(b), `HTTPS_PROXY="`+proxy.URL+`"`) {
		t.Errorf("the proxy is not recorded for the service: %q", b)
	}
	for _, p := range []string{"usr/local/bin/patchd-agent", "etc/init.d/patchd-agent", "var/lib/patchd-agent/state.json", "run/patchd-agent.pid"} {
		if !exists(root, p) {
			t.Errorf("%s missing after install.sh:\n%s", p, out)
		}
	}
	ctx := context.Background()
	var seen bool
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && !seen; time.Sleep(200 * time.Millisecond) {
		h.Store.Lookup(agentdist.Platform{OS: "linux", Arch: "amd64"})
		e.Server.FlushCheckins(ctx)
		page, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{})
		if err == nil && page.Total == 1 && page.Items[0].LastSeenAt != nil && page.Items[0].OS != nil {
			seen = true
		}
	}
	if !seen {
		log, _ := os.ReadFile(filepath.Join(root, "var/log/patchd-agent.log"))
		t.Fatalf("the agent installed by install.sh never checked in:\n%s\nagent log:\n%s", out, lastLines(string(log), 20))
	}
	out, err = chroot(t, root, nil, line)
	if err != nil || !strings.Contains(out, "keeping the enrollment") {
		t.Errorf("re-running install.sh: %v\n%s", err, out)
	}
	if page, _ := e.Admin.ListEndpoints(ctx, client.EndpointQuery{}); page.Total != 1 {
		t.Errorf("re-running made %d endpoints", page.Total)
	}
	out, err = chroot(t, root, nil, "patchd-agent uninstall")
	if err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	for _, p := range []string{"usr/local/bin/patchd-agent", "etc/init.d/patchd-agent", "var/lib/patchd-agent", "run/patchd-agent.pid", "etc/default/patchd-agent"} {
		if exists(root, p) {
			t.Errorf("%s left after uninstall:\n%s", p, out)
		}
	}
}

// TestDebEnrollsInDebianRoot: with /etc/patchd-agent/enroll.conf written
// first (as config management does), dpkg -i enrolls the computer against
// the server the package was built by, and links the service; the
// endpoint exists on the server.
func TestDebEnrollsInDebianRoot(t *testing.T) {
	root := debianRoot(t)
	os.WriteFile(filepath.Join(root, "etc/machine-id"), []byte("1f1e2d3c4b5a69788796a5b4c3d2e1f0\n"), 0o444)
	// No service starts while dpkg runs in this root (Debian's policy-rc.d).
	os.WriteFile(filepath.Join(root, "usr/sbin/policy-rc.d"), []byte("#!/bin/sh\nexit 101\n"), 0o755)
	e, h := newEnv(t)
	publishRelease(t, h, agentdist.Platform{OS: "linux", Arch: "amd64"}, realAgent(t, "1.4.0"), "1.4.0")
	pkg, err := h.Packages.Build(context.Background(), agentdist.PackageRequest{Type: "deb", Arch: "amd64", Server: e.URL})
	if err != nil {
		t.Fatal(err)
	}
	exec.Command("cp", pkg.Path, filepath.Join(root, "tmp/agent.deb")).Run()
	os.MkdirAll(filepath.Join(root, "etc/patchd-agent"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/patchd-agent/enroll.conf"), []byte("PATCHD_TOKEN="+e.EnrollToken+"\n"), 0o600)
	out, err := chroot(t, root, nil, "dpkg -i /tmp/agent.deb")
	if err != nil {
		t.Fatalf("dpkg -i: %v\n%s", err, out)
	}
	if !strings.Contains(out, "enrolled as endpoint") || !exists(root, "var/lib/patchd-agent/state.json") || !exists(root, "etc/rc2.d/S01patchd-agent") {
		t.Errorf("postinst did not enroll and link the service:\n%s", out)
	}
	page, err := e.Admin.ListEndpoints(context.Background(), client.EndpointQuery{})
	if err != nil || page.Total != 1 {
		t.Errorf("endpoints after dpkg -i: %v %+v", err, page)
	}
	// An upgrade (the same package again) keeps the enrollment.
	if out, err := chroot(t, root, nil, "dpkg -i /tmp/agent.deb"); err != nil || strings.Contains(out, "enrolled as endpoint") {
		t.Errorf("reinstall: %v\n%s", err, out)
	}
	if page, _ := e.Admin.ListEndpoints(context.Background(), client.EndpointQuery{}); page.Total != 1 {
		t.Errorf("reinstall enrolled again: %d endpoints", page.Total)
	}
}

// TestInstallShPinnedCA: with a token carrying the pin of the server's CA,
// install.sh fetches ca.pem, goes on only when its hash is the pin, and
// downloads the agent verified with it; with another pin it downloads
// nothing.
func TestInstallShPinnedCA(t *testing.T) {
	root := debianRoot(t)
	e, h := newEnv(t)
	if _, err := h.Store.BuildFromSource(context.Background(), agentdist.ModuleRoot("."), agentdist.Platform{OS: "linux", Arch: "amd64"}); err != nil {
		t.Fatal(err)
	}
	var downloads atomic.Int32
	var ts *httptest.Server
	ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/agent/v1/ca.pem" {
			pem.Encode(w, &pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
			return
		}
		if strings.HasPrefix(r.URL.Path, "/agent/v1/download/") {
			downloads.Add(1)
		}
		e.Server.Handler().ServeHTTP(w, r)
	}))
	ts.StartTLS()
	defer ts.Close()
	sum := sha256.Sum256(ts.Certificate().Raw)
	pin := hex.EncodeToString(sum[:])
	script := filepath.Join(root, "tmp/install.sh")
	os.WriteFile(script, []byte(agentdist.InstallScript(ts.URL)), 0o755)

	out, err := chroot(t, root, nil, "sh /tmp/install.sh --no-start --token "+e.EnrollToken+"."+strings.Repeat("0", 64))
	if err == nil || !strings.Contains(out, "does not match the pin") || downloads.Load() != 0 {
		t.Errorf("wrong pin: %v, %d downloads\n%s", err, downloads.Load(), out)
	}
	out, err = chroot(t, root, nil, "sh /tmp/install.sh --no-start --token "+e.EnrollToken+"."+pin)
	if err != nil || !strings.Contains(out, "the server's CA matches the token's pin") || downloads.Load() != 2 || strings.Contains(out, "SHA-256") {
		t.Errorf("right pin: %v, %d downloads\n%s", err, downloads.Load(), out)
	}
	// The agent enrolled over HTTPS, pinning the CA the token names.
	eps, err := e.Admin.ListEndpoints(context.Background(), client.EndpointQuery{})
	if err != nil || eps.Total != 1 {
		t.Fatalf("endpoints after the pinned install: %+v %v\n%s", eps, err, out)
	}
}

// TestDebTokenWithoutInitSaysNotRunning: dpkg -i with PATCHD_TOKEN in a
// Debian root where no init system runs (no systemd, no sysvinit, no
// OpenRC) enrolls, and postinst says on stderr that no service manager
// runs here and gives the exact command that runs the agent; that command
// works.
func TestDebTokenWithoutInitSaysNotRunning(t *testing.T) {
	root := debianRoot(t)
	os.WriteFile(filepath.Join(root, "etc/machine-id"), []byte("3f1e2d3c4b5a69788796a5b4c3d2e1f0\n"), 0o444)
	e, h := newEnv(t)
	publishRelease(t, h, agentdist.Platform{OS: "linux", Arch: "amd64"}, realAgent(t, "1.4.0"), "1.4.0")
	pkg, err := h.Packages.Build(context.Background(), agentdist.PackageRequest{Type: "deb", Arch: "amd64", Server: e.URL})
	if err != nil {
		t.Fatal(err)
	}
	exec.Command("cp", pkg.Path, filepath.Join(root, "tmp/agent.deb")).Run()
	t.Cleanup(func() { // nothing the package might have started outlives the test
		if b, err := os.ReadFile(filepath.Join(root, "run/patchd-agent.pid")); err == nil {
			var pid int
			fmt.Sscan(string(b), &pid)
			if pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	cmd := exec.Command("chroot", root, "dpkg", "-i", "/tmp/agent.deb")
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C", "PATCHD_TOKEN=" + e.EnrollToken}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dpkg -i: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if !exists(root, "var/lib/patchd-agent/state.json") {
		t.Fatalf("dpkg -i with PATCHD_TOKEN did not enroll:\n%s\n%s", stdout.String(), stderr.String())
	}
	const command = "/usr/bin/patchd-agent run --state /var/lib/patchd-agent"
	if !strings.Contains(stderr.String(), "no service manager runs here") || !strings.Contains(stderr.String(), "the agent is not running") || !strings.Contains(stderr.String(), command) {
		t.Fatalf("postinst did not say on stderr that the agent is not running and how to run it:\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if exists(root, "run/patchd-agent.pid") {
		t.Errorf("a pid file exists, yet postinst said the agent is not running")
	}
	// The command, followed: the agent checks in.
	if err := syscall.Mount("proc", filepath.Join(root, "proc"), "proc", 0, ""); err != nil {
		t.Skipf("cannot mount /proc in the Debian root to run the printed command: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(filepath.Join(root, "proc"), syscall.MNT_DETACH) })
	checksInFromRoot(t, e, root, strings.Fields(command)...)
}

// checksInFromRoot runs argv (the agent, started as the printed advice
// says) in the Debian root and waits until the only endpoint checks in
// after that; the agent, and what it started, end with the test.
func checksInFromRoot(t *testing.T, e *apitest.Env, root string, argv ...string) {
	t.Helper()
	run := exec.Command("chroot", append([]string{root}, argv...)...)
	run.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C"}
	logs, err := os.Create(filepath.Join(t.TempDir(), "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	run.Stdout, run.Stderr = logs, logs
	// Its own process group: what the agent starts (apt-get refreshing the
	// package lists) ends with it, before the root is removed.
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := time.Now().Truncate(time.Millisecond)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-run.Process.Pid, syscall.SIGKILL); run.Wait() })
	ctx := context.Background()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		e.Server.FlushCheckins(ctx)
		page, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{})
		if err == nil && page.Total == 1 && page.Items[0].LastSeenAt != nil && !page.Items[0].LastSeenAt.Before(started) {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logs.Name())
			t.Fatalf("the agent started as printed never checked in: %+v\n%s", page, b)
		}
	}
}
