package api_test

import (
	"context"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestAuditRecordsClientAddress: an API write's Audit Trail entry carries
// the caller's address (a patchd addition to the entry).
func TestAuditRecordsClientAddress(t *testing.T) {
	e := apitest.New(t)
	name := "Audited"
	createGroup(t, e.Admin, apiv1.GroupBody{Name: &name})
	entries, err := e.Store.ListAudit(context.Background(), e.Org.ID, store.AuditFilter{Action: "group.create"})
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit: %+v %v", entries, err)
	}
	if a := entries[0].Address; a != "127.0.0.1" && a != "::1" {
		t.Errorf("the entry's address is %q, want the loopback caller's", a)
	}
}
