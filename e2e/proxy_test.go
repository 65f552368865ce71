package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agent"
	"github.com/patchd/patchd/agent/collect"
	"github.com/patchd/patchd/agent/execute"
	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/lockedbuf"
)

// startSquid runs Squid (squid -N) on a free loopback port with
// read_timeout seconds, the names of hosts (name: address) in its
// hosts_file, and its files in a folder of its own; it answers the
// proxy's URL. Squid ends with the test.
func startSquid(t *testing.T, readTimeout int, hosts map[string]string) *url.URL {
	t.Helper()
	bin, err := exec.LookPath("squid")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/squid"); err != nil {
			t.Skip("squid is not installed (Debian package squid): the test through a real proxy cannot run here")
		}
	}
	// Squid run as root switches to its user (proxy on Debian): its
	// folder must be that user's, and reachable (t.TempDir's are not).
	dir, err := os.MkdirTemp("", "patchd-squid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	effective := ""
	if os.Geteuid() == 0 {
		u, err := user.Lookup("proxy")
		if err != nil {
			t.Skip("squid runs as root here but there is no user proxy to run it as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		effective = "cache_effective_user proxy\n"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var hostsFile strings.Builder
	for name, ip := range hosts {
		fmt.Fprintf(&hostsFile, "%s %s\n", ip, name)
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(hostsFile.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "squid.conf")
	if err := os.WriteFile(conf, []byte(`http_port `+addr+`
http_access allow localhost
http_access deny all
hosts_file `+filepath.Join(dir, "hosts")+`
read_timeout `+strconv.Itoa(readTimeout)+` seconds
pid_filename `+filepath.Join(dir, "squid.pid")+`
access_log stdio:`+filepath.Join(dir, "access.log")+`
cache_log `+filepath.Join(dir, "cache.log")+`
cache_store_log none
coredump_dir `+dir+`
cache deny all
pinger_enable off
shutdown_lifetime 0 seconds
`+effective), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-N", "-f", conf)
	exited, out := startLogged(t, cmd, func(output string) {
		b, _ := os.ReadFile(filepath.Join(dir, "cache.log"))
		a, _ := os.ReadFile(filepath.Join(dir, "access.log"))
		t.Logf("squid output:\n%s\ncache.log:\n%s\naccess.log:\n%s", output, b, a)
	})
	for {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(filepath.Join(dir, "cache.log"))
			t.Fatalf("squid ended: %v\n%s\n%s", err, out.String(), b)
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &url.URL{Scheme: "http", Host: addr}
}

// TestLongPollThroughSquid: the agent reaches an HTTPS server through a
// real Squid (CONNECT) whose read_timeout (8 s here, 30 s in the field)
// is shorter than the long poll (20 s here, 55 s). The margins leave a
// busy machine seconds to spare: a poll shortened to two thirds of an 8 s
// cut ends 2–3 s before Squid would cut it. Squid cuts each long
// poll; the agent does not count a cut as a failure of the server (no
// backoff, no "server unreachable"), notices that the cuts come after the
// same time, shortens its wait below it, and its long polls then end as
// the server ends them: check-ins go on uncut.
func TestLongPollThroughSquid(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Squid")
	}
	const name = "patchd.test"
	e := apitest.New(t, apitest.WithOwnCA(), func(c *config.Config) { c.BaseURL = "https://" + name })
	ctx := context.Background()
	_, port, _ := net.SplitHostPort(e.HTTP.Listener.Addr().String())
	proxy := startSquid(t, 8, map[string]string{name: "127.0.0.1"})
	server := "https://" + name + ":" + port

	// Enrollment through a proxy is tested elsewhere: here the agent
	// enrolls directly, then reaches the server by its name, which only
	// Squid resolves (Go never proxies a loopback address).
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	st, err := agent.Enroll(ctx, agent.EnrollConfig{Server: e.URL, Token: e.EnrollToken, StateDir: state,
		Identity: &collect.Identity{MachineUID: "squid-1", Hostname: "behind-squid", Platform: "linux", OS: "Debian", OSVersion: "12", Arch: "x86_64"}})
	if err != nil {
		t.Fatalf("enroll: %v", err)
	}
	st.Server = server
	if err := st.Save(state); err != nil {
		t.Fatal(err)
	}
	hc, err := st.HTTPClient() // the pinned CA, as the agent runs
	if err != nil {
		t.Fatal(err)
	}
	hc.Transport.(*http.Transport).Proxy = http.ProxyURL(proxy)

	logs := &lockedbuf.Buffer{}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- agent.Run(runCtx, agent.Config{StateDir: state, HTTP: hc, Wait: 20, MinWait: 1,
			Logger: slog.New(slog.NewTextHandler(logs, nil)),
			Collect: func(ctx context.Context) *agentproto.Inventory {
				return &agentproto.Inventory{CollectedAt: time.Now().UTC(), System: agentproto.System{Hostname: "behind-squid", Arch: "amd64", Type: "server"},
					Disks: []agentproto.Disk{}, Software: []agentproto.Software{{Name: "bash"}}, Updates: []agentproto.Update{}, Datasets: map[string][]map[string]any{}}
			},
			Facts:       func(ctx context.Context) collect.Facts { return collect.Facts{IPAddresses: []string{"192.0.2.7"}} },
			Executor:    &execute.Executor{Runner: execute.ExecRunner{}, TempDir: t.TempDir()},
			Uninstall:   func(ctx context.Context) error { return errors.New("no uninstall in this test") },
			Refresh:     func(context.Context) (string, error) { return "", nil },
			ServiceRoot: t.TempDir()})
	}()
	defer func() {
		stop()
		<-done
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Minute); !cond(); time.Sleep(100 * time.Millisecond) {
			select {
			case err := <-done:
				t.Fatalf("%s: the agent ended: %v", what, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 3 minutes", what)
			}
		}
	}
	const shortened = "long polls are cut by the network path"
	waitFor("the long polls shortened", func() bool { return strings.Contains(logs.String(), shortened) })
	if l := logs.String(); strings.Contains(l, "server unreachable") {
		t.Fatalf("a cut long poll counted as a failure of the server:\n%s", l)
	}
	line := logs.String()[strings.Index(logs.String(), shortened):]
	line = line[:strings.IndexByte(line, '\n')]
	_, after, _ := strings.Cut(line, `"wait now"=`)
	if wait, err := time.ParseDuration(strings.Fields(after + " ")[0]); err != nil || wait >= 8*time.Second || wait < time.Second {
		t.Fatalf("the wait after cuts at Squid's read_timeout of 8 s is not below it: %s", line)
	}
	// From now on the long polls end as the server ends them: the server
	// sees the agent at each one's start and end, and no poll is cut.
	cuts := strings.Count(logs.String(), "cut by the network path")
	accepted, _ := e.Server.Presence().Counts()
	waitFor("ten check-ins seen", func() bool { n, _ := e.Server.Presence().Counts(); return n >= accepted+10 })
	if l := logs.String(); strings.Count(l, "cut by the network path") != cuts || strings.Contains(l, "server unreachable") {
		t.Fatalf("long polls still cut or failing after the wait was shortened:\n%s", l)
	}
}
