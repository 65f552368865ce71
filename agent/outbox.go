package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// outbox keeps command statuses on disk until the server has them, so
// that results survive a lost connection and a restart of the agent.
// Each status is one file; names sort in the order they were queued.
type outbox struct {
	dir string
	seq atomic.Int64
}

type queuedStatus struct {
	CommandID string                   `json:"commandId"`
	Status    agentproto.CommandStatus `json:"status"`
}

func newOutbox(stateDir string) (*outbox, error) {
	dir := filepath.Join(stateDir, "outbox")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	return &outbox{dir: dir}, nil
}

// add queues a status durably.
func (o *outbox) add(commandID string, st agentproto.CommandStatus) error {
	b, err := json.Marshal(queuedStatus{CommandID: commandID, Status: st})
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	name := fmt.Sprintf("%020d-%06d.json", time.Now().UnixNano(), o.seq.Add(1)%1000000)
	tmp := filepath.Join(o.dir, "."+name)
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(o.dir, name)); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}

// pending lists the queued files in order.
func (o *outbox) pending() ([]string, error) {
	ents, err := os.ReadDir(o.dir)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// flush sends the queued statuses in order and stops at the first that
// the server could not take now (network trouble, 5xx, 429). A status the
// server refuses for good (404 command unknown, 409 already terminal, 400)
// is dropped; 401 is returned for the caller to stop.
func (o *outbox) flush(ctx context.Context, c *Client) (sent int, err error) {
	names, err := o.pending()
	if err != nil {
		return 0, err
	}
	for _, name := range names {
		path := filepath.Join(o.dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			return sent, fmt.Errorf("outbox: %w", err)
		}
		var q queuedStatus
		if err := json.Unmarshal(b, &q); err != nil || q.CommandID == "" {
			os.Remove(path) // a torn file from a crash: nothing to send
			continue
		}
		err = c.Status(ctx, q.CommandID, q.Status)
		switch st := StatusOf(err); {
		case err == nil:
		case st == 401:
			return sent, err
		case st == 400 || st == 404 || st == 409 || st == 413:
			// The server will never take it; keep the queue moving.
		default:
			return sent, err
		}
		if err := os.Remove(path); err != nil {
			return sent, fmt.Errorf("outbox: %w", err)
		}
		sent++
	}
	return sent, nil
}
