package store

import "testing"

func TestNewIDIncreases(t *testing.T) {
	prev := NewID()
	for i := 0; i < 100000; i++ {
		id := NewID()
		if len(id) != 32 || id <= prev {
			t.Fatalf("id %d: %s after %s", i, id, prev)
		}
		prev = id
	}
}
