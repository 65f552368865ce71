// Package config holds the Config value of patchd serve and reads it from
// flags, with PATCHD_* environment variables as defaults.
package config

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/mail"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/vulns/feeds"
)

// Config is the server's configuration.
type Config struct {
	// Version is the program's patchd version (set by the command line,
	// not a flag): the database records it with its schema version.
	Version string
	// FirstSecretsFile receives the first start's one-time secrets
	// instead of standard output (--first-secrets-file).
	FirstSecretsFile string
	Addr             string
	DataDir          string
	DB               string
	// SecretKeyFile is the file of the key that seals the database's
	// secrets (--secret-key-file, default DATA/secret.key); SecretKey is
	// that key given in PATCHD_SECRET_KEY instead, when set.
	SecretKeyFile, SecretKey string
	BaseURL                  string
	TLSCert, TLSKey          string
	// TLSSelf serves HTTPS with the server's own CA also on a loopback
	// --addr (elsewhere it is the default without --tls-cert or ACME).
	TLSSelf bool
	// ACMEDomains get their certificate from an ACME directory
	// (--acme-domain, comma-separated); ACMEEmail is the account's contact
	// and ACMEDirectory the directory (default Let's Encrypt).
	ACMEDomains   []string
	ACMEEmail     string
	ACMEDirectory string
	// TLSProxy: a reverse proxy in front terminates TLS; the server speaks
	// plain HTTP on any --addr (which only the proxy should reach).
	TLSProxy bool
	// AgentCA is a PEM file whose last certificate agents pin behind
	// --tls-proxy (the proxy's private CA); empty: no pin.
	AgentCA string
	// ACMEHTTP is the ACME client's HTTP client (tests trust their ACME
	// server with it); nil uses the system roots. Not a flag.
	ACMEHTTP             *http.Client
	TrustedProxies       []netip.Prefix
	AllowPrivateWebhooks bool
	LogLevel             slog.Level
	LogFormat            string // text or json
	MaxDBConns           int
	// DBRead are PostgreSQL standbys that serve the reads tolerating lag
	// (--db-read, repeatable, or PATCHD_DB_READ separated by spaces);
	// DBReadMaxLag is the lag past which one is skipped.
	DBRead       []string
	DBReadMaxLag time.Duration
	// CheckinInterval is what agents are told to use between check-ins.
	CheckinInterval time.Duration
	// SessionIdleTimeout ends a console session unused this long;
	// SessionMaxAge ends every console session this long after its
	// sign-in (--session-idle-timeout, --session-max-age).
	SessionIdleTimeout, SessionMaxAge time.Duration
	// ScanInterval is how often agents are told to refresh their package
	// metadata (apt-get update, dnf makecache) before an inventory.
	ScanInterval time.Duration
	// CommandExpiry cancels a command without a maintenance window that its
	// endpoint did not start within it (default 7 days).
	CommandExpiry time.Duration
	// SchedulerInterval is how often due automations are looked for.
	SchedulerInterval time.Duration
	// VulnMatchInterval is how often endpoints whose inventory changed are
	// matched against the vulnerability feeds (default 2 s).
	VulnMatchInterval time.Duration
	// VulnSyncInterval runs patchd vulndb sync on a schedule; 0 is off.
	VulnSyncInterval time.Duration
	// Feeds are the addresses vulnerability feeds are synced from.
	Feeds Feeds
	// SMTP is the server alert e-mail goes through.
	SMTP SMTP
	// WebhookTLS configures alert webhooks' TLS (tests trust their
	// receivers); nil uses the system roots. Not a flag.
	WebhookTLS *tls.Config
	// AlertClaim is how long a replica's claim on an alert outbox row lasts
	// before another replica may take it over (default the webhook timeout
	// plus a minute; tests shorten it). Not a flag.
	AlertClaim time.Duration
	// MetricsAddr serves Prometheus metrics (/metrics) on its own listener
	// when set (typically loopback or a management network); empty is off.
	MetricsAddr string
	// MetricsToken, when set, is the bearer token /metrics asks for, and
	// serves /metrics on the main listener too. Without a token, /metrics is
	// only on MetricsAddr.
	MetricsToken string
	// PprofAddr serves net/http/pprof on its own listener when set
	// (profiling under load); empty is off.
	PprofAddr string
	// MaxLongPolls bounds the agents' long polls held open at once; past
	// it a check-in is answered at once (the agent comes back after its
	// interval). 0 derives it from the open-files limit (MaxLongPollsFor).
	MaxLongPolls int
	// AgentDir holds the agents the server hosts for download
	// ({os}-{arch}/patchd-agent[.exe]); default DataDir/agents.
	AgentDir string
	// SignCert and SignKey (PEM) sign the Windows agent and MSI the server
	// builds (Authenticode, osslsigncode); empty: unsigned.
	SignCert, SignKey string
	// PackageGPGKey is the OpenPGP secret key file that signs the .rpm
	// the server builds (PackageGPGPassphrase, from the environment
	// only, unlocks it); empty: unsigned.
	PackageGPGKey, PackageGPGPassphrase string
	// PackageMaintainer is the packages' maintainer, Name <address>;
	// empty: patchd at the host of BaseURL.
	PackageMaintainer string
	// NoAgentBuild: never build the agent from source at start.
	NoAgentBuild bool
	// MaxInventories bounds the agents' inventories received and not yet
	// stored; past it an inventory is refused with 503 and Retry-After.
	MaxInventories int
}

