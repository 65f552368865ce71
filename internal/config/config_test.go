package config

import (
	"strings"
	"testing"
	"time"
)

func TestServeTLSFlags(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		base  string
		plain bool
		err   string
	}{
		{nil, "http://127.0.0.1:8080", true, ""},
		{[]string{"--addr", "0.0.0.0:8443"}, "https://0.0.0.0:8443", false, ""},
		{[]string{"--addr", "127.0.0.1:8080", "--tls-self"}, "https://127.0.0.1:8080", false, ""},
		{[]string{"--addr", ":443", "--acme-domain", "Patchd.Example.com, b.example.com"}, "https://patchd.example.com", false, ""},
		{[]string{"--addr", ":8443", "--acme-domain", "patchd.example.com"}, "https://patchd.example.com:8443", false, ""},
		{[]string{"--addr", ":8080", "--tls-proxy", "--base-url", "https://patch.example.com"}, "https://patch.example.com", true, ""},
		{[]string{"--addr", ":8080", "--tls-proxy"}, "", false, "--tls-proxy needs --base-url https://"},
		{[]string{"--addr", "127.0.0.2:8080", "--base-url", "HTTPS://patch.example.com"}, "", false, "add --tls-self"},
		{[]string{"--addr", "127.0.0.2:8080", "--base-url", "https://127.0.0.2:8080", "--tls-self"}, "https://127.0.0.2:8080", false, ""},
		{[]string{"--addr", "127.0.0.2:8080", "--base-url", "http://patch.example.com"}, "http://patch.example.com", true, ""},
		{[]string{"--tls-proxy", "--tls-self", "--base-url", "https://p.example.com"}, "", false, "--tls-proxy excludes"},
		{[]string{"--agent-ca", "ca.pem"}, "", false, "--agent-ca goes with --tls-proxy"},
		{[]string{"--acme-domain", "10.0.0.1"}, "", false, "--acme-domain"},
		{[]string{"--acme-domain", "intranet"}, "", false, "--acme-domain"},
		{[]string{"--acme-domain", "a.example.com", "--tls-cert", "c", "--tls-key", "k"}, "", false, "exclude each other"},
	} {
		c, err := ParseServe(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || c.BaseURL != tc.base || c.Plain() != tc.plain {
			t.Errorf("%v: base %q plain %v err %v", tc.args, c.BaseURL, c.Plain(), err)
		}
	}
}

func TestSessionTimeoutFlags(t *testing.T) {
	c, err := ParseServe(nil)
	if err != nil || c.SessionIdleTimeout != 2*time.Hour || c.SessionMaxAge != 12*time.Hour {
		t.Fatalf("defaults: %s %s %v", c.SessionIdleTimeout, c.SessionMaxAge, err)
	}
	c, err = ParseServe([]string{"--session-idle-timeout", "15m", "--session-max-age", "8h"})
	if err != nil || c.SessionIdleTimeout != 15*time.Minute || c.SessionMaxAge != 8*time.Hour {
		t.Fatalf("set: %s %s %v", c.SessionIdleTimeout, c.SessionMaxAge, err)
	}
	for _, args := range [][]string{
		{"--session-idle-timeout", "30s"},
		{"--session-idle-timeout", "3h", "--session-max-age", "2h"},
		{"--session-max-age", "1000h"},
	} {
		if _, err := ParseServe(args); err == nil || !strings.Contains(err.Error(), "--session-") {
			t.Errorf("%v: %v, want a refusal", args, err)
		}
	}
}

func TestServeMSRCFlags(t *testing.T) {
	c, err := ParseServe([]string{"--msrc-since", "2025-01"})
	if err != nil || c.Feeds.MSRCSince != "2025-01" || c.Feeds.MSRCURL == "" {
		t.Fatalf("--msrc-since 2025-01: %+v %v", c.Feeds, err)
	}
	for _, bad := range []string{"2025", "2025-13", "Jan 2025"} {
		if _, err := ParseServe([]string{"--msrc-since", bad}); err == nil || !strings.Contains(err.Error(), "--msrc-since") {
			t.Errorf("--msrc-since %q: %v", bad, err)
		}
	}
}

