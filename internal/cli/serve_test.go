package cli

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/lockedbuf"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/store/storetest"
)

// serve runs patchd serve until the test ends; it answers the banner
// output once the listener answers.
func serve(t *testing.T, db, addr string, args ...string) *lockedbuf.Buffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &lockedbuf.Buffer{}, &lockedbuf.Buffer{}
	done := make(chan int, 1)
	full := append([]string{"serve", "--db", db, "--addr", addr, "--log-level", "warn"}, args...)
	go func() { done <- Main(ctx, full, IO{In: strings.NewReader(""), Out: out, Err: errOut}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("patchd serve did not stop within a minute")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return out
		}
		select {
		case code := <-done:
			t.Fatalf("patchd serve exited %d: %s", code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("patchd serve does not listen: %s", errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

var bannerToken = regexp.MustCompile(`Enrollment token:\s+(\S+)`)

// TestServeOwnCA: patchd serve with its own CA serves HTTPS; the first-start
// banner's token and enroll-token create carry the pin of
// /agent/v1/ca.pem, whose CA verifies the server's certificate.
func TestServeOwnCA(t *testing.T) {
	db := storetest.URL(t)
	addr := freeAddr(t)
	out := serve(t, db, addr, "--tls-self")
	base := "https://" + addr

	// ca.pem is public: read it without trusting anything yet.
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 30 * time.Second}
	resp, err := insecure.Get(base + agentproto.PathCA)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	blk, _ := pem.Decode(body)
	if resp.StatusCode != 200 || blk == nil {
		t.Fatalf("ca.pem: %d %q", resp.StatusCode, body)
	}
	sum := sha256.Sum256(blk.Bytes)
	pin := hex.EncodeToString(sum[:])

	m := bannerToken.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no token in the banner:\n%s", out.String())
	}
	if tok, p := agentproto.SplitEnrollToken(m[1]); p != pin || strings.Contains(tok, ".") {
		t.Fatalf("banner token %q, pin %s", m[1], pin)
	}
	if !strings.Contains(out.String(), "https://"+addr+"/api/v1") {
		t.Fatalf("banner base URL:\n%s", out.String())
	}

	// The CA verifies the server certificate for 127.0.0.1.
	ca, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	pinned := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 30 * time.Second}
	if resp, err := pinned.Get(base + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz over the pinned CA: %v", err)
	} else {
		resp.Body.Close()
	}
	// Plain HTTP is not spoken.
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP answered on an HTTPS listener")
	}

	code, stdout, errOut := patchd(t, db, "", "admin", "enroll-token", "create", "--org", "Default")
	if code != 0 {
		t.Fatalf("enroll-token create: %s", errOut)
	}
	tok := decode(t, stdout)
	if tok["caSha256"] != pin || !strings.HasSuffix(tok["token"].(string), "."+pin) {
		t.Fatalf("enroll-token create: %v", tok)
	}
	// The server takes the token with and without its pin.
	for _, token := range []string{tok["token"].(string), strings.TrimSuffix(tok["token"].(string), "."+pin)} {
		resp, err := pinned.Post(base+agentproto.PathEnroll, "application/json", strings.NewReader(
			`{"enrollToken":"`+token+`","machineUid":"m-`+token[len(token)-6:]+`","hostname":"h","platform":"linux"}`))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("enroll with %q: %v %v", token, resp, err)
		}
		resp.Body.Close()
	}
}

// TestServeLoopbackPlain: the default loopback listener speaks plain HTTP
// as before, ca.pem answers 404 and tokens carry no pin.
func TestServeLoopbackPlain(t *testing.T) {
	db := storetest.URL(t)
	addr := freeAddr(t)
	out := serve(t, db, addr)
	resp, err := http.Get("http://" + addr + agentproto.PathCA)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("ca.pem on plain HTTP: %d", resp.StatusCode)
	}
	if m := bannerToken.FindStringSubmatch(out.String()); m == nil || strings.Contains(m[1], ".") {
		t.Fatalf("banner: %s", out.String())
	}
	code, stdout, _ := patchd(t, db, "", "admin", "enroll-token", "create", "--org", "Default")
	if tok := decode(t, stdout); code != 0 || strings.Contains(tok["token"].(string), ".") || tok["caSha256"] != nil {
		t.Fatalf("enroll-token create: %v", tok)
	}
}

// TestServeRefusesHTTPSBaseOnPlain: patchd serve on a loopback address
// without TLS and with an https --base-url refuses to start, naming both
// flags and what to add, instead of serving plain HTTP under a banner and
// tokens that say https://; with --tls-self the same command serves HTTPS.
func TestServeRefusesHTTPSBaseOnPlain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	db := storetest.URL(t)
	base := "https://" + addr

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &lockedbuf.Buffer{}, &lockedbuf.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--db", db, "--addr", addr, "--base-url", base, "--log-level", "warn"},
			IO{In: strings.NewReader(""), Out: out, Err: errOut})
	}()
	deadline := time.After(30 * time.Second)
	for refused := false; !refused; {
		select {
		case code := <-done:
			if code == 0 {
				t.Fatalf("patchd serve exited 0: %s", errOut.String())
			}
			refused = true
		case <-deadline:
			t.Fatal("patchd serve neither refused nor listened within 30 s")
		case <-time.After(50 * time.Millisecond):
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				cancel()
				<-done
				t.Fatalf("patchd serve listens with plain HTTP under --base-url %s; banner:\n%s", base, out.String())
			}
		}
	}
	msg := errOut.String()
	for _, want := range []string{"--base-url " + base, "--addr " + addr, "plain HTTP", "--tls-self", "--tls-cert"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(out.String(), "Enrollment token") {
		t.Errorf("a refused start printed a banner:\n%s", out.String())
	}

	// What the refusal says to add makes the same command serve HTTPS.
	banner := serve(t, db, addr, "--base-url", base, "--tls-self")
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 30 * time.Second}
	resp, err := insecure.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("healthz over HTTPS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz over HTTPS: %d", resp.StatusCode)
	}
	// Answered: the banner was printed before the server served.
	if !strings.Contains(banner.String(), base+"/api/v1") {
		t.Fatalf("banner:\n%s", banner.String())
	}
}
