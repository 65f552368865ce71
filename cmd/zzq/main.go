package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/patchd/patchd/internal/store"
)

func main() {
	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite:"+os.Args[1], os.TempDir(), store.Options{})
	if err != nil {
		panic(err)
	}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	var cold time.Duration
	for i := 0; i < 20; i++ {
		time.Sleep(time.Second)
		t0 := time.Now()
		s.AuthChangesSince(ctx, time.Now())
		cold += time.Since(t0)
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano())
	fmt.Printf("cold: %.1f µs wall per call; process CPU over 20 s: %v\n", float64(cold.Microseconds())/20, cpu)
	for _, write := range []bool{false, true} {
		var total time.Duration
		for i := 0; i < 2000; i++ {
			if write {
				if err := s.PublishPresenceWatermark(ctx, "x", time.Now(), time.Now()); err != nil {
					panic(err)
				}
			}
			t0 := time.Now()
			if _, err := s.AuthChangesSince(ctx, time.Now()); err != nil {
				panic(err)
			}
			total += time.Since(t0)
		}
		fmt.Printf("writes between: %v: %.1f µs per AuthChangesSince\n", write, float64(total.Microseconds())/2000)
	}
}