// SMTP holds the --smtp-* flags.
type SMTP struct {
	Addr     string
	User     string
	Password string
	// From is --smtp-from as given: an address, or a name and an address
	// ("patchd alerts <patchd@example.com>"); checked with net/mail.
	From string
	// TLS is starttls, tls or none.
	TLS string
	// Retry is how long after an alert e-mail was queued temporary
	// failures (a 4xx reply, a server not reachable) are tried again.
	Retry time.Duration
}

// MaxSMTPRetry bounds --smtp-retry.
const MaxSMTPRetry = 7 * 24 * time.Hour

// Feeds are the addresses and key of the vulnerability feeds (patchd
// vulndb sync and --vulndb-sync-interval).
type Feeds struct {
	NVDURL    string
	NVDAPIKey string
	KEVURL    string
	// EPSSURL is FIRST's daily EPSS file (gzipped CSV).
	EPSSURL string
	// OSVURLs is a comma-separated list of OSV files or zips.
	OSVURLs string
	// MSRCURL is the MSRC CVRF API; the month's id ("2025-Nov") is appended.
	MSRCURL string
	// MSRCSince is the first month of a first MSRC sync ("2025-01"; empty:
	// twelve months back).
	MSRCSince string
	// OfficeBuildsURL is a Microsoft 365 Apps release history
	// (feeds.OfficeBuild) to download on every sync; empty (the default)
	// skips it.
	OfficeBuildsURL string
}

// Validate checks the feed flags that have a format.
func (f Feeds) Validate() error {
	if m := strings.TrimSpace(f.MSRCSince); m != "" {
		if _, err := time.Parse("2006-01", m); err != nil {
			return fmt.Errorf("--msrc-since %q: use YYYY-MM", m)
		}
	}
	return nil
}

// FeedFlags registers --nvd-url, --nvd-api-key, --kev-url, --epss-url, --osv-url, --msrc-url, --msrc-since and
// --office-builds-url.
// An empty value skips that feed.
func FeedFlags(fs *flag.FlagSet, f *Feeds) {
	const osvDefault = feeds.OSVBucketURL + "Debian/all.zip," + feeds.OSVBucketURL + "Ubuntu/all.zip," +
		feeds.OSVBucketURL + "AlmaLinux/all.zip," + feeds.OSVBucketURL + "Rocky%20Linux/all.zip"
	fs.StringVar(&f.NVDURL, "nvd-url", Env("PATCHD_NVD_URL", feeds.NVDAPIURL), "NVD CVE API 2.0 address, synced incrementally; empty skips (env PATCHD_NVD_URL)")
	fs.StringVar(&f.NVDAPIKey, "nvd-api-key", Env("PATCHD_NVD_API_KEY", ""), "NVD API key: 50 requests per 30 s instead of 5 (env PATCHD_NVD_API_KEY)")
	fs.StringVar(&f.KEVURL, "kev-url", Env("PATCHD_KEV_URL", feeds.KEVURL), "CISA KEV catalog address; empty skips (env PATCHD_KEV_URL)")
	fs.StringVar(&f.EPSSURL, "epss-url", Env("PATCHD_EPSS_URL", feeds.EPSSURL), "FIRST's daily EPSS scores, gzipped CSV; empty skips (env PATCHD_EPSS_URL)")
	fs.StringVar(&f.OSVURLs, "osv-url", Env("PATCHD_OSV_URL", osvDefault), "comma-separated OSV files or zips; empty skips (env PATCHD_OSV_URL)")
	fs.StringVar(&f.MSRCURL, "msrc-url", Env("PATCHD_MSRC_URL", feeds.MSRCURL), "MSRC CVRF API (the month, 2025-Nov, is appended); empty skips (env PATCHD_MSRC_URL)")
	fs.StringVar(&f.MSRCSince, "msrc-since", Env("PATCHD_MSRC_SINCE", ""), "first month of the first MSRC sync, YYYY-MM (default twelve months back; env PATCHD_MSRC_SINCE)")
	fs.StringVar(&f.OfficeBuildsURL, "office-builds-url", Env("PATCHD_OFFICE_BUILDS_URL", ""),
		"Microsoft 365 Apps release history (JSON, docs/vulnerabilities.md) to match Office by build; empty (default) skips (env PATCHD_OFFICE_BUILDS_URL)")
}

