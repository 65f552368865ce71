package store_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/secretbox"
	"github.com/patchd/patchd/internal/servertls"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/worker"
)

// secrets are one of each kind of secret the database holds, as written
// through the store.
type secrets struct {
	orgID, userID, ruleID, sessionHash, stateHash string
	ca                                            store.ServerCA
	acme, totp, pendingTOTP, client, pkce, hook   string
}

// secretColumnNames are the columns that hold secrets.
var secretColumnNames = []string{"server_ca.key_pem", "server_tls.data", "users.totp_secret", "console_sessions.pending_totp",
	"sso_configs.client_secret", "sso_logins.pkce_verifier", "alert_rules.webhook_secret"}

// plain answers every secret's clear text, by its table and column, and a
// part of it that must never be found in the database.
func (w secrets) plain() map[string]string {
	keyLines := strings.Split(w.ca.KeyPEM, "\n")
	return map[string]string{
		"server_ca.key_pem":             keyLines[1], // the key's base64, below the BEGIN line
		"server_tls.data":               w.acme,
		"users.totp_secret":             w.totp,
		"console_sessions.pending_totp": w.pendingTOTP,
		"sso_configs.client_secret":     w.client,
		"sso_logins.pkce_verifier":      w.pkce,
		"alert_rules.webhook_secret":    w.hook,
	}
}

// writeSecrets writes one of each kind of secret through s; hookURL is
// the alert rule's webhook.
func writeSecrets(t *testing.T, s *store.Store, hookURL string) secrets {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	ca, err := servertls.NewCA(now)
	if err != nil {
		t.Fatal(err)
	}
	w := secrets{ca: ca, acme: "acme-account-key-" + store.NewID(), totp: auth.NewTOTPSecret(), pendingTOTP: auth.NewTOTPSecret(),
		client: "oidc-client-secret-" + store.NewID(), pkce: "pkce-verifier-" + store.NewID(), hook: "webhook-secret-" + store.NewID(),
		sessionHash: "session-" + store.NewID(), stateHash: "state-" + store.NewID()}
	if got, err := s.EnsureServerCA(ctx, ca); err != nil || got.KeyPEM != ca.KeyPEM {
		t.Fatalf("EnsureServerCA: %v", err)
	}
	if err := s.PutTLSData(ctx, store.ACMEPrefix+"acct+key", []byte(w.acme)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTLSData(ctx, store.TLSPinName, []byte(ca.SHA256)); err != nil {
		t.Fatal(err)
	}
	o, u := newAdmin(t, s, "Acme", "a@example.com")
	w.orgID, w.userID = o.ID, u.ID
	entry := func(action string) *store.AuditEntry {
		return &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: action, TargetType: "user"}
	}
	if err := s.EnableTOTP(ctx, entry("user.mfa_enable"), o.ID, u.ID, w.totp, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateConsoleSession(ctx, w.sessionHash, "csrf", store.ConsoleUser{User: u}, "192.0.2.1", "test", "", now); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPendingTOTP(ctx, w.sessionHash, w.pendingTOTP); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetSSOConfig(ctx, entry("sso.set"), store.SSOConfig{OrgID: o.ID, ProviderName: "IdP", Issuer: "https://idp.example.com",
		ClientID: "patchd", Enabled: true}, &w.client); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSSOLogin(ctx, store.SSOLogin{StateHash: w.stateHash, BindingHash: "b", OrgID: o.ID, Nonce: "n", PKCEVerifier: w.pkce,
		Next: "/console/", ExpiresAt: now.Add(time.Hour)}, now); err != nil {
		t.Fatal(err)
	}
	in := alerts.Rule{Name: "hook", Trigger: alerts.NewEndpoint, WebhookURL: hookURL, WebhookSecret: w.hook}
	if err := in.Check(); err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateAlertRule(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "alert.create", TargetType: "alert"}, o.ID, in, now)
	if err != nil {
		t.Fatal(err)
	}
	w.ruleID = r.ID
	return w
}

