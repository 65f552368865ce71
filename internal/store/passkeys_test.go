package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
)

// TestPasskeysStored: a user's passkeys are added, listed, renamed, used
// and removed only through their owner; a credential belongs to one user;
// the counter check is atomic; a second-factor reset removes them with the
// TOTP app; the Audit Trail has each change.
func TestPasskeysStored(t *testing.T) {
	s, o := acmeStore(t)
	ctx := context.Background()
	role := builtinRole(t, s, o.ID, store.RoleAdministrator)
	alice := newUser(t, s, store.User{OrgID: o.ID, Email: "alice@example.com", RoleID: role.ID})
	bob := newUser(t, s, store.User{OrgID: o.ID, Email: "bob@example.com", RoleID: role.ID})
	entry := func(u store.User, action string) *store.AuditEntry {
		return &store.AuditEntry{OrgID: o.ID, Actor: "user:" + u.Email, Action: action, TargetType: "user", TargetID: u.ID, Address: "192.0.2.7"}
	}
	key := store.Passkey{OrgID: o.ID, UserID: alice.ID, CredentialID: []byte{1, 2, 3, 4}, PublicKey: []byte{0xa5, 1, 2, 3, 38},
		Flags: 0x45, AAGUID: "01020304-0506-0708-0102-030405060708", Transports: []string{"internal", "hybrid"}, AttestationType: "none",
		AttestationFormat: "none", Name: "Laptop"}
	p, err := s.AddPasskey(ctx, entry(alice, "user.passkey_add"), key)
	if err != nil {
		t.Fatal(err)
	}
	// The same credential again, for anyone: a conflict.
	other := key
	other.UserID = bob.ID
	if _, err := s.AddPasskey(ctx, entry(bob, "user.passkey_add"), other); !errors.Is(err, dberr.ErrConflict) {
		t.Errorf("a credential registered twice: %v, want ErrConflict", err)
	}
	// A user of another organization is not found.
	stray := key
	stray.CredentialID, stray.OrgID = []byte{9}, "no-such-org"
	if _, err := s.AddPasskey(ctx, entry(alice, "user.passkey_add"), stray); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("a passkey of a user outside the organization: %v, want ErrNotFound", err)
	}
	list, err := s.ListPasskeys(ctx, o.ID, alice.ID)
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	got := list[0]
	if got.ID != p.ID || !bytes.Equal(got.CredentialID, key.CredentialID) || !bytes.Equal(got.PublicKey, key.PublicKey) || got.Flags != 0x45 ||
		got.AAGUID != key.AAGUID || len(got.Transports) != 2 || got.Transports[1] != "hybrid" || got.Name != "Laptop" || !got.LastUsedAt.IsZero() ||
		got.CreatedAt.IsZero() || got.AttestationType != "none" {
		t.Errorf("stored passkey: %+v", got)
	}
	if l, _ := s.ListPasskeys(ctx, o.ID, bob.ID); len(l) != 0 {
		t.Errorf("bob lists alice's passkeys: %+v", l)
	}
	// The user's second factor and passkey count follow.
	users, err := s.ListUsers(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		want := u.ID == alice.ID
		if u.SecondFactor != want || (u.Passkeys == 1) != want || u.TOTP {
			t.Errorf("%s: second factor %v, %d passkeys, TOTP %v", u.Email, u.SecondFactor, u.Passkeys, u.TOTP)
		}
	}

	// Only the owner renames or removes.
	if err := s.RenamePasskey(ctx, entry(bob, "user.passkey_rename"), o.ID, bob.ID, p.ID, "Mine now"); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("bob renamed alice's passkey: %v", err)
	}
	if err := s.RemovePasskey(ctx, entry(bob, "user.passkey_remove"), o.ID, bob.ID, p.ID); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("bob removed alice's passkey: %v", err)
	}
	if _, err := s.GetPasskey(ctx, o.ID, bob.ID, p.ID); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("bob reads alice's passkey: %v", err)
	}
	if err := s.RenamePasskey(ctx, entry(alice, "user.passkey_rename"), o.ID, alice.ID, p.ID, "Work laptop"); err != nil {
		t.Fatal(err)
	}
	if g, err := s.GetPasskey(ctx, o.ID, alice.ID, p.ID); err != nil || g.Name != "Work laptop" {
		t.Errorf("after the rename: %+v %v", g, err)
	}

	// The signature counter grows, atomically; a counter that does not
	// (a cloned authenticator or a replay) changes nothing.
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	if n := race(func(int) bool { ok, err := s.UsePasskey(ctx, p.ID, 5, 0x05, at); return err == nil && ok }); n != 1 {
		t.Errorf("one counter value accepted %d times", n)
	}
	if ok, _ := s.UsePasskey(ctx, p.ID, 4, 0x05, at); ok {
		t.Error("a smaller counter accepted")
	}
	if g, _ := s.GetPasskey(ctx, o.ID, alice.ID, p.ID); g.SignCount != 5 || !g.LastUsedAt.Equal(at) || g.Flags != 0x05 {
		t.Errorf("after a sign-in: count %d, last used %v, flags %x", g.SignCount, g.LastUsedAt, g.Flags)
	}
	// An authenticator without a counter (0 always) signs in each time.
	zero := key
	zero.CredentialID, zero.Name = []byte{7, 7}, "Phone"
	pz, err := s.AddPasskey(ctx, entry(alice, "user.passkey_add"), zero)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if ok, err := s.UsePasskey(ctx, pz.ID, 0, 0x05, at); err != nil || !ok {
			t.Errorf("a counterless passkey refused: %v %v", ok, err)
		}
	}

	// A ceremony under way is taken once.
	u := alice
	cu := store.ConsoleUser{User: u, RoleName: role.Name, Permissions: role.Permissions}
	if err := s.CreateConsoleSession(ctx, "hash-a", "csrf", cu, "192.0.2.7", "test", store.StageSignedIn, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPendingWebAuthn(ctx, "hash-a", `{"challenge":"x"}`); err != nil {
		t.Fatal(err)
	}
	if n := race(func(int) bool { d, err := s.TakePendingWebAuthn(ctx, "hash-a"); return err == nil && d != "" }); n != 1 {
		t.Errorf("a ceremony taken %d times", n)
	}
	if d, err := s.TakePendingWebAuthn(ctx, "no-such-session"); err != nil || d != "" {
		t.Errorf("the ceremony of no session: %q %v", d, err)
	}

	if err := s.RemovePasskey(ctx, entry(alice, "user.passkey_remove"), o.ID, alice.ID, pz.ID); err != nil {
		t.Fatal(err)
	}
	if removed := audited(t, s, o.ID, "user.passkey_remove"); len(removed) != 1 || removed[0].Summary["name"] != "Phone" || removed[0].Address != "192.0.2.7" {
		t.Errorf("removal audit: %+v", removed)
	}

	// An administrator's reset removes the TOTP app, the recovery codes
	// and every passkey.
	if err := s.EnableTOTP(ctx, entry(alice, "user.mfa_enable"), o.ID, alice.ID, "JBSWY3DPEHPK3PXP", 100, []string{"h1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.ResetSecondFactor(ctx, entry(alice, "user.mfa_reset"), o.ID, alice.ID); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.ListPasskeys(ctx, o.ID, alice.ID); len(l) != 0 {
		t.Errorf("passkeys outlived the reset: %+v", l)
	}
	if left, _ := s.CountRecoveryCodes(ctx, alice.ID); left != 0 {
		t.Errorf("recovery codes outlived the reset: %d", left)
	}
	if secret, _ := s.UserTOTPSecret(ctx, alice.ID); secret != "" {
		t.Error("the TOTP secret outlived the reset")
	}
	if reset := audited(t, s, o.ID, "user.mfa_reset"); len(reset) != 1 || reset[0].Summary["passkeysRemoved"] != float64(1) {
		t.Errorf("reset audit: %+v", reset)
	}
	if err := s.ResetSecondFactor(ctx, entry(alice, "user.mfa_reset"), "no-such-org", alice.ID); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("a reset outside the organization: %v", err)
	}
	if added := audited(t, s, o.ID, "user.passkey_add"); len(added) != 2 {
		t.Errorf("%d passkey additions audited, want 2", len(added))
	}

	// At most MaxPasskeys each.
	for i := range store.MaxPasskeys + 1 {
		k := key
		k.UserID, k.CredentialID = bob.ID, []byte{byte(i), 0xbb}
		_, err := s.AddPasskey(ctx, entry(bob, "user.passkey_add"), k)
		if i < store.MaxPasskeys && err != nil || i == store.MaxPasskeys && !errors.Is(err, dberr.ErrConflict) {
			t.Fatalf("passkey %d of bob: %v", i+1, err)
		}
	}
	// Deleting a user deletes its passkeys.
	if err := s.DeleteUser(ctx, entry(alice, "user.delete"), o.ID, bob.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PasskeyUser(ctx, []byte{0, 0xbb}); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("a deleted user's passkey still names its owner: %v", err)
	}
}