// Env reads a PATCHD_* variable with a default.
func Env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// Common registers --data and --db, which every subcommand takes.
func Common(fs *flag.FlagSet, dataDir, db *string) {
	fs.StringVar(dataDir, "data", Env("PATCHD_DATA", "./patchd-data"), "data folder (env PATCHD_DATA)")
	fs.StringVar(db, "db", Env("PATCHD_DB", ""), "database URL: postgres://… or a SQLite file; default SQLite in the data folder (env PATCHD_DB)")
}

// SecretKeyFlag adds --secret-key-file; ResolveSecretKey reads what it
// leaves.
func SecretKeyFlag(fs *flag.FlagSet, file *string) {
	fs.StringVar(file, "secret-key-file", Env("PATCHD_SECRET_KEY_FILE", ""),
		"file of the key that seals the secrets in the database, created (0600) on first start; every replica needs the same key; "+
			"default DATA/secret.key (env PATCHD_SECRET_KEY_FILE, or the key itself in PATCHD_SECRET_KEY)")
}

// ResolveSecretKey answers where the secret key comes from: the key ring
// in PATCHD_SECRET_KEY (text), or the file --secret-key-file named, by
// default secret.key in the data folder.
func ResolveSecretKey(dataDir, file string) (text, path string, err error) {
	text = strings.TrimSpace(os.Getenv("PATCHD_SECRET_KEY"))
	if text != "" {
		if file != "" {
			return "", "", fmt.Errorf("--secret-key-file and PATCHD_SECRET_KEY exclude each other: give the secret key one way")
		}
		return text, "", nil
	}
	if file == "" {
		file = filepath.Join(dataDir, "secret.key")
	}
	return "", file, nil
}

// ParseServe reads the flags of patchd serve: it registers them (their
// defaults from the PATCHD_* environment), parses args, then decides how the
// server speaks TLS, checks the values and fills in what derives from
// others. The first problem found is the error.
func ParseServe(args []string) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("patchd serve", flag.ContinueOnError)
	raw, err := c.registerServeFlags(fs)
	if err != nil {
		return c, err
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := c.LogLevel.UnmarshalText([]byte(raw.logLevel)); err != nil {
		return c, fmt.Errorf("--log-level: %w", err)
	}
	if err := c.parseTrustedProxies(raw.trustedProxies); err != nil {
		return c, err
	}
	if err := c.decideTLS(raw.acmeDomains); err != nil {
		return c, err
	}
	if err := c.checkSessionsAndLogs(); err != nil {
		return c, err
	}
	if c.SecretKey, c.SecretKeyFile, err = ResolveSecretKey(c.DataDir, c.SecretKeyFile); err != nil {
		return c, err
	}
	c.readSecretsFromEnv()
	if err := c.checkSecretsAndMail(); err != nil {
		return c, err
	}
	if err := c.checkAgentLimits(); err != nil {
		return c, err
	}
	if err := c.checkStandbys(); err != nil {
		return c, err
	}
	c.deriveDefaults()
	if err := c.checkPackaging(); err != nil {
		return c, err
	}
	return c, nil
}

