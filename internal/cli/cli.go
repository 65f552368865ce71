// Package cli is patchd's command line: serve, migrate and the admin
// commands (docs/design/architecture.md, "Administration contract"). Every
// admin command prints one JSON object (audit list: one per line); errors go
// to standard error with exit code 1, usage mistakes with exit code 2.
package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/server"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/version"
)

// IO is where a command reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// errUsage marks a mistake in how the command was called.
type errUsage struct{ msg string }

func (e errUsage) Error() string { return e.msg }

func usagef(format string, args ...any) error { return errUsage{fmt.Sprintf(format, args...)} }

const usage = `patchd — self-hosted patch management

Usage:
  patchd serve [--addr 127.0.0.1:8080] [--base-url URL] [--tls-cert F --tls-key F | --acme-domain D | --tls-self | --tls-proxy] [flags]
  patchd migrate
  patchd admin org create --name NAME [--timezone Europe/Berlin] [--template ORG] [--admin-email E [--admin-org ORG]]
        (--template copies ORG's approval and remediation policies, groups, automations and alert rules; --admin-email: its Administrator)
  patchd admin org list
  patchd admin role create --org ORG --name NAME --permissions api.access,endpoints.view,…
  patchd admin credential create --org ORG --name NAME --role ROLE
  patchd admin credential list --org ORG
  patchd admin credential disable|enable|delete --org ORG --client-id ID
  patchd admin enroll-token create --org ORG [--expires 720h] [--base-url URL]   (prints the one-line installers; token "<secret>.<CA SHA-256>" when agents pin the server's CA)
  patchd admin enroll-token list --org ORG
  patchd admin enroll-token revoke --org ORG --id ID
  patchd admin user create --org ORG --email E --role ROLE [--password-stdin] [--instance-operator]
  patchd admin user operator grant|revoke --email E [--org ORG]   (instance operators change the vulnerability feeds)
  patchd admin user operator sso-allow|sso-deny --email E [--org ORG]   (let an operator sign in through single sign-on; off by default)
  patchd admin user list --org ORG
  patchd admin user role --email E --role ROLE [--org ORG]
  patchd admin user disable|enable --email E [--org ORG]   (disabling ends the user's sessions)
  patchd admin user reset-password --email E --password-stdin [--must-change=false] [--org ORG]   (one-time by default)
  patchd admin user reset-mfa --email E [--org ORG]   (removes the authenticator app, recovery codes and passkeys)
  patchd admin user member-add --email E [--org ORG] --to-org ORG --role ROLE   (the person joins another organization)
  patchd admin user member-remove --email E --org ORG   (the person leaves ORG; never its only organization)
  patchd admin org second-factor --org ORG --require=true|false   (password users must set up a second factor)
  patchd admin user operator list
  patchd admin user create-orgs grant|revoke --email E [--org ORG]   (the person may create organizations from the console and API)
  patchd admin user create-orgs list
  patchd admin sso set --org ORG [--provider-name N] [--issuer URL] [--client-id ID] [--client-secret-stdin] [--allowed-domains D,…]
        [--scopes S,…] [--role-claim C] [--role-map VALUE=ROLE]… [--default-role R] [--just-in-time true|false] [--provider-verifies-email true|false] [--enabled true|false]
  patchd admin sso show|delete --org ORG   (OpenID Connect sign-in: docs/sso.md)
  patchd admin script create|update --org ORG --name NAME --language sh|bash|powershell|python|cmd (--code TEXT | --code-file F|-)
        [--param NAME=DEFAULT]… [--reboot-exit-codes 3010,1641] [--timeout SECONDS]   (update takes --id ID|NAME)
  patchd admin script list --org ORG
  patchd admin script delete --org ORG --id ID|NAME
  patchd admin run stop --org ORG --id RUN
  patchd admin alert list --org ORG
  patchd admin alert update --org ORG --id ID [--name N] [--threshold N] [--email-to LIST] [--webhook-url URL] [--webhook-secret S] [--report-key K] [--retry-minutes M]
  patchd admin alert enable|disable|delete|test|events|failed --org ORG --id ID
  patchd admin alert resend --org ORG --id ID --delivery DELIVERY
  patchd admin approval-policy list --org ORG
  patchd admin approval-policy set --org ORG [--severity S --source SRC [--delay-days N]] [--decline-older true|false]
  patchd admin approval-policy delete --org ORG --severity S --source SRC
  patchd admin audit list --org ORG [--limit N] [--actor A] [--action X]
  patchd admin audit list --instance [--limit N] [--actor A] [--action X]   (feed imports and syncs, operator grants)
  patchd admin backup --to FILE   (a consistent copy while the server runs; PostgreSQL: pg_dump; FILE must not exist)
  patchd admin restore --from FILE   (into a new, empty database, server stopped; then migrated and its secrets opened)
  patchd admin secrets rotate-key [--new-key-file F]   (seal every secret again with F's key, new when F does not exist; docs/security.md)
  patchd admin secrets status   (the secrets the database holds, counted by the key that sealed them)
  patchd admin vuln accept --org ORG --cve CVE --reason R [--expires 720h] [--kind accepted|compensating_control]
  patchd admin vuln list --org ORG [--kind K]
  patchd admin vuln revoke --org ORG --cve CVE
  patchd admin vuln policy --org ORG [--critical-days 15] [--high-days 30] [--medium-days 90] [--low-days 180]
  patchd vulndb import FILE…   (NVD CVE API 2.0, CISA KEV, OSV; plain, .gz or .zip; format detected)
  patchd vulndb sync [--nvd-url U] [--nvd-api-key K] [--kev-url U] [--osv-url U,U] [--nvd-since YYYY-MM-DD]
  patchd admin agent publish [--os linux --arch amd64] [--agent-dir DIR] [--sign-cert F --sign-key F] FILE
  patchd admin agent publish ... --version V (--release-key KEY | --signature SIG) FILE   (a signed release agents update to)
  patchd admin agent keygen --out KEY   (a release key pair: the private key to KEY, the public one printed)
  patchd admin agent sign --release-key KEY --version V [--os linux --arch amd64] FILE
  patchd admin agent list [--agent-dir DIR]
  patchd admin agent-policy set --org ORG --policy latest|none | --policy pinned --version V
  patchd admin agent-policy set --org ORG --policy staged --version V --ring GROUP [--ring GROUP]… --delay 3d|12h --success-rate 90
  patchd admin agent-policy get --org ORG
  patchd admin agent package --type deb|rpm|msi [--arch amd64] --out FILE [--base-url URL] [--sign-cert F --sign-key F] [--gpg-key F] [--maintainer 'Name <address>']
      (the agent must be published with --version: the package takes its version)
  patchd version

Every command takes --data DIR (default ./patchd-data, env PATCHD_DATA) and
--db URL (default SQLite in the data folder, env PATCHD_DB); those that open
the database take --secret-key-file F (default DATA/secret.key, env
PATCHD_SECRET_KEY_FILE, or the key itself in PATCHD_SECRET_KEY). ORG and
ROLE accept an id or a name. Run "patchd serve -h" for the server's flags.
`

