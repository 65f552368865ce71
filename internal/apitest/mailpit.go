package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/lockedbuf"
)

// MailpitVersion is the Mailpit (github.com/axllent/mailpit, an SMTP server
// that keeps what it receives and shows it through an HTTP API) the tests
// run. .ci/run builds it with go install into MailpitPath's folder, out of
// go.mod.
const MailpitVersion = "v1.33.1"

// MailpitPath is where the tests look for the mailpit binary: the
// PATCHD_MAILPIT environment variable, else
// <user cache dir>/patchd-tools/mailpit-<MailpitVersion>/mailpit.
func MailpitPath() string {
	if p := os.Getenv("PATCHD_MAILPIT"); p != "" {
		return p
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "patchd-tools", "mailpit-"+MailpitVersion, "mailpit")
}

// Mailpit is a Mailpit server the test started: SMTP on SMTP, its HTTP API
// on API (both host:port on 127.0.0.1).
type Mailpit struct {
	SMTP, API string
	t         testing.TB
}

// MailpitAddress is a mailbox of Mailpit's API.
type MailpitAddress struct{ Name, Address string }

// MailpitMessage is a message Mailpit received: ReturnPath is the
// envelope's sender (MAIL FROM), From the header's.
type MailpitMessage struct {
	ID         string
	From       MailpitAddress
	To         []MailpitAddress
	ReturnPath string
	Subject    string
	Text       string
}

// StartMailpit runs Mailpit for the test, its database a temporary file in
// the test's own folder (HOME and TMPDIR point there: nothing is written
// elsewhere), with its chaos triggers available (Chaos). Without the binary
// the test skips, unless CI is set (.ci/run builds it), where it fails.
func StartMailpit(t testing.TB) *Mailpit {
	t.Helper()
	bin := MailpitPath()
	if _, err := os.Stat(bin); bin == "" || err != nil {
		install := "GOBIN=" + filepath.Dir(bin) + " go install github.com/axllent/mailpit@" + MailpitVersion
		if os.Getenv("CI") != "" {
			t.Fatalf("no mailpit at %s, and CI is set: .ci/run builds it (%s)", bin, install)
		}
		t.Skipf("SKIPPED: the e-mail tests need Mailpit %s at %s (or PATCHD_MAILPIT): %s; under CI they run", MailpitVersion, bin, install)
	}
	var last string
	for range 3 { // a free port may be taken between the look and mailpit's listen
		m, out, err := startMailpit(t, bin)
		if err == nil {
			return m
		}
		last = fmt.Sprintf("%v\n%s", err, out)
	}
	t.Fatalf("mailpit did not start: %s", last)
	return nil
}

func startMailpit(t testing.TB, bin string) (*Mailpit, string, error) {
	smtpAddr, apiAddr := freePort(t), freePort(t)
	home := t.TempDir()
	cmd := exec.Command(bin, "--smtp", smtpAddr, "--listen", apiAddr, "--disable-version-check", "--smtp-disable-rdns",
		"--enable-chaos", "--smtp-auth-accept-any", "--smtp-auth-allow-insecure")
	cmd.Env = append(os.Environ(), "HOME="+home, "TMPDIR="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home)
	out := &lockedbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM) // mailpit removes its temporary database
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-exited:
			return nil, out.String(), fmt.Errorf("mailpit exited")
		default:
		}
		if resp, err := http.Get("http://" + apiAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if c, err := net.DialTimeout("tcp", smtpAddr, time.Second); err == nil && resp.StatusCode == http.StatusOK {
				c.Close()
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, out.String(), fmt.Errorf("mailpit not ready within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("mailpit's log:\n%s", out.String())
		}
	})
	return &Mailpit{SMTP: smtpAddr, API: apiAddr, t: t}, "", nil
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Messages answers what Mailpit received, newest first, with each one's
// envelope sender and text.
func (m *Mailpit) Messages() []MailpitMessage {
	m.t.Helper()
	var list struct{ Messages []struct{ ID string } }
	m.call(http.MethodGet, "/api/v1/messages", nil, &list)
	out := make([]MailpitMessage, 0, len(list.Messages))
	for _, s := range list.Messages {
		var msg MailpitMessage
		m.call(http.MethodGet, "/api/v1/message/"+s.ID, nil, &msg)
		out = append(out, msg)
	}
	return out
}

// Headers answers a message's headers as Mailpit read them.
func (m *Mailpit) Headers(id string) map[string][]string {
	m.t.Helper()
	var h map[string][]string
	m.call(http.MethodGet, "/api/v1/message/"+id+"/headers", nil, &h)
	return h
}

// MailpitTrigger makes Mailpit answer a step of the SMTP conversation with
// ErrorCode, with Probability percent chance (100: always, 0: never).
type MailpitTrigger struct{ ErrorCode, Probability int }

// Chaos sets Mailpit's failures: at MAIL FROM (sender) and at RCPT TO
// (recipient).
func (m *Mailpit) Chaos(sender, recipient MailpitTrigger) {
	m.t.Helper()
	body := map[string]MailpitTrigger{"Sender": sender, "Recipient": recipient}
	m.call(http.MethodPut, "/api/v1/chaos", body, nil)
}

func (m *Mailpit) call(method, path string, body, out any) {
	m.t.Helper()
	var rd bytes.Buffer
	if body != nil {
		json.NewEncoder(&rd).Encode(body)
	}
	req, err := http.NewRequest(method, "http://"+m.API+path, &rd)
	if err != nil {
		m.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatalf("mailpit %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		m.t.Fatalf("mailpit %s %s: %d %s", method, path, resp.StatusCode, b.String())
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			m.t.Fatalf("mailpit %s %s: %v", method, path, err)
		}
	}
}
