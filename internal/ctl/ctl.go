// Package ctl is patchctl, the command-line client of the REST API v1: the
// command table, flag parsing, profiles and token cache, output as tables,
// JSON or CSV, and the exit codes scripts rely on. Every command goes
// through the Go client (package client); cmd/patchctl only calls Run.
package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/version"
)

// Exit codes of patchctl.
const (
	ExitOK          = 0
	ExitFailure     = 1 // a local problem: config folder, file, unreadable answer
	ExitUsage       = 2 // bad command, flag or argument; not logged in
	ExitAPI         = 3 // the server answered with the Error shape
	ExitNetwork     = 4 // the server could not be reached
	ExitRunFailed   = 5 // a watched run ended with failed commands
	ExitInterrupted = 130
)

// IO is what a patchctl invocation reads and writes.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// HTTPClient replaces the default client (60 s timeout); tests use it.
	HTTPClient *http.Client
	// IsTerminal tells whether a stream is a terminal; nil checks *os.File
	// descriptors with golang.org/x/term.
	IsTerminal func(stream any) bool
}

// StdIO is the process's standard streams and environment.
func StdIO() IO { return IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr} }

// command is one entry of the command table. setup registers the command's
// flags on fs and returns the function that runs it with the positional
// arguments.
type command struct {
	name    string // "endpoints list"
	args    string // synopsis of flags and arguments
	summary string
	setup   func(fs *flag.FlagSet) func(s *session, args []string) error
}

var commands []command

func init() {
	commands = append(commands, loginCommands()...)
	commands = append(commands, endpointCommands()...)
	commands = append(commands, updateCommands()...)
	commands = append(commands, inventoryCommands()...)
	commands = append(commands, agentCommands()...)
	commands = append(commands, complianceCommands()...)
	commands = append(commands, ssoCommands()...)
	commands = append(commands, groupCommands()...)
	commands = append(commands, automationCommands()...)
	commands = append(commands, runCommands()...)
	commands = append(commands, reportCommands()...)
	commands = append(commands, alertCommands()...)
	commands = append(commands, scriptCommands()...)
	commands = append(commands, enrollTokenCommands()...)
	commands = append(commands, auditCommands()...)
	commands = append(commands, runOpCommands()...)
	commands = append(commands, alertOpCommands()...)
	commands = append(commands, policyCommands()...)
	commands = append(commands, userCommands()...)
	commands = append(commands, roleCommands()...)
	commands = append(commands, orgCommands()...)
	commands = append(commands, credentialCommands()...)
	commands = append(commands, completionCommands()...)
}

// usageError is a mistake in the command line (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// runFailedError reports a watched run that ended with failures (exit 5).
type runFailedError struct{ failed int }

func (e *runFailedError) Error() string {
	return fmt.Sprintf("the run ended with %d failed command(s)", e.failed)
}

// Run runs patchctl with args (without the program name) and answers the
// exit code.
func Run(ctx context.Context, args []string, stdio IO) int {
	s := newSession(ctx, stdio)
	top := flag.NewFlagSet("patchctl", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	s.globals.register(top)
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(s.io.Stdout)
			return ExitOK
		}
		return s.fail(usagef("%v", err), nil)
	}
	rest := top.Args()
	if len(rest) == 0 {
		printHelp(s.io.Stderr)
		return ExitUsage
	}
	if rest[0] == "help" {
		return helpCommand(s, rest[1:])
	}
	if rest[0] == "version" || rest[0] == "--version" {
		fmt.Fprintln(s.io.Stdout, "patchctl", version.Get())
		return ExitOK
	}
	if rest[0] == "__complete" {
		complete(s.io.Stdout, rest[1:])
		return ExitOK
	}
	cmd, words := lookup(rest)
	if cmd == nil {
		return s.fail(usagef("unknown command %q", strings.Join(rest[:min(2, len(rest))], " ")), nil)
	}
	fs := flag.NewFlagSet("patchctl "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.globals.register(fs)
	runner := cmd.setup(fs)
	positional, err := parseInterleaved(fs, rest[words:])
	if errors.Is(err, flag.ErrHelp) {
		printCommandHelp(s.io.Stdout, cmd)
		return ExitOK
	}
	if err != nil {
		return s.fail(usagef("%v", err), cmd)
	}
	if err := s.init(); err != nil {
		return s.fail(err, cmd)
	}
	err = runner(s, positional)
	s.saveToken()
	return s.fail(err, cmd)
}

