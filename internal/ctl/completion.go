package ctl

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// The shell scripts ask patchctl itself for candidates (`patchctl
// __complete WORD…` with the words before the cursor), so completion always
// matches the command table of the installed binary.
const bashCompletion = `# bash completion for patchctl; load with: source <(patchctl completion bash)
_patchctl() {
	local cur="${COMP_WORDS[COMP_CWORD]}"
	local IFS=$'\n'
	COMPREPLY=($(compgen -W "$(patchctl __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _patchctl patchctl
`

const zshCompletion = `#compdef patchctl
# zsh completion for patchctl; load with: source <(patchctl completion zsh)
# or save it as _patchctl in a folder of $fpath.
_patchctl() {
	local -a candidates
	candidates=("${(@f)$(patchctl __complete "${(@)words[2,CURRENT-1]}" 2>/dev/null)}")
	compadd -a candidates
}
if [ "$funcstack[1]" = "_patchctl" ]; then
	_patchctl "$@"
else
	compdef _patchctl patchctl
fi
`

const fishCompletion = `# fish completion for patchctl; load with: patchctl completion fish | source
complete -c patchctl -f -a '(patchctl __complete (commandline -opc)[2..-1])'
`

func completionCommands() []command {
	return []command{
		{name: "completion", args: "bash|zsh|fish", summary: "print the shell completion script",
			setup: func(fs *flag.FlagSet) func(*session, []string) error {
				return func(s *session, args []string) error {
					if err := needArgs(args, "SHELL"); err != nil {
						return err
					}
					scripts := map[string]string{"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion}
					script, ok := scripts[args[0]]
					if !ok {
						return usagef("no completion for shell %q: bash, zsh or fish", args[0])
					}
					_, err := io.WriteString(s.io.Stdout, script)
					return err
				}
			}},
	}
}

// valueFlags are flags whose values patchctl can offer.
var valueFlags = map[string][]string{
	"o": {"table", "json", "csv"}, "output": {"table", "json", "csv"}, "default-output": {"table", "json", "csv"},
	"color": {"auto", "always", "never"}, "type": actionTypes, "trigger": alertTriggers, "severity": severities,
	"source": {"OS", "THIRD_PARTY"},
}

// complete prints the candidates for the word after words, one a line.
func complete(w io.Writer, words []string) {
	if n := len(words); n > 0 && strings.HasPrefix(words[n-1], "-") {
		if values, ok := valueFlags[strings.TrimLeft(words[n-1], "-")]; ok {
			for _, v := range values {
				fmt.Fprintln(w, v)
			}
			return
		}
	}
	var plain []string
	for i := 0; i < len(words); i++ {
		word := words[i]
		if strings.HasPrefix(word, "-") {
			// Skip the value of a flag that takes one.
			if !strings.Contains(word, "=") && i+1 < len(words) && takesValue(strings.TrimLeft(word, "-")) {
				i++
			}
			continue
		}
		plain = append(plain, word)
	}
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	switch {
	case len(plain) == 0:
		for _, c := range commands {
			add(strings.Fields(c.name)[0])
		}
		add("help")
	case len(plain) == 1 && plain[0] == "completion":
		for _, sh := range []string{"bash", "zsh", "fish"} {
			add(sh)
		}
	case len(plain) == 1 && plain[0] == "help":
		for _, c := range commands {
			add(strings.Fields(c.name)[0])
		}
	default:
		cmd, used := lookup(plain)
		if cmd == nil || (used == 1 && len(plain) == 1 && hasVerbs(plain[0])) {
			for _, c := range commands {
				if f := strings.Fields(c.name); len(f) == 2 && f[0] == plain[0] {
					add(f[1])
				}
			}
			break
		}
		fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
		var g globals
		g.register(fs)
		cmd.setup(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if len(f.Name) == 1 {
				add("-" + f.Name)
			} else {
				add("--" + f.Name)
			}
		})
	}
	sort.Strings(out)
	for _, s := range out {
		fmt.Fprintln(w, s)
	}
}

func hasVerbs(resource string) bool {
	for _, c := range commands {
		if strings.HasPrefix(c.name, resource+" ") {
			return true
		}
	}
	return false
}

// takesValue tells whether a flag of any command takes a value (is not a
// boolean).
func takesValue(name string) bool {
	for _, c := range commands {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		var g globals
		g.register(fs)
		c.setup(fs)
		if f := fs.Lookup(name); f != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				return false
			}
			return true
		}
	}
	return false
}
