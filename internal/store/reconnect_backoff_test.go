package store

import (
	"testing"
	"time"
)

// TestReconnectBackoff: the LISTEN reconnect wait doubles over failed
// attempts up to its maximum and starts over after a connection that
// listened (it stayed at 30 s after the first outage).
func TestReconnectBackoff(t *testing.T) {
	b := reconnectBackoff{min: time.Second, max: 30 * time.Second}
	steps := []struct {
		listened bool
		want     time.Duration
	}{
		{true, time.Second}, // a connection that worked, then dropped
		{false, 2 * time.Second},
		{false, 4 * time.Second},
		{false, 8 * time.Second},
		{false, 16 * time.Second},
		{false, 30 * time.Second},
		{false, 30 * time.Second},
		{true, time.Second}, // reconnected and listened: start over
		{false, 2 * time.Second},
		{true, time.Second},
	}
	for i, s := range steps {
		if got := b.after(s.listened); got != s.want {
			t.Fatalf("step %d (listened %v): wait %s, want %s", i, s.listened, got, s.want)
		}
	}
	first := reconnectBackoff{min: time.Second, max: 30 * time.Second}
	if got := first.after(false); got != time.Second {
		t.Fatalf("first failed attempt: wait %s, want 1s", got)
	}
}
