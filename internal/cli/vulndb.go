package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/version"
	"github.com/patchd/patchd/internal/vulndb"
	"github.com/patchd/patchd/internal/vulns"
)

// vulndbVerbHelp is what -h prints of each patchd vulndb command after its
// usage line.
var vulndbVerbHelp = map[string]string{
	"import": " FILE…\n\nImports vulnerability feed files read off-line; the format of each is detected (plain, .gz or .zip).",
	"sync":   "\n\nDownloads the enabled feeds now, as the server does on its schedule.",
}

// runVulndb runs patchd vulndb import FILE… and patchd vulndb sync.
func runVulndb(ctx context.Context, args []string, stdio IO) error {
	if len(args) == 0 {
		return usagef("vulndb needs a verb: import FILE… or sync")
	}
	if isHelp(args[0]) {
		fmt.Fprintln(stdio.Out, "patchd vulndb commands (each takes -h for its flags):\n  patchd vulndb import FILE…\n  patchd vulndb sync")
		return nil
	}
	verb, rest := args[0], args[1:]
	name := "patchd vulndb " + verb
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var dataDir, db string
	config.Common(fs, &dataDir, &db)
	var keyFile string
	config.SecretKeyFlag(fs, &keyFile)
	var feedFlags config.Feeds
	var since string
	switch verb {
	case "import":
	case "sync":
		config.FeedFlags(fs, &feedFlags)
		fs.StringVar(&since, "nvd-since", "", "first NVD sync: CVEs modified since this date (YYYY-MM-DD, default 1999-01-01)")
	default:
		return usagef("unknown vulndb command %q", verb)
	}
	if err := parseFlags(fs, rest, vulndbVerbHelp[verb]); err != nil {
		return err
	}
	if verb == "import" && fs.NArg() == 0 {
		return usagef("%s: at least one feed file is required (flags come before files)", name)
	}
	if verb == "sync" && fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", name, fs.Arg(0))
	}
	cfg := vulndb.ConfigFromFeeds(feedFlags)
	if err := feedFlags.Validate(); err != nil {
		return asUsage(err)
	}
	if since != "" {
		t, err := time.Parse("2006-01-02", since)
		if err != nil {
			return usagef("--nvd-since %q: use YYYY-MM-DD", since)
		}
		cfg.NVDSince = t
	}
	key, err := secretKey(dataDir, keyFile)
	if err != nil {
		return err
	}
	s, err := store.Open(ctx, db, dataDir, store.Options{MaxConns: 4, SecretKey: key, ServerVersion: version.Version})
	if err != nil {
		return err
	}
	defer s.Close()
	if verb == "import" {
		res, err := vulndb.ImportFiles(ctx, s, fs.Args(), vulndb.By{Actor: cliActor()})
		if err != nil {
			return err
		}
		return printJSON(stdio.Out, res)
	}
	res, err := vulndb.Sync(ctx, s, cfg, vulndb.By{Actor: cliActor()})
	if err != nil {
		return err
	}
	return printJSON(stdio.Out, res)
}

var cveID = regexp.MustCompile(`^CVE-\d{4}-\d{4,}$`)

