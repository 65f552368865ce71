package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agent"
	"github.com/patchd/patchd/agent/collect"
	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/sim"
)

// TestRealAgentPinnedCA: patchd-agent enrolls over HTTPS with the token's
// pin of the server's own CA, checks in and sends its inventory over it;
// the same token against a second server with another CA is refused with
// a clear error and nothing is enrolled there.
func TestRealAgentPinnedCA(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the real-machine check runs on Linux, where CI runs")
	}
	e := apitest.New(t, apitest.WithOwnCA())
	other := apitest.New(t, apitest.WithOwnCA()) // another database: another CA
	ctx := context.Background()

	// The token carries the pin, which is the SHA-256 of /agent/v1/ca.pem.
	token, pin := agentproto.SplitEnrollToken(e.EnrollToken)
	if pin == "" || pin != e.TLS.Pin || !strings.HasPrefix(token, "pde_") || strings.Contains(token, ".") {
		t.Fatalf("token %q, pin %q, server pin %q", e.EnrollToken, pin, e.TLS.Pin)
	}
	resp, err := e.HTTPClient.Get(e.URL + agentproto.PathCA)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	blk, _ := pem.Decode(body)
	if resp.StatusCode != 200 || blk == nil {
		t.Fatalf("ca.pem: %d %q", resp.StatusCode, body)
	}
	if sum := sha256.Sum256(blk.Bytes); hex.EncodeToString(sum[:]) != pin {
		t.Fatalf("ca.pem hashes to %x, the token pins %s", sum, pin)
	}
	if other.TLS.Pin == pin {
		t.Fatal("two databases made the same CA")
	}

	dir := t.TempDir()
	bin := build(t, dir, "cmd/patchd-agent")
	state := filepath.Join(dir, "state")

	// The second server presents another CA: refused before anything is sent.
	out, err := exec.Command(bin, "enroll", "--state", filepath.Join(dir, "other"), "--server", other.URL, "--token", e.EnrollToken).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "this is not the server the token was made for") || !strings.Contains(string(out), pin) {
		t.Fatalf("enrollment with another server's CA: %v\n%s", err, out)
	}
	if page, err := other.Admin.ListEndpoints(ctx, client.EndpointQuery{}); err != nil || page.Total != 0 {
		t.Fatalf("the other server got an endpoint: %+v %v", page, err)
	}

	enrollAgent(t, e, bin, state, nil)
	st, err := agent.LoadState(state)
	if err != nil || st.CASHA256 != pin || st.CAPEM == "" || st.InsecureHTTP {
		t.Fatalf("state: %+v %v", st, err)
	}

	// An installer server on another address, trusted through the
	// system store (SSL_CERT_FILE), for DEPLOY_SOFTWARE below.
	marker := filepath.Join(dir, "installer-ran")
	installer := []byte("#!/bin/sh\necho ran > " + marker + "\n")
	files := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(installer) }))
	defer files.Close()
	storeFile := filepath.Join(dir, "system-roots.pem")
	if err := os.WriteFile(storeFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: files.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	env, _ := fakeAptGet(t, dir) // this machine's package lists stay as they are
	runAgent(t, bin, state, append(env, "SSL_CERT_FILE="+storeFile))
	// The check-in and the inventory arrive over the pinned channel.
	deadline := time.Now().Add(90 * time.Second)
	for {
		d, err := e.Admin.GetEndpoint(ctx, st.EndpointID)
		if err == nil && len(d.Software) > 0 && d.LastSeenAt != nil {
			if d.InsecureChannel {
				t.Fatal("an HTTPS agent shown with an insecure channel")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no inventory over HTTPS within 90 s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// DEPLOY_SOFTWARE with a wrong sha256: the command fails, saying why,
	// and the installer does not run; with the right one it runs.
	deploy := func(sum string) apiv1.RunCommand {
		t.Helper()
		r, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "DEPLOY_SOFTWARE", EndpointIDs: []string{st.EndpointID},
			Payload: json.RawMessage(`{"url":"` + files.URL + `/setup.sh","sha256":"` + sum + `"}`)})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(150 * time.Second)
		for {
			cmds, err := e.Admin.RunCommands(ctx, r.RunID, client.RunQuery{})
			if err != nil {
				t.Fatal(err)
			}
			if c := cmds.Items[0]; c.Status == "SUCCESS" || c.Status == "FAILED" {
				return c
			}
			if time.Now().After(deadline) {
				t.Fatalf("DEPLOY_SOFTWARE not done within 150 s (a check-in long-polls up to 55 s): %+v", cmds.Items[0])
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	good := sha256.Sum256(installer)
	wrong := strings.Repeat("0", 64)
	if c := deploy(wrong); c.Status != "FAILED" || c.Result == nil || !strings.Contains(*c.Result, "SHA-256 mismatch: the file has "+hex.EncodeToString(good[:])+", the command expects "+wrong) {
		t.Fatalf("wrong sha256: %s %v", c.Status, deref(c.Result))
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the installer ran despite the wrong sha256")
	}
	if c := deploy(hex.EncodeToString(good[:])); c.Status != "SUCCESS" {
		t.Fatalf("right sha256: %s %v", c.Status, deref(c.Result))
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the installer did not run with the right sha256: %v", err)
	}

	// Every later call uses the pinned CA: the same state pointed at the
	// other server fails the TLS handshake.
	hc, err := st.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	c := &agent.Client{Base: other.URL, Secret: st.AgentSecret, HTTP: hc}
	if _, err := c.Checkin(ctx, agentproto.CheckinRequest{}, 0); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("check-in at a server with another CA: %v", err)
	}
	c.Base = e.URL
	if _, err := c.Checkin(ctx, agentproto.CheckinRequest{}, 0); err != nil {
		t.Fatalf("check-in at the pinned server: %v", err)
	}
}

// TestRealAgentRefusesPlainHTTP: the real agent refuses http:// to this
// machine's own non-loopback address (nothing is sent: the refusal comes
// first), and accepts it on loopback.
func TestRealAgentRefusesPlainHTTP(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("runs on Linux, where CI runs")
	}
	var own string
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				own = ipn.IP.String()
				break
			}
		}
	}
	e := apitest.New(t)
	dir := t.TempDir()
	bin := build(t, dir, "cmd/patchd-agent")
	if own != "" {
		_, port, _ := net.SplitHostPort(e.HTTP.Listener.Addr().String())
		out, err := exec.Command(bin, "enroll", "--state", filepath.Join(dir, "s1"), "--server", "http://"+net.JoinHostPort(own, port), "--token", e.EnrollToken).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "refusing plain http://") || !strings.Contains(string(out), "--insecure-http") {
			t.Fatalf("plain http to %s: %v\n%s", own, err, out)
		}
	} else {
		t.Log("this machine has no non-loopback IPv4 address: the refusal is proven by agent.TestCheckServerURL only")
	}
	out, err := exec.Command(bin, "enroll", "--state", filepath.Join(dir, "s2"), "--server", e.URL, "--token", e.EnrollToken).CombinedOutput()
	if err != nil {
		t.Fatalf("plain http on loopback: %v\n%s", err, out)
	}
	if page, err := e.Admin.ListEndpoints(context.Background(), client.EndpointQuery{}); err != nil || page.Total != 1 || page.Items[0].InsecureChannel {
		t.Fatalf("endpoints: %+v %v", page, err)
	}
}

