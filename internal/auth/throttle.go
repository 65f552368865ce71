package auth

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/patchd/patchd/internal/store"
)

// Limit is how many failed attempts a key may make within one window.
type Limit struct {
	Max    int
	Window time.Duration
}

// Key is a throttle key (a source address, or a pair of an account and an
// address) with its limit.
type Key struct {
	Name string
	Limit
}

// Throttle counts failed attempts per key in the store, so that every
// replica agrees. An attempt is reserved on each of its keys with one
// atomic write before the secret is checked: however many attempts arrive
// at once, no more than Max of a key are checked in a window. An attempt
// that succeeds gives its reservation back, so only failures count.
type Throttle struct {
	store *store.Store
}

// NewThrottle makes a Throttle on the store.
func NewThrottle(s *store.Store) *Throttle { return &Throttle{store: s} }

// Attempt is an attempt reserved on its keys.
type Attempt struct {
	t    *Throttle
	held []held
}

type held struct {
	key   string
	start time.Time
}

// Begin reserves an attempt on each key, in order. When a key is past its
// limit, the reservations made so far are given back and the answer is a
// *RateLimitedError telling when that key's window ends: the attempt must
// not be made.
func (t *Throttle) Begin(ctx context.Context, now time.Time, keys ...Key) (*Attempt, error) {
	a := &Attempt{t: t}
	for _, k := range keys {
		n, start, err := t.store.ReserveAttempt(ctx, k.Name, now, k.Window)
		if err != nil {
			a.Release(context.WithoutCancel(ctx))
			return nil, err
		}
		a.held = append(a.held, held{key: k.Name, start: start})
		if n > k.Max {
			a.Release(context.WithoutCancel(ctx))
			return nil, &RateLimitedError{RetryAfter: max(start.Add(k.Window).Sub(now), time.Second)}
		}
	}
	return a, nil
}

// Release gives the attempt back: it succeeded, or it was not made. An
// attempt that failed is simply not released.
func (a *Attempt) Release(ctx context.Context) {
	for _, h := range a.held {
		if err := a.t.store.ReleaseAttempt(ctx, h.key, h.start); err != nil && !errors.Is(err, context.Canceled) {
			// The attempt stays counted until its window ends: the
			// limit errs on the safe side.
			slog.Warn("auth: release a throttled attempt", "key", h.key, "err", err)
		}
	}
	a.held = nil
}
