package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestSessionTimeouts: a session ends after its idle timeout unused and
// after its absolute timeout however busy; a sign-in waiting for its
// second factor ends after stageTimeout. The clock is the console's.
func TestSessionTimeouts(t *testing.T) {
	s := storetest.Open(t)
	ctx := context.Background()
	org, err := admin.CreateOrg(ctx, s, "Acme", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	out, err := admin.CreateUser(ctx, s, "test", org.ID, "alice@example.com", store.RoleAdministrator, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	users, err := s.UsersByEmail(ctx, out.Email)
	if err != nil || len(users) != 1 {
		t.Fatal(users, err)
	}
	c, err := New(Config{Store: s, IdleTimeout: 30 * time.Minute, MaxAge: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	now := t0
	c.now = func() time.Time { return now }
	open := func(stage string) string {
		id := randomToken()
		if err := s.CreateConsoleSession(ctx, auth.HashSecret(id), randomToken(), users[0], "192.0.2.1", "test", stage, now); err != nil {
			t.Fatal(err)
		}
		return id
	}
	get := func(id, path string) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.AddCookie(&http.Cookie{Name: cookieSession, Value: id})
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		return rec.Code
	}
	gone := func(id string) bool {
		_, err := s.GetConsoleSession(ctx, auth.HashSecret(id))
		return err != nil
	}

	// Used every 29 minutes, a session lives until its absolute timeout.
	busy := open(store.StageSignedIn)
	for now = t0.Add(29 * time.Minute); now.Before(t0.Add(2 * time.Hour)); now = now.Add(29 * time.Minute) {
		if code := get(busy, "/console/account"); code != http.StatusOK {
			t.Fatalf("at +%s a busy session answered %d", now.Sub(t0), code)
		}
	}
	now = t0.Add(2*time.Hour + time.Minute)
	if code := get(busy, "/console/account"); code != http.StatusSeeOther || !gone(busy) {
		t.Errorf("past the absolute timeout: %d, deleted %v", code, gone(busy))
	}

	// Unused for longer than the idle timeout, a session ends.
	now = t0
	idle := open(store.StageSignedIn)
	now = t0.Add(20 * time.Minute)
	if code := get(idle, "/console/account"); code != http.StatusOK {
		t.Fatalf("an idle session within its timeout: %d", code)
	}
	now = now.Add(31 * time.Minute)
	if code := get(idle, "/console/account"); code != http.StatusSeeOther || !gone(idle) {
		t.Errorf("past the idle timeout: %d, deleted %v", code, gone(idle))
	}

	// A sign-in waiting for its second factor ends after stageTimeout.
	now = t0
	pending := open(store.StageMFA)
	now = t0.Add(stageTimeout - time.Minute)
	if code := get(pending, "/console/signin/code"); code != http.StatusOK {
		t.Fatalf("the second-factor page: %d", code)
	}
	if code := get(pending, "/console/account"); code != http.StatusSeeOther {
		t.Errorf("a page before the second factor: %d, want a redirect to it", code)
	}
	now = t0.Add(stageTimeout + time.Minute)
	if code := get(pending, "/console/signin/code"); code != http.StatusSeeOther || !gone(pending) {
		t.Errorf("a second-factor wait past its timeout: %d, deleted %v", code, gone(pending))
	}
}
