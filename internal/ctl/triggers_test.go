package ctl

import (
	"slices"
	"testing"

	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/openapi"
)

// TestAlertTriggersMatchServer keeps patchctl's trigger list, the server's
// triggers and the OpenAPI enum the same list (ENDPOINT_REENROLLED was
// added to all three).
func TestAlertTriggersMatchServer(t *testing.T) {
	server := slices.Sorted(slices.Values(alerts.TriggerNames()))
	ctl := slices.Sorted(slices.Values(alertTriggers))
	if !slices.Equal(server, ctl) {
		t.Fatalf("patchctl %v, server %v", ctl, server)
	}
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	var enum []string
	for _, v := range doc.Components.Schemas["AlertTrigger"].Value.Enum {
		enum = append(enum, v.(string))
	}
	if slices.Sort(enum); !slices.Equal(server, enum) {
		t.Fatalf("openapi %v, server %v", enum, server)
	}
}