// readSecrets reads every secret back through s and fails unless each
// is the one written.
func readSecrets(t *testing.T, s *store.Store, w secrets) {
	t.Helper()
	ctx := context.Background()
	ca, err := s.ServerCA(ctx)
	if err != nil || ca.KeyPEM != w.ca.KeyPEM || ca.SHA256 != w.ca.SHA256 {
		t.Fatalf("server CA: %v (same key: %v)", err, ca.KeyPEM == w.ca.KeyPEM)
	}
	if b, err := s.TLSData(ctx, store.ACMEPrefix+"acct+key"); err != nil || string(b) != w.acme {
		t.Fatalf("ACME cache: %q %v", b, err)
	}
	if pin, err := s.EnrollPin(ctx); err != nil || pin != w.ca.SHA256 {
		t.Fatalf("pin %q %v", pin, err)
	}
	if got, err := s.UserTOTPSecret(ctx, w.userID); err != nil || got != w.totp {
		t.Fatalf("TOTP secret %q %v", got, err)
	}
	if cs, err := s.GetConsoleSession(ctx, w.sessionHash); err != nil || cs.PendingTOTP != w.pendingTOTP {
		t.Fatalf("pending TOTP secret %q %v", cs.PendingTOTP, err)
	}
	if c, err := s.GetSSOConfig(ctx, w.orgID); err != nil || c.ClientSecret() != w.client || !c.HasClientSecret {
		t.Fatalf("client secret %q %v", c.ClientSecret(), err)
	}
	if r, err := s.GetAlertRule(ctx, w.orgID, w.ruleID); err != nil || r.Rule().WebhookSecret != w.hook || !r.HasWebhookSecret {
		t.Fatalf("webhook secret %q %v", r.Rule().WebhookSecret, err)
	}
}

// takePKCE takes the sign-in under way (single use) and checks its verifier.
func takePKCE(t *testing.T, s *store.Store, w secrets) {
	t.Helper()
	if l, err := s.TakeSSOLogin(context.Background(), w.stateHash); err != nil || l.PKCEVerifier != w.pkce {
		t.Fatalf("PKCE verifier %q %v", l.PKCEVerifier, err)
	}
}

// rawDB opens the database at url with plain SQL, beside the store.
func rawDB(t *testing.T, url string) *sql.DB {
	t.Helper()
	driver, dsn := "pgx", url
	if path, ok := strings.CutPrefix(url, "sqlite:"); ok {
		driver, dsn = "sqlite", "file:"+path+"?_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// rawExec runs a statement with '?' placeholders on either engine.
func rawExec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if storetest.Postgres() {
		for i := 1; strings.Contains(query, "?"); i++ {
			query = strings.Replace(query, "?", fmt.Sprintf("$%d", i), 1)
		}
	}
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// rawColumn answers the stored values of a secret's column, by row.
func rawColumn(t *testing.T, db *sql.DB, table, column string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT ` + column + ` FROM ` + table + ` WHERE ` + column + ` IS NOT NULL AND length(` + column + `) > 0` +
		map[bool]string{true: ` AND name LIKE 'acme/%'`}[table == "server_tls"])
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v []byte
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, string(v))
	}
	return out
}

// findInDatabase answers where any of the texts is found in any column
// of any row of any table (and, on SQLite, anywhere in the database's
// files, free pages and the write-ahead log included).
func findInDatabase(t *testing.T, db *sql.DB, url string, texts map[string]string) []string {
	t.Helper()
	list := `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`
	if !storetest.Postgres() {
		list = `SELECT name FROM sqlite_master WHERE type = 'table'`
	}
	rows, err := db.Query(list)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	var found []string
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM ` + table)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				text := fmt.Sprint(v)
				if b, ok := v.([]byte); ok {
					text = string(b)
				}
				for name, secret := range texts {
					if strings.Contains(text, secret) {
						found = append(found, fmt.Sprintf("%s in %s.%s", name, table, cols[i]))
					}
				}
			}
		}
		rows.Close()
	}
	if path, ok := strings.CutPrefix(url, "sqlite:"); ok {
		for _, f := range []string{path, path + "-wal"} {
			b, _ := os.ReadFile(f)
			for name, secret := range texts {
				if bytes.Contains(b, []byte(secret)) {
					found = append(found, fmt.Sprintf("%s in the file %s", name, filepath.Base(f)))
				}
			}
		}
	}
	return found
}

func newKey() string { return secretbox.EncodeKey(secretbox.NewKey()) }

