package auth_test

import (
	"context"
	"errors"
	"strings"
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
	ctx := context.Background()
	h, err := auth.HashPassword(ctx, "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := auth.CheckPassword("correct horse battery staple", h); !ok || err != nil {
		t.Fatalf("right password: %v %v", ok, err)
	}
	if ok, _ := auth.CheckPassword("Correct horse battery staple", h); ok {
		t.Fatal("wrong password accepted")
	}
	if h2, _ := auth.HashPassword(ctx, "correct horse battery staple"); h == h2 {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	// A stored hash asking for more memory than the bound is refused, not run.
	huge := strings.Replace(h, "m=65536", "m=4194304", 1)
	if ok, err := auth.CheckPassword("correct horse battery staple", huge); ok || err == nil {
		t.Fatalf("a 4 GiB hash was computed: %v %v", ok, err)
	}
}

// TestPasswordSlots: at most PasswordConcurrency hashes run at once in the
// process. A sign-in past it is refused at once (ErrBusy), never queued;
// hashing a new password waits for a slot, ahead of sign-ins. Not
// parallel: it holds every slot of the process.
func TestPasswordSlots(t *testing.T) {
	n := auth.PasswordConcurrency()
	if n < 2 || n > 8 {
		t.Fatalf("%d password slots", n)
	}
	var held []*auth.PasswordCheck
	for range n {
		c, err := auth.BeginPasswordCheck()
		if err != nil {
			t.Fatalf("slot %d of %d: %v", len(held)+1, n, err)
		}
		held = append(held, c)
	}
	if _, err := auth.BeginPasswordCheck(); !errors.Is(err, auth.ErrBusy) {
		t.Fatalf("a check past the bound: %v, want ErrBusy", err)
	}
	if _, err := auth.CheckPassword("x", "$argon2id$v=19$m=65536,t=3,p=2$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5"); !errors.Is(err, auth.ErrBusy) {
		t.Fatalf("CheckPassword past the bound: %v, want ErrBusy", err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := auth.HashPassword(gone, "a new password!"); !errors.Is(err, context.Canceled) {
		t.Fatalf("HashPassword with every slot taken and its caller gone: %v", err)
	}
	hashed := make(chan error, 1)
	go func() {
		_, err := auth.HashPassword(context.Background(), "a new password!")
		hashed <- err
	}()
	// The waiting hash takes the slot given back before any sign-in can.
	held[0].End()
	held[0].End() // ending twice gives back one slot
	if err := <-hashed; err != nil {
		t.Fatal(err)
	}
	c, err := auth.BeginPasswordCheck()
	if err != nil {
		t.Fatalf("a slot given back: %v", err)
	}
	if _, err := auth.BeginPasswordCheck(); !errors.Is(err, auth.ErrBusy) {
		t.Fatalf("ending a check twice freed two slots: %v", err)
	}
	c.End()
	for _, h := range held[1:] {
		h.End()
	}
	// The unknown-account path checks against a dummy hash: it matches
	// nothing and uses a slot like a real check.
	c, _ = auth.BeginPasswordCheck()
	c.Dummy("")
	c.End()
	if _, err := c.Matches("x", "whatever"); err == nil {
		t.Fatal("a check used after its end")
	}
}

func TestThrottle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)
	th := auth.NewThrottle(s)
	lim := auth.Limit{Max: 3, Window: time.Minute}
	addrLim := auth.Limit{Max: 5, Window: time.Minute}
	now := time.Now().Truncate(time.Millisecond) // the store keeps milliseconds
	keys := func(account, addr string) []auth.Key { return auth.ThrottleKeys("client", account, addr, lim, addrLim) }
	// Three failures of one account from one address are checked; the
	// fourth is refused with the time left in the window.
	for i := range 3 {
		if _, err := th.Begin(ctx, now.Add(time.Duration(i)*time.Second), keys("a", "192.0.2.1")...); err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	_, err := th.Begin(ctx, now.Add(10*time.Second), keys("a", "192.0.2.1")...)
	var limited *auth.RateLimitedError
	if !errors.As(err, &limited) || limited.RetryAfter != 50*time.Second {
		t.Fatalf("4th attempt: %v, want a 50 s wait", err)
	}
	// The same account from another address, and another account from the
	// same address, are not locked.
	if a, err := th.Begin(ctx, now, keys("a", "192.0.2.2")...); err != nil {
		t.Fatalf("another address: %v", err)
	} else {
		a.Release(ctx)
	}
	// The refused attempt did not count against the address: two more
	// accounts' failures reach its limit of five, the sixth is refused.
	for _, acc := range []string{"b", "c"} {
		if _, err := th.Begin(ctx, now, keys(acc, "192.0.2.1")...); err != nil {
			t.Fatalf("account %s: %v", acc, err)
		}
	}
	if _, err := th.Begin(ctx, now, keys("d", "192.0.2.1")...); !errors.As(err, &limited) {
		t.Fatalf("past the address limit: %v", err)
	}
	// Released attempts (successes) do not count.
	for range 10 {
		a, err := th.Begin(ctx, now, keys("e", "192.0.2.3")...)
		if err != nil {
			t.Fatal(err)
		}
		a.Release(ctx)
	}
	// After the window, the locked pair may try again.
	if _, err := th.Begin(ctx, now.Add(time.Minute+time.Second), keys("a", "192.0.2.1")...); err != nil {
		t.Fatalf("after the window: %v", err)
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
