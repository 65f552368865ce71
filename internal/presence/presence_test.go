package presence

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/store/storetest"
)

// TestLongPollBound holds two long polls on a hub bounded to two: a third
// is answered at once, and once a held one ends, a new one is held again.
func TestLongPollBound(t *testing.T) {
	t.Parallel()
	h := New(storetest.Open(t), 2)
	h.seeded = true
	ctx := context.Background()
	woken := make(chan bool, 2)
	for _, id := range []string{"a", "b"} {
		go func() {
			ok, err := h.Wait(ctx, id, 10*time.Second)
			if err != nil {
				t.Error(err)
			}
			woken <- ok
		}()
	}
	deadline := time.Now().Add(time.Minute)
	for held, _ := h.LongPolls(); held < 2; held, _ = h.LongPolls() {
		if time.Now().After(deadline) {
			t.Fatalf("held %d long polls, want 2", held)
		}
		time.Sleep(time.Millisecond)
	}
	// The error comes at once: Wait holds nothing past the bound.
	if ok, err := h.Wait(ctx, "c", 10*time.Second); ok || !errors.Is(err, ErrTooManyLongPolls) {
		t.Fatalf("the third long poll: woken %v, %v", ok, err)
	}
	h.wake([]string{"a"})
	if !<-woken {
		t.Fatal("a woken long poll answered false")
	}
	if held, bound := h.LongPolls(); held != 1 || bound != 2 {
		t.Fatalf("after the wake-up: held %d of %d", held, bound)
	}
	ctx2, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := h.Wait(ctx2, "d", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("a long poll under the bound was answered after %v", d)
	}
	if held, _ := h.LongPolls(); held != 1 {
		t.Fatalf("a finished long poll is still counted: %d held", held)
	}
}

func TestLongPollsFor(t *testing.T) {
	for _, c := range []struct {
		files uint64
		want  int
	}{{256, minLongPolls}, {1024, minLongPolls}, {2048, 1024}, {20000, 15000}, {1 << 20, 3 << 18}, {^uint64(0), 3 << 24}} {
		if got := longPollsFor(c.files); got != c.want {
			t.Errorf("longPollsFor(%d) = %d, want %d", c.files, got, c.want)
		}
	}
	if n := DefaultMaxLongPolls(); n < minLongPolls {
		t.Errorf("DefaultMaxLongPolls() = %d", n)
	}
}

// TestDrain: Drain answers the long polls held (not woken by a command)
// and every later one at once, so a stopping replica does not wait them out.
func TestDrain(t *testing.T) {
	t.Parallel()
	h := New(storetest.Open(t), 10)
	h.seeded = true
	ctx := context.Background()
	answered := make(chan bool, 1)
	go func() {
		ok, err := h.Wait(ctx, "a", time.Hour)
		if err != nil {
			t.Error(err)
		}
		answered <- ok
	}()
	deadline := time.Now().Add(time.Minute)
	for held, _ := h.LongPolls(); held < 1; held, _ = h.LongPolls() {
		if time.Now().After(deadline) {
			t.Fatal("the long poll is not held")
		}
		time.Sleep(time.Millisecond)
	}
	h.Drain()
	h.Drain() // twice is fine
	select {
	case ok := <-answered:
		if ok {
			t.Fatal("a drained long poll answered as woken by a command")
		}
	case <-time.After(time.Minute):
		t.Fatal("the long poll was not answered after Drain")
	}
	if held, _ := h.LongPolls(); held != 0 {
		t.Fatalf("%d long polls still held", held)
	}
	later := make(chan error, 1)
	go func() { _, err := h.Wait(ctx, "b", time.Hour); later <- err }()
	select {
	case err := <-later:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a long poll after Drain was held")
	}
}

// TestLongPollsEndOnTheGrid: a long poll ends at the first tick of the
// second its wait is due, not before, and together with the others due
// then; a command still wakes one at once, and answers true.
func TestLongPollsEndOnTheGrid(t *testing.T) {
	t.Parallel()
	h := New(storetest.Open(t), 10)
	h.seeded = true
	ctx := context.Background()
	type answer struct {
		id string
		ok bool
	}
	answered := make(chan answer, 3)
	waits := map[string]time.Duration{"a": time.Hour, "b": time.Hour + 300*time.Millisecond, "c": 2 * time.Hour}
	for id, d := range waits {
		go func() {
			ok, err := h.Wait(ctx, id, d)
			if err != nil {
				t.Error(err)
			}
			answered <- answer{id, ok}
		}()
	}
	deadline := time.Now().Add(time.Minute)
	for held, _ := h.LongPolls(); held < 3; held, _ = h.LongPolls() {
		if time.Now().After(deadline) {
			t.Fatal("the long polls are not held")
		}
		time.Sleep(time.Millisecond)
	}
	h.endPollsDue(time.Now().Unix()) // none is due yet
	for id := range waits {
		if !h.Polling(id) {
			t.Fatalf("%s ended before its wait", id)
		}
	}
	h.endPollsDue(time.Now().Add(time.Hour + 2*time.Second).Unix())
	got := map[string]bool{}
	for range 2 {
		a := <-answered
		if a.ok {
			t.Errorf("%s: answered as woken by a command", a.id)
		}
		got[a.id] = true
	}
	if !got["a"] || !got["b"] || !h.Polling("c") {
		t.Fatalf("ended %v; want a and b, c still held", got)
	}
	h.wake([]string{"c"})
	if a := <-answered; a.id != "c" || !a.ok {
		t.Fatalf("woken: %+v, want c by a command", a)
	}
	if held, _ := h.LongPolls(); held != 0 {
		t.Errorf("%d long polls still counted", held)
	}
}

// TestQueuedSoonBeforeItReturns: an action's answer does not wait for the
// other replicas to be told, but a check-in after it finds the commands
// (the API answered, then the agent checked in: its commands must be
// there) and a long poll held is woken.
func TestQueuedSoonBeforeItReturns(t *testing.T) {
	t.Parallel()
	h := New(storetest.Open(t), 2)
	h.seeded = true
	if h.MayHavePending("a") {
		t.Fatal("an endpoint without commands may have some")
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.QueuedSoon(ctx, []string{"a"})
	cancel() // the request's context ends with its answer
	if !h.MayHavePending("a") {
		t.Fatal("after QueuedSoon returned, the endpoint's commands are not seen")
	}
	if ok, err := h.Wait(context.Background(), "a", 10*time.Second); !ok || err != nil {
		t.Fatalf("a long poll after QueuedSoon: woken %v, %v", ok, err)
	}
}
