package lockedbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites writes from many goroutines while reading: every
// line is kept whole (run with -race to see the lock at work).
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 800 {
		t.Errorf("%d lines, want 800", got)
	}
}
