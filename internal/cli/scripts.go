package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/actions"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/store"
)

// paramFlags collects repeated --param NAME=DEFAULT flags.
type paramFlags []actions.ScriptParam

func (p *paramFlags) String() string { return "" }

func (p *paramFlags) Set(v string) error {
	name, def, _ := strings.Cut(v, "=")
	name = strings.TrimSpace(name)
	required := strings.HasSuffix(name, "!")
	name = strings.TrimSuffix(name, "!")
	if name == "" {
		return fmt.Errorf("--param wants NAME=DEFAULT (NAME!= for a required parameter)")
	}
	*p = append(*p, actions.ScriptParam{Name: name, Default: def, Required: required})
	return nil
}

// scriptAndRunAdmin defines the flags and the action of patchd admin
// script create|update|list|delete and patchd admin run stop.
func scriptAndRunAdmin(ctx context.Context, object, verb string, stdio IO) (func(fs *flag.FlagSet), func(s *store.Store) (any, error), bool) {
	var org, id, name, language, code, codeFile, codes string
	var timeout int
	var params paramFlags
	set := map[string]bool{}
	orgFlag := func(fs *flag.FlagSet) { fs.StringVar(&org, "org", "", "organization id or name") }
	scriptFlags := func(fs *flag.FlagSet) {
		orgFlag(fs)
		fs.StringVar(&name, "name", "", "script name, unique in the organization")
		fs.StringVar(&language, "language", "", "sh, bash, powershell, python or cmd")
		fs.StringVar(&code, "code", "", "the script's code")
		fs.StringVar(&codeFile, "code-file", "", "read the code from this file (- for standard input)")
		fs.Var(&params, "param", "a parameter NAME=DEFAULT (NAME!= for a required one); repeat for several")
		fs.StringVar(&codes, "reboot-exit-codes", "", "comma-separated exit codes that mean a reboot is needed, for example 3010,1641")
		fs.IntVar(&timeout, "timeout", 0, "time limit in seconds (0: the agent's default)")
	}
	findOrg := func(s *store.Store) (store.Org, error) { return s.FindOrg(ctx, org) }
	entry := func(o store.Org, action, target, targetID string) *store.AuditEntry {
		return &store.AuditEntry{OrgID: o.ID, Actor: admin.ActorCLI, Action: action, TargetType: target, TargetID: targetID}
	}
	// fill applies the flags given on the command line to sc and validates it.
	fill := func(sc *store.Script) error {
		if set["name"] {
			sc.Name = strings.TrimSpace(name)
		}
		if set["language"] {
			l, ok := actions.Language(language)
			if !ok {
				return usagef("--language must be sh, bash, powershell, python or cmd")
			}
			sc.Language = l
		}
		switch {
		case set["code"] && set["code-file"]:
			return usagef("give --code or --code-file, not both")
		case set["code"]:
			sc.Code = code
		case set["code-file"]:
			var b []byte
			var err error
			if codeFile == "-" {
				b, err = io.ReadAll(stdio.In)
			} else {
				b, err = os.ReadFile(codeFile)
			}
			if err != nil {
				return fmt.Errorf("read the code: %w", err)
			}
			sc.Code = string(b)
		}
		if set["param"] {
			sc.Parameters = params
		}
		if set["reboot-exit-codes"] {
			sc.RebootExitCodes = []int{}
			for _, f := range strings.Split(codes, ",") {
				if f = strings.TrimSpace(f); f == "" {
					continue
				}
				n, err := strconv.Atoi(f)
				if err != nil {
					return usagef("--reboot-exit-codes: %q is not an integer", f)
				}
				sc.RebootExitCodes = append(sc.RebootExitCodes, n)
			}
		}
		if set["timeout"] {
			if timeout < 0 || timeout > actions.MaxScriptTimeout {
				return usagef("--timeout must be 0 to %d seconds", actions.MaxScriptTimeout)
			}
			sc.TimeoutSeconds = timeout
		}
		switch {
		case sc.Name == "":
			return usagef("--name is required")
		case sc.Language == "":
			return usagef("--language is required")
		case strings.TrimSpace(sc.Code) == "":
			return usagef("--code or --code-file is required")
		case len(sc.Code) > actions.MaxScriptBytes:
			return usagef("the code must be at most %d bytes", actions.MaxScriptBytes)
		}
		seen := map[string]bool{}
		for _, p := range sc.Parameters {
			if seen[p.Name] {
				return usagef("--param %s is given twice", p.Name)
			}
			seen[p.Name] = true
		}
		return nil
	}
	// parsed records which flags were given, once parsing is done.
	parsed := func(fs *flag.FlagSet) { fs.Visit(func(f *flag.Flag) { set[f.Name] = true }) }

	switch object + " " + verb {
	case "script create":
		var fs *flag.FlagSet
		return func(f *flag.FlagSet) { fs = f; scriptFlags(f) }, func(s *store.Store) (any, error) {
			parsed(fs)
			o, err := findOrg(s)
			if err != nil {
				return nil, err
			}
			sc := store.Script{OrgID: o.ID}
			if err := fill(&sc); err != nil {
				return nil, err
			}
			return s.CreateScript(ctx, entry(o, "script.create", "script", ""), sc, time.Now())
		}, true
	case "script update":
		var fs *flag.FlagSet
		return func(f *flag.FlagSet) {
				fs = f
				scriptFlags(f)
				f.StringVar(&id, "id", "", "the script's id or name")
			}, func(s *store.Store) (any, error) {
				parsed(fs)
				o, err := findOrg(s)
				if err != nil {
					return nil, err
				}
				sc, err := s.GetScript(ctx, o.ID, id)
				if err != nil {
					return nil, err
				}
				if err := fill(&sc); err != nil {
					return nil, err
				}
				return s.UpdateScript(ctx, entry(o, "script.update", "script", sc.ID), sc, time.Now())
			}, true
	case "script list":
		return orgFlag, func(s *store.Store) (any, error) {
			o, err := findOrg(s)
			if err != nil {
				return nil, err
			}
			list, err := s.ListScripts(ctx, o.ID)
			return map[string]any{"items": list, "total": len(list)}, err
		}, true
	case "script delete":
		return func(fs *flag.FlagSet) {
				orgFlag(fs)
				fs.StringVar(&id, "id", "", "the script's id or name")
			}, func(s *store.Store) (any, error) {
				o, err := findOrg(s)
				if err != nil {
					return nil, err
				}
				sc, err := s.GetScript(ctx, o.ID, id)
				if err != nil {
					return nil, err
				}
				if err := s.DeleteScript(ctx, entry(o, "script.delete", "script", sc.ID), o.ID, sc.ID); err != nil {
					return nil, err
				}
				return map[string]any{"id": sc.ID, "deleted": true}, nil
			}, true
	case "run stop":
		return func(fs *flag.FlagSet) {
				orgFlag(fs)
				fs.StringVar(&id, "id", "", "the run's id")
			}, func(s *store.Store) (any, error) {
				o, err := findOrg(s)
				if err != nil {
					return nil, err
				}
				return s.StopRun(ctx, entry(o, "run.stop", "run", id), o.ID, id, time.Now())
			}, true
	}
	return nil, nil, false
}
