package agent

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/patchd/patchd/agent/collect"
)

// TestEnrollThroughHTTPSProxy: the agent honours HTTPS_PROXY. A server
// at https://example.com is reachable here only through a CONNECT proxy;
// the agent (in a child process, since Go reads the proxy environment
// once per process) enrolls through it.
func TestEnrollThroughHTTPSProxy(t *testing.T) {
	if os.Getenv("PATCHD_TEST_PROXY_CHILD") == "1" {
		dir := os.Getenv("PATCHD_TEST_STATE")
		_, err := Enroll(context.Background(), EnrollConfig{Server: "https://example.com", Token: "pde_x", StateDir: dir,
			Identity: &collect.Identity{MachineUID: "m1", Hostname: "h", Platform: "linux", OS: "Debian", OSVersion: "13", Arch: "x86_64"}})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"endpointId":"ep1","agentSecret":"pda_s","checkinSeconds":60}`)
	}))
	defer srv.Close()
	var tunnels atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect || r.Host != "example.com:443" {
			http.Error(w, "CONNECT to example.com:443 only", http.StatusForbidden)
			return
		}
		up, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		tunnels.Add(1)
		w.WriteHeader(http.StatusOK)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		go func() { io.Copy(up, buf); up.Close() }()
		io.Copy(conn, up)
		conn.Close()
	}))
	defer proxy.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestEnrollThroughHTTPSProxy$")
	cmd.Env = append(os.Environ(), "PATCHD_TEST_PROXY_CHILD=1", "PATCHD_TEST_STATE="+filepath.Join(dir, "state"),
		"HTTPS_PROXY="+proxy.URL, "NO_PROXY=", "SSL_CERT_FILE="+ca)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("enroll through the proxy: %v\n%s", err, out)
	}
	st, err := LoadState(filepath.Join(dir, "state"))
	if err != nil || st.EndpointID != "ep1" || tunnels.Load() != 1 {
		t.Errorf("state %+v %v, tunnels %d", st, err, tunnels.Load())
	}
	if !strings.Contains(string(out), "PASS") {
		t.Errorf("child: %s", out)
	}
}