// TestSMTPFromFlag: --smtp-from takes an address, or a name and an address,
// checked at start; anything else is refused then, with a clear error,
// rather than refused by the SMTP server at every e-mail.
func TestSMTPFromFlag(t *testing.T) {
	for _, from := range []string{"patchd@example.com", "patchd alerts <patchd@example.com>", `"Patchd, alerts" <patchd@example.com>`, "Zoë <z@example.com>"} {
		if c, err := ParseServe([]string{"--smtp-from", from}); err != nil || c.SMTP.From != from {
			t.Errorf("--smtp-from %q: %q %v", from, c.SMTP.From, err)
		}
	}
	for _, from := range []string{"", "patchd alerts", "patchd alerts <patchd@example.com", "a@example.com, b@example.com",
		"patchd@example.com\r\nBcc: x@example.com", "<>"} {
		if _, err := ParseServe([]string{"--smtp-from", from}); err == nil || !strings.Contains(err.Error(), "--smtp-from") {
			t.Errorf("--smtp-from %q: %v, want a refusal naming the flag", from, err)
		}
	}
	for _, retry := range []string{"30s", "200h"} {
		if _, err := ParseServe([]string{"--smtp-retry", retry}); err == nil || !strings.Contains(err.Error(), "--smtp-retry") {
			t.Errorf("--smtp-retry %s: %v, want a refusal", retry, err)
		}
	}
	if c, err := ParseServe(nil); err != nil || c.SMTP.Retry != 24*time.Hour || c.SMTP.From != "patchd@localhost" {
		t.Errorf("defaults: %+v %v", c.SMTP, err)
	}
}

// TestDBReadFlags: --db-read takes standbys from the flag (repeated) or
// PATCHD_DB_READ (separated by spaces, a multi-host URL kept whole), the
// flag replacing the variable; it needs a PostgreSQL --db and standby, and
// --db-read-max-lag defaults to 10 s.
func TestDBReadFlags(t *testing.T) {
	const db = "postgres://p@h1:5432,h2:5432/patchd?target_session_attrs=read-write"
	const s1, s2 = "postgres://p@h2:5432/patchd", "postgres://p@h2:5432,h3:5432/patchd?target_session_attrs=standby"
	t.Setenv("PATCHD_DB_READ", s1+"  "+s2)
	c, err := ParseServe([]string{"--db", db})
	if err != nil || len(c.DBRead) != 2 || c.DBRead[0] != s1 || c.DBRead[1] != s2 || c.DBReadMaxLag != 10*time.Second {
		t.Errorf("from PATCHD_DB_READ: %q %s %v", c.DBRead, c.DBReadMaxLag, err)
	}
	c, err = ParseServe([]string{"--db", db, "--db-read", s2, "--db-read", s1, "--db-read-max-lag", "3s"})
	if err != nil || len(c.DBRead) != 2 || c.DBRead[0] != s2 || c.DBRead[1] != s1 || c.DBReadMaxLag != 3*time.Second {
		t.Errorf("from the flags: %q %s %v", c.DBRead, c.DBReadMaxLag, err)
	}
	t.Setenv("PATCHD_DB_READ", "")
	for _, args := range [][]string{
		{"--db-read", s1},                       // SQLite --db
		{"--db", db, "--db-read", "standby.db"}, // not PostgreSQL
		{"--db", db, "--db-read", s1, "--db-read-max-lag", "0s"},
	} {
		if _, err := ParseServe(args); err == nil || !strings.Contains(err.Error(), "--db-read") {
			t.Errorf("%q: %v, want a --db-read error", args, err)
		}
	}
	if c, err := ParseServe(nil); err != nil || len(c.DBRead) != 0 {
		t.Errorf("no standbys: %q %v", c.DBRead, err)
	}
}