// vulnAdmin defines patchd admin vuln accept|list|revoke|policy: accepted
// risks and compensating controls (audited), and the remediation periods.
func vulnAdmin(ctx context.Context, verb string) (func(fs *flag.FlagSet), func(s *store.Store) (any, error), error) {
	var org, cve, reason, expires, kind string
	var critical, high, medium, low int
	orgFlag := func(fs *flag.FlagSet) { fs.StringVar(&org, "org", "", "organization id or name") }
	entry := func(o store.Org, action string) *store.AuditEntry {
		return &store.AuditEntry{OrgID: o.ID, Actor: admin.ActorCLI, Action: action}
	}
	checkCVE := func() (string, error) {
		c := strings.ToUpper(strings.TrimSpace(cve))
		if !cveID.MatchString(c) {
			return "", usagef("--cve must be a CVE id such as CVE-2023-4863")
		}
		return c, nil
	}
	switch verb {
	case "accept":
		define := func(fs *flag.FlagSet) {
			orgFlag(fs)
			fs.StringVar(&cve, "cve", "", "CVE id")
			fs.StringVar(&reason, "reason", "", "why the risk is accepted, or the control in place")
			fs.StringVar(&expires, "expires", "", "how long the decision holds, for example 720h; never (the default) for no expiry")
			fs.StringVar(&kind, "kind", store.ExceptionAccepted, "accepted or compensating_control")
		}
		do := func(s *store.Store) (any, error) {
			if _, err := checkCVE(); err != nil {
				return nil, err
			}
			if kind != store.ExceptionAccepted && kind != store.ExceptionCompensatingControl {
				return nil, usagef("--kind must be accepted or compensating_control")
			}
			if strings.TrimSpace(reason) == "" {
				return nil, usagef("--reason is required")
			}
			d, err := parseExpires(expires)
			if err != nil {
				return nil, err
			}
			o, err := s.FindOrg(ctx, org)
			if err != nil {
				return nil, err
			}
			x, err := admin.AcceptVulnRisk(ctx, s, admin.ActorCLI, o.ID, cve, kind, reason, d, time.Now())
			if err != nil {
				return nil, err
			}
			return map[string]any{"ok": true, "exception": x}, nil
		}
		return define, do, nil
	case "list":
		define := func(fs *flag.FlagSet) {
			orgFlag(fs)
			fs.StringVar(&kind, "kind", "", "only accepted or compensating_control")
		}
		do := func(s *store.Store) (any, error) {
			o, err := s.FindOrg(ctx, org)
			if err != nil {
				return nil, err
			}
			list, err := s.ListVulnExceptions(ctx, o.ID, kind, time.Now())
			if err != nil {
				return nil, err
			}
			policy, err := s.VulnPolicy(ctx, o.ID)
			if err != nil {
				return nil, err
			}
			return map[string]any{"items": list, "total": len(list), "policy": policyDays(policy)}, nil
		}
		return define, do, nil
	case "revoke":
		define := func(fs *flag.FlagSet) {
			orgFlag(fs)
			fs.StringVar(&cve, "cve", "", "CVE id")
		}
		do := func(s *store.Store) (any, error) {
			c, err := checkCVE()
			if err != nil {
				return nil, err
			}
			o, err := s.FindOrg(ctx, org)
			if err != nil {
				return nil, err
			}
			if _, err := admin.RevokeVulnRisk(ctx, s, admin.ActorCLI, o.ID, c); err != nil {
				if errors.Is(err, dberr.ErrNotFound) {
					return nil, fmt.Errorf("no accepted risk or compensating control for %s in %s", c, o.Name)
				}
				return nil, err
			}
			return map[string]any{"ok": true, "cveId": c}, nil
		}
		return define, do, nil
	case "policy":
		define := func(fs *flag.FlagSet) {
			orgFlag(fs)
			fs.IntVar(&critical, "critical-days", 0, "days to fix a Critical vulnerability (default 15)")
			fs.IntVar(&high, "high-days", 0, "days to fix a High one (default 30)")
			fs.IntVar(&medium, "medium-days", 0, "days to fix a Medium one (default 90)")
			fs.IntVar(&low, "low-days", 0, "days to fix a Low one (default 180)")
		}
		do := func(s *store.Store) (any, error) {
			o, err := s.FindOrg(ctx, org)
			if err != nil {
				return nil, err
			}
			p, err := s.VulnPolicy(ctx, o.ID)
			if err != nil {
				return nil, err
			}
			const day = 24 * time.Hour
			for _, f := range []struct {
				n   int
				dst *time.Duration
			}{{critical, &p.Critical}, {high, &p.High}, {medium, &p.Medium}, {low, &p.Low}} {
				if f.n < 0 || f.n > 3650 {
					return nil, usagef("periods are 1 to 3650 days")
				}
				if f.n > 0 {
					*f.dst = time.Duration(f.n) * day
				}
			}
			if err := s.SetVulnPolicy(ctx, entry(o, "vulnerability.policy"), o.ID, p); err != nil {
				return nil, err
			}
			return map[string]any{"ok": true, "policy": policyDays(p)}, nil
		}
		return define, do, nil
	}
	return nil, nil, usagef("unknown admin command %q", "vuln "+verb)
}

func policyDays(p vulns.Policy) map[string]int {
	days := func(d time.Duration) int { return int(d / (24 * time.Hour)) }
	return map[string]int{"criticalDays": days(p.Critical), "highDays": days(p.High), "mediumDays": days(p.Medium), "lowDays": days(p.Low)}
}
