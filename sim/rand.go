package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// newRand returns the random source for one aspect (label) of one endpoint.
// Each aspect has its own stream, so adding a field to one part of the
// generator does not reshuffle every other part of the fleet.
func newRand(seed int64, index int, label string) *rand.Rand {
	h := hash64(label)
	return rand.New(rand.NewPCG(uint64(seed)^h, uint64(index)*0x9e3779b97f4a7c15+h))
}

func hash64(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// pick returns a uniformly chosen element.
func pick[T any](r *rand.Rand, xs []T) T {
	return xs[r.IntN(len(xs))]
}

// weighted returns the index chosen with probability proportional to its weight.
func weighted(r *rand.Rand, weights ...float64) int {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	x := r.Float64() * total
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

func chance(r *rand.Rand, p float64) bool { return r.Float64() < p }

// between returns an int in [lo, hi].
func between(r *rand.Rand, lo, hi int) int { return lo + r.IntN(hi-lo+1) }
