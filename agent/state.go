// Package agent is patchd-agent: enrollment, the state it keeps on disk,
// the protocol client and the run loop that checks in, sends inventory,
// runs commands and reports their results (agent protocol v1,
// docs/design/agent-protocol.md). It imports nothing of the server.
package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// Version is the agent's version, reported at enrollment and check-in.
var Version = "1.0.0"

// StateFileName is the state file inside the state folder.
const StateFileName = "state.json"

// State is what the agent remembers between runs. It holds the agent
// secret: the file is written with mode 0600 in a 0700 folder.
type State struct {
	Server         string    `json:"server"`
	EndpointID     string    `json:"endpointId"`
	AgentSecret    string    `json:"agentSecret"`
	CheckinSeconds int       `json:"checkinSeconds"`
	EnrolledAt     time.Time `json:"enrolledAt"`
	// CASHA256 is the pin from the enrollment token: the hex SHA-256 of
	// CAPEM, the only certificate the server's chain may end in. Empty:
	// the system store (plus CAPEM when --ca-file was given).
	CASHA256 string `json:"caSha256,omitempty"`
	// CAPEM is the pinned CA, or the --ca-file certificate.
	CAPEM string `json:"caPem,omitempty"`
	// InsecureHTTP records that enrollment was told --insecure-http: the
	// agent may talk plain HTTP to a server that is not on loopback.
	InsecureHTTP bool `json:"insecureHttp,omitempty"`
	// RefreshSeconds is how often the server wants the package metadata
	// refreshed before an inventory (0: DefaultRefreshInterval).
	RefreshSeconds int `json:"refreshSeconds,omitempty"`
	// NextRefreshAt is when the next refresh is due: the last one plus
	// RefreshSeconds spread with jitter. Nil: at the next check-in.
	NextRefreshAt *time.Time `json:"nextRefreshAt,omitempty"`
	// ReleaseKey is the release public key pinned at enrollment
	// (--release-key), trusted besides the built-in ReleaseKey.
	ReleaseKey string `json:"releaseKey,omitempty"`
	// Update is a self-update in progress: the new binary runs and has
	// not checked in yet.
	Update *PendingUpdate `json:"update,omitempty"`
	// RefusedReleases are the SHA-256 of releases refused or rolled back:
	// not tried again (a release published anew has another hash).
	RefusedReleases []string `json:"refusedReleases,omitempty"`
	// RefusedDowngrades are the SHA-256 of releases refused under the
	// policy "latest" for not being newer than this agent: reported once,
	// and kept apart from RefusedReleases because a policy that names
	// exactly that version (an administrator's rollback) may still be
	// followed.
	RefusedDowngrades []string `json:"refusedDowngrades,omitempty"`
	// UpdateFailure is the last refused or rolled-back release not yet
	// reported: sent with the check-ins until one is answered.
	UpdateFailure *agentproto.UpdateFailure `json:"updateFailure,omitempty"`
	// InventoryHash is the hash of the last inventory the server took.
	InventoryHash string `json:"inventoryHash,omitempty"`
	// RebootPendingSince is the boot time at which an installation asked
	// for a restart: the restart is pending while the computer has not
	// booted since.
	RebootPendingSince *time.Time `json:"rebootPendingSince,omitempty"`
	// Done lists the latest commands this agent ran, so that a command
	// handed out twice (a status lost in flight) does not run twice.
	Done []string `json:"done,omitempty"`
}

// maxDone bounds State.Done.
const maxDone = 200

// DefaultStateDir is where the agent keeps its state on this platform.
func DefaultStateDir() string {
	switch runtime.GOOS {
	case "windows":
		pd := os.Getenv("ProgramData")
		if pd == "" {
			pd = `C:\ProgramData`
		}
		return filepath.Join(pd, "patchd-agent")
	case "darwin":
		return "/Library/Application Support/patchd-agent"
	default:
		return "/var/lib/patchd-agent"
	}
}

// ErrNotEnrolled: there is no state file; run `patchd-agent enroll` first.
var ErrNotEnrolled = errors.New("this computer is not enrolled: run patchd-agent enroll first")

// LoadState reads the state file of dir.
func LoadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotEnrolled
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read state %s: %w", filepath.Join(dir, StateFileName), err)
	}
	if s.Server == "" || s.AgentSecret == "" {
		return nil, fmt.Errorf("state %s lacks server or secret: enroll again", filepath.Join(dir, StateFileName))
	}
	return &s, nil
}

// Save writes the state atomically (a temporary file renamed over the
// old one) with mode 0600.
func (s *State) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	if err := replaceFile(filepath.Join(dir, StateFileName), string(b), 0o600); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

func (s *State) done(id string) bool {
	for _, d := range s.Done {
		if d == id {
			return true
		}
	}
	return false
}

func (s *State) markDone(id string) {
	s.Done = append(s.Done, id)
	if len(s.Done) > maxDone {
		s.Done = s.Done[len(s.Done)-maxDone:]
	}
}
