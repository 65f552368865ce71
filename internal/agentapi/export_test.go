package agentapi

// InventoriesInProgress is how many inventory slots are held: the tests
// wait on it instead of guessing when a slow upload has its slot.
func (a *API) InventoriesInProgress() int { return len(a.inventories) }

// AgentTTL is agentTTL, for the tests of the agent cache.
const AgentTTL = agentTTL
