// Package toolmain is the main of patchd's measuring tools (patchd-load,
// patchd-sim): how they exit, and how they print their JSON report.
package toolmain

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// Run calls run with the command line's arguments and the process's
// output, and exits as a command line tool does: 2 when the flags asked for
// help (the flag package has printed it), 1 after printing any other error
// behind name.
func Run(name string, run func(args []string, stdout, stderr io.Writer) error) {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// PrintJSON writes report to w as JSON indented by two spaces.
func PrintJSON(w io.Writer, report any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(report)
}
