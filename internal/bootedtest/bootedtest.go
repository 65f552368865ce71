// Package bootedtest boots throwaway Debian systems for end-to-end tests
// of the agent: a root built once a day with debootstrap (one with systemd
// as init, one with SysV init; the OpenRC root is a copy of the SysV one
// with Debian's openrc package installed) is booted with systemd-nspawn on a copy of
// its own (an overlay, or cp -a where overlays cannot be mounted), and
// commands run inside with nsenter. The machine shares the host's network,
// so a server a test starts on 127.0.0.1 is reachable from inside.
//
// Tests skip, saying why, only where this machine cannot boot a container
// (not root, no systemd-nspawn, debootstrap or the boot itself failing);
// under CI=true the reason is logged in capitals first, and a missing
// systemd-nspawn fails the test (.ci/run installs it).
package bootedtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/lockedbuf"
)

// Kind is the init system a root boots with.
type Kind string

// The roots there are.
const (
	// Systemd: systemd as PID 1 (Debian's default).
	Systemd Kind = "systemd"
	// SysV: sysvinit with sysv-rc (update-rc.d, /etc/rc?.d links).
	SysV Kind = "sysv"
	// OpenRC: sysvinit with OpenRC as its rc (Debian's openrc package,
	// which replaces sysv-rc): rc-update, rc-service, supervise-daemon,
	// /etc/runlevels.
	OpenRC Kind = "openrc"
)

// packages are what debootstrap --variant=minbase adds for each kind.
var packages = map[Kind]string{
	Systemd: "systemd,systemd-sysv,dbus,curl,ca-certificates,procps",
	SysV:    "sysvinit-core,sysv-rc,initscripts,curl,ca-certificates,procps",
}

// Machine is one booted throwaway system.
type Machine struct {
	Kind Kind
	// Init is the machine's PID 1 as the host sees it.
	Init int

	t       testing.TB
	nspawn  *exec.Cmd
	console *lockedbuf.Buffer
	exited  chan struct{}
}

// cannot skips t because this machine cannot boot a container; under CI
// it says so loudly first.
func cannot(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Logf("BOOTED-SYSTEM TEST NOT RUN ON THIS CI MACHINE: %s", msg)
	}
	t.Skipf("booted-system test skipped: %s", msg)
}

// Boot boots a throwaway copy of the root of kind k and waits until its
// init has finished starting the system (systemd: is-system-running;
// SysV: runlevel 2 reached and its rc scripts done; OpenRC: runlevel 2,
// OpenRC's default runlevel started, openrc ended). It is powered off
// and thrown away when the test ends.
func Boot(t testing.TB, k Kind) *Machine {
	t.Helper()
	if os.Geteuid() != 0 {
		cannot(t, "booting a container needs root")
	}
	if _, err := exec.LookPath("systemd-nspawn"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-nspawn is not installed, and .ci/run installs it (Debian package systemd-container)")
		}
		cannot(t, "systemd-nspawn is not installed (apt-get install systemd-container)")
	}
	for _, tool := range []string{"debootstrap", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			cannot(t, "%s is not installed", tool)
		}
	}
	cached := cachedRoot(t, k)
	root := throwawayCopy(t, cached)

	console := &lockedbuf.Buffer{}
	cmd := exec.Command("systemd-nspawn", "--register=no", "--keep-unit", "--quiet", "--console=pipe",
		"-M", "patchd-test-"+strconv.Itoa(os.Getpid()), "-D", root, "-b")
	cmd.Stdout, cmd.Stderr = console, console
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		cannot(t, "systemd-nspawn does not start: %v", err)
	}
	m := &Machine{Kind: k, t: t, nspawn: cmd, console: console, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(m.exited) }()
	t.Cleanup(m.powerOff)

	deadline := time.Now().Add(2 * time.Minute)
	for m.Init == 0 {
		select {
		case <-m.exited:
			cannot(t, "systemd-nspawn could not boot the %s root: %s", k, lastLines(console.String(), 15))
		case <-time.After(50 * time.Millisecond):
		}
		m.Init = childOf(cmd.Process.Pid)
		if time.Now().After(deadline) {
			cannot(t, "systemd-nspawn started no init for the %s root: %s", k, lastLines(console.String(), 15))
		}
	}
	var last string
	for {
		ready, out := m.booted()
		if ready {
			break
		}
		last = out
		select {
		case <-m.exited:
			cannot(t, "the %s root stopped while booting: %s", k, lastLines(console.String(), 15))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s machine did not finish booting in 2 minutes (%s); console:\n%s", k, last, lastLines(console.String(), 30))
		}
	}
	return m
}

