// Package clock is a clock that tests may move while the code that reads it
// runs in other goroutines.
package clock

import (
	"sync/atomic"
	"time"
)

// Clock reads time.Now unless Set replaced it. The zero value is ready.
type Clock struct {
	f atomic.Pointer[func() time.Time]
}

// Now is the current time of the clock.
func (c *Clock) Now() time.Time {
	if f := c.f.Load(); f != nil {
		return (*f)()
	}
	return time.Now()
}

// Set replaces the clock.
func (c *Clock) Set(now func() time.Time) { c.f.Store(&now) }
