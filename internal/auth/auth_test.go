package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

func setup(t testing.TB) (*store.Store, *auth.Authenticator, admin.NewCredential) {
	ctx := context.Background()
	s := storetest.Open(t)
	o, err := admin.CreateOrg(ctx, s, "Acme", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	c, err := admin.CreateCredential(ctx, s, "test", o.ID, "ci", store.RoleReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	return s, auth.NewAuthenticator(s), c
}

func TestIssueAndAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, a, c := setup(t)
	issued, err := a.Issue(ctx, c.ClientID, c.ClientSecret, "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Authenticate(ctx, issued.AccessToken)
	if err != nil || p.Actor() != "api:ci" || !p.Can(perm.EndpointsView) || p.Can(perm.EndpointsManage) {
		t.Fatalf("principal %+v %v", p, err)
	}
	// A second authenticator (another replica) resolves the token from the store.
	other := auth.NewAuthenticator(s)
	if p2, err := other.Authenticate(ctx, issued.AccessToken); err != nil || p2.CredentialID != p.CredentialID {
		t.Fatalf("other replica: %+v %v", p2, err)
	}
	if _, err := a.Authenticate(ctx, "pdt_forged"); !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("forged token: %v", err)
	}
	if _, err := a.Issue(ctx, c.ClientID, "wrong", "192.0.2.1"); !errors.Is(err, auth.ErrInvalidClient) {
		t.Fatalf("wrong secret: %v", err)
	}
	a.SetClock(func() time.Time { return time.Now().Add(auth.TokenLifetime) })
	if _, err := a.Authenticate(ctx, issued.AccessToken); !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("expired token: %v", err)
	}
}

func TestPasswordHash(t *testing.T) {
	t.Parallel()
	h := auth.HashPassword("correct horse battery staple")
	if ok, err := auth.CheckPassword("correct horse battery staple", h); !ok || err != nil {
		t.Fatalf("right password: %v %v", ok, err)
	}
	if ok, _ := auth.CheckPassword("Correct horse battery staple", h); ok {
		t.Fatal("wrong password accepted")
	}
	if h == auth.HashPassword("correct horse battery staple") {
		t.Fatal("two hashes of one password are equal: no salt")
	}
}

// BenchmarkAuthenticate measures what every API request pays to be let in:
// resolving the bearer token and checking a permission.
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	_, a, c := setup(b)
	issued, err := a.Issue(ctx, c.ClientID, c.ClientSecret, "192.0.2.1")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := a.Authenticate(ctx, issued.AccessToken)
			if err != nil || !p.Can(perm.EndpointsView) {
				b.Fatal("refused", err)
			}
		}
	})
}