// booted tells whether init finished starting the system.
func (m *Machine) booted() (bool, string) {
	switch m.Kind {
	case Systemd:
		out, _ := m.Run("systemctl is-system-running")
		s := strings.TrimSpace(out)
		return s == "running" || s == "degraded", s
	case OpenRC:
		// inittab's rc for runlevel 2 is openrc default.
		out, _ := m.Run(`runlevel; cat /run/openrc/softlevel; if pgrep -x openrc >/dev/null; then echo rc-running; fi`)
		s := strings.TrimSpace(out)
		return strings.HasSuffix(s, " 2\ndefault"), s
	default:
		out, _ := m.Run(`runlevel; if pgrep -f "[/]etc/init.d/rc " >/dev/null; then echo rc-running; fi`)
		s := strings.TrimSpace(out)
		return strings.HasSuffix(s, " 2"), s
	}
}

// powerOff ends the machine: its PID 1 killed, the whole machine goes.
func (m *Machine) powerOff() {
	if m.Init != 0 {
		syscall.Kill(m.Init, syscall.SIGKILL)
	}
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		syscall.Kill(-m.nspawn.Process.Pid, syscall.SIGKILL)
		<-m.exited
	}
	if m.t.Failed() {
		m.t.Logf("console of the %s machine:\n%s", m.Kind, lastLines(m.console.String(), 40))
	}
}

// Run runs script with /bin/sh inside the machine, as root, in all its
// namespaces, with a clean environment plus env ("KEY=value"), and
// answers its output (stdout and stderr).
func (m *Machine) Run(script string, env ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{"-t", strconv.Itoa(m.Init), "-a", "/usr/bin/env", "-i",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C"}
	args = append(args, env...)
	args = append(args, "/bin/sh", "-c", script)
	out, err := exec.CommandContext(ctx, "nsenter", args...).CombinedOutput()
	return string(out), err
}

// Path is where the file p of the machine (as its processes see it, its
// tmpfs mounts included) is on the host.
func (m *Machine) Path(p string) string {
	return filepath.Join("/proc", strconv.Itoa(m.Init), "root", p)
}

// Exists tells whether p exists in the machine (a dangling link counts).
func (m *Machine) Exists(p string) bool {
	_, err := os.Lstat(m.Path(p))
	return err == nil
}

// Copy copies the host's file from to p in the machine, with mode.
func (m *Machine) Copy(from, p string, mode os.FileMode) {
	m.t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(m.Path(p), b, mode); err != nil {
		m.t.Fatal(err)
	}
}

// childOf is the child of pid in a PID namespace of its own: the
// machine's init (not nspawn's passing helper children).
func childOf(pid int) int {
	self, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return 0
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold blanks.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if ns, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns/pid")); err == nil && ns != self {
				return n
			}
		}
	}
	return 0
}

