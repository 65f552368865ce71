// Command served writes the OpenAPI document exactly as GET
// /api/v1/openapi.json serves it (openapi.JSON, which the server's API
// configuration uses; internal/api's TestServedDocumentIsOpenAPIJSON holds the
// two together) to the file named by its argument, or to standard output.
// .ci/run lints that file with Redocly and Spectral and generates a
// TypeScript client from it.
package main

import (
	"fmt"
	"os"

	"github.com/patchd/patchd/openapi"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "served:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 1 {
		return fmt.Errorf("usage: go run ./openapi/served [FILE]")
	}
	doc, err := openapi.JSON()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		_, err = os.Stdout.Write(doc)
		return err
	}
	if err := os.WriteFile(args[0], doc, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", args[0], err)
	}
	return nil
}
