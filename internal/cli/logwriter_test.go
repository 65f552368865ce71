package cli

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/lockedbuf"
)

// TestLogWriter: routine lines are written by the timer, a warning
// at once with the lines before it, in order, Close writes the rest, and
// lines after Close are written at once. No timer is armed while no line
// waits.
func TestLogWriter(t *testing.T) {
	var out lockedbuf.Buffer
	lw := newLogWriter(&out)
	log := slog.New(flushingHandler{slog.NewTextHandler(lw, nil), lw})
	log.Info("first")
	log.Warn("second")
	if s := out.String(); !strings.Contains(s, "msg=first") || !strings.Contains(s, "msg=second") || strings.Index(s, "first") > strings.Index(s, "second") {
		t.Fatalf("after a warning: %q", s)
	}
	log.Info("third")
	// Written by the timer, with no warning after it: waited for without a
	// deadline of its own (the test binary's timeout ends a writer that
	// never writes it).
	for !strings.Contains(out.String(), "msg=third") {
		time.Sleep(10 * time.Millisecond)
	}
	lw.mu.Lock()
	armed := lw.timer.Stop()
	lw.mu.Unlock()
	if armed {
		t.Fatal("the flush timer is armed with no line waiting")
	}
	big := strings.Repeat("x", logBufferSize/3)
	for range 5 {
		log.Info("big", "v", big)
	}
	log.Info("last")
	lw.Close()
	s := out.String()
	if strings.Count(s, "msg=big") != 5 || !strings.HasSuffix(s, "msg=last\n") {
		t.Fatalf("after Close: %d big lines, ends %q", strings.Count(s, "msg=big"), s[max(0, len(s)-40):])
	}
	log.Info("after close")
	if s := out.String(); !strings.HasSuffix(s, "msg=\"after close\"\n") {
		t.Fatalf("a line after Close: ends %q", s[max(0, len(s)-40):])
	}
}