// Main runs the command line and answers the process exit code.
func Main(ctx context.Context, args []string, stdio IO) int {
	err := run(ctx, args, stdio)
	if err == nil {
		return 0
	}
	var h helpRequest
	if errors.As(err, &h) {
		h.print(stdio.Out)
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var u errUsage
	if errors.As(err, &u) {
		fmt.Fprintf(stdio.Err, "patchd: %s\n\n%s", u.msg, usage)
		return 2
	}
	fmt.Fprintf(stdio.Err, "patchd: %s\n", err)
	return 1
}

func run(ctx context.Context, args []string, stdio IO) error {
	if len(args) == 0 {
		return usagef("a command is required")
	}
	switch args[0] {
	case "serve":
		cfg, err := config.ParseServe(args[1:])
		if err != nil {
			return asUsage(err)
		}
		lw := newLogWriter(stdio.Err)
		defer lw.Close()
		setupLogging(lw, cfg)
		cfg.Version = version.Version
		defer slog.SetDefault(slog.New(slog.NewTextHandler(stdio.Err, nil)))
		return server.Serve(ctx, cfg, stdio.Out)
	case "migrate":
		s, _, err := openStore(ctx, "patchd migrate", args[1:], nil)
		if err != nil {
			return err
		}
		defer s.Close()
		v, err := s.SchemaVersion(ctx)
		if err != nil {
			return err
		}
		by, err := s.SchemaServer(ctx)
		if err != nil {
			return err
		}
		return printJSON(stdio.Out, map[string]any{"ok": true, "engine": s.Engine(), "schemaVersion": v, "migratedBy": by})
	case "admin":
		return runAdmin(ctx, args[1:], stdio)
	case "vulndb":
		return runVulndb(ctx, args[1:], stdio)
	case "version", "--version", "-v":
		fmt.Fprintln(stdio.Out, "patchd", version.Get())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdio.Out, usage)
		return nil
	}
	return usagef("unknown command %q", args[0])
}

