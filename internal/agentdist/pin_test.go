package agentdist_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
)

// testCA makes a CA certificate named cn.
func testCA(t *testing.T, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, SubjectKeyId: []byte(cn),
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return ca, key
}

// testLeaf makes a server certificate for 127.0.0.1 naming parent as its
// issuer, signed by parentKey.
func testLeaf(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// attackerCA is a man in the middle's own CA and a certificate it issued
// for 127.0.0.1 (sent with the CA), as a proxy intercepting the installers
// would present.
func attackerCA(t *testing.T) (caDER []byte, leaf tls.Certificate, caKey *ecdsa.PrivateKey) {
	t.Helper()
	ca, key := testCA(t, "intercepting CA")
	leaf = testLeaf(t, ca, key)
	leaf.Certificate = append(leaf.Certificate, ca.Raw)
	return ca.Raw, leaf, key
}

// forgedCAFiles are the ca.pem answers the pinned installers must refuse
// although each holds the pinned certificate: realPEM is the server's
// /agent/v1/ca.pem, evil the attacker's CA (DER).
func forgedCAFiles(realPEM, evil []byte) map[string][]byte {
	blk, _ := pem.Decode(realPEM)
	evilPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: evil})
	return map[string][]byte{
		// The attack: GNU base64 stops at the junk line having written the
		// real DER, and curl also loads "X509 CERTIFICATE" blocks.
		"forged":       slices.Concat(realPEM, []byte("!junk!\n"), pem.EncodeToMemory(&pem.Block{Type: "X509 CERTIFICATE", Bytes: evil})),
		"crlf":         bytes.ReplaceAll(realPEM, []byte("\n"), []byte("\r\n")),
		"junk after":   slices.Concat(realPEM, []byte("junk\n")),
		"two certs":    slices.Concat(realPEM, evilPEM),
		"trusted":      pem.EncodeToMemory(&pem.Block{Type: "TRUSTED CERTIFICATE", Bytes: blk.Bytes}),
		"evil first":   slices.Concat(evilPEM, realPEM),
		"empty":        {},
		"no newline":   bytes.TrimSuffix(realPEM, []byte("\n")),
		"wide lines":   wideLines(blk.Bytes),
		"blank inside": bytes.Replace(realPEM, []byte("-----\n"), []byte("-----\n\n"), 1),
	}
}

// wideLines is the certificate's PEM with the base64 in one line: the
// same certificate, not as patchd writes it.
func wideLines(der []byte) []byte {
	var b bytes.Buffer
	b.WriteString("-----BEGIN CERTIFICATE-----\n")
	b.WriteString(base64.StdEncoding.EncodeToString(der))
	b.WriteString("\n-----END CERTIFICATE-----\n")
	return b.Bytes()
}

