package ctl

import (
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

var scriptCols = []column[apiv1.Script]{
	col("ID", func(sc apiv1.Script) string { return sc.ID }),
	col("NAME", func(sc apiv1.Script) string { return sc.Name }),
	col("LANGUAGE", func(sc apiv1.Script) string { return sc.Language }),
	col("PARAMETERS", func(sc apiv1.Script) string { return paramsText(sc.Parameters) }),
	col("REBOOT EXIT CODES", func(sc apiv1.Script) string { return intsText(sc.RebootExitCodes) }),
	numCol("TIMEOUT", func(sc apiv1.Script) string { return strconv.Itoa(sc.TimeoutSeconds) }),
	col("UPDATED", func(sc apiv1.Script) string { return when(&sc.UpdatedAt) }),
}

func paramsText(ps []apiv1.ScriptParameter) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Name
		if p.Required {
			parts[i] += "!"
		}
		if p.Default != "" {
			parts[i] += "=" + p.Default
		}
	}
	return strings.Join(parts, " ")
}

func intsText(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

func scriptPairs(sc apiv1.Script) [][2]string {
	return [][2]string{{"ID", sc.ID}, {"Name", sc.Name}, {"Language", sc.Language}, {"Parameters", paramsText(sc.Parameters)},
		{"Reboot exit codes", intsText(sc.RebootExitCodes)}, {"Timeout seconds", strconv.Itoa(sc.TimeoutSeconds)},
		{"Created", when(&sc.CreatedAt)}, {"Updated", when(&sc.UpdatedAt)}, {"Code", sc.Code}}
}

// scriptParams is a repeatable --param NAME=DEFAULT (NAME!= required) flag.
type scriptParams []apiv1.ScriptParameter

func (p *scriptParams) String() string { return "" }

func (p *scriptParams) Set(v string) error {
	name, def, _ := strings.Cut(v, "=")
	name = strings.TrimSpace(name)
	required := strings.HasSuffix(name, "!")
	if name = strings.TrimSuffix(name, "!"); name == "" {
		return usagef("--param wants NAME=DEFAULT (NAME!= for a required parameter)")
	}
	*p = append(*p, apiv1.ScriptParameter{Name: name, Default: def, Required: required})
	return nil
}

// scriptFlags are the flags of scripts create and update; only the flags
// given go into the body.
type scriptFlags struct {
	fs                                *flag.FlagSet
	file, name, language, code, codes string
	codeFile                          string
	timeout                           time.Duration
	params                            scriptParams
	noParams                          bool
}

func (f *scriptFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.file, "f", "", "ScriptBody JSON `FILE` (- for stdin); flags given override its fields")
	fs.StringVar(&f.name, "name", "", "script `NAME`, unique in the organization")
	fs.StringVar(&f.language, "language", "", "`LANGUAGE`: sh, bash, powershell, python or cmd")
	fs.StringVar(&f.code, "code", "", "the script's `CODE`")
	fs.StringVar(&f.codeFile, "code-file", "", "read the code from `FILE` (- for stdin)")
	fs.Var(&f.params, "param", "a parameter `NAME=DEFAULT` (NAME!= for a required one); repeat for several; replaces the list")
	fs.BoolVar(&f.noParams, "no-params", false, "remove every parameter")
	fs.StringVar(&f.codes, "reboot-exit-codes", "", "comma-separated exit `CODES` that mean a reboot is needed (\"\" for none)")
	fs.DurationVar(&f.timeout, "timeout", 0, "time limit of a run, e.g. 10m (0: the agent's default)")
}

func (f *scriptFlags) body(s *session) (apiv1.ScriptBody, error) {
	var b apiv1.ScriptBody
	if f.file != "" {
		if err := readJSONFile(s, f.file, &b); err != nil {
			return b, err
		}
	}
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if given["name"] {
		b.Name = &f.name
	}
	if given["language"] {
		b.Language = &f.language
	}
	switch {
	case given["code"] && given["code-file"]:
		return b, usagef("give --code or --code-file, not both")
	case given["code"]:
		b.Code = &f.code
	case given["code-file"]:
		if f.file == "-" && f.codeFile == "-" {
			return b, usagef("-f and --code-file cannot both read stdin")
		}
		data, err := readInput(s, f.codeFile)
		if err != nil {
			return b, err
		}
		code := string(data)
		b.Code = &code
	}
	switch {
	case given["param"] && f.noParams:
		return b, usagef("give --param or --no-params, not both")
	case given["param"]:
		ps := []apiv1.ScriptParameter(f.params)
		b.Parameters = &ps
	case f.noParams:
		b.Parameters = &[]apiv1.ScriptParameter{}
	}
	if given["reboot-exit-codes"] {
		codes := []int{}
		for _, field := range strings.Split(f.codes, ",") {
			if field = strings.TrimSpace(field); field == "" {
				continue
			}
			n, err := strconv.Atoi(field)
			if err != nil {
				return b, usagef("--reboot-exit-codes: %q is not an integer", field)
			}
			codes = append(codes, n)
		}
		b.RebootExitCodes = &codes
	}
	if given["timeout"] {
		if f.timeout < 0 || f.timeout%time.Second != 0 {
			return b, usagef("--timeout must be a whole number of seconds, 0 or more")
		}
		secs := int(f.timeout / time.Second)
		b.TimeoutSeconds = &secs
	}
	return b, nil
}

func scriptCommands() []command {
	return []command{
		listCommand("scripts list", "list the script library", scriptCols, (*client.Client).ListScripts),
		getCommand("scripts get", "ID|NAME", "show a script with its code", (*client.Client).GetScript, scriptCols, scriptPairs),
		{name: "scripts create", args: "--name NAME --language L (--code TEXT | --code-file F) [--param N=D]… [--reboot-exit-codes 3010,1641] [--timeout 10m] [-f script.json]",
			summary: "add a script to the library",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var f scriptFlags
				f.register(fs)
				return withChecked("", func(s *session, _ []string) (apiv1.ScriptBody, error) {
					b, err := f.body(s)
					if err == nil && (b.Name == nil || b.Language == nil || b.Code == nil) {
						err = usagef("scripts create needs --name, --language and --code or --code-file (or -f FILE)")
					}
					return b, err
				}, func(s *session, c *client.Client, _ []string, b apiv1.ScriptBody) error {
					sc, err := c.CreateScript(s.ctx, b)
					if err != nil {
						return err
					}
					return s.done(sc, "Script %s created: %s", sc.Name, sc.ID)
				})
			}},
		{name: "scripts update", args: "ID|NAME [flags of create]", summary: "change the fields given of a script",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				var f scriptFlags
				f.register(fs)
				return withChecked("ID|NAME", func(s *session, _ []string) (apiv1.ScriptBody, error) {
					b, err := f.body(s)
					if err == nil && b == (apiv1.ScriptBody{}) {
						err = usagef("nothing to change: give a flag of scripts create or -f FILE")
					}
					return b, err
				}, func(s *session, c *client.Client, args []string, b apiv1.ScriptBody) error {
					sc, err := c.UpdateScript(s.ctx, args[0], b)
					if err != nil {
						return err
					}
					return s.done(sc, "Script %s updated.", sc.Name)
				})
			}},
		deleteCommand("scripts delete", "ID|NAME", "delete a script (automations that name it fail to run afterwards)", "Script %s deleted.", (*client.Client).DeleteScript),
	}
}
