// Command patchd is the patchd server and its administration.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/patchd/patchd/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
