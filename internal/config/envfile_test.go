package config_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/config"
)

// TestServeEnvFileListsEveryFlag: every flag of patchd serve has an
// environment variable, the one its usage names is the one it reads (set
// it, and the flag's default follows), and the packages' environment file
// lists each once, commented, with the unit's own settings set.
func TestServeEnvFileListsEveryFlag(t *testing.T) {
	flags, env := config.ServeEnv()
	if len(flags) < 40 {
		t.Fatalf("found %d flags only", len(flags))
	}
	file := config.ServeEnvFile(map[string]string{"PATCHD_DATA": "/var/lib/patchd"})
	for i, f := range flags {
		name := env[i]
		if name == "" {
			t.Errorf("--%s names no environment variable in its usage", f.Name)
			continue
		}
		probe := "probe-value"
		switch {
		case f.DefValue == "false" || f.DefValue == "true":
			probe = strconv.FormatBool(f.DefValue == "false")
		case isInt(f.DefValue):
			probe = "7"
		case isDuration(f.DefValue):
			probe = "7m0s"
		}
		t.Setenv(name, probe)
		again, _ := config.ServeEnv()
		// A secret's variable is read after parsing, so that --help does
		// not show it ("prefer the env …").
		if secret := strings.Contains(f.Usage, "prefer the env "+name); !secret && (again[i].Name != f.Name || again[i].DefValue != probe) {
			t.Errorf("--%s: with %s=%s its default is %q: the flag does not read the variable its usage names", f.Name, name, probe, again[i].DefValue)
		}
		want := "\n#" + name + "="
		if name == "PATCHD_DATA" {
			want = "\nPATCHD_DATA=/var/lib/patchd\n"
		}
		if n := strings.Count(file, want); n != 1 {
			t.Errorf("the environment file holds %q %d times", want, n)
		}
	}
}

func isInt(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

func isDuration(s string) bool {
	_, err := time.ParseDuration(s)
	return err == nil && !isInt(s)
}