// rootTmp lists what the root's /tmp holds.
func rootTmp(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(root, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestPinnedInstallersRefuseForgedCA runs the real install.sh (dash) and
// the printed pinned Linux line (sh -c) as root in a Debian root against a
// man in the middle on loopback: it answers ca.pem with the server's real
// CA followed by a junk line and its own CA in an "X509 CERTIFICATE"
// block, and serves a script and an "agent" that would leave a marker.
// Both stop with one line saying why; nothing is run, installed, or left
// in /tmp, and nothing but ca.pem is asked for. The other malformed
// answers (CRLF, junk after, two certificates, a TRUSTED CERTIFICATE
// block…) are refused the same way; the real ca.pem relayed by the man in
// the middle passes the pin, and then curl, given that certificate alone,
// refuses his. Against the real server the printed line installs and
// enrolls (as root without sudo; not root, through sudo).
func TestPinnedInstallersRefuseForgedCA(t *testing.T) {
	root := debianRoot(t)
	if err := syscall.Mount("proc", filepath.Join(root, "proc"), "proc", 0, ""); err != nil {
		t.Skipf("cannot mount /proc in the Debian root: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(filepath.Join(root, "proc"), syscall.MNT_DETACH) })
	os.WriteFile(filepath.Join(root, "etc/machine-id"), []byte("2f1e2d3c4b5a69788796a5b4c3d2e1f0\n"), 0o444)
	// A sudo that says it was used and runs the command as is.
	os.WriteFile(filepath.Join(root, "usr/local/bin/sudo"), []byte("#!/bin/sh\necho \"$*\" >>/var/tmp/sudo-used\nexec \"$@\"\n"), 0o755)

	dir := t.TempDir()
	e := apitest.New(t, apitest.WithOwnCA(), func(c *config.Config) { c.AgentDir = dir })
	h := e.Server.AgentDist()
	token, pin := agentproto.SplitEnrollToken(e.EnrollToken)
	realPEM := e.TLS.CAPEM()
	if blk, _ := pem.Decode(realPEM); blk == nil || hex.EncodeToString(sha256Of(blk.Bytes)) != pin {
		t.Fatalf("the server's ca.pem does not hash to the token's pin %s", pin)
	}

	// The man in the middle: his CA's certificate for 127.0.0.1, a hostile
	// install.sh and agent (with its right SHA-256), and whatever ca.pem
	// the case gives.
	evil, leaf, _ := attackerCA(t)
	hostile := []byte("#!/bin/sh\ntouch /pwned\necho pwned\n")
	var mu sync.Mutex
	var caBody []byte
	var asked []string
	mitm := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		body := caBody
		mu.Unlock()
		switch {
		case r.URL.Path == agentproto.PathCA:
			w.Write(body)
		case strings.HasSuffix(r.URL.Path, ".sha256"):
			fmt.Fprintf(w, "%x  patchd-agent\n", sha256Of(hostile))
		default:
			w.Write(hostile)
		}
	}))
	mitm.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	mitm.StartTLS()
	defer mitm.Close()

	script := agentdist.InstallScript(mitm.URL)
	os.WriteFile(filepath.Join(root, "tmp/install.sh"), []byte(script), 0o755)
	line := agentdist.InstallersFor(mitm.URL, token, pin).Linux
	runners := map[string]string{
		"install.sh": "sh /tmp/install.sh --token " + e.EnrollToken,
		"line":       line,
	}
	installed := []string{"pwned", "usr/local/bin/patchd-agent", "usr/local/bin/patchd-agent.new", "var/lib/patchd-agent", "etc/init.d/patchd-agent", "var/tmp/sudo-used"}
	try := func(name string, body []byte, runner string) (string, []string) {
		t.Helper()
		mu.Lock()
		caBody, asked = body, nil
		mu.Unlock()
		before := rootTmp(t, root)
		out, err := chroot(t, root, nil, runners[runner])
		if err == nil {
			t.Errorf("%s, %s: exit status 0\n%s", name, runner, out)
		}
		for _, p := range installed {
			if exists(root, p) {
				t.Errorf("%s, %s: /%s exists: the man in the middle's code ran or something was installed\n%s", name, runner, p, out)
				os.RemoveAll(filepath.Join(root, p))
			}
		}
		if after := rootTmp(t, root); !slices.Equal(before, after) {
			t.Errorf("%s, %s: /tmp held %v, now %v", name, runner, before, after)
		}
		mu.Lock()
		defer mu.Unlock()
		return out, asked
	}
	for name, body := range forgedCAFiles(realPEM, evil) {
		for _, runner := range []string{"install.sh", "line"} {
			out, asked := try(name, body, runner)
			if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 1 ||
				lines[0] != "patchd install: the ca.pem the server sent is not exactly one certificate: someone may be intercepting; nothing was run or installed" {
				t.Errorf("%s, %s: not the one line saying why:\n%s", name, runner, out)
			}
			if !slices.Equal(asked, []string{agentproto.PathCA}) {
				t.Errorf("%s, %s: asked the man in the middle for %v", name, runner, asked)
			}
		}
	}
	// The real ca.pem relayed: it passes the pin, and the connection that
	// follows, verified with that certificate alone, refuses his.
	out, asked := try("relayed", realPEM, "install.sh")
	if !strings.Contains(out, "the server's CA matches the token's pin") || !strings.HasSuffix(out, "patchd install: cannot download "+mitm.URL+"/agent/v1/download/linux/amd64.sha256 (curl or wget exit status 60)\n") || len(asked) != 1 {
		t.Errorf("relayed, install.sh: %v\n%s", asked, out)
	}
	out, asked = try("relayed", realPEM, "line")
	if out != "patchd install: cannot fetch "+mitm.URL+"/install.sh over the pinned connection (curl or wget exit status 60)\n" || len(asked) != 1 {
		t.Errorf("relayed, line: %v\n%s", asked, out)
	}
	// Another pin: one line, nothing run.
	runners["wrong pin"] = agentdist.InstallersFor(mitm.URL, token, strings.Repeat("0", 64)).Linux
	out, _ = try("wrong pin", realPEM, "wrong pin")
	if !strings.HasPrefix(out, "patchd install: the CA the server sent does not match the pin in the token (its SHA-256 is "+pin+")") || strings.Count(out, "\n") != 1 {
		t.Errorf("wrong pin: %s", out)
	}

	// The real server: the printed line installs and enrolls.
	if _, err := h.Store.BuildFromSource(context.Background(), agentdist.ModuleRoot("."), agentdist.Platform{OS: "linux", Arch: "amd64"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the agent must not outlive the test
		if b, err := os.ReadFile(filepath.Join(root, "run/patchd-agent.pid")); err == nil {
			var pid int
			fmt.Sscan(string(b), &pid)
			if pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	printed, err := h.Installers(context.Background(), e.URL, token)
	if err != nil || !printed.Pinned || printed.Token != e.EnrollToken {
		t.Fatalf("installers: %+v %v", printed, err)
	}
	// Not root: install.sh runs through sudo (which here keeps the user,
	// so install.sh asks for root), and the temporary folder goes.
	before := rootTmp(t, root)
	nobody := exec.Command("chroot", "--userspec=65534:65534", root, "/bin/sh", "-c", printed.Linux)
	nobody.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/", "LANG=C"}
	outb, err := nobody.CombinedOutput()
	if err == nil || !strings.Contains(string(outb), "run as root") {
		t.Errorf("the line as nobody: %v\n%s", err, outb)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "var/tmp/sudo-used")); !strings.HasPrefix(string(b), "sh /tmp/") || !strings.HasSuffix(string(b), "/install.sh --token "+e.EnrollToken+"\n") {
		t.Errorf("sudo was given %q", b)
	}
	os.Remove(filepath.Join(root, "var/tmp/sudo-used"))
	if after := rootTmp(t, root); !slices.Equal(before, after) {
		t.Errorf("the line as nobody left /tmp holding %v (was %v)", after, before)
	}
	out, err = chroot(t, root, nil, printed.Linux)
	if err != nil || !strings.Contains(out, "the server's CA matches the token's pin") || !strings.Contains(out, "done: the agent runs as a service") {
		t.Fatalf("the printed line against the real server: %v\n%s", err, out)
	}
	if exists(root, "var/tmp/sudo-used") {
		t.Error("the line used sudo as root")
	}
	for _, p := range []string{"usr/local/bin/patchd-agent", "var/lib/patchd-agent/state.json", "etc/init.d/patchd-agent"} {
		if !exists(root, p) {
			t.Errorf("/%s missing after the printed line:\n%s", p, out)
		}
	}
	if after := rootTmp(t, root); !slices.Equal(before, after) {
		t.Errorf("the line left /tmp holding %v (was %v)", after, before)
	}
	if page, err := e.Admin.ListEndpoints(context.Background(), client.EndpointQuery{}); err != nil || page.Total != 1 {
		t.Errorf("endpoints after the printed line: %+v %v", page, err)
	}
}

func sha256Of(b []byte) []byte { s := sha256.Sum256(b); return s[:] }
