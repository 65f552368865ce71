package apiv1_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/valid"
	"github.com/patchd/patchd/openapi"
)

// TestAnswersMatchTheDocument holds every answer type the server encodes to
// the schema the OpenAPI document gives it, field by field, so a mismatch
// cannot slip by for lack of a sample answer that shows it: every field is a
// property; a field always sent (no omitempty) is required, one sent only
// sometimes is not; a pointer field, which can be null, is nullable; and every
// property of the schema is a field.
func TestAnswersMatchTheDocument(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	answers := []struct {
		schema string
		value  any
		// request: the schema also describes a request body, where a field
		// the server always sends need not be required.
		request bool
	}{
		{"Error", httpx.Error{}, false},
		{"FieldError", valid.Problem{}, false},
		{"TokenResponse", apiv1.TokenResponse{}, false},
		{"OkResult", apiv1.OK{}, false},
		{"User", apiv1.User{}, false},
		{"UserPatch", apiv1.UserPatch{}, true},
		{"PasswordReset", apiv1.PasswordReset{}, true},
		{"Endpoint", apiv1.Endpoint{}, false},
		{"Disk", apiv1.Disk{}, false},
		{"InstalledSoftware", apiv1.Software{}, false},
		{"MissingUpdate", apiv1.MissingUpdate{}, false},
		{"Update", apiv1.Update{}, false},
		{"SoftwareRow", apiv1.SoftwareRow{}, false},
		{"Vulnerability", apiv1.Vulnerability{}, false},
		{"RiskAcceptance", apiv1.RiskAcceptance{}, false},
		{"EndpointRef", apiv1.EndpointRef{}, false},
		{"Group", apiv1.Group{}, false},
		{"GroupRule", apiv1.GroupRule{}, true},
		{"NamedRef", apiv1.Ref{}, false},
		{"GroupResult", apiv1.GroupResult{}, false},
		{"Automation", apiv1.Automation{}, false},
		{"AutomationRing", apiv1.Ring{}, true},
		{"AutomationCreateResult", apiv1.AutomationCreated{}, false},
		{"AutomationResult", apiv1.AutomationResult{}, false},
		{"RunStarted", apiv1.RunStarted{}, false},
		{"ApprovalResult", apiv1.ApprovalResult{}, false},
		{"Run", apiv1.Run{}, false},
		{"RunCommand", apiv1.RunCommand{}, false},
		{"AlertRule", apiv1.AlertRule{}, false},
		{"AlertRuleResult", apiv1.AlertRuleResult{}, false},
		{"ReportMeta", apiv1.ReportMeta{}, false},
		{"Report", apiv1.Report{}, false},
		{"EndpointPage", apiv1.Page[apiv1.Endpoint]{}, false},
		{"UpdatePage", apiv1.Page[apiv1.Update]{}, false},
		{"SoftwareRowPage", apiv1.Page[apiv1.SoftwareRow]{}, false},
		{"SoftwareTitle", apiv1.SoftwareTitle{}, false},
		{"SoftwareTitleVersion", apiv1.SoftwareTitleVersion{}, false},
		{"SoftwareTitlePage", apiv1.Page[apiv1.SoftwareTitle]{}, false},
		{"VulnerabilityPage", apiv1.Page[apiv1.Vulnerability]{}, false},
		{"GroupList", apiv1.List[apiv1.Group]{}, false},
		{"AutomationList", apiv1.List[apiv1.Automation]{}, false},
		{"RunList", apiv1.List[apiv1.Run]{}, false},
		{"RunCommandList", apiv1.List[apiv1.RunCommand]{}, false},
		{"AlertRuleList", apiv1.List[apiv1.AlertRule]{}, false},
		{"FailedDelivery", apiv1.FailedDelivery{}, false},
		{"FailedDeliveryList", apiv1.List[apiv1.FailedDelivery]{}, false},
		{"DeliveryQueued", apiv1.DeliveryQueued{}, false},
		{"ReportList", apiv1.List[apiv1.ReportMeta]{}, false},
		{"Script", apiv1.Script{}, false},
		{"ScriptParameter", apiv1.ScriptParameter{}, true},
		{"ScriptList", apiv1.List[apiv1.Script]{}, false},
		{"EnrollmentToken", apiv1.EnrollToken{}, false},
		{"EnrollmentTokenList", apiv1.List[apiv1.EnrollToken]{}, false},
		{"NewEnrollmentToken", apiv1.NewEnrollToken{}, false},
		{"AuditEntry", apiv1.AuditEntry{}, false},
		{"AuditEntryPage", apiv1.Page[apiv1.AuditEntry]{}, false},
		{"ApprovalPolicy", apiv1.ApprovalPolicy{}, false},
		{"ApprovalPolicyRule", apiv1.ApprovalPolicyRule{}, false},
		{"VulnerabilityException", apiv1.VulnException{}, false},
		{"VulnerabilityExceptionList", apiv1.List[apiv1.VulnException]{}, false},
		{"RemediationPolicy", apiv1.RemediationPolicy{}, false},
	}
	for _, a := range answers {
		t.Run(a.schema, func(t *testing.T) {
			ref := doc.Components.Schemas[a.schema]
			if ref == nil {
				t.Fatalf("no schema %s", a.schema)
			}
			matchStruct(t, a.schema, reflect.TypeOf(a.value), ref.Value, a.request)
		})
	}
}

func matchStruct(t *testing.T, at string, typ reflect.Type, s *openapi3.Schema, request bool) {
	t.Helper()
	fields := map[string]bool{}
	for _, f := range jsonFields(typ) {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		fields[name] = true
		prop := s.Properties[name]
		if prop == nil {
			t.Errorf("%s.%s is sent but is not a property of the schema", at, name)
			continue
		}
		omitempty := slices.Contains(strings.Split(opts, ","), "omitempty")
		required := slices.Contains(s.Required, name)
		switch {
		case omitempty && required:
			t.Errorf("%s.%s is left out when empty but the schema requires it", at, name)
		case !omitempty && !required && !request:
			t.Errorf("%s.%s is always sent but the schema does not require it", at, name)
		}
		if f.Type.Kind() == reflect.Pointer && !omitempty && !prop.Value.Nullable {
			t.Errorf("%s.%s can be null but the schema is not nullable", at, name)
		}
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(json.RawMessage{}) && f.Type.PkgPath() != "time" {
			matchStruct(t, at+"."+name, f.Type, prop.Value, request)
		}
	}
	for name := range s.Properties {
		if !fields[name] {
			t.Errorf("%s.%s is a property of the schema but is never sent", at, name)
		}
	}
}

// jsonFields are the fields encoding/json writes of a struct type: the
// exported ones not tagged "-", those of an embedded struct without a
// tag in its place.
func jsonFields(typ reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if tag == "-" || !f.IsExported() {
			continue
		}
		out = append(out, f)
	}
	return out
}