// serveFlagText holds the flags of patchd serve that are parsed after
// fs.Parse.
type serveFlagText struct {
	acmeDomains, trustedProxies, logLevel string
}

// registerServeFlags registers every flag of patchd serve on fs, writing
// into c. An environment variable that is not a duration where one is
// wanted is an error.
func (c *Config) registerServeFlags(fs *flag.FlagSet) (*serveFlagText, error) {
	var raw serveFlagText
	Common(fs, &c.DataDir, &c.DB)
	SecretKeyFlag(fs, &c.SecretKeyFile)
	c.registerListenerFlags(fs, &raw)
	c.registerAgentBuildFlags(fs)
	c.registerOperationFlags(fs, &raw)
	if err := c.registerIntervalFlags(fs); err != nil {
		return nil, err
	}
	FeedFlags(fs, &c.Feeds)
	if err := c.registerSMTPFlags(fs); err != nil {
		return nil, err
	}
	return &raw, nil
}

// envBool and envInt read a PATCHD_* default; a value that does not parse
// is false or 0, as if unset, and the flag's checks say what is wrong.
func envBool(name string) bool {
	b, _ := strconv.ParseBool(Env(name, "false"))
	return b
}

func envInt(name, def string) int {
	n, _ := strconv.Atoi(Env(name, def))
	return n
}

// durationFlag registers a duration flag whose default is the environment
// variable env, or def.
func durationFlag(fs *flag.FlagSet, p *time.Duration, name, env, def, usage string) error {
	d, err := time.ParseDuration(Env(env, def))
	if err != nil {
		return fmt.Errorf("%s: %w", env, err)
	}
	fs.DurationVar(p, name, d, usage)
	return nil
}

// registerListenerFlags: the address, the public base URL and the TLS
// choices (certificate, own CA, ACME, reverse proxy).
func (c *Config) registerListenerFlags(fs *flag.FlagSet, raw *serveFlagText) {
	fs.StringVar(&c.Addr, "addr", Env("PATCHD_ADDR", "127.0.0.1:8080"), "listen address (env PATCHD_ADDR)")
	fs.StringVar(&c.BaseURL, "base-url", Env("PATCHD_BASE_URL", ""), "public base URL, for links and agents (env PATCHD_BASE_URL); default from --addr")
	fs.StringVar(&c.TLSCert, "tls-cert", Env("PATCHD_TLS_CERT", ""), "TLS certificate file (env PATCHD_TLS_CERT)")
	fs.StringVar(&c.TLSKey, "tls-key", Env("PATCHD_TLS_KEY", ""), "TLS key file (env PATCHD_TLS_KEY)")
	fs.BoolVar(&c.TLSSelf, "tls-self", envBool("PATCHD_TLS_SELF"), "serve HTTPS with the server's own CA even on a loopback --addr, where plain HTTP is the default (env PATCHD_TLS_SELF)")
	fs.BoolVar(&c.TLSProxy, "tls-proxy", envBool("PATCHD_TLS_PROXY"), "a reverse proxy in front terminates TLS: serve plain HTTP on --addr (reachable only by the proxy); needs an https --base-url (env PATCHD_TLS_PROXY)")
	fs.StringVar(&c.AgentCA, "agent-ca", Env("PATCHD_AGENT_CA", ""), "with --tls-proxy: PEM file whose last certificate (the proxy's CA) enrollment tokens pin; without it tokens carry no pin (env PATCHD_AGENT_CA)")
	fs.StringVar(&raw.acmeDomains, "acme-domain", Env("PATCHD_ACME_DOMAIN", ""), "comma-separated public names to get a certificate for from an ACME directory (Let's Encrypt); the listener must be reachable on port 443 of them (env PATCHD_ACME_DOMAIN)")
	fs.StringVar(&c.ACMEEmail, "acme-email", Env("PATCHD_ACME_EMAIL", ""), "contact e-mail of the ACME account (env PATCHD_ACME_EMAIL)")
	fs.StringVar(&c.ACMEDirectory, "acme-directory", Env("PATCHD_ACME_DIRECTORY", ""), "ACME directory URL; default Let's Encrypt's production directory (env PATCHD_ACME_DIRECTORY)")
}

