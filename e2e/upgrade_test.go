package e2e

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// previousRelease is the commit the upgrade test builds the previous
// server from: schema 040, before the database sealed its secrets, so the
// upgrade applies the migrations from 041 on and seals secrets stored in
// clear.
const previousRelease = "dec6b5a"

// buildFromGit compiles cmd/patchd as it was at commit into out, from a
// copy of that commit's tree (git archive).
func buildFromGit(t *testing.T, commit, out string) {
	t.Helper()
	src := exportCommit(t, commit)
	build := exec.Command("go", "build", "-trimpath", "-o", out, "-ldflags", "-X github.com/patchd/patchd/internal/cli.Version=0.9.0", "./cmd/patchd")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build patchd at %s: %v\n%s", commit, err, b)
	}
}

// TestUpgradeFromPreviousRelease: the previous release's patchd (built
// from git history) makes a database and fills it through its API (two
// computers with inventory, a script, its first start's credential and
// token); this version opens it (migrating it, sealing the secrets it
// kept in clear) and answers the same, on the engine the tests run on.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release")
	}
	t.Parallel()
	ctx := context.Background()
	old := filepath.Join(t.TempDir(), "patchd-old")
	buildFromGit(t, previousRelease, old)

	db := storetest.URL(t)
	dataDir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(old, "serve", "--addr", addr, "--data", dataDir, "--db", db)
	// Outside the source tree: no agent built from source.
	cmd.Dir = dataDir
	logFile := filepath.Join(t.TempDir(), "old.log")
	logs, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd.Stderr = logs
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("the previous release's log:\n%s", b)
		}
	}()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	banner := map[string]*regexp.Regexp{
		"id":     regexp.MustCompile(`API client_id:\s+(\S+)`),
		"secret": regexp.MustCompile(`API client_secret:\s+(\S+)`),
		"token":  regexp.MustCompile(`Enrollment token:\s+(\S+)`),
	}
	got := map[string]string{}
	sc := bufio.NewScanner(stdout)
	for len(got) < len(banner) && sc.Scan() {
		for k, re := range banner {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				got[k] = m[1]
			}
		}
	}
	if len(got) < len(banner) {
		t.Fatalf("the previous release's first start printed %v only", got)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	base := "http://" + addr
	waitReady(t, base)

	env := &apitest.Env{T: t, URL: base, HTTPClient: &http.Client{Timeout: time.Minute}, EnrollToken: got["token"]}
	for _, h := range []string{"web-1", "db-1"} {
		env.Enroll("uid-"+h, h, "linux").MustInventory(apitest.Sample(h, "linux"))
	}
	c := client.New(base, got["id"], got["secret"])
	name, lang, code := "disk", "sh", "df -h"
	if _, err := c.CreateScript(ctx, apiv1.ScriptBody{Name: &name, Language: &lang, Code: &code}); err != nil {
		t.Fatal(err)
	}
	before := apitest.Answers(t, c, apitest.KeptPaths...)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the previous release did not stop cleanly: %v", err)
	}

	s, err := store.Open(ctx, db, dataDir, store.Options{MaxConns: 4, SecretKey: storetest.SecretKey, ServerVersion: "1.0.0"})
	if err != nil {
		t.Fatalf("this version opens the previous release's database: %v", err)
	}
	defer s.Close()
	v, err := s.SchemaVersion(ctx)
	if err != nil || v < 50 {
		t.Fatalf("schema %d %v after the upgrade", v, err)
	}
	if by, err := s.SchemaServer(ctx); err != nil || by != "1.0.0" {
		t.Fatalf("migrated by %q %v, want 1.0.0", by, err)
	}
	newBase, _ := apitest.Serve(t, s)
	after := apitest.Answers(t, client.New(newBase, got["id"], got["secret"]), apitest.KeptPaths...)
	if n := apitest.Keeps(t, before, after); n < 50 {
		t.Errorf("compared %d values only", n)
	}
	if !strings.Contains(before["/api/v1/endpoints"].(map[string]any)["items"].([]any)[0].(map[string]any)["hostname"].(string), "-1") {
		t.Errorf("the endpoints list holds no computer: %v", before["/api/v1/endpoints"])
	}
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/readyz: %v", base, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
