package actions_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/patchd/patchd/internal/actions"
	"github.com/patchd/patchd/openapi"
)

// TestApprovalModesAreTheDocumentsEnum holds DeployUpdatesPayload.approvalMode
// in the OpenAPI document to the approval modes the server stores: the enum is
// exactly the canonical values, and each is accepted as itself.
func TestApprovalModesAreTheDocumentsEnum(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	schema := doc.Components.Schemas["DeployUpdatesPayload"].Value.Properties["approvalMode"].Value
	var enum []string
	for _, v := range schema.Enum {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("approvalMode enum value %v is not a string", v)
		}
		enum = append(enum, s)
		if got, ok := actions.ParseApprovalMode(s); !ok || got != s {
			t.Errorf("approvalMode %q is read as %q, %v", s, got, ok)
		}
	}
	slices.Sort(enum)
	want := []string{actions.ApprovedOnly, actions.NotDeclined}
	slices.Sort(want)
	if !slices.Equal(enum, want) {
		t.Errorf("approvalMode enum %v, want %v", enum, want)
	}
	if def, _ := actions.ParseApprovalMode(""); schema.Default != def {
		t.Errorf("approvalMode default %v, the server's is %q", schema.Default, def)
	}

	// The document says stored payloads carry only the enum's values.
	for in, want := range map[string]string{`{"approvalMode":"Approved_Only"}`: "approved", `{"approvalMode":"ALL"}`: "all", `{}`: "all"} {
		a, err := actions.Parse("DEPLOY_UPDATES", json.RawMessage(in), "payload.")
		if err != nil {
			t.Fatal(err)
		}
		var stored struct{ ApprovalMode string }
		if err := json.Unmarshal(a.Payload, &stored); err != nil || stored.ApprovalMode != want {
			t.Errorf("%s is stored as %s, want approvalMode %q", in, a.Payload, want)
		}
	}
}
