package store

import (
	"testing"
	"time"
)

// TestLagBehind: the lag is the age of the newest primary sample the
// standby replayed; an idle primary (equal samples) leaves a caught-up
// standby at zero however long ago anything was written; with the primary
// down the lag counts up to its last sample.
func TestLagBehind(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	idle := []lsnSample{{at(0), 100}, {at(1), 100}, {at(2), 100}, {at(3), 100}}
	busy := []lsnSample{{at(0), 100}, {at(1), 200}, {at(2), 300}, {at(3), 400}}
	for _, c := range []struct {
		name     string
		samples  []lsnSample
		replayed uint64
		up       bool
		now      time.Time
		want     time.Duration
	}{
		{"idle primary, caught up", idle, 100, true, at(3), 0},
		{"busy primary, caught up", busy, 400, true, at(3), 0},
		{"busy primary, replayed past the sample of 1 s", busy, 250, true, at(3), 2 * time.Second},
		{"behind every sample", busy, 50, true, at(5), 5 * time.Second},
		{"primary down, caught up to its last sample", busy, 400, false, at(60), 0},
		{"primary down, behind", busy, 200, false, at(60), 2 * time.Second},
		{"no samples", nil, 1, false, at(60), 0},
	} {
		if got := lagBehind(c.samples, c.replayed, c.up, c.now); got != c.want {
			t.Errorf("%s: lag %s, want %s", c.name, got, c.want)
		}
	}
}

func TestParseLSN(t *testing.T) {
	got, err := parseLSN("16/B374D848")
	if err != nil || got != 0x16<<32|0xB374D848 {
		t.Errorf("parseLSN: %x, %v", got, err)
	}
	if _, err := parseLSN("nope"); err == nil {
		t.Error("parseLSN accepted nope")
	}
}