// TestSecretsSealedAtRest: every kind of secret, once written, is in no
// row of the database (nor, on SQLite, in its files) in clear; each secret
// column holds a value sealed with the store's key, and the store reads
// every one back.
func TestSecretsSealedAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	key := store.SecretKey{Text: newKey()}
	s, err := store.Open(ctx, url, "", store.Options{MaxConns: 4, SecretKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := writeSecrets(t, s, "https://hooks.example.com/x")
	db := rawDB(t, url)
	if found := findInDatabase(t, db, url, w.plain()); len(found) > 0 {
		t.Errorf("secrets stored in clear: %s", strings.Join(found, "; "))
	}
	ring, _ := secretbox.Parse(key.Text)
	for _, column := range secretColumnNames {
		table, col, _ := strings.Cut(column, ".")
		vals := rawColumn(t, db, table, col)
		if len(vals) != 1 {
			t.Fatalf("%s: %d values", column, len(vals))
		}
		if id, ok := secretbox.SealedKeyID(vals[0]); !ok || id != ring.ID() {
			t.Errorf("%s holds %.40q…, not a value sealed with key %s", column, vals[0], ring.ID())
		}
	}
	readSecrets(t, s, w)
	takePKCE(t, s, w)

	// A sealed value moved to another row does not open there.
	u2 := newUser(t, s, store.User{OrgID: w.orgID, Email: "b@example.com", RoleID: builtinRole(t, s, w.orgID, store.RoleAdministrator).ID})
	rawExec(t, db, `UPDATE users SET totp_secret = (SELECT totp_secret FROM users WHERE id = ?) WHERE id = ?`, w.userID, u2.ID)
	if got, err := s.UserTOTPSecret(ctx, u2.ID); !errors.Is(err, secretbox.ErrOpen) || got != "" {
		t.Fatalf("a TOTP secret moved to another user: %q, %v", got, err)
	}
}

// TestSecretsNeedTheirKey: the database opened with another key, or
// without its key file, refuses to open (and makes no key file); a copy
// opened without migrating (as a reader of a backup would) yields none of
// the secrets.
func TestSecretsNeedTheirKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "secret.key")
	s, err := store.Open(ctx, url, "", store.Options{MaxConns: 4, SecretKey: store.SecretKey{File: keyFile}})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file made on first start: %v, %v; want mode 0600", fi, err)
	}
	w := writeSecrets(t, s, "https://hooks.example.com/x")
	copyURL := url
	if !storetest.Postgres() {
		copyPath := filepath.Join(dir, "copy.db")
		if _, err := s.Backup(ctx, copyPath); err != nil {
			t.Fatal(err)
		}
		copyURL = "sqlite:" + copyPath
	}
	s.Close()

	other := store.SecretKey{Text: newKey()}
	for name, key := range map[string]store.SecretKey{
		"another key":          other,
		"another key file":     {File: filepath.Join(dir, "other.key")},
		"a key file not there": {File: filepath.Join(dir, "missing", "secret.key")},
	} {
		if key.File != "" && !strings.Contains(key.File, "missing") {
			if err := os.WriteFile(key.File, []byte(newKey()+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, err := store.Open(ctx, copyURL, "", store.Options{MaxConns: 2, SecretKey: key})
		if !errors.Is(err, store.ErrSecretKey) || !strings.Contains(err.Error(), "give this server the secret key") {
			t.Errorf("%s: Open = %v, want the secret key refused", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a start refused for a missing key file made it: %v", err)
	}

	// A reader that skips the checks gets sealed values that do not open.
	r, err := store.Open(ctx, copyURL, "", store.Options{MaxConns: 2, SkipMigrate: true, SecretKey: other})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.ServerCA(ctx); !errors.Is(err, secretbox.ErrUnknownKey) {
		t.Errorf("server CA with another key: %v", err)
	}
	if _, err := r.UserTOTPSecret(ctx, w.userID); !errors.Is(err, secretbox.ErrUnknownKey) {
		t.Errorf("TOTP secret with another key: %v", err)
	}
	if _, err := r.GetSSOConfig(ctx, w.orgID); !errors.Is(err, secretbox.ErrUnknownKey) {
		t.Errorf("client secret with another key: %v", err)
	}
	if _, err := r.GetAlertRule(ctx, w.orgID, w.ruleID); !errors.Is(err, secretbox.ErrUnknownKey) {
		t.Errorf("webhook secret with another key: %v", err)
	}
	if found := findInDatabase(t, rawDB(t, copyURL), copyURL, w.plain()); len(found) > 0 {
		t.Errorf("the copy holds secrets in clear: %s", strings.Join(found, "; "))
	}

	// The right key still opens it.
	s, err = store.Open(ctx, copyURL, "", store.Options{MaxConns: 2, SecretKey: store.SecretKey{File: keyFile}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	readSecrets(t, s, w)
}

// TestSecretKeyRotation: RotateSecretKey seals everything with the new
// key in one go (the old key then opens the database no more); a rolling
// rotation keeps the old key beside the new one, first to read, then to
// seal, until the last step seals the rest again.
func TestSecretKeyRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	k1, k2, k3 := newKey(), newKey(), newKey()
	ids := func(text string) string { r, _ := secretbox.Parse(text); return r.ID() }
	open := func(text string) (*store.Store, error) {
		return store.Open(ctx, url, "", store.Options{MaxConns: 2, SecretKey: store.SecretKey{Text: text}})
	}
	mustOpen := func(text string) *store.Store {
		t.Helper()
		s, err := open(text)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	db := rawDB(t, url)
	sealedWith := func() map[string]int {
		t.Helper()
		n := map[string]int{}
		for _, column := range secretColumnNames {
			table, col, _ := strings.Cut(column, ".")
			for _, v := range rawColumn(t, db, table, col) {
				id, _ := secretbox.SealedKeyID(v)
				n[id]++
			}
		}
		return n
	}

	s := mustOpen(k1)
	w := writeSecrets(t, s, "https://hooks.example.com/x")
	if got := sealedWith(); got[ids(k1)] != 7 || len(got) != 1 {
		t.Fatalf("before the rotation: %v", got)
	}
	// In one go: k2 seals everything.
	next, _ := secretbox.Parse(k2)
	n, err := s.RotateSecretKey(ctx, next)
	if err != nil || n != 7 {
		t.Fatalf("RotateSecretKey = %d, %v; want 7 secrets", n, err)
	}
	if got := sealedWith(); got[ids(k2)] != 7 || len(got) != 1 {
		t.Fatalf("after the rotation: %v", got)
	}
	readSecrets(t, s, w) // the store that rotated uses the new key
	s.Close()
	if _, err := open(k1); !errors.Is(err, store.ErrSecretKey) {
		t.Fatalf("the old key opens the database after the rotation: %v", err)
	}
	s = mustOpen(k2)
	readSecrets(t, s, w)
	s.Close()

	// Rolling: every server gets k3 to read (k2 still seals), then k3 first.
	s = mustOpen(k2 + "\n" + k3)
	readSecrets(t, s, w)
	s.Close()
	s = mustOpen(k3 + "\n" + k2)
	second := alerts.Rule{Name: "second", Trigger: alerts.NewEndpoint, WebhookURL: "https://hooks.example.com/y", WebhookSecret: "second-secret"}
	if err := second.Check(); err != nil {
		t.Fatal(err)
	}
	ev, err := s.CreateAlertRule(ctx, &store.AuditEntry{OrgID: w.orgID, Actor: "test", Action: "alert.create", TargetType: "alert"}, w.orgID,
		second, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := sealedWith(); got[ids(k3)] != 1 || got[ids(k2)] != 7 {
		t.Fatalf("a new secret during the rolling rotation: %v, want it sealed with the new key", got)
	}
	if _, err := open(k3); !errors.Is(err, store.ErrSecretKey) || !strings.Contains(err.Error(), ids(k2)) {
		t.Fatalf("the new key alone opens the database while secrets are sealed with the old one: %v", err)
	}
	// The last step: seal the rest with the first key.
	if n, err := s.RotateSecretKey(ctx, nil); err != nil || n != 8 {
		t.Fatalf("RotateSecretKey(nil) = %d, %v", n, err)
	}
	st, err := s.SecretStatus(ctx)
	if err != nil || st.Sealed[ids(k3)] != 8 || len(st.Sealed) != 1 || st.Clear != 0 || st.CheckKeyID != ids(k3) {
		t.Fatalf("status %+v, %v", st, err)
	}
	s.Close()
	s = mustOpen(k3)
	defer s.Close()
	readSecrets(t, s, w)
	takePKCE(t, s, w)
	if r, err := s.GetAlertRule(ctx, w.orgID, ev.ID); err != nil || r.Rule().WebhookSecret != "second-secret" {
		t.Fatalf("the secret written during the rotation: %v", err)
	}
}

// TestSecretsSealedOnUpgrade: a database an older version left (every
// secret in clear, no record of a key) is sealed at the first start with
// a new key file, and everything still works: the CA serves TLS under the
// same pin, the TOTP secret checks the same codes, the webhook is signed
// with the same secret.
func TestSecretsSealedOnUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)

	var received struct {
		body []byte
		sig  string
	}
	got := make(chan struct{}, 1)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b := new(bytes.Buffer)
		b.ReadFrom(r.Body)
		received.body, received.sig = b.Bytes(), r.Header.Get(alerts.SignatureHeader)
		got <- struct{}{}
	}))
	defer hook.Close()

	s, err := store.Open(ctx, url, "", store.Options{MaxConns: 4, SecretKey: store.SecretKey{Text: newKey()}})
	if err != nil {
		t.Fatal(err)
	}
	w := writeSecrets(t, s, hook.URL+"/hook")
	s.Close()
	// What the older version left: the secrets in clear, no secret_check.
	db := rawDB(t, url)
	for column, value := range map[string]string{"server_ca.key_pem": w.ca.KeyPEM, "users.totp_secret": w.totp,
		"console_sessions.pending_totp": w.pendingTOTP, "sso_configs.client_secret": w.client, "sso_logins.pkce_verifier": w.pkce,
		"alert_rules.webhook_secret": w.hook} {
		table, col, _ := strings.Cut(column, ".")
		rawExec(t, db, `UPDATE `+table+` SET `+col+` = ?`, value)
	}
	rawExec(t, db, `UPDATE server_tls SET data = ? WHERE name = ?`, []byte(w.acme), store.ACMEPrefix+"acct+key")
	rawExec(t, db, `DROP TABLE secret_check`)
	rawExec(t, db, `DELETE FROM schema_migrations WHERE version = 41`)
	if found := findInDatabase(t, db, "", w.plain()); len(found) != 7 {
		t.Fatalf("the older database: %v", found)
	}

	// The first start of this version, with no key file yet: it makes one
	// and seals everything; a second start changes nothing.
	keyFile := filepath.Join(t.TempDir(), "data", "secret.key")
	for range 2 {
		s, err = store.Open(ctx, url, "", store.Options{MaxConns: 4, SecretKey: store.SecretKey{File: keyFile}})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	ring, err := secretbox.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if found := findInDatabase(t, db, url, w.plain()); len(found) > 0 {
		t.Errorf("secrets left in clear after the upgrade: %s", strings.Join(found, "; "))
	}
	for _, column := range secretColumnNames {
		table, col, _ := strings.Cut(column, ".")
		for _, v := range rawColumn(t, db, table, col) {
			if id, ok := secretbox.SealedKeyID(v); !ok || id != ring.ID() {
				t.Errorf("%s holds %.40q…, not a value sealed with the new key", column, v)
			}
		}
	}
	s, err = store.Open(ctx, url, "", store.Options{MaxConns: 4, SecretKey: store.SecretKey{File: keyFile}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	readSecrets(t, s, w)
	takePKCE(t, s, w)

	// The CA serves TLS that a client pinning it accepts.
	ca, err := servertls.EnsureCA(ctx, s)
	if err != nil || ca.SHA256 != w.ca.SHA256 {
		t.Fatalf("CA %v, pin %s want %s", err, ca.SHA256, w.ca.SHA256)
	}
	iss, err := servertls.NewIssuer(ca, func() servertls.Names { return servertls.HostNames("https://127.0.0.1", "127.0.0.1:0") })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { rw.Write([]byte("ok")) }))
	srv.Listener = tls.NewListener(srv.Listener, &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return iss.Certificate() }})
	srv.Start()
	defer srv.Close()
	pinned := x509.NewCertPool()
	pinned.AppendCertsFromPEM([]byte(w.ca.CertPEM))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pinned}}}
	resp, err := client.Get("https://" + srv.Listener.Addr().String())
	if err != nil {
		t.Fatalf("TLS under the pinned CA after the upgrade: %v", err)
	}
	resp.Body.Close()
	if servertls.Pin(resp.TLS.PeerCertificates[1].Raw) != w.ca.SHA256 {
		t.Fatal("the server presents another CA")
	}

	// The TOTP secret checks the codes of the authenticator set up before.
	secret, err := s.UserTOTPSecret(ctx, w.userID)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	code, err := auth.TOTPCode(w.totp, auth.TOTPStep(now))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := auth.CheckTOTP(secret, code, now); !ok {
		t.Fatal("the authenticator's code is refused after the upgrade")
	}

	// The webhook is signed with the same secret.
	if _, err := s.TestAlertRule(ctx, w.orgID, w.ruleID, now); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(hook.Certificate())
	d := &worker.AlertDeliverer{Store: s, AllowPrivate: true, WebhookTLS: &tls.Config{RootCAs: roots}}
	if err := d.DeliverPending(ctx); err != nil {
		t.Fatal(err)
	}
	d.Wait()
	select {
	case <-got:
	default:
		t.Fatal("no webhook delivered")
	}
	if !alerts.Verify(w.hook, received.body, received.sig) {
		t.Fatalf("the webhook is not signed with its secret: %s", received.sig)
	}
}
