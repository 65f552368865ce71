package ctl_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

// TestCAFileReachesOwnCA: patchctl reaches a server with its own CA when
// given that CA (--ca-file, PATCHCTL_CA_FILE, or the profile login saved),
// and refuses it otherwise, as the system's store does not hold it.
func TestCAFileReachesOwnCA(t *testing.T) {
	e := apitest.New(t, apitest.WithOwnCA())
	resp, err := e.HTTPClient.Get(e.URL + agentproto.PathCA)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.pem")
	os.WriteFile(junk, []byte("not a certificate\n"), 0o644)

	h := newHarness(t, e, e.URL)
	h.http = nil // the real transport: the server's certificate is checked
	cred := e.Credential(e.Org, perm.Set(perm.APIAccess|perm.EndpointsView))
	h.vars["PATCHCTL_SERVER"], h.vars["PATCHCTL_CLIENT_ID"], h.vars["PATCHCTL_CLIENT_SECRET"] = e.URL, cred.ClientID, cred.ClientSecret

	r := h.run("", "endpoints", "list")
	if r.code != 4 || !strings.Contains(r.stderr, "certificate") {
		t.Fatalf("without the CA: exit %d, want 4 (network) naming the certificate\n%s", r.code, r.stderr)
	}
	h.fail(2, "holds no PEM certificate", "endpoints", "list", "--ca-file", junk)
	h.ok("endpoints", "list", "--ca-file", caFile)
	h.vars["PATCHCTL_CA_FILE"] = caFile
	h.ok("endpoints", "list")
	delete(h.vars, "PATCHCTL_CA_FILE")

	// login --ca-file keeps the file (as an absolute path) in the profile.
	delete(h.vars, "PATCHCTL_SERVER")
	delete(h.vars, "PATCHCTL_CLIENT_ID")
	delete(h.vars, "PATCHCTL_CLIENT_SECRET")
	r = h.run(cred.ClientSecret+"\n", "login", "--server", e.URL, "--client-id", cred.ClientID, "--client-secret-stdin", "--ca-file", caFile)
	if r.code != 0 {
		t.Fatalf("login --ca-file: exit %d: %s", r.code, r.stderr)
	}
	cfg, _ := os.ReadFile(filepath.Join(h.dir, "config.json"))
	if !strings.Contains(string(cfg), `"caFile": "`+caFile+`"`) && !strings.Contains(string(cfg), `"caFile":"`+caFile+`"`) {
		t.Fatalf("config.json does not keep the CA file:\n%s", cfg)
	}
	h.ok("endpoints", "list")
}
