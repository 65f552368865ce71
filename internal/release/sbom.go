package release

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// The SBOM of a binary is written from the Go build information the
// binary carries (debug/buildinfo: the main module, every module linked
// in, their go.sum hashes, the Go version and the build settings): it
// lists exactly what was linked, and needs no tool beside the binary.
// CycloneDX 1.5 JSON, components as Package URLs pkg:golang/PATH@VERSION.

type cdxBOM struct {
	Schema       string          `json:"$schema"`
	BOMFormat    string          `json:"bomFormat"`
	SpecVersion  string          `json:"specVersion"`
	SerialNumber string          `json:"serialNumber"`
	Version      int             `json:"version"`
	Metadata     cdxMetadata     `json:"metadata"`
	Components   []cdxComponent  `json:"components"`
	Dependencies []cdxDependency `json:"dependencies"`
}

type cdxMetadata struct {
	Timestamp string       `json:"timestamp"`
	Tools     cdxTools     `json:"tools"`
	Component cdxComponent `json:"component"`
}

type cdxTools struct {
	Components []cdxComponent `json:"components"`
}

type cdxComponent struct {
	Type       string        `json:"type"`
	BOMRef     string        `json:"bom-ref,omitempty"`
	Name       string        `json:"name"`
	Version    string        `json:"version,omitempty"`
	PURL       string        `json:"purl,omitempty"`
	Hashes     []cdxHash     `json:"hashes,omitempty"`
	Properties []cdxProperty `json:"properties,omitempty"`
}

type cdxHash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

type cdxProperty struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type cdxDependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

// purl is the Package URL of a Go module version.
func purl(path, version string, qualifiers ...string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	p := "pkg:golang/" + strings.Join(segs, "/") + "@" + url.PathEscape(version) + "?type=module"
	for _, q := range qualifiers {
		p += "&" + q
	}
	return p
}

// SBOM answers the CycloneDX SBOM of the binary file, the program prog
// of release b.
func SBOM(file, prog string, b Build) ([]byte, error) {
	bi, err := buildinfo.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("SBOM of %s: %w", file, err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	settings := map[string]string{}
	var props []cdxProperty
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
		props = append(props, cdxProperty{Name: "go:build:" + s.Key, Value: s.Value})
	}
	version := "v" + b.Version
	mainRef := purl(bi.Main.Path, version, "goos="+settings["GOOS"], "goarch="+settings["GOARCH"])
	// The serial number is derived from the binary, so that the SBOM is
	// as reproducible as the binary (RFC 4122 version 8 layout).
	u := sha256.Sum256(append([]byte("patchd SBOM "), sum[:]...))
	u[6] = u[6]&0x0f | 0x80
	u[8] = u[8]&0x3f | 0x80
	serial := fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])

	bom := cdxBOM{
		Schema: "http://cyclonedx.org/schema/bom-1.5.schema.json", BOMFormat: "CycloneDX", SpecVersion: "1.5",
		SerialNumber: serial, Version: 1,
		Metadata: cdxMetadata{
			Timestamp: b.Date.UTC().Format(time.RFC3339),
			Tools:     cdxTools{Components: []cdxComponent{{Type: "application", Name: "patchd internal/release (from debug/buildinfo)"}}},
			Component: cdxComponent{Type: "application", BOMRef: mainRef, Name: prog, Version: b.Version, PURL: mainRef,
				Hashes:     []cdxHash{{Alg: "SHA-256", Content: fmt.Sprintf("%x", sum)}},
				Properties: append([]cdxProperty{{Name: "go:package", Value: bi.Path}, {Name: "go:commit", Value: b.Commit}}, props...)},
		},
	}
	std := purl("std", bi.GoVersion)
	bom.Components = append(bom.Components, cdxComponent{Type: "library", BOMRef: std, Name: "std", Version: bi.GoVersion, PURL: std,
		Properties: []cdxProperty{{Name: "go:toolchain", Value: "the Go standard library and runtime"}}})
	deps := []string{std}
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		c := cdxComponent{Type: "library", Name: m.Path, Version: m.Version, PURL: purl(m.Path, m.Version)}
		c.BOMRef = c.PURL
		if m.Sum != "" {
			c.Properties = append(c.Properties, cdxProperty{Name: "go:sum", Value: m.Sum})
		}
		if d.Replace != nil {
			c.Properties = append(c.Properties, cdxProperty{Name: "go:replaces", Value: d.Path + "@" + d.Version})
		}
		bom.Components = append(bom.Components, c)
		deps = append(deps, c.BOMRef)
	}
	bom.Dependencies = []cdxDependency{{Ref: mainRef, DependsOn: deps}}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(bom); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
