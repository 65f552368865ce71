package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/patchd/patchd/agent/collect"
	"github.com/patchd/patchd/agentproto"
)

// EnrollConfig is what `patchd-agent enroll` needs.
type EnrollConfig struct {
	Server   string
	Token    string
	StateDir string
	HTTP     *http.Client
	// Identity overrides the identity read from this computer (tests).
	Identity *collect.Identity
}

// Enroll registers this computer with the server and writes the state
// file (mode 0600) with the endpoint id, the agent secret and the server.
func Enroll(ctx context.Context, cfg EnrollConfig) (*State, error) {
	u, err := url.Parse(cfg.Server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("--server must be an http(s) address, got %q", cfg.Server)
	}
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, fmt.Errorf("--token is required")
	}
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir()
	}
	var id collect.Identity
	if cfg.Identity != nil {
		id = *cfg.Identity
	} else if id, err = collect.MachineIdentity(ctx); err != nil && !errors.Is(err, collect.ErrNoMachineID) {
		return nil, fmt.Errorf("read this computer's identity: %w", err)
	}
	// Without an OS machine id (or with one the agent made before) the
	// id kept in the state folder is used.
	osID := id.MachineUID
	if id.MachineUID, err = machineUID(cfg.StateDir, osID); err != nil {
		if osID == "" {
			return nil, fmt.Errorf("this computer has no machine id (/etc/machine-id, /var/lib/dbus/machine-id) and the agent cannot keep one of its own: %w", err)
		}
		return nil, fmt.Errorf("machine id: %w", err)
	}
	server := strings.TrimRight(cfg.Server, "/")
	c := &Client{Base: server, HTTP: cfg.HTTP}
	ectx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := c.Enroll(ectx, agentproto.EnrollRequest{
		EnrollToken: strings.TrimSpace(cfg.Token), MachineUID: id.MachineUID, Hostname: id.Hostname,
		Platform: id.Platform, OS: id.OS, OSVersion: id.OSVersion, Arch: id.Arch, AgentVersion: Version,
	})
	if err != nil {
		return nil, fmt.Errorf("enroll: %w", err)
	}
	if resp.EndpointID == "" || resp.AgentSecret == "" {
		return nil, fmt.Errorf("enroll: the server's answer lacks endpointId or agentSecret")
	}
	st := &State{Server: server, EndpointID: resp.EndpointID, AgentSecret: resp.AgentSecret,
		CheckinSeconds: resp.CheckinSeconds, EnrolledAt: time.Now().UTC().Truncate(time.Second)}
	if err := st.Save(cfg.StateDir); err != nil {
		return nil, err
	}
	return st, nil
}
