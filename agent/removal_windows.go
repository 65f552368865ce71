package agent

import (
	"context"
	"errors"
	"log/slog"
)

// startRemoval is not used on Windows: the removal runs in the agent
// (sc.exe delete, then stop).
func startRemoval(ctx context.Context, exe, stateDir string, log *slog.Logger) error {
	return errors.New("not on Windows")
}

func quietly(name string, args ...string) error { return errors.New("not on Windows") }
