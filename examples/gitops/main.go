// Command gitops keeps a patchd organization's groups, automations and
// alert rules as a folder of JSON files, one request body a file, so that
// they live in git and are applied by CI:
//
//	go run ./examples/gitops --dir examples/gitops/config --dry-run
//	go run ./examples/gitops --dir examples/gitops/config [--prune]
//
// It reads PATCHD_SERVER, PATCHD_CLIENT_ID and PATCHD_CLIENT_SECRET (or
// --server, --client-id), compares every file with the object of the same
// name on the server, prints the plan (what it creates, updates with the
// fields that differ, and with --prune deletes), and applies it unless
// --dry-run. docs/gitops.md describes the folder.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"

	"github.com/patchd/patchd/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, nil)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitops:", err)
		os.Exit(1)
	}
}

// run parses the command line and syncs; httpClient nil is the default.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, httpClient *http.Client) error {
	fs := flag.NewFlagSet("gitops", flag.ContinueOnError)
	dir := fs.String("dir", "", "the `FOLDER` holding groups/, automations/ and alerts/ (*.json)")
	dryRun := fs.Bool("dry-run", false, "print the plan and change nothing")
	prune := fs.Bool("prune", false, "also delete the groups, automations and alert rules that have no file (built-in groups stay)")
	server := fs.String("server", getenv("PATCHD_SERVER"), "patchd `URL` (env PATCHD_SERVER)")
	clientID := fs.String("client-id", getenv("PATCHD_CLIENT_ID"), "API credential `ID` (env PATCHD_CLIENT_ID; the secret in PATCHD_CLIENT_SECRET)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	secret := getenv("PATCHD_CLIENT_SECRET")
	switch {
	case fs.NArg() != 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *dir == "":
		return errors.New("--dir is required")
	case *server == "" || *clientID == "" || secret == "":
		return errors.New("give --server and --client-id (or PATCHD_SERVER, PATCHD_CLIENT_ID) and PATCHD_CLIENT_SECRET")
	}
	var opts []client.Option
	if httpClient != nil {
		opts = append(opts, client.WithHTTPClient(httpClient))
	}
	c := client.New(strings.TrimRight(*server, "/"), *clientID, secret, opts...)
	desired, err := Load(*dir)
	if err != nil {
		return err
	}
	s := &Syncer{c: c, out: stdout, dryRun: *dryRun, prune: *prune}
	return s.Sync(ctx, desired)
}
