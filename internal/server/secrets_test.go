package server_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/server"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

var caPin = regexp.MustCompile(`agents pin the CA with SHA-256 ([0-9a-f]{64})`)

// TestServeSecretKey: the first start writes the secret key to
// DATA/secret.key (0600); a second server on the same database without
// that key refuses to start, saying why, and writes no key of its own;
// given the key file (--secret-key-file), it starts and serves the same
// CA.
func TestServeSecretKey(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	db := filepath.Join(first, "patchd.db")
	if storetest.Postgres() {
		db = storetest.URL(t)
	}
	start := func(dataDir string, args ...string) (*server.Running, string, error) {
		t.Helper()
		cfg, err := config.ParseServe(append([]string{"--data", dataDir, "--db", db, "--addr", "127.0.0.1:0", "--tls-self", "--no-agent-build"}, args...))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		run, err := server.Start(context.Background(), cfg, &out)
		m := caPin.FindStringSubmatch(out.String())
		if err == nil && m == nil {
			shutdown(t, run)
			t.Fatalf("no CA pin in %q", out.String())
		}
		if err != nil {
			return nil, "", err
		}
		return run, m[1], nil
	}
	run, pin, err := start(first)
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, run)
	keyFile := filepath.Join(first, "secret.key")
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file of the first start: %v, %v; want mode 0600", fi, err)
	}

	if _, _, err := start(second); !errors.Is(err, store.ErrSecretKey) || !strings.Contains(err.Error(), "give this server the secret key") {
		t.Fatalf("a server without the key started: %v", err)
	}
	if _, err := os.Stat(filepath.Join(second, "secret.key")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused start wrote a key file: %v", err)
	}
	run, again, err := start(second, "--secret-key-file", keyFile)
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, run)
	if again != pin {
		t.Fatalf("the server with the key serves CA %s, want %s", again, pin)
	}
}