// registerAgentBuildFlags: the agents the server hosts and the packages it
// builds and signs.
func (c *Config) registerAgentBuildFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.AgentDir, "agent-dir", Env("PATCHD_AGENT_DIR", ""), "folder of the agents served for download, {os}-{arch}/patchd-agent[.exe]; default DATA/agents (env PATCHD_AGENT_DIR)")
	fs.StringVar(&c.SignCert, "sign-cert", Env("PATCHD_SIGN_CERT", ""), "PEM certificate to sign the Windows agent and MSI with (Authenticode; env PATCHD_SIGN_CERT)")
	fs.StringVar(&c.SignKey, "sign-key", Env("PATCHD_SIGN_KEY", ""), "PEM key of --sign-cert (env PATCHD_SIGN_KEY)")
	fs.StringVar(&c.PackageGPGKey, "package-gpg-key", Env("PATCHD_PACKAGE_GPG_KEY", ""), "OpenPGP secret key file (armored or binary) to sign the .rpm packages with (a .deb is trusted through a signed apt repository); a passphrase comes from env PATCHD_PACKAGE_GPG_PASSPHRASE (env PATCHD_PACKAGE_GPG_KEY)")
	fs.StringVar(&c.PackageMaintainer, "package-maintainer", Env("PATCHD_PACKAGE_MAINTAINER", ""), "the packages' maintainer, 'Name <address>'; default patchd <patchd@HOST of --base-url> (env PATCHD_PACKAGE_MAINTAINER)")
	c.PackageGPGPassphrase = Env("PATCHD_PACKAGE_GPG_PASSPHRASE", "")
	fs.BoolVar(&c.NoAgentBuild, "no-agent-build", envBool("PATCHD_NO_AGENT_BUILD"), "do not build the agent for this machine from source at start when none is published (env PATCHD_NO_AGENT_BUILD)")
}

// registerOperationFlags: proxies, webhooks, logs, metrics, profiling and
// the limits on connections and work in progress.
func (c *Config) registerOperationFlags(fs *flag.FlagSet, raw *serveFlagText) {
	fs.StringVar(&raw.trustedProxies, "trusted-proxies", Env("PATCHD_TRUSTED_PROXIES", ""), "comma-separated CIDRs whose X-Forwarded-For is trusted (env PATCHD_TRUSTED_PROXIES)")
	fs.BoolVar(&c.AllowPrivateWebhooks, "allow-private-webhooks", envBool("PATCHD_ALLOW_PRIVATE_WEBHOOKS"), "allow webhook targets on loopback/private/link-local addresses (env PATCHD_ALLOW_PRIVATE_WEBHOOKS)")
	fs.StringVar(&raw.logLevel, "log-level", Env("PATCHD_LOG_LEVEL", "info"), "debug, info, warn or error (env PATCHD_LOG_LEVEL)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", Env("PATCHD_PPROF_ADDR", ""), "serve Go's /debug/pprof/ on this separate address, for profiling; keep it private; empty is off (env PATCHD_PPROF_ADDR)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", Env("PATCHD_METRICS_ADDR", ""), "serve Prometheus /metrics on this separate address, for example 127.0.0.1:9090; without --metrics-token anyone who reaches it reads the metrics, so keep it private (env PATCHD_METRICS_ADDR)")
	// The token's default is read after parsing: a flag's default is shown by --help.
	fs.StringVar(&c.MetricsToken, "metrics-token", "", "bearer token /metrics requires; with it /metrics is served on the main listener too; prefer the env PATCHD_METRICS_TOKEN")
	fs.StringVar(&c.LogFormat, "log-format", Env("PATCHD_LOG_FORMAT", "text"), "text or json (env PATCHD_LOG_FORMAT)")
	fs.IntVar(&c.MaxLongPolls, "max-long-polls", envInt("PATCHD_MAX_LONG_POLLS", "0"), "agents' long polls held open at once, each a connection; past it check-ins are answered at once; 0: three quarters of the open-files limit, at least 1,024 files kept (env PATCHD_MAX_LONG_POLLS)")
	fs.IntVar(&c.MaxInventories, "max-inventories", envInt("PATCHD_MAX_INVENTORIES", "128"), "agents' inventories received and not yet stored at once; past it they are refused with 503 and Retry-After (env PATCHD_MAX_INVENTORIES)")
	fs.IntVar(&c.MaxDBConns, "db-max-conns", envInt("PATCHD_DB_MAX_CONNS", "16"), "database connection pool size (env PATCHD_DB_MAX_CONNS)")
	fs.StringVar(&c.FirstSecretsFile, "first-secrets-file", Env("PATCHD_FIRST_SECRETS_FILE", ""), "write the first start's one-time secrets (the Administrator credential, the enrollment token) to this file, mode 0600, instead of standard output, which a service manager keeps in its journal (env PATCHD_FIRST_SECRETS_FILE)")
	c.DBRead = strings.Fields(Env("PATCHD_DB_READ", ""))
	fs.Var(&urlList{urls: &c.DBRead, fromEnv: true}, "db-read", "PostgreSQL standby URL that serves lists, reports, exports and dashboards (reads that tolerate lag); repeat for several; env PATCHD_DB_READ, separated by spaces")
}

