//go:build !linux && !windows && !darwin

package collect

import (
	"context"
	"fmt"
	"os"

	"github.com/patchd/patchd/agentproto"
)

// Other systems get the portable parts only: host name, network and the
// agent's environment.
func collectPlatform(ctx context.Context, c *collector) {
	if ads, err := adapters(); err == nil {
		c.inv.System.MACAddresses = macAddresses(ads)
	}
	c.setDataset(agentproto.DatasetEnvironmentVariables, environmentRows(os.Environ()))
}

func platformFacts(ctx context.Context, c *collector) Facts { return Facts{} }

func platformIdentity(ctx context.Context, c *collector, id *Identity) error {
	return fmt.Errorf("machine identity is not supported on this system")
}
