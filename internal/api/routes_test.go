package api_test

import (
	"bytes"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/openapi"
)

// TestRouteTableMatchesDocument holds the route table and the OpenAPI
// document to each other: every routed operation is described, and every
// described operation is routed.
func TestRouteTableMatchesDocument(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	var described []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			described = append(described, method+" "+path)
		}
	}
	routed := e.Server.API().Routes()
	sort.Strings(described)
	sort.Strings(routed)
	if strings.Join(described, "\n") != strings.Join(routed, "\n") {
		t.Fatalf("route table and OpenAPI document differ\nrouted:\n%s\n\ndescribed:\n%s", strings.Join(routed, "\n"), strings.Join(described, "\n"))
	}
	// The 25 of the specification and the patchd additions (each described
	// as one in the document).
	additions := 0
	for _, r := range routed {
		method, path, _ := strings.Cut(r, " ")
		if op := doc.Paths.Find(path).GetOperation(method); strings.HasPrefix(op.Description, "patchd addition") {
			additions++
		}
	}
	if len(routed)-additions != 25 || additions != 1 {
		t.Fatalf("%d operations routed, %d of them patchd additions; the spec has 25, patchd adds 1", len(routed), additions)
	}
}

// TestServedDocumentIsOpenAPIJSON: GET /api/v1/openapi.json serves exactly
// openapi.JSON(), the bytes that .ci/run writes out (go run ./openapi/served)
// and lints with Redocly and Spectral.
func TestServedDocumentIsOpenAPIJSON(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	resp, err := e.HTTPClient.Get(e.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	served, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want, err := openapi.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(served, want) {
		t.Fatalf("served %d %q, %d bytes; openapi.JSON has %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(served), len(want))
	}
}