// TestInsecureHTTPShownOnEndpoint: an agent enrolled with --insecure-http
// to a server that is not on loopback reports it, and the API shows
// insecureChannel on its endpoint. The "remote" server is the test's own,
// reached through a dialer that goes to loopback.
func TestInsecureHTTPShownOnEndpoint(t *testing.T) {
	e := apitest.New(t)
	addr := e.HTTP.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	remote := "http://patchd.invalid:" + port
	id := &collect.Identity{MachineUID: "m-insecure", Hostname: "plain-01", Platform: "linux", OS: "Debian GNU/Linux", OSVersion: "12", Arch: "amd64"}
	if _, err := agent.Enroll(context.Background(), agent.EnrollConfig{Server: remote, Token: e.EnrollToken, StateDir: t.TempDir(), Identity: id, HTTP: hc}); err == nil {
		t.Fatal("plain http to a remote name enrolled without --insecure-http")
	}
	st, err := agent.Enroll(context.Background(), agent.EnrollConfig{Server: remote, Token: e.EnrollToken, StateDir: t.TempDir(), Identity: id, HTTP: hc, InsecureHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Admin.GetEndpoint(context.Background(), st.EndpointID)
	if err != nil || !d.InsecureChannel {
		t.Fatalf("endpoint: %+v %v", d.Endpoint, err)
	}
	// The Agent Configuration report has a Plain HTTP column.
	r, err := e.Admin.Report(context.Background(), "agent-configuration")
	if err != nil || len(r.Rows) != 1 || r.Columns[len(r.Columns)-1] != "Plain HTTP" || r.Rows[0][len(r.Columns)-1] != true {
		t.Fatalf("agent-configuration report: %+v %v", r, err)
	}
}

// TestSimPinnedCA: patchd-sim takes the pinned token as agents do: it
// enrolls over HTTPS with the server's own CA, and refuses a server whose
// chain lacks the pinned CA.
func TestSimPinnedCA(t *testing.T) {
	e := apitest.New(t, apitest.WithOwnCA())
	other := apitest.New(t, apitest.WithOwnCA())
	ctx := context.Background()
	fleet, err := sim.New(sim.Config{Server: e.URL, EnrollToken: e.EnrollToken, Endpoints: 2, Seed: 3, Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := fleet.Enroll(ctx); err != nil {
		t.Fatalf("sim enroll over the pinned CA: %v", err)
	}
	if page, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{}); err != nil || page.Total != 2 {
		t.Fatalf("endpoints: %+v %v", page, err)
	}
	wrong, err := sim.New(sim.Config{Server: other.URL, EnrollToken: e.EnrollToken, Endpoints: 1, Seed: 4, Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	wrong.Enroll(ctx) // failures other than a refused token are counted, not answered
	if page, err := other.Admin.ListEndpoints(ctx, client.EndpointQuery{}); err != nil || page.Total != 0 {
		t.Fatalf("the sim enrolled at a server without the pinned CA: %+v %v", page, err)
	}
}