// cachedRoot is the root of kind k built today (debootstrap once a day
// into os.TempDir(), under a lock shared by test binaries).
func cachedRoot(t testing.TB, k Kind) string {
	t.Helper()
	cache := filepath.Join(os.TempDir(), "patchd-booted-"+string(k)+"-"+time.Now().UTC().Format("20060102"))
	root := filepath.Join(cache, "root")
	if _, err := os.Stat(filepath.Join(root, "usr/bin/curl")); err == nil {
		return root
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(cache, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
	if _, err := os.Stat(filepath.Join(root, "usr/bin/curl")); err == nil {
		return root
	}
	build := filepath.Join(cache, "build")
	os.RemoveAll(build)
	if k == OpenRC {
		derive(t, cachedRoot(t, SysV), build, "openrc")
		prepare(t, k, build)
		if err := os.Rename(build, root); err != nil {
			t.Fatal(err)
		}
		return root
	}
	t.Logf("debootstrap --variant=minbase --include=%s stable into %s (once a day; a few minutes)", packages[k], build)
	out, err := exec.Command("debootstrap", "--variant=minbase", "--include="+packages[k], "stable", build, "http://deb.debian.org/debian").CombinedOutput()
	if err != nil {
		cannot(t, "debootstrap cannot build the %s root here (%v): %s", k, err, lastLines(string(out), 5))
	}
	prepare(t, k, build)
	if err := os.Rename(build, root); err != nil {
		t.Fatal(err)
	}
	return root
}

// derive makes build a copy of the root from with the Debian packages
// pkgs installed (apt-get in a container on the copy, without booting
// it): a root of another kind without a debootstrap of its own.
func derive(t testing.TB, from, build string, pkgs ...string) {
	t.Helper()
	start := time.Now()
	if out, err := exec.Command("cp", "-a", "--reflink=auto", from, build).CombinedOutput(); err != nil {
		t.Fatalf("copy the root %s: %v %s", from, err, out)
	}
	args := append([]string{"--register=no", "--keep-unit", "--quiet", "-D", build,
		"/usr/bin/env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "--no-install-recommends"}, pkgs...)
	out, err := exec.Command("systemd-nspawn", args...).CombinedOutput()
	if err != nil {
		os.RemoveAll(build)
		cannot(t, "cannot install %s into a copy of %s (%v): %s", strings.Join(pkgs, " "), from, err, lastLines(string(out), 5))
	}
	os.RemoveAll(filepath.Join(build, "var/cache/apt/archives"))
	os.MkdirAll(filepath.Join(build, "var/cache/apt/archives/partial"), 0o755)
	t.Logf("%s installed into a copy of %s in %s (once a day)", strings.Join(pkgs, " "), from, time.Since(start).Round(time.Second))
}

// prepare makes a fresh root boot quietly in a container: no getty on a
// console nobody reads, no machine id (each boot makes its own).
func prepare(t testing.TB, k Kind, root string) {
	t.Helper()
	os.WriteFile(filepath.Join(root, "etc/hostname"), []byte("patchd-booted-"+string(k)+"\n"), 0o644)
	os.Remove(filepath.Join(root, "etc/machine-id"))
	os.Remove(filepath.Join(root, "var/lib/dbus/machine-id"))
	switch k {
	case Systemd:
		for _, u := range []string{"console-getty.service", "getty@.service", "systemd-networkd-wait-online.service"} {
			os.Symlink("/dev/null", filepath.Join(root, "etc/systemd/system", u))
		}
	case SysV, OpenRC:
		// Without gettys: init's console is the test's pipe.
		b, err := os.ReadFile(filepath.Join(root, "etc/inittab"))
		if err == nil {
			var keep []string
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.SplitN(l, ":", 4); len(f) == 4 && !strings.HasPrefix(l, "#") && strings.Contains(f[3], "getty") {
					l = "#" + l
				}
				keep = append(keep, l)
			}
			os.WriteFile(filepath.Join(root, "etc/inittab"), []byte(strings.Join(keep, "\n")), 0o644)
		}
	}
}

// throwawayCopy is a writable copy of root for one test: an overlay over
// it, or a full copy where an overlay cannot be mounted.
func throwawayCopy(t testing.TB, root string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "patchd-booted-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	merged := filepath.Join(dir, "root")
	for _, d := range []string{"upper", "work", "root"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
	}
	opts := "lowerdir=" + root + ",upperdir=" + filepath.Join(dir, "upper") + ",workdir=" + filepath.Join(dir, "work")
	if err := syscall.Mount("overlay", merged, "overlay", 0, opts); err == nil {
		t.Cleanup(func() { syscall.Unmount(merged, syscall.MNT_DETACH) })
		return merged
	}
	os.Remove(merged)
	if out, err := exec.Command("cp", "-a", root, merged).CombinedOutput(); err != nil {
		t.Fatalf("copy the root: %v %s", err, out)
	}
	return merged
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
