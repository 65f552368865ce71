package ctl

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/term"

	"github.com/patchd/patchd/client"
)

func loginCommands() []command {
	return []command{
		{name: "login", args: "--server URL --client-id ID [--client-secret-stdin] [--profile NAME] [--org NAME] [--default-output FMT]",
			summary: "check an API credential and save it as a profile (secret prompted, from stdin or PATCHCTL_CLIENT_SECRET)",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				fromStdin := fs.Bool("client-secret-stdin", false, "read the client secret from the first line of stdin")
				defOutput := fs.String("default-output", "", "output `FORMAT` of this profile when -o is not given: table, json or csv")
				return func(s *session, args []string) error {
					if len(args) > 0 {
						return usagef("login takes no arguments")
					}
					return login(s, *fromStdin, *defOutput)
				}
			}},
		{name: "logout", args: "[--profile NAME]", summary: "forget a profile with its secret and cached token",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				return func(s *session, args []string) error {
					if len(args) > 0 {
						return usagef("logout takes no arguments")
					}
					return logout(s)
				}
			}},
	}
}

func login(s *session, fromStdin bool, defOutput string) error {
	cfg, err := s.loadConfig()
	if err != nil {
		return err
	}
	// --org names the credential's organization; the profile is named
	// after it unless --profile (or PATCHCTL_PROFILE) names one.
	org := strings.TrimSpace(s.globals.org)
	name := first(s.globals.profile, s.io.Getenv("PATCHCTL_PROFILE"))
	if name == "" && org != "" && checkProfileName(org) == nil {
		name = org
	}
	name = first(name, "default")
	if err := checkProfileName(name); err != nil {
		return err
	}
	server := strings.TrimRight(first(s.globals.server, s.io.Getenv("PATCHCTL_SERVER")), "/")
	clientID := first(s.globals.clientID, s.io.Getenv("PATCHCTL_CLIENT_ID"))
	if server == "" || clientID == "" {
		return usagef("login needs --server URL and --client-id ID")
	}
	if err := checkServerURL(server); err != nil {
		return err
	}
	switch defOutput {
	case "", "table", "json", "csv":
	default:
		return usagef("unknown --default-output %q (table, json or csv)", defOutput)
	}
	secret, err := s.loginSecret(fromStdin)
	if err != nil {
		return err
	}
	caFile := first(s.globals.caFile, s.io.Getenv("PATCHCTL_CA_FILE"))
	if caFile != "" {
		if caFile, err = filepath.Abs(caFile); err != nil {
			return fmt.Errorf("--ca-file: %w", err)
		}
	}
	opts, err := s.clientOptions(caFile)
	if err != nil {
		return err
	}
	cl := client.New(server, clientID, secret, opts...)
	token, expires, err := cl.Token(s.ctx)
	if err != nil {
		return err
	}
	for other, p := range cfg.Profiles {
		if org != "" && other != name && strings.EqualFold(p.Org, org) {
			return usagef("profile %q is of organization %q already: log in with --profile %s, or log out of it first", other, p.Org, other)
		}
	}
	cfg.Profiles[name] = profile{Server: server, ClientID: clientID, Output: defOutput, CAFile: caFile, Org: org}
	cfg.Current = name
	if err := s.writeSecret(name, secret); err != nil {
		return err
	}
	if err := s.saveConfig(cfg); err != nil {
		return err
	}
	if err := s.writeToken(name, tokenCache{Server: server, ClientID: clientID, AccessToken: token, ExpiresAt: expires}); err != nil {
		return err
	}
	dir, _ := s.configDir()
	return s.done(map[string]any{"ok": true, "profile": name, "server": server, "clientId": clientID, "configDir": dir},
		"Logged in to %s as %s; profile %q saved in %s.", server, clientID, name, dir)
}

// loginSecret reads the secret from stdin's first line, the environment or
// a prompt without echo on a terminal.
func (s *session) loginSecret(fromStdin bool) (string, error) {
	if fromStdin {
		return readSecretLine(s, "--client-secret-stdin")
	}
	if secret := s.io.Getenv("PATCHCTL_CLIENT_SECRET"); secret != "" {
		return secret, nil
	}
	if f, ok := s.io.Stdin.(*os.File); ok && s.io.IsTerminal(s.io.Stdin) {
		fmt.Fprint(s.io.Stderr, "Client secret: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(s.io.Stderr)
		if err != nil {
			return "", fmt.Errorf("read secret: %w", err)
		}
		if secret := strings.TrimSpace(string(b)); secret != "" {
			return secret, nil
		}
	}
	return "", usagef("no client secret: type it at the prompt, pass --client-secret-stdin or set PATCHCTL_CLIENT_SECRET")
}

func logout(s *session) error {
	cfg, err := s.loadConfig()
	if err != nil {
		return err
	}
	name, err := s.profile(cfg)
	if err != nil {
		return err
	}
	if err := checkProfileName(name); err != nil {
		return err
	}
	if _, ok := cfg.Profiles[name]; !ok {
		return usagef("no profile %q", name)
	}
	delete(cfg.Profiles, name)
	if cfg.Current == name {
		cfg.Current = ""
	}
	if err := s.removeProfileFiles(name); err != nil {
		return err
	}
	if err := s.saveConfig(cfg); err != nil {
		return err
	}
	return s.done(map[string]any{"ok": true, "profile": name}, "Profile %q removed.", name)
}

// readSecretLine reads a secret from the first line of stdin.
func readSecretLine(s *session, flagName string) (string, error) {
	line, err := bufio.NewReader(s.io.Stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("%s: read stdin: %w", flagName, err)
	}
	if secret := strings.TrimSpace(line); secret != "" {
		return secret, nil
	}
	return "", usagef("%s: stdin holds no secret", flagName)
}
