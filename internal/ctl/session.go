package ctl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/patchd/patchd/client"
)

// globals are the flags every command accepts.
type globals struct {
	profile  string
	server   string
	clientID string
	output   string
	color    string
	caFile   string
	org      string
}

// register binds the global flags on fs; defaults are the values already
// parsed, so flags given before the command survive its own parse.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.profile, "profile", g.profile, "profile `NAME`")
	fs.StringVar(&g.server, "server", g.server, "server `URL`")
	fs.StringVar(&g.clientID, "client-id", g.clientID, "API client `ID`")
	fs.StringVar(&g.output, "o", g.output, "output `FORMAT`: table, json or csv")
	fs.StringVar(&g.output, "output", g.output, "output `FORMAT`: table, json or csv")
	fs.StringVar(&g.color, "color", g.color, "colour `WHEN`: auto, always or never")
	fs.StringVar(&g.caFile, "ca-file", g.caFile, "trust the CA certificate(s) in `FILE` (PEM) for the server, instead of the system's")
	fs.StringVar(&g.org, "org", g.org, "use the profile of organization `NAME` (login --org)")
}

// session is one invocation: its streams, flags and (once asked for) its
// client.
type session struct {
	ctx     context.Context
	io      IO
	globals globals

	format        string // table, json or csv
	color         bool
	progress      bool // stderr is a terminal
	progressShown bool

	config      *configFile
	profileName string
	cl          *client.Client
	tokenBefore string
	server      string
	clientID    string
}

func newSession(ctx context.Context, stdio IO) *session {
	if stdio.Getenv == nil {
		stdio.Getenv = os.Getenv
	}
	if stdio.IsTerminal == nil {
		stdio.IsTerminal = isTerminal
	}
	return &session{ctx: ctx, io: stdio}
}

func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// init settles the output format and colour once the flags are parsed.
func (s *session) init() error {
	s.format = s.globals.output
	if s.format == "" {
		if cfg, err := s.loadConfig(); err == nil {
			if name, err := s.profile(cfg); err == nil {
				s.format = cfg.Profiles[name].Output
			}
		}
	}
	if s.format == "" {
		s.format = "table"
	}
	switch s.format {
	case "table", "json", "csv":
	default:
		return usagef("unknown output format %q (table, json or csv)", s.format)
	}
	switch s.globals.color {
	case "", "auto":
		s.color = s.io.IsTerminal(s.io.Stdout) && s.io.Getenv("NO_COLOR") == "" && s.io.Getenv("TERM") != "dumb"
	case "always":
		s.color = true
	case "never":
		s.color = false
	default:
		return usagef("unknown --color %q (auto, always or never)", s.globals.color)
	}
	s.progress = s.io.IsTerminal(s.io.Stderr)
	return nil
}

// profile names the profile in use: --profile, the profile of --org
// (PATCHCTL_ORG), PATCHCTL_PROFILE, the last one logged in, else
// "default". An organization no profile (or several) names is an error.
func (s *session) profile(cfg *configFile) (string, error) {
	if s.globals.profile != "" {
		return s.globals.profile, nil
	}
	if org := first(s.globals.org, s.io.Getenv("PATCHCTL_ORG")); org != "" {
		var names []string
		for name, p := range cfg.Profiles {
			if strings.EqualFold(p.Org, org) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		switch len(names) {
		case 1:
			return names[0], nil
		case 0:
			return "", usagef("no profile of organization %q: run 'patchctl login --org %s --server URL --client-id ID' with a credential of it", org, org)
		}
		return "", usagef("profiles %s all name organization %q: pick one with --profile", strings.Join(names, ", "), org)
	}
	for _, p := range []string{s.io.Getenv("PATCHCTL_PROFILE"), cfg.Current} {
		if p != "" {
			return p, nil
		}
	}
	return "default", nil
}

func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// client builds the API client from the flags, the environment and the
// profile, starting from the cached token when it belongs to the same
// server and client id.
func (s *session) client() (*client.Client, error) {
	if s.cl != nil {
		return s.cl, nil
	}
	cfg, err := s.loadConfig()
	if err != nil {
		return nil, err
	}
	if s.profileName, err = s.profile(cfg); err != nil {
		return nil, err
	}
	if err := checkProfileName(s.profileName); err != nil {
		return nil, err
	}
	p := cfg.Profiles[s.profileName]
	s.server = first(s.globals.server, s.io.Getenv("PATCHCTL_SERVER"), p.Server)
	s.clientID = first(s.globals.clientID, s.io.Getenv("PATCHCTL_CLIENT_ID"), p.ClientID)
	if s.server == "" || s.clientID == "" {
		return nil, usagef("not logged in: run 'patchctl login --server URL --client-id ID' (or set PATCHCTL_SERVER, PATCHCTL_CLIENT_ID and PATCHCTL_CLIENT_SECRET)")
	}
	if err := checkServerURL(s.server); err != nil {
		return nil, err
	}
	secret := s.io.Getenv("PATCHCTL_CLIENT_SECRET")
	if secret == "" && s.clientID == p.ClientID {
		if secret, err = s.readSecret(s.profileName); err != nil {
			return nil, err
		}
	}
	if secret == "" {
		return nil, usagef("no client secret for %s: run 'patchctl login' or set PATCHCTL_CLIENT_SECRET", s.clientID)
	}
	opts, err := s.clientOptions(first(s.globals.caFile, s.io.Getenv("PATCHCTL_CA_FILE"), p.CAFile))
	if err != nil {
		return nil, err
	}
	if tc, err := s.readToken(s.profileName); err == nil && tc.Server == s.server && tc.ClientID == s.clientID && time.Now().Before(tc.ExpiresAt) {
		opts = append(opts, client.WithToken(tc.AccessToken, tc.ExpiresAt))
		s.tokenBefore = tc.AccessToken
	}
	s.cl = client.New(s.server, s.clientID, secret, opts...)
	return s.cl, nil
}

// saveToken keeps the client's token for the next invocation when this one
// fetched or renewed it.
func (s *session) saveToken() {
	if s.cl == nil {
		return
	}
	token, expires := s.cl.CachedToken()
	if token == "" || token == s.tokenBefore {
		return
	}
	if err := s.writeToken(s.profileName, tokenCache{Server: s.server, ClientID: s.clientID, AccessToken: token, ExpiresAt: expires}); err != nil {
		fmt.Fprintf(s.io.Stderr, "patchctl: warning: cannot cache the token: %v\n", err)
	}
}

// clientOptions answers the client's options: the tests' HTTP client, or,
// with caFile, one that trusts only the CA certificates in that file (a
// server with its own CA, as patchd-agent's --ca-file). A file that holds
// no certificate is refused before anything is sent.
func (s *session) clientOptions(caFile string) ([]client.Option, error) {
	if s.io.HTTPClient != nil {
		return []client.Option{client.WithHTTPClient(s.io.HTTPClient)}, nil
	}
	if caFile == "" {
		return nil, nil
	}
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, usagef("--ca-file %s holds no PEM certificate", caFile)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return []client.Option{client.WithHTTPClient(&http.Client{Timeout: 60 * time.Second, Transport: tr})}, nil
}
