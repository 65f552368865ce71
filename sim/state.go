package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// stateFile is what --state keeps between runs: enough to resume the same
// endpoints without enrolling them again.
type stateFile struct {
	Version   int             `json:"version"`
	Server    string          `json:"server"`
	Seed      int64           `json:"seed"`
	SavedAt   time.Time       `json:"savedAt"`
	Endpoints []endpointState `json:"endpoints"`
}

type endpointState struct {
	Index         int       `json:"index"`
	MachineUID    string    `json:"machineUid"`
	Hostname      string    `json:"hostname"`
	EndpointID    string    `json:"endpointId"`
	AgentSecret   string    `json:"agentSecret"`
	InventoryHash string    `json:"inventoryHash,omitempty"`
	LastBootAt    time.Time `json:"lastBootAt"`
	PendingReboot bool      `json:"pendingReboot"`
	Stopped       bool      `json:"stopped,omitempty"`
	Changes       changes   `json:"changes"`
	// AgentVersion and RefusedReleases: where self-update left the agent.
	AgentVersion    string   `json:"agentVersion,omitempty"`
	RefusedReleases []string `json:"refusedReleases,omitempty"`
}

func (f *Fleet) loadState() error {
	b, err := os.ReadFile(f.cfg.StatePath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sim: read state: %w", err)
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("sim: read state %s: %w", f.cfg.StatePath, err)
	}
	if st.Seed != f.cfg.Seed {
		return fmt.Errorf("sim: state %s was written with seed %d, not %d", f.cfg.StatePath, st.Seed, f.cfg.Seed)
	}
	if st.Server != f.cfg.Server {
		return fmt.Errorf("sim: state %s belongs to server %s, not %s", f.cfg.StatePath, st.Server, f.cfg.Server)
	}
	byIndex := make(map[int]*agent, len(f.agents))
	for _, a := range f.agents {
		byIndex[a.index] = a
	}
	for _, e := range st.Endpoints {
		a, ok := byIndex[e.Index]
		if !ok || e.AgentSecret == "" || e.MachineUID != a.prof.machineUID {
			continue
		}
		a.endpointID, a.secret, a.invHash = e.EndpointID, e.AgentSecret, e.InventoryHash
		a.lastBoot, a.pendingReboot, a.stopped, a.ch = e.LastBootAt, e.PendingReboot, e.Stopped, e.Changes
		if e.AgentVersion != "" {
			a.version = e.AgentVersion
		}
		a.refused = e.RefusedReleases
		f.stats.resumed.Add(1)
	}
	return nil
}

// saveState writes the state file atomically with mode 0600: it holds secrets.
func (f *Fleet) saveState() error {
	if f.cfg.StatePath == "" {
		return nil
	}
	f.saveMu.Lock()
	defer f.saveMu.Unlock()
	st := stateFile{Version: 1, Server: f.cfg.Server, Seed: f.cfg.Seed, SavedAt: time.Now().UTC()}
	for _, a := range f.agents {
		a.mu.Lock()
		if a.secret != "" {
			e := endpointState{
				Index: a.index, MachineUID: a.prof.machineUID, Hostname: a.prof.hostname,
				EndpointID: a.endpointID, AgentSecret: a.secret, InventoryHash: a.invHash,
				LastBootAt: a.lastBoot, PendingReboot: a.pendingReboot, Stopped: a.stopped,
				Changes: a.ch, AgentVersion: a.version, RefusedReleases: slices.Clone(a.refused),
			}
			if a.invDirty {
				e.InventoryHash = "" // unsent changes: the next run sends a fresh inventory
			}
			e.Changes.Installed = make(map[string]string, len(a.ch.Installed))
			for k, v := range a.ch.Installed {
				e.Changes.Installed[k] = v
			}
			e.Changes.Added = append([]string(nil), a.ch.Added...)
			e.Changes.Removed = append([]string(nil), a.ch.Removed...)
			st.Endpoints = append(st.Endpoints, e)
		}
		a.mu.Unlock()
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("sim: save state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.cfg.StatePath), ".patchd-sim-state-*")
	if err != nil {
		return fmt.Errorf("sim: save state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("sim: save state: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("sim: save state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("sim: save state: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.cfg.StatePath); err != nil {
		return fmt.Errorf("sim: save state: %w", err)
	}
	return nil
}
