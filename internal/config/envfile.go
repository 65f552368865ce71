package config

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
)

var envInUsage = regexp.MustCompile(`env (PATCHD_[A-Z0-9_]+)`)

// ServeEnv answers, for each flag of patchd serve in order, the environment
// variable that sets it (read from its usage text, the last "env PATCHD_…";
// "" for a flag without one).
func ServeEnv() (flags []*flag.Flag, env []string) {
	var c Config
	fs := flag.NewFlagSet("patchd serve", flag.ContinueOnError)
	// An environment duration that does not parse fails ParseServe; the
	// flags are registered all the same.
	c.registerServeFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		flags = append(flags, f)
		name := ""
		// The last one: a usage may name another variable before.
		if m := envInUsage.FindAllStringSubmatch(f.Usage, -1); m != nil {
			name = m[len(m)-1][1]
		}
		env = append(env, name)
	})
	return flags, env
}

// ServeEnvFile is the environment file of the server's packages
// (/etc/patchd/patchd.env): every flag of patchd serve as a commented
// variable with its usage and default, made from the flag table so that
// it lists what this version accepts. defaults are the variables the
// packaged unit sets already, shown set to their value. A default the
// environment of the program that writes the file set is not shown.
func ServeEnvFile(defaults map[string]string) string {
	var b strings.Builder
	b.WriteString(`# patchd serve's configuration: every flag, as an environment variable.
# Uncomment and set what you need, then: systemctl restart patchd
# A flag on the command line wins over its variable. Keep this file
# 0640 root:patchd: it may hold passwords (PATCHD_DB, PATCHD_SMTP_PASSWORD).
# Reference: patchd serve -h, docs/operations.md.
`)
	flags, env := ServeEnv()
	for i, f := range flags {
		b.WriteString("\n")
		for _, line := range wrap(f.Usage, 74) {
			b.WriteString("# " + line + "\n")
		}
		name := env[i]
		if name == "" {
			fmt.Fprintf(&b, "# --%s has no variable: add it to ExecStart in a drop-in (systemctl edit patchd).\n", f.Name)
			continue
		}
		if v, ok := defaults[name]; ok {
			fmt.Fprintf(&b, "%s=%s\n", name, v)
			continue
		}
		def := f.DefValue
		if os.Getenv(name) != "" {
			def = ""
		}
		fmt.Fprintf(&b, "#%s=%s\n", name, def)
	}
	return b.String()
}

// wrap breaks text into lines of at most width characters at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}
