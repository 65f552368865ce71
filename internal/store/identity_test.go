package store_test

import (
	"context"
	"testing"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestTOTPStepsAndRecoveryCodesSpentOnce: of many sign-ins sending the
// same TOTP code (one time step) or the same recovery code at once,
// exactly one succeeds; an earlier step never succeeds after a later one.
func TestTOTPStepsAndRecoveryCodesSpentOnce(t *testing.T) {
	s := storetest.Open(t)
	ctx := context.Background()
	o, u := newAdmin(t, s, "Acme", "a@example.com")
	entry := func(action string) *store.AuditEntry {
		return &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: action, TargetType: "user", TargetID: u.ID, Address: "192.0.2.1"}
	}
	if ok, err := s.UseTOTPStep(ctx, u.ID, 100); err != nil || ok {
		t.Fatalf("a step without a factor: %v %v", ok, err)
	}
	if err := s.EnableTOTP(ctx, entry("user.mfa_enable"), o.ID, u.ID, "JBSWY3DPEHPK3PXP", 100, []string{"h1", "h2"}); err != nil {
		t.Fatal(err)
	}
	if n := race(func(int) bool { ok, err := s.UseTOTPStep(ctx, u.ID, 100); return err == nil && ok }); n != 0 {
		t.Errorf("the confirming step was accepted again %d times", n)
	}
	if n := race(func(int) bool { ok, err := s.UseTOTPStep(ctx, u.ID, 101); return err == nil && ok }); n != 1 {
		t.Errorf("one step accepted %d times at once", n)
	}
	if ok, _ := s.UseTOTPStep(ctx, u.ID, 99); ok {
		t.Error("an older step accepted after a later one")
	}
	if n := race(func(int) bool {
		ok, err := s.UseRecoveryCode(ctx, entry("user.recovery_code_use"), u.ID, "h1")
		return err == nil && ok
	}); n != 1 {
		t.Errorf("one recovery code spent %d times", n)
	}
	if left, _ := s.CountRecoveryCodes(ctx, u.ID); left != 1 {
		t.Errorf("%d recovery codes left", left)
	}
	if err := s.RemoveTOTP(ctx, entry("user.mfa_reset"), o.ID, u.ID); err != nil {
		t.Fatal(err)
	}
	if left, _ := s.CountRecoveryCodes(ctx, u.ID); left != 0 {
		t.Errorf("recovery codes outlived the factor: %d", left)
	}
	entries, err := s.ListAudit(ctx, o.ID, store.AuditFilter{Action: "user.recovery_code_use"})
	if err != nil || len(entries) != 1 || entries[0].Address != "192.0.2.1" {
		t.Errorf("audit: %+v %v", entries, err)
	}
}
