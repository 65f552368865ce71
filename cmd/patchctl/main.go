// Command patchctl is the command-line client of a patchd server's REST API
// v1: profiles with a cached token, a command for every operation, tables,
// JSON or CSV. See docs/patchctl.md and `patchctl help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/patchd/patchd/internal/ctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := ctl.Run(ctx, os.Args[1:], ctl.StdIO())
	stop()
	os.Exit(code)
}
