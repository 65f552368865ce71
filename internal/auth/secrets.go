// Package auth issues and checks the credentials of API clients: client
// secrets, OAuth bearer tokens (cached in memory, revoked across replicas
// through the store), the failed-secret limiter, and console passwords.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Prefixes of the secrets patchd makes; they let secret scanners find leaks.
const (
	PrefixClientID     = "pdc_"
	PrefixClientSecret = "pds_"
	PrefixAccessToken  = "pdt_"
	PrefixEnrollToken  = "pde_"
	PrefixAgentSecret  = "pda_"
)

// NewSecret returns prefix followed by 256 random bits in base64url.
func NewSecret(prefix string) string {
	var b [32]byte
	rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// NewClientID returns a client id: shorter than a secret, still unguessable.
func NewClientID() string {
	var b [16]byte
	rand.Read(b[:])
	return PrefixClientID + hex.EncodeToString(b[:])
}

// HashSecret is the stored form of a random secret. The secrets carry 256
// bits of entropy, so one SHA-256 is as strong as a slow hash and keeps the
// hot path cheap; passwords, which people choose, use HashPassword.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SecretMatches compares a secret with its stored hash in constant time.
func SecretMatches(secret, hash string) bool {
	return subtle.ConstantTimeCompare([]byte(HashSecret(secret)), []byte(hash)) == 1
}

// argon2id parameters (RFC 9106's second recommended option, with 64 MiB).
const (
	argonTime    = 3
	argonMemory  = 64 * 1024 // KiB
	argonThreads = 2
	argonKeyLen  = 32
	// A stored hash asking for more than this memory is refused rather than
	// computed: the bound below holds whatever the database says.
	argonMaxMemory = 4 * argonMemory
)

// ErrBusy answers a password check when every hashing slot of the process
// is taken. Callers answer 503 with Retry-After: 1 at once.
var ErrBusy = errors.New("auth: too many password checks at once; try again in a second")

// passwordSlots bounds the argon2id hashes that run at once in the process:
// each holds 64 MiB and keeps two cores busy, so without a bound a burst of
// sign-ins (no credentials needed) exhausts memory and starves every other
// request. Sized to the cores (more hashes at once would not run faster),
// at most eight (512 MiB).
var passwordSlots = make(chan struct{}, min(max(runtime.GOMAXPROCS(0), 2), 8))

// PasswordConcurrency is how many password hashes may run at once.
func PasswordConcurrency() int { return cap(passwordSlots) }

// PasswordCheck holds one hashing slot while a sign-in checks a password
// against the hashes of the accounts it names, or against a dummy hash when
// it names none.
type PasswordCheck struct{ ended bool }

// BeginPasswordCheck takes a hashing slot, or answers ErrBusy at once when
// all are taken. End gives it back.
func BeginPasswordCheck() (*PasswordCheck, error) {
	select {
	case passwordSlots <- struct{}{}:
		return &PasswordCheck{}, nil
	default:
		return nil, ErrBusy
	}
}

// End gives the slot back; ending twice is harmless.
func (p *PasswordCheck) End() {
	if !p.ended {
		p.ended = true
		<-passwordSlots
	}
}

// dummyHash is a stored-hash look-alike with the parameters HashPassword
// uses and a random key no password yields: checking a password against it
// costs what checking a real hash costs, without hashing anything at start.
var dummyHash = func() string {
	var salt [16]byte
	var key [argonKeyLen]byte
	rand.Read(salt[:])
	rand.Read(key[:])
	return encodeHash(salt[:], key[:])
}()

// Dummy spends on password what checking it against one account would, and
// matches nothing: a sign-in for an unknown account takes as long as one
// for a known account with a wrong password.
func (p *PasswordCheck) Dummy(password string) {
	p.Matches(password, dummyHash)
}

// Matches tells whether password matches a hash made by HashPassword.
func (p *PasswordCheck) Matches(password, encoded string) (bool, error) {
	if p.ended {
		return false, errors.New("auth: password check used after its end")
	}
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errors.New("auth: not an argon2id hash")
	}
	var version int
	var mem uint32
	var iters uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil {
		return false, fmt.Errorf("auth: argon2id version: %w", err)
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &iters, &threads); err != nil {
		return false, fmt.Errorf("auth: argon2id parameters: %w", err)
	}
	if mem > argonMaxMemory || iters > 16 || threads == 0 || threads > 16 {
		return false, fmt.Errorf("auth: argon2id parameters m=%d,t=%d,p=%d are out of bounds", mem, iters, threads)
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return false, fmt.Errorf("auth: argon2id salt: %w", err)
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(want) < 16 || len(want) > 64 {
		return false, fmt.Errorf("auth: argon2id key: %d bytes, %v", len(want), err)
	}
	got := argon2.IDKey([]byte(password), salt, iters, mem, threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// CheckPassword tells whether password matches a hash made by HashPassword,
// in a hashing slot of its own: ErrBusy when none is free.
func CheckPassword(password, encoded string) (bool, error) {
	p, err := BeginPasswordCheck()
	if err != nil {
		return false, err
	}
	defer p.End()
	return p.Matches(password, encoded)
}

// HashPassword hashes a console password with argon2id, in the PHC string
// format. It waits for a hashing slot (ctx ends the wait): it serves
// people who already proved who they are, and they queue ahead of sign-ins.
func HashPassword(ctx context.Context, password string) (string, error) {
	select {
	case passwordSlots <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("auth: wait to hash a password: %w", ctx.Err())
	}
	defer func() { <-passwordSlots }()
	var salt [16]byte
	rand.Read(salt[:])
	return encodeHash(salt[:], argon2.IDKey([]byte(password), salt[:], argonTime, argonMemory, argonThreads, argonKeyLen)), nil
}

func encodeHash(salt, key []byte) string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}
