// Package openapi owns the machine-readable description of the REST API v1:
// the OpenAPI 3.0.3 document openapi.yaml, embedded in the binary and served
// as JSON at GET /api/v1/openapi.json.
package openapi

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed openapi.yaml
var document []byte

// YAML returns the document as written. The caller must not modify it.
func YAML() []byte {
	return document
}

// Load parses the document, resolves its references and validates it.
func Load() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(document)
	if err != nil {
		return nil, fmt.Errorf("openapi: load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi: validate: %w", err)
	}
	return doc, nil
}

// JSON returns the document as JSON, the body of GET /api/v1/openapi.json.
// It is computed once; the caller must not modify the returned slice.
func JSON() ([]byte, error) {
	return jsonOnce()
}

var jsonOnce = sync.OnceValues(func() ([]byte, error) {
	doc, err := Load()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode json: %w", err)
	}
	return b, nil
})
