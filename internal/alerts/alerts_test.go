package alerts

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestParseRecipients(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"ops@example.com", []string{"ops@example.com"}, true},
		{" a@example.com , b@sub.example.org", []string{"a@example.com", "b@sub.example.org"}, true},
		{"", nil, false},
		{"a@example.com,", nil, false},
		{"not-an-address", nil, false},
		{"Ops <ops@example.com>", nil, false},
		{"ops@localhost", nil, false},
		{"a@example.com\r\nBcc: x@example.com", nil, false},
	} {
		got, err := ParseRecipients(tc.in)
		if (err == nil) != tc.ok || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("ParseRecipients(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestCheckWebhookURL(t *testing.T) {
	for in, ok := range map[string]bool{
		"https://hooks.example.com/x?y=1": true,
		"http://hooks.example.com/x":      false,
		"https://":                        false,
		"https://u:p@hooks.example.com/":  false,
		"ftp://hooks.example.com/":        false,
		"hooks.example.com":               false,
		"https://hooks.example.com/#frag": false,
	} {
		if err := CheckWebhookURL(in); (err == nil) != ok {
			t.Errorf("CheckWebhookURL(%q) = %v", in, err)
		}
	}
}

func TestTriggersHaveDefaultsInRange(t *testing.T) {
	if len(Triggers) != 8 { // the spec's seven and ENDPOINT_REENROLLED
		t.Fatalf("%d triggers", len(Triggers))
	}
	for _, tr := range Triggers {
		if tr.DefaultThreshold < tr.Min || tr.DefaultThreshold > tr.Max || tr.Threshold == "" {
			t.Errorf("%s: default %d outside %d..%d", tr.Name, tr.DefaultThreshold, tr.Min, tr.Max)
		}
	}
}

func TestMessageSignAndVerify(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)
	m := NewMessage("ev1", EndpointOffline, at, "Acme", RuleRef{"r1", "Offline servers", EndpointOffline}, Warning,
		"Endpoint web-01 is offline", "Last seen 2026-03-01 09:00 UTC.")
	body := m.Body()
	var back map[string]any
	if err := json.Unmarshal(body, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"event", "at", "organization", "rule", "severity", "title", "detail", "text"} {
		if _, ok := back[k]; !ok {
			t.Errorf("body lacks %q: %s", k, body)
		}
	}
	if back["at"] != "2026-03-01T10:30:00Z" || !strings.Contains(m.Text, "[WARNING] Endpoint web-01 is offline") || !strings.Contains(m.Text, "Offline servers") {
		t.Errorf("body %s", body)
	}
	sig := Sign("s3cret", body)
	if !strings.HasPrefix(sig, "sha256=") || len(sig) != 7+64 || !Verify("s3cret", body, sig) || Verify("other", body, sig) ||
		Verify("s3cret", append(body, ' '), sig) {
		t.Errorf("signature %s", sig)
	}
}

func TestRefused(t *testing.T) {
	for s, refused := range map[string]bool{
		"127.0.0.1": true, "::1": true, "10.1.2.3": true, "172.16.0.1": true, "192.168.1.1": true, "169.254.169.254": true,
		"fe80::1": true, "fc00::1": true, "0.0.0.0": true, "::": true, "224.0.0.1": true, "100.64.0.1": true, "::ffff:127.0.0.1": true,
		"0.1.2.3": true, "93.184.216.34": false, "2606:2800:220:1:248:1893:25c8:1946": false, "8.8.8.8": false,
	} {
		if got := Refused(netip.MustParseAddr(s)); got != refused {
			t.Errorf("Refused(%s) = %v", s, got)
		}
	}
}

// fakeDNS answers every A query with 127.0.0.1 (and AAAA with no answer),
// like a name an attacker points at the server itself.
func fakeDNS(t *testing.T) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			if n < 12 {
				continue
			}
			// The question ends after the name's zero byte and four bytes.
			end := 12
			for end < n && q[end] != 0 {
				end += int(q[end]) + 1
			}
			end += 5
			if end > n {
				continue
			}
			qtype := binary.BigEndian.Uint16(q[end-4:])
			resp := append([]byte(nil), q[:end]...)
			resp[2], resp[3] = 0x81, 0x80 // response, recursion available, no error
			binary.BigEndian.PutUint16(resp[6:], 0)
			binary.BigEndian.PutUint16(resp[8:], 0)
			binary.BigEndian.PutUint16(resp[10:], 0)
			if qtype == 1 {
				binary.BigEndian.PutUint16(resp[6:], 1)
				resp = append(resp, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1)
			}
			pc.WriteTo(resp, from)
		}
	}()
	return pc.LocalAddr().String()
}

func TestDialerRefusesNamesResolvingToLoopback(t *testing.T) {
	dns := fakeDNS(t)
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", dns)
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	target := "http://hooks.attacker.example:" + port + "/"

	refusing := &http.Client{Transport: &http.Transport{DialContext: (&Dialer{Resolver: resolver, Timeout: 2 * time.Second}).DialContext}}
	_, err := refusing.Get(target)
	if !errors.Is(err, ErrRefusedAddress) {
		t.Fatalf("want a refusal after DNS, got %v", err)
	}
	if _, err := refusing.Get(srv.URL); !errors.Is(err, ErrRefusedAddress) {
		t.Fatalf("want a refusal of the literal address, got %v", err)
	}

	allowing := &http.Client{Transport: &http.Transport{DialContext: (&Dialer{AllowPrivate: true, Resolver: resolver, Timeout: 2 * time.Second}).DialContext}}
	resp, err := allowing.Get(target)
	if err != nil {
		t.Fatalf("allowed dial: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}