func audited(t *testing.T, s *store.Store, orgID, action string) []store.AuditEntry {
	t.Helper()
	entries, err := s.ListAudit(context.Background(), orgID, store.AuditFilter{Action: action, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestPasskeyLoginsAndOwner: a passwordless sign-in under way is taken
// once, by its browser only, never after it expired; a credential id
// names its owner.
func TestPasskeyLoginsAndOwner(t *testing.T) {
	s, o := acmeStore(t)
	ctx := context.Background()
	role := builtinRole(t, s, o.ID, store.RoleReadOnly)
	u := newUser(t, s, store.User{OrgID: o.ID, Email: "a@example.com", RoleID: role.ID})
	p, err := s.AddPasskey(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "user.passkey_add", TargetType: "user"},
		store.Passkey{OrgID: o.ID, UserID: u.ID, CredentialID: []byte("cred-1"), PublicKey: []byte{1}, Name: "Key"})
	if err != nil {
		t.Fatal(err)
	}
	owner, key, err := s.PasskeyUser(ctx, []byte("cred-1"))
	if err != nil || owner.ID != u.ID || owner.RoleName != store.RoleReadOnly || key.ID != p.ID || owner.Passkeys != 1 {
		t.Errorf("the owner of cred-1: %+v %+v %v", owner, key, err)
	}
	if _, _, err := s.PasskeyUser(ctx, []byte("cred-2")); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("the owner of an unknown credential: %v", err)
	}

	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	if err := s.PutPasskeyLogin(ctx, "browser-a", "first", now.Add(5*time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPasskeyLogin(ctx, "browser-a", "second", now.Add(5*time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if d, err := s.TakePasskeyLogin(ctx, "browser-b", now); err != nil || d != "" {
		t.Errorf("another browser took %q %v", d, err)
	}
	if n := race(func(int) bool {
		d, err := s.TakePasskeyLogin(ctx, "browser-a", now)
		return err == nil && d == "second"
	}); n != 1 {
		t.Errorf("a sign-in taken %d times", n)
	}
	if err := s.PutPasskeyLogin(ctx, "browser-c", "late", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if d, err := s.TakePasskeyLogin(ctx, "browser-c", now.Add(2*time.Minute)); err != nil || d != "" {
		t.Errorf("an expired sign-in answered %q %v", d, err)
	}
	// Expired rows of any browser go when another starts.
	if err := s.PutPasskeyLogin(ctx, "browser-d", "old", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPasskeyLogin(ctx, "browser-e", "new", now.Add(10*time.Minute), now.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.TakePasskeyLogin(ctx, "browser-d", now); d != "" {
		t.Errorf("an expired row outlived a later start: %q", d)
	}
}