// urlList is a repeatable flag of URLs (each use may hold several,
// separated by spaces); the first use replaces those its environment
// variable gave, which are its default.
type urlList struct {
	urls    *[]string
	fromEnv bool
}

func (l *urlList) String() string {
	if l == nil || l.urls == nil {
		return ""
	}
	return strings.Join(*l.urls, " ")
}

func (l *urlList) Set(v string) error {
	if l.fromEnv {
		*l.urls, l.fromEnv = nil, false
	}
	*l.urls = append(*l.urls, strings.Fields(v)...)
	return nil
}

// registerIntervalFlags: the agents' intervals, command expiry, console
// sessions and the feeds' sync schedule.
func (c *Config) registerIntervalFlags(fs *flag.FlagSet) error {
	for _, d := range []struct {
		p                     *time.Duration
		name, env, def, usage string
	}{
		{&c.CheckinInterval, "checkin-interval", "PATCHD_CHECKIN_INTERVAL", "60s", "interval agents are told to check in at (env PATCHD_CHECKIN_INTERVAL)"},
		{&c.ScanInterval, "scan-interval", "PATCHD_SCAN_INTERVAL", "4h", "interval agents refresh their package metadata at before an inventory, spread with jitter per agent (env PATCHD_SCAN_INTERVAL)"},
		{&c.CommandExpiry, "command-expiry", "PATCHD_COMMAND_EXPIRY", "168h", "cancel a command without a maintenance window that did not start within this time (env PATCHD_COMMAND_EXPIRY)"},
		{&c.SessionIdleTimeout, "session-idle-timeout", "PATCHD_SESSION_IDLE_TIMEOUT", "2h", "end a console session unused this long, at least 1m (env PATCHD_SESSION_IDLE_TIMEOUT)"},
		{&c.SessionMaxAge, "session-max-age", "PATCHD_SESSION_MAX_AGE", "12h", "end every console session this long after its sign-in, whatever its use; at least --session-idle-timeout, at most 720h (env PATCHD_SESSION_MAX_AGE)"},
		{&c.DBReadMaxLag, "db-read-max-lag", "PATCHD_DB_READ_MAX_LAG", "10s", "skip a --db-read standby whose replay lag passes this (env PATCHD_DB_READ_MAX_LAG)"},
		{&c.VulnSyncInterval, "vulndb-sync-interval", "PATCHD_VULNDB_SYNC_INTERVAL", "0", "sync the vulnerability feeds this often, for example 6h; 0 is off (env PATCHD_VULNDB_SYNC_INTERVAL)"},
	} {
		if err := durationFlag(fs, d.p, d.name, d.env, d.def, d.usage); err != nil {
			return err
		}
	}
	return nil
}