// lookup finds the command named by the first one or two words.
func lookup(words []string) (*command, int) {
	if len(words) >= 2 {
		for i := range commands {
			if commands[i].name == words[0]+" "+words[1] {
				return &commands[i], 2
			}
		}
	}
	for i := range commands {
		if commands[i].name == words[0] {
			return &commands[i], 1
		}
	}
	return nil, 0
}

// parseInterleaved parses flags placed before, between and after the
// positional arguments (`endpoints get ID -o json`); everything after "--"
// is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		consumed := args[:len(args)-len(rest)]
		if len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// fail prints err the way its class asks and answers the exit code.
func (s *session) fail(err error, cmd *command) int {
	s.progressDone()
	if err == nil {
		return ExitOK
	}
	w := s.io.Stderr
	var ue *usageError
	var ae *client.Error
	var rf *runFailedError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(w, "patchctl: %s\n", ue.msg)
		if cmd != nil {
			fmt.Fprintf(w, "usage: patchctl %s %s\n", cmd.name, cmd.args)
		}
		fmt.Fprintln(w, "Run 'patchctl help' for the list of commands.")
		return ExitUsage
	case errors.As(err, &ae):
		fmt.Fprintf(w, "patchctl: %s (HTTP %d)", s.paint(red, ae.Code), ae.Status)
		if ae.Description != "" {
			fmt.Fprintf(w, ": %s", ae.Description)
		}
		fmt.Fprintln(w)
		for _, d := range ae.Details {
			if line := d.Field + ": " + d.Message; !strings.Contains(ae.Description, line) {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
		if ae.RetryAfter > 0 {
			fmt.Fprintf(w, "  retry after %s\n", ae.RetryAfter)
		}
		return ExitAPI
	case errors.As(err, &rf):
		fmt.Fprintf(w, "patchctl: %v\n", rf)
		return ExitRunFailed
	case s.ctx.Err() != nil:
		fmt.Fprintln(w, "patchctl: interrupted")
		return ExitInterrupted
	case isNetwork(err):
		fmt.Fprintf(w, "patchctl: cannot reach the server: %v\n", err)
		return ExitNetwork
	default:
		fmt.Fprintf(w, "patchctl: %v\n", err)
		return ExitFailure
	}
}

func isNetwork(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}

const exitCodesHelp = `Exit codes:
  0  success
  1  local failure (config folder, file, unreadable answer)
  2  usage error (unknown command, bad flag or argument, not logged in)
  3  API error: the server answered with an error code and description
  4  network error: the server could not be reached
  5  runs get --watch / actions run --watch: the run ended with failed commands
`

const globalHelp = `Global flags (before or after the command):
  --profile NAME     profile to use (default: the last one logged in; env PATCHCTL_PROFILE)
  --org NAME         use the profile of organization NAME, saved by login --org NAME (env PATCHCTL_ORG):
                     an API credential belongs to one organization, so each has its own profile
  --server URL       server address, overrides the profile (env PATCHCTL_SERVER)
  --client-id ID     API client id, overrides the profile (env PATCHCTL_CLIENT_ID)
  -o, --output FMT   table, json or csv (default: the profile's, else table)
  --color WHEN       auto, always or never (default auto: only on a terminal, unless NO_COLOR is set)
Environment: PATCHCTL_CLIENT_SECRET (the secret, instead of the profile's file),
  PATCHCTL_CONFIG_DIR (folder of profiles, default <user config dir>/patchctl).
`

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "patchctl is the command-line client of a patchd server's REST API v1.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: patchctl [global flags] COMMAND [flags] [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, globalHelp)
	fmt.Fprintln(w)
	fmt.Fprint(w, exitCodesHelp)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'patchctl help COMMAND' or 'patchctl COMMAND -h' for a command's flags;")
	fmt.Fprintln(w, "'patchctl version' prints the version, commit and build date.")
}

func printCommandHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "patchctl %s: %s\n\nUsage: patchctl %s %s\n", c.name, c.summary, c.name, c.args)
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.setup(fs)
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		line := "  " + dash + f.Name
		if name != "" {
			line += " " + name
		}
		line += "\n      " + usage
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			line += " (default " + f.DefValue + ")"
		}
		lines = append(lines, line)
	})
	sort.Strings(lines)
	if len(lines) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, globalHelp)
}

func helpCommand(s *session, args []string) int {
	if len(args) == 0 {
		printHelp(s.io.Stdout)
		return ExitOK
	}
	cmd, _ := lookup(args)
	if cmd == nil {
		return s.fail(usagef("unknown command %q", strings.Join(args, " ")), nil)
	}
	printCommandHelp(s.io.Stdout, cmd)
	return ExitOK
}

// noFlags is the setup of a command without flags of its own.
func noFlags(run func(*session, []string) error) func(*flag.FlagSet) func(*session, []string) error {
	return func(*flag.FlagSet) func(*session, []string) error { return run }
}

// withClient is the runner of a command that takes the positional
// arguments named in names (space-separated, "" for none) and calls the
// API: a wrong count is a usage error, and the client is built only once
// the arguments are right.
func withClient(names string, call func(s *session, c *client.Client, args []string) error) func(*session, []string) error {
	return withChecked(names, func(*session, []string) (struct{}, error) { return struct{}{}, nil },
		func(s *session, c *client.Client, args []string, _ struct{}) error { return call(s, c, args) })
}

// errNothingDone, answered by a check, ends the command with success
// before the client is built (a "no" to a confirmation).
var errNothingDone = errors.New("nothing done")

// withChecked is withClient with a check between the arguments and the
// client: check reads the flags (and any file or stdin) into what call
// sends. Its usage errors come before the client is built, so "not logged
// in" never hides a mistake on the command line.
func withChecked[T any](names string, check func(s *session, args []string) (T, error), call func(s *session, c *client.Client, args []string, v T) error) func(*session, []string) error {
	want := strings.Fields(names)
	return func(s *session, args []string) error {
		if err := needArgs(args, want...); err != nil {
			return err
		}
		v, err := check(s, args)
		if errors.Is(err, errNothingDone) {
			return nil
		}
		if err != nil {
			return err
		}
		c, err := s.client()
		if err != nil {
			return err
		}
		return call(s, c, args, v)
	}
}

// deleteCommand is a command that deletes (or revokes) the object its one
// argument names and says so with text, whose %s is the argument.
func deleteCommand(name, arg, summary, text string, del func(*client.Client, context.Context, string) error) command {
	return command{name: name, args: arg, summary: summary,
		setup: noFlags(withClient(arg, func(s *session, c *client.Client, args []string) error {
			if err := del(c, s.ctx, args[0]); err != nil {
				return err
			}
			return s.done(apiv1.OK{OK: true}, text, args[0])
		}))}
}

// getCommand is a command that shows the one object its argument names.
func getCommand[T any](name, arg, summary string, get func(*client.Client, context.Context, string) (T, error), cols []column[T], pairs func(T) [][2]string) command {
	return command{name: name, args: arg, summary: summary,
		setup: noFlags(withClient(arg, func(s *session, c *client.Client, args []string) error {
			v, err := get(c, s.ctx, args[0])
			if err != nil {
				return err
			}
			return printOne(s, v, cols, pairs)
		}))}
}

// listCommand is a command without arguments that prints a whole list the
// server answers (groups, automations, alert rules, the report catalog).
func listCommand[T any](name, summary string, cols []column[T], list func(*client.Client, context.Context) (apiv1.List[T], error)) command {
	return command{name: name, summary: summary,
		setup: noFlags(withClient("", func(s *session, c *client.Client, _ []string) error {
			l, err := list(c, s.ctx)
			if err != nil {
				return err
			}
			return printList(s, cols, sliceSeq(l.Items))
		}))}
}
