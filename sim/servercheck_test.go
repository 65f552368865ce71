package sim

import (
	"testing"
	"time"

	"github.com/patchd/patchd/internal/inventory"
)

// TestServerAcceptsInventories runs generated inventories through the
// server's own validation and update-key derivation: none may be refused,
// and no two updates of an endpoint may share a key (the server would keep
// only one).
func TestServerAcceptsInventories(t *testing.T) {
	for i := range 800 {
		p := newProfile(1, i)
		inv := Generate(1, i)
		n := len(inv.Updates)
		norm, err := inventory.Check(&inv, p.platform, p.os.distro, time.Now())
		if err != nil {
			t.Fatalf("endpoint %d (%s): server refuses the inventory: %v", i, p.hostname, err)
		}
		if len(norm.Updates) != n {
			t.Errorf("endpoint %d (%s): %d updates collapse to %d keys", i, p.hostname, n, len(norm.Updates))
		}
	}
}