// parseFlags parses args into fs (named after its command). -h or --help
// answers a helpRequest, which Main prints to standard output (exit 0):
// the command, then synopsis (its arguments and what it does), then the
// flags.
func parseFlags(fs *flag.FlagSet, args []string, synopsis string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return helpRequest{fs: fs, synopsis: synopsis}
	}
	if err != nil {
		return asUsage(fmt.Errorf("%s: %w", fs.Name(), err))
	}
	return nil
}

// helpRequest is a command's -h: what Main prints instead of running it.
type helpRequest struct {
	fs       *flag.FlagSet
	synopsis string
}

func (h helpRequest) Error() string        { return h.fs.Name() + ": help requested" }
func (h helpRequest) Is(target error) bool { return target == flag.ErrHelp }

func (h helpRequest) print(w io.Writer) {
	fmt.Fprintf(w, "usage: %s [flags]%s\n\nflags:\n", h.fs.Name(), h.synopsis)
	h.fs.SetOutput(w)
	h.fs.PrintDefaults()
}

func asUsage(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return errUsage{err.Error()}
}

func setupLogging(lw *logWriter, cfg config.Config) {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var h slog.Handler = slog.NewTextHandler(lw, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(lw, opts)
	}
	slog.SetDefault(slog.New(flushingHandler{h, lw}))
}

// openStore parses --data/--db plus the flags that define adds, then opens
// and migrates the store.
func openStore(ctx context.Context, name string, args []string, define func(fs *flag.FlagSet)) (*store.Store, *flag.FlagSet, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var dataDir, db, keyFile string
	config.Common(fs, &dataDir, &db)
	config.SecretKeyFlag(fs, &keyFile)
	if define != nil {
		define(fs)
	}
	if err := parseFlags(fs, args, ""); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, usagef("%s: unexpected argument %q (flags come before arguments)", name, fs.Arg(0))
	}
	key, err := secretKey(dataDir, keyFile)
	if err != nil {
		return nil, nil, err
	}
	s, err := store.Open(ctx, db, dataDir, store.Options{MaxConns: 4, SecretKey: key, ServerVersion: version.Version})
	if err != nil {
		return nil, nil, err
	}
	return s, fs, nil
}

// secretKey is the store's secret key from --secret-key-file and
// PATCHD_SECRET_KEY.
func secretKey(dataDir, file string) (store.SecretKey, error) {
	text, path, err := config.ResolveSecretKey(dataDir, file)
	if err != nil {
		return store.SecretKey{}, usagef("%v", err)
	}
	return store.SecretKey{Text: text, File: path}, nil
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// readPassword reads a password from standard input: one line with
// --password-stdin, else a prompt without echo on a terminal.
func readPassword(stdio IO, fromStdin bool) (string, error) {
	if !fromStdin {
		if f, ok := stdio.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			fmt.Fprint(stdio.Err, "Password: ")
			p1, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(stdio.Err)
			if err != nil {
				return "", err
			}
			fmt.Fprint(stdio.Err, "Repeat password: ")
			p2, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(stdio.Err)
			if err != nil {
				return "", err
			}
			if string(p1) != string(p2) {
				return "", errors.New("the passwords differ")
			}
			return string(p1), nil
		}
		return "", usagef("standard input is not a terminal: pass --password-stdin and write the password to it")
	}
	line, err := bufio.NewReader(stdio.In).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func parseExpires(s string) (time.Duration, error) {
	if s == "" || s == "0" || s == "never" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, usagef("--expires %q: use a duration such as 720h, or never", s)
	}
	return d, nil
}