// registerSMTPFlags: the server alert e-mail goes through.
func (c *Config) registerSMTPFlags(fs *flag.FlagSet) error {
	fs.StringVar(&c.SMTP.Addr, "smtp-addr", Env("PATCHD_SMTP_ADDR", ""), "SMTP server host:port for alert e-mail; empty: no e-mail (env PATCHD_SMTP_ADDR)")
	fs.StringVar(&c.SMTP.User, "smtp-user", Env("PATCHD_SMTP_USER", ""), "SMTP user (PLAIN authentication) (env PATCHD_SMTP_USER)")
	// The password's default is read after parsing: a flag's default is shown by --help.
	fs.StringVar(&c.SMTP.Password, "smtp-password", "", "SMTP password; prefer the env PATCHD_SMTP_PASSWORD")
	fs.StringVar(&c.SMTP.From, "smtp-from", Env("PATCHD_SMTP_FROM", "patchd@localhost"), "sender of alert e-mail: an address, or a name and an address (\"patchd alerts <patchd@example.com>\") (env PATCHD_SMTP_FROM)")
	if err := durationFlag(fs, &c.SMTP.Retry, "smtp-retry", "PATCHD_SMTP_RETRY", "24h",
		"how long alert e-mail refused for now (4xx, server unreachable) is tried again, with back-off (env PATCHD_SMTP_RETRY)"); err != nil {
		return err
	}
	fs.StringVar(&c.SMTP.TLS, "smtp-tls", Env("PATCHD_SMTP_TLS", "starttls"), "starttls, tls (implicit, port 465) or none (env PATCHD_SMTP_TLS)")
	return nil
}

// checkStandbys refuses --db-read without a PostgreSQL --db, a standby
// that is not a PostgreSQL URL and a lag limit that is not positive.
func (c *Config) checkStandbys() error {
	if len(c.DBRead) == 0 {
		return nil
	}
	if !isPostgres(c.DB) {
		return fmt.Errorf("--db-read: standbys need a PostgreSQL --db")
	}
	for _, u := range c.DBRead {
		if !isPostgres(u) {
			return fmt.Errorf("--db-read: a standby is a postgres:// URL")
		}
	}
	if c.DBReadMaxLag <= 0 {
		return fmt.Errorf("--db-read-max-lag: must be positive")
	}
	return nil
}

func isPostgres(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// parseTrustedProxies reads --trusted-proxies: CIDRs, or single addresses.
func (c *Config) parseTrustedProxies(list string) error {
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !strings.Contains(p, "/") {
			if a, err := netip.ParseAddr(p); err == nil {
				p = netip.PrefixFrom(a, a.BitLen()).String()
			}
		}
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			return fmt.Errorf("--trusted-proxies: %w", err)
		}
		c.TrustedProxies = append(c.TrustedProxies, prefix.Masked())
	}
	return nil
}

// decideTLS reads --acme-domain and refuses the TLS choices that exclude
// each other, and a --base-url whose scheme the listener would not speak.
func (c *Config) decideTLS(acmeDomains string) error {
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together")
	}
	for _, d := range strings.Split(acmeDomains, ",") {
		if d = strings.ToLower(strings.TrimSpace(d)); d != "" {
			if net.ParseIP(d) != nil || !strings.Contains(d, ".") {
				return fmt.Errorf("--acme-domain %q: ACME certifies public DNS names, not addresses or single labels", d)
			}
			c.ACMEDomains = append(c.ACMEDomains, d)
		}
	}
	if len(c.ACMEDomains) > 0 && c.TLSCert != "" {
		return fmt.Errorf("--acme-domain and --tls-cert exclude each other")
	}
	if c.TLSProxy && (c.TLSCert != "" || len(c.ACMEDomains) > 0 || c.TLSSelf) {
		return fmt.Errorf("--tls-proxy excludes --tls-cert, --acme-domain and --tls-self: the proxy holds the certificate")
	}
	if c.TLSProxy && !strings.HasPrefix(c.BaseURL, "https://") {
		return fmt.Errorf("--tls-proxy needs --base-url https://… (the proxy's address, which agents use)")
	}
	if !c.TLSProxy && c.Plain() && strings.HasPrefix(strings.ToLower(c.BaseURL), "https://") {
		// The banner, the enrollment tokens and the install lines would
		// say https:// while the listener speaks plain HTTP.
		return fmt.Errorf("--base-url %s says HTTPS, but on the loopback --addr %s patchd serves plain HTTP: "+
			"add --tls-self (HTTPS with the server's own CA) or --tls-cert and --tls-key (your certificate), "+
			"or --tls-proxy when a reverse proxy in front terminates TLS; or give --base-url http://…", c.BaseURL, c.Addr)
	}
	if c.AgentCA != "" && !c.TLSProxy {
		return fmt.Errorf("--agent-ca goes with --tls-proxy (otherwise the pin is the certificate this server presents)")
	}
	return nil
}

