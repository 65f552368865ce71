package collect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestInstallDay(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		at   time.Time
		want string
	}{
		{"zero time of lost+found", time.Unix(0, 0).UTC(), ""},
		{"Go zero time", time.Time{}, ""},
		{"before 1990", time.Date(1989, 12, 31, 23, 59, 0, 0, time.UTC), ""},
		{"1990", time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC), "1990-01-01"},
		{"an installation", time.Date(2025, 6, 24, 9, 30, 0, 0, time.UTC), "2025-06-24"},
		{"today", now, "2026-11-23"},
		{"a clock a few hours ahead", now.Add(5 * time.Hour), "2026-11-23"},
		{"the future", now.Add(72 * time.Hour), ""},
		{"the day of its location", time.Date(2024, 3, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)), "2024-03-01"},
	} {
		if got := installDay(tc.at, now); got != tc.want {
			t.Errorf("%s: installDay(%s) = %q, want %q", tc.name, tc.at, got, tc.want)
		}
	}
}

func TestFailureLevel(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want slog.Level
	}{
		{errNotFound("/proc/asound (no sound cards)"), slog.LevelDebug},
		{fmt.Errorf("printers: %w", errNotFound("lpstat (CUPS not installed)")), slog.LevelDebug},
		{errors.New("dpkg-query: exit status 2"), slog.LevelWarn},
		{fmt.Errorf("services listed without their state: %w", errors.New("exit status 1")), slog.LevelWarn},
		{context.DeadlineExceeded, slog.LevelWarn},
	} {
		if got := failureLevel(tc.err); got != tc.want {
			t.Errorf("failureLevel(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestCollectorAbsenceLoggedAtDebug: a collector whose source is absent is
// logged at debug, one that fails at warn, and a collection goes on.
func TestCollectorAbsenceLoggedAtDebug(t *testing.T) {
	h := &recordHandler{}
	c := newCollector(Options{Logger: slog.New(h)})
	c.do("sound-devices", func() error { return errNotFound("/proc/asound (no sound cards)") })
	c.do("printers", func() error { return fmt.Errorf("printers: %w", errNotFound("lpstat")) })
	c.do("software", func() error { return errors.New("dpkg-query: exit status 2") })
	c.do("disks", func() error { return nil })
	c.wg.Wait()
	want := map[string]slog.Level{"sound-devices": slog.LevelDebug, "printers": slog.LevelDebug, "software": slog.LevelWarn}
	got := map[string]slog.Level{}
	for _, r := range h.records {
		if r.Message != "collector failed" {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "collector" {
				got[a.Value.String()] = r.Level
			}
			return true
		})
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("levels of the failed collectors %v, want %v", got, want)
	}
}

// recordHandler keeps the records of a collection for a test to read.
type recordHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

// TestNoSystemctlIsAnAbsence: on a Linux computer without systemd (no
// systemctl at all) the services collector logs at debug, not warn.
func TestNoSystemctlIsAnAbsence(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the services collector reads systemd on Linux")
	}
	t.Setenv("PATH", t.TempDir())
	h := &recordHandler{}
	Inventory(context.Background(), Options{Logger: slog.New(h)})
	var found bool
	for _, r := range h.records {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "collector" && a.Value.String() == "services" {
				found = true
				if r.Level != slog.LevelDebug {
					t.Errorf("services without systemctl logged at %v: %s", r.Level, r.Message)
				}
			}
			return true
		})
	}
	if !found {
		t.Error("the services collector said nothing without systemctl")
	}
}
