package agent

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// MachineIDFileName holds, in the state folder, the machine id the agent
// made for a computer whose operating system keeps none (a minimal Debian
// or a container without /etc/machine-id), as other agents do.
const MachineIDFileName = "machine-id"

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// machineUID is the id to enroll with. An id the agent made before (kept
// in dir) comes first, so that the endpoint stays the same across
// restarts and re-enrollments with this state even if the system gets an
// id of its own later; else the operating system's id (osID); else a new
// random id, written to dir before it is used.
func machineUID(dir, osID string) (string, error) {
	file := filepath.Join(dir, MachineIDFileName)
	b, err := os.ReadFile(file)
	switch {
	case err == nil:
		if id := strings.TrimSpace(string(b)); generatedID.MatchString(id) {
			return id, nil
		}
		return "", fmt.Errorf("%s does not hold a machine id (32 hexadecimal digits): remove it to make a new one", file)
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("read the agent's machine id: %w", err)
	}
	if osID != "" {
		return osID, nil
	}
	var raw [16]byte
	rand.Read(raw[:])
	id := hex.EncodeToString(raw[:])
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("keep a machine id in %s: %w", dir, err)
	}
	err = replaceFile(file, id+"\n", 0o600)
	if err != nil {
		return "", fmt.Errorf("keep a machine id in %s: %w", dir, err)
	}
	return id, nil
}
