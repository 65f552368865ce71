package agent

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
)

func TestCheckServerURL(t *testing.T) {
	for _, tc := range []struct {
		url      string
		insecure bool
		ok       bool
	}{
		{"https://patchd.example.com", false, true},
		{"https://10.1.2.3:8443", false, true},
		{"http://127.0.0.1:8080", false, true},
		{"http://127.9.9.9:8080", false, true},
		{"http://localhost:8080", false, true},
		{"http://[::1]:8080", false, true},
		{"http://patchd.example.com", false, false},
		{"http://10.1.2.3:8080", false, false},
		{"http://[fe80::1]:8080", false, false},
		{"http://10.1.2.3:8080", true, true},
		{"ftp://patchd.example.com", true, false},
		{"patchd.example.com", false, false},
	} {
		_, err := CheckServerURL(tc.url, tc.insecure)
		if (err == nil) != tc.ok {
			t.Errorf("%s insecure=%v: %v", tc.url, tc.insecure, err)
		}
		if err != nil && strings.HasPrefix(tc.url, "http://") && !strings.Contains(err.Error(), "--insecure-http") {
			t.Errorf("%s: the refusal does not say how to override it: %v", tc.url, err)
		}
	}
}

// TestEnrollRefusesPlainHTTPRemote: nothing is sent to a plain-HTTP server
// that is not on loopback; with --insecure-http the choice is recorded in
// the state and reported to the server.
func TestEnrollRefusesPlainHTTPRemote(t *testing.T) {
	_, err := Enroll(context.Background(), EnrollConfig{Server: "http://patchd.invalid:8080", Token: "t", StateDir: t.TempDir(), Identity: testIdentity})
	if err == nil || !strings.Contains(err.Error(), "refusing plain http://") {
		t.Fatalf("plain http to a remote host: %v", err)
	}
	// --insecure-http: the request goes out (to a loopback server standing
	// in for the remote one) and carries insecureChannel.
	f, srv := newFakeServer(t)
	remote := strings.Replace(srv.URL, "127.0.0.1", "patchd.invalid", 1)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}}}
	dir := t.TempDir()
	st, err := Enroll(context.Background(), EnrollConfig{Server: remote, Token: "enroll-token", StateDir: dir, Identity: testIdentity, InsecureHTTP: true, HTTP: hc})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.lastEnroll; !st.InsecureHTTP || !got.InsecureChannel {
		t.Fatalf("state %+v, request %+v", st, got)
	}
	loaded, err := LoadState(dir)
	if err != nil || !loaded.InsecureHTTP {
		t.Fatalf("state on disk: %+v %v", loaded, err)
	}
	// Loopback plain HTTP is no insecure channel.
	if _, err := Enroll(context.Background(), EnrollConfig{Server: srv.URL, Token: "enroll-token", StateDir: t.TempDir(), Identity: testIdentity}); err != nil {
		t.Fatal(err)
	}
	if f.lastEnroll.InsecureChannel {
		t.Error("loopback reported as an insecure channel")
	}
}

// TestEnrollCAFile: without a pin, --ca-file makes a private CA trusted
// (kept in the state for every later call); with a pin, it must be the
// pinned certificate.
func TestEnrollCAFile(t *testing.T) {
	_, srv := newFakeServerTLS(t, true)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	der := srv.Certificate().Raw
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	// Without the file the system store does not know the test CA.
	if _, err := Enroll(context.Background(), EnrollConfig{Server: srv.URL, Token: "enroll-token", StateDir: t.TempDir(), Identity: testIdentity}); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted server accepted: %v", err)
	}
	dir := t.TempDir()
	st, err := Enroll(context.Background(), EnrollConfig{Server: srv.URL, Token: "enroll-token", StateDir: dir, Identity: testIdentity, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	if st.CAPEM == "" || st.CASHA256 != "" {
		t.Fatalf("state %+v", st)
	}
	hc, err := st.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Client{Base: st.Server, Secret: st.AgentSecret, HTTP: hc}).Checkin(context.Background(), agentproto.CheckinRequest{}, 0); err != nil {
		t.Fatalf("check-in with the stored CA: %v", err)
	}
	// A pinned token whose pin is not the file's certificate.
	_, err = Enroll(context.Background(), EnrollConfig{Server: srv.URL, Token: "enroll-token." + strings.Repeat("ab", 32), StateDir: t.TempDir(),
		Identity: testIdentity, CAFile: caFile})
	if err == nil || !strings.Contains(err.Error(), "but the token pins") {
		t.Fatalf("mismatched --ca-file: %v", err)
	}
	// The right pin with the file: enrolls, pinned.
	st, err = Enroll(context.Background(), EnrollConfig{Server: srv.URL, Token: "enroll-token." + certSHA256(der), StateDir: t.TempDir(),
		Identity: testIdentity, CAFile: caFile})
	if err != nil || st.CASHA256 != certSHA256(der) {
		t.Fatalf("pinned with --ca-file: %+v %v", st, err)
	}
}

// TestRunRefusesPlainHTTPState: a state that names a plain-HTTP server off
// loopback without the recorded --insecure-http (an older agent's, or an
// edited one) is refused before anything is sent.
func TestRunRefusesPlainHTTPState(t *testing.T) {
	dir := t.TempDir()
	st := &State{Server: "http://patchd.invalid:8080", EndpointID: "ep-1", AgentSecret: "s"}
	if err := st.Save(dir); err != nil {
		t.Fatal(err)
	}
	err := Run(context.Background(), Config{StateDir: dir})
	if err == nil || !strings.Contains(err.Error(), "refusing plain http://") || !strings.Contains(err.Error(), "enroll again") {
		t.Fatalf("run: %v", err)
	}
}
