package agentapi

import "time"

// InventoriesInProgress is how many inventory slots are held: the tests
// wait on it instead of guessing when a slow upload has its slot.
func (a *API) InventoriesInProgress() int { return len(a.inventories) }

// AgentTTL is how long a cached agent lasts at most on the API's engine,
// for the tests of the agent cache.
func (a *API) AgentTTL() time.Duration { return a.ttl() }

// PostgresAgentTTL is agentTTL, which replicas sharing a database keep.
const PostgresAgentTTL = agentTTL

// HoldDecoding takes every decoding slot until release is called.
func (a *API) HoldDecoding() (release func()) {
	n := cap(a.decoding)
	for range n {
		a.decoding <- struct{}{}
	}
	return func() {
		for range n {
			<-a.decoding
		}
	}
}

// DecodeWaits is how many inventory documents wait for a decoding slot.
func (a *API) DecodeWaits() int { return int(a.decodeWaits.Load()) }
