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
	if len(Triggers) != 9 { // the spec's seven, ENDPOINT_REENROLLED and AGENT_UPDATE_FAILED
		t.Fatalf("%d triggers", len(Triggers))
	}
	for _, tr := range Triggers {
		if tr.Ignored {
			if tr.DefaultThreshold != 0 || tr.Min != 0 || tr.Max != 0 || !strings.HasPrefix(tr.Threshold, "ignored") {
				t.Errorf("%s ignores its threshold: %+v", tr.Name, tr)
			}
			continue
		}
		if tr.DefaultThreshold < tr.Min || tr.DefaultThreshold > tr.Max || tr.Threshold == "" {
			t.Errorf("%s: default %d outside %d..%d", tr.Name, tr.DefaultThreshold, tr.Min, tr.Max)
		}
	}
}

// TestRuleThreshold: a trigger that ignores its threshold takes any
// non-negative value and keeps it; the others keep their range.
func TestRuleThreshold(t *testing.T) {
	for _, tc := range []struct {
		trigger   string
		threshold *int
		want      int // the threshold kept; -1: refused
	}{
		{NewEndpoint, ptr(1), 1},
		{NewEndpoint, ptr(0), 0},
		{NewEndpoint, nil, 0},
		{NewEndpoint, ptr(MaxIgnored), MaxIgnored},
		{GroupUptime, ptr(90), 90},
		{NewEndpoint, ptr(-1), -1},
		{GroupUptime, ptr(MaxIgnored + 1), -1},
		{EndpointOffline, ptr(0), -1},
		{EndpointOffline, ptr(30), 30},
		{EndpointOffline, nil, 60},
		{CriticalVuln, ptr(11), -1},
		{CriticalVuln, ptr(-1), -1},
	} {
		r := Rule{Name: "r", Trigger: tc.trigger, Threshold: tc.threshold, EmailTo: "ops@example.com"}
		err := r.Check()
		switch {
		case tc.want < 0 && err == nil:
			t.Errorf("%s threshold %d: accepted", tc.trigger, *tc.threshold)
		case tc.want < 0 && !strings.Contains(err.Error(), "threshold"):
			t.Errorf("%s: %v", tc.trigger, err)
		case tc.want >= 0 && err != nil:
			t.Errorf("%s threshold %v: %v", tc.trigger, tc.threshold, err)
		case tc.want >= 0 && *r.Threshold != tc.want:
			t.Errorf("%s: threshold %d kept, want %d", tc.trigger, *r.Threshold, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestChatText(t *testing.T) {
	const zw = "\u200b"
	for in, want := range map[string]string{
		"Endpoint web-01 is offline":                       "Endpoint web-01 is offline",
		"<https://evil.example/|Click to fix> now":         "&lt;https://evil.example/|Click to fix&gt; now",
		"<!channel> <!here|here> <@U123>":                  "&lt;!channel&gt; &lt;!here|here&gt; &lt;@" + zw + "U123&gt;",
		"Tom & Jerry's PC":                                 "Tom &amp; Jerry's PC",
		"&lt; already":                                     "&amp;lt; already",
		"ping @here and @channel, @all, @everyone, (@bob)": "ping @" + zw + "here and @" + zw + "channel, @" + zw + "all, @" + zw + "everyone, (@" + zw + "bob)",
		"@here":                            "@" + zw + "here",
		"mail ops@example.com, 50 @ 3 GHz": "mail ops@example.com, 50 @ 3 GHz",
		"[Click](https://evil.example/) and [a] (b)": "[Click]" + zw + "(https://evil.example/) and [a] (b)",
		"Überwachung @Ärger":                         "Überwachung @" + zw + "Ärger",
	} {
		if got := ChatText(in); got != want {
			t.Errorf("ChatText(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// TestWebhookTextIsEscaped: the webhook's "text" is escaped for chat tools;
// title and detail carry the names as raised, and the e-mail text (Text)
// stays plain.
func TestWebhookTextIsEscaped(t *testing.T) {
	title := "New endpoint <https://evil.example/|IT portal> @here"
	m := NewMessage("ev1", NewEndpoint, time.Now(), "Acme & Co", RuleRef{"r1", "New machines", NewEndpoint}, Info, title, "")
	var back Message
	if err := json.Unmarshal(m.Body(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Title != title || !strings.Contains(m.Text, title) || !strings.Contains(m.Text, "Acme & Co") {
		t.Errorf("title %q, e-mail text %q", back.Title, m.Text)
	}
	if strings.ContainsAny(back.Text, "<>") || strings.Contains(back.Text, "@here") || !strings.Contains(back.Text, "&lt;https://evil.example/|IT portal&gt;") ||
		!strings.Contains(back.Text, "Acme &amp; Co") {
		t.Errorf("webhook text %q", back.Text)
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

// TestRefused: the IANA special-purpose registries decide, and an IPv6
// address that carries an IPv4 address (mapped, compatible, NAT64, 6to4,
// Teredo) is refused when that address is.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		refused bool
	}{
		// IPv4.
		{"127.0.0.1", true}, {"10.1.2.3", true}, {"172.16.0.1", true}, {"192.168.1.1", true},
		{"169.254.169.254", true}, {"0.0.0.0", true}, {"0.1.2.3", true}, {"100.64.0.1", true},
		{"224.0.0.1", true}, {"239.255.255.250", true}, {"255.255.255.255", true}, {"240.0.0.1", true},
		{"192.0.0.1", true}, {"192.0.0.8", true}, {"192.0.0.170", true}, {"192.0.2.1", true},
		{"198.18.0.1", true}, {"198.19.255.255", true}, {"198.51.100.7", true}, {"203.0.113.9", true},
		{"192.88.99.1", true},
		{"192.0.0.9", false}, {"192.0.0.10", false}, {"192.31.196.1", false}, {"192.175.48.1", false},
		{"93.184.216.34", false}, {"8.8.8.8", false}, {"1.1.1.1", false}, {"100.128.0.1", false}, {"198.20.0.1", false},
		// IPv6.
		{"::1", true}, {"::", true}, {"fe80::1", true}, {"fe80::1%eth0", true}, {"fc00::1", true}, {"fd12:3456::1", true},
		{"fec0::1", true}, {"ff02::1", true}, {"ff0e::1", true}, {"100::1", true}, {"2001:db8::1", true},
		{"2001:2::1", true}, {"2001:5::1", true}, {"2001:10::1", true}, {"3fff::1", true}, {"5f00::1", true},
		{"4000::1", true}, {"64:ff9b:1::808:808", true},
		{"2606:2800:220:1:248:1893:25c8:1946", false}, {"2a00:1450:4001:80b::200e", false}, {"2001:20::1", false},
		{"2001:1::1", false}, {"2001:4:112::1", false},
		// IPv4-mapped.
		{"::ffff:127.0.0.1", true}, {"::ffff:10.0.0.1", true}, {"::ffff:100.64.0.1", true}, {"::ffff:8.8.8.8", false},
		// IPv4-compatible (deprecated: never global).
		{"::127.0.0.1", true}, {"::10.0.0.1", true}, {"::8.8.8.8", true},
		// NAT64.
		{"64:ff9b::7f00:1", true}, {"64:ff9b::a9fe:a9fe", true}, {"64:ff9b::a00:1", true}, {"64:ff9b::808:808", false},
		// 6to4.
		{"2002:7f00:1::1", true}, {"2002:a9fe:a9fe::", true}, {"2002:c0a8:101::1", true}, {"2002:808:808::1", false},
		// Teredo: server 8.8.8.8, client stored inverted.
		{"2001:0:808:808::80ff:fffe", true},  // client 127.0.0.1
		{"2001:0:a00:1::fefe:fefe", true},    // server 10.0.0.1
		{"2001:0:808:808::f5ff:fffe", true},  // client 10.0.0.1
		{"2001:0:808:808::fefe:fefe", false}, // client 1.1.1.1
	} {
		if got := Refused(netip.MustParseAddr(tc.addr)); got != tc.refused {
			t.Errorf("Refused(%s) = %v, want %v", tc.addr, got, tc.refused)
		}
	}
	if !Refused(netip.Addr{}) {
		t.Error("the zero address is not refused")
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
