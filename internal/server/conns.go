package server

import (
	"net"
	"net/http"
	"sync/atomic"

	"github.com/patchd/patchd/internal/presence"
)

// conns counts the HTTP server's open connections (http.Server.ConnState),
// so that agent answers close theirs when the process nears its open-files
// limit (agentapi.Config.Crowded).
type conns struct {
	open    atomic.Int64
	crowded int64 // open connections past which the server is crowded; 0: never
}

// crowdedShare is the share of the open-files limit past which the server
// is crowded: the rest is kept for database connections, files and the
// connections still being accepted.
const crowdedShare = 0.9

func newConns() *conns {
	return &conns{crowded: int64(float64(presence.OpenFiles()) * crowdedShare)}
}

func (c *conns) track(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		c.open.Add(1)
	case http.StateClosed, http.StateHijacked:
		c.open.Add(-1)
	}
}

// Crowded tells whether the open connections passed the mark.
func (c *conns) Crowded() bool { return c.crowded > 0 && c.open.Load() >= c.crowded }