func (c *Config) checkSessionsAndLogs() error {
	if c.SessionIdleTimeout < time.Minute {
		return fmt.Errorf("--session-idle-timeout must be at least 1m")
	}
	if c.SessionMaxAge < c.SessionIdleTimeout || c.SessionMaxAge > 720*time.Hour {
		return fmt.Errorf("--session-max-age must be at least --session-idle-timeout (%s) and at most 720h", c.SessionIdleTimeout)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("--log-format must be text or json")
	}
	return nil
}

// readSecretsFromEnv takes the SMTP password and the metrics token from the
// environment when no flag gave them.
func (c *Config) readSecretsFromEnv() {
	if c.SMTP.Password == "" {
		c.SMTP.Password = os.Getenv("PATCHD_SMTP_PASSWORD")
	}
	if c.MetricsToken == "" {
		c.MetricsToken = os.Getenv("PATCHD_METRICS_TOKEN")
	}
}

func (c *Config) checkSecretsAndMail() error {
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		return fmt.Errorf("--metrics-token must have at least 16 characters")
	}
	if c.SMTP.TLS != "starttls" && c.SMTP.TLS != "tls" && c.SMTP.TLS != "none" {
		return fmt.Errorf("--smtp-tls must be starttls, tls or none")
	}
	if _, err := mail.ParseAddress(c.SMTP.From); err != nil {
		return fmt.Errorf("--smtp-from %q is not one e-mail address (for example patchd@example.com, or with a name: \"patchd alerts <patchd@example.com>\"): %v", c.SMTP.From, err)
	}
	if c.SMTP.Retry < time.Minute || c.SMTP.Retry > MaxSMTPRetry {
		return fmt.Errorf("--smtp-retry must be from 1m to %s", MaxSMTPRetry)
	}
	return c.Feeds.Validate()
}

func (c *Config) checkAgentLimits() error {
	if c.CheckinInterval < time.Second {
		return fmt.Errorf("--checkin-interval must be at least 1s")
	}
	if c.ScanInterval < time.Minute {
		return fmt.Errorf("--scan-interval must be at least 1m")
	}
	if c.MaxInventories < 1 {
		return fmt.Errorf("--max-inventories must be at least 1")
	}
	if c.MaxLongPolls < 0 {
		return fmt.Errorf("--max-long-polls must be 0 (from the open-files limit) or more")
	}
	return nil
}

// deriveDefaults fills in the base URL (from the ACME name or --addr and
// whether the listener speaks TLS) and the agents' folder.
func (c *Config) deriveDefaults() {
	if c.BaseURL == "" {
		switch {
		case len(c.ACMEDomains) > 0:
			c.BaseURL = "https://" + c.ACMEDomains[0]
			if _, port, err := net.SplitHostPort(c.Addr); err == nil && port != "443" {
				c.BaseURL += ":" + port
			}
		case c.Plain():
			c.BaseURL = "http://" + c.Addr
		default:
			c.BaseURL = "https://" + c.Addr
		}
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.AgentDir == "" {
		c.AgentDir = filepath.Join(c.DataDir, "agents")
	}
}

func (c *Config) checkPackaging() error {
	if (c.SignCert == "") != (c.SignKey == "") {
		return fmt.Errorf("--sign-cert and --sign-key go together")
	}
	if c.PackageGPGKey != "" {
		if _, err := os.Stat(c.PackageGPGKey); err != nil {
			return fmt.Errorf("--package-gpg-key: %w", err)
		}
	}
	if c.PackageMaintainer != "" {
		if a, err := mail.ParseAddress(c.PackageMaintainer); err != nil || a.Name == "" {
			return fmt.Errorf("--package-maintainer: want Name <address>, not %q", c.PackageMaintainer)
		}
	}
	return nil
}

// Plain tells whether the server speaks plain HTTP: behind --tls-proxy, or
// on a loopback listener without --tls-cert, ACME or --tls-self.
func (c Config) Plain() bool {
	return c.TLSProxy || c.TLSCert == "" && len(c.ACMEDomains) == 0 && !c.TLSSelf && IsLoopback(c.Addr)
}

// IsLoopback tells whether a listen address (host:port) is on loopback:
// 127.0.0.0/8, ::1 or localhost.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
