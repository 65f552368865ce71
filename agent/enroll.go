package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
	// CAFile trusts this CA certificate (PEM) besides the system store,
	// or, with a pinned token, must be the pinned certificate.
	CAFile string
	// InsecureHTTP allows plain http:// to a server not on loopback.
	InsecureHTTP bool
	// ReleaseKey is a release public key (base64 Ed25519) this agent
	// trusts besides the one built in: an operator's own releases.
	ReleaseKey string
	// HTTP replaces the client built from the trust decision (tests).
	HTTP *http.Client
	// Identity overrides the identity read from this computer (tests).
	Identity *collect.Identity
}

// Enroll registers this computer with the server and writes the state
// file (mode 0600) with the endpoint id, the agent secret and the server.
func Enroll(ctx context.Context, cfg EnrollConfig) (*State, error) {
	u, err := CheckServerURL(cfg.Server, cfg.InsecureHTTP)
	if err != nil {
		return nil, err
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
	if cfg.ReleaseKey != "" {
		if _, err := agentproto.ParseReleaseKey(cfg.ReleaseKey); err != nil {
			return nil, fmt.Errorf("--release-key: %w", err)
		}
	}
	server := strings.TrimRight(u.String(), "/")
	token, pin := agentproto.SplitEnrollToken(cfg.Token)
	st := &State{Server: server, InsecureHTTP: cfg.InsecureHTTP, ReleaseKey: strings.TrimSpace(cfg.ReleaseKey)}
	ectx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := trustForEnroll(ectx, st, u, pin, cfg.CAFile); err != nil {
		return nil, fmt.Errorf("enroll: %w", err)
	}
	hc := cfg.HTTP
	if hc == nil {
		if hc, err = st.HTTPClient(); err != nil {
			return nil, err
		}
	}
	c := &Client{Base: server, HTTP: hc}
	resp, err := c.Enroll(ectx, agentproto.EnrollRequest{
		EnrollToken: token, MachineUID: id.MachineUID, Hostname: id.Hostname,
		Platform: id.Platform, OS: id.OS, OSVersion: id.OSVersion, Arch: id.Arch, AgentVersion: Version,
		InsecureChannel: insecureChannel(u),
	})
	if err != nil {
		return nil, fmt.Errorf("enroll: %w", err)
	}
	if resp.EndpointID == "" || resp.AgentSecret == "" {
		return nil, fmt.Errorf("enroll: the server's answer lacks endpointId or agentSecret")
	}
	st.EndpointID, st.AgentSecret, st.CheckinSeconds = resp.EndpointID, resp.AgentSecret, resp.CheckinSeconds
	st.EnrolledAt = time.Now().UTC().Truncate(time.Second)
	if err := st.Save(cfg.StateDir); err != nil {
		return nil, err
	}
	return st, nil
}
