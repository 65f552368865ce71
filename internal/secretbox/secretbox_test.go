package secretbox_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/secretbox"
)

func ring(t *testing.T, keys ...[]byte) *secretbox.Keyring {
	t.Helper()
	r, err := secretbox.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSealOpen(t *testing.T) {
	k1, k2 := secretbox.NewKey(), secretbox.NewKey()
	one := ring(t, k1)
	sealed := one.Seal([]byte("JBSWY3DPEHPK3PXP"), "users.totp_secret/u1")
	if !secretbox.IsSealed(sealed) || strings.Contains(sealed, "JBSWY3DPEHPK3PXP") {
		t.Fatalf("sealed text %q", sealed)
	}
	if id, ok := secretbox.SealedKeyID(sealed); !ok || id != secretbox.KeyID(k1) || id != one.ID() {
		t.Fatalf("key id %q %v, want %q", id, ok, one.ID())
	}
	if again := one.Seal([]byte("JBSWY3DPEHPK3PXP"), "users.totp_secret/u1"); again == sealed {
		t.Fatal("two seals of one value are equal: the nonce is not random")
	}
	body := sealed[strings.LastIndexByte(sealed, ':')+1:]
	flipped := []byte(body)
	flipped[len(flipped)/2] ^= 'A' ^ 'B'
	cases := []struct {
		name   string
		ring   *secretbox.Keyring
		sealed string
		ad     string
		want   string
		err    error
	}{
		{"opens", one, sealed, "users.totp_secret/u1", "JBSWY3DPEHPK3PXP", nil},
		{"a ring with the key among others opens", ring(t, k2, k1), sealed, "users.totp_secret/u1", "JBSWY3DPEHPK3PXP", nil},
		{"another row", one, sealed, "users.totp_secret/u2", "", secretbox.ErrOpen},
		{"another column", one, sealed, "console_sessions.pending_totp/u1", "", secretbox.ErrOpen},
		{"another key", ring(t, k2), sealed, "users.totp_secret/u1", "", secretbox.ErrUnknownKey},
		{"another key under the same id", ring(t, k2), strings.Replace(sealed, one.ID(), secretbox.KeyID(k2), 1), "users.totp_secret/u1", "", secretbox.ErrOpen},
		{"altered", one, strings.TrimSuffix(sealed, body) + string(flipped), "users.totp_secret/u1", "", secretbox.ErrOpen},
		{"cut", one, sealed[:len(sealed)-4], "users.totp_secret/u1", "", secretbox.ErrOpen},
		{"empty body", one, "pdsec1:" + one.ID() + ":", "users.totp_secret/u1", "", secretbox.ErrOpen},
		{"clear text", one, "JBSWY3DPEHPK3PXP", "users.totp_secret/u1", "", secretbox.ErrOpen},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.ring.Open(tc.sealed, tc.ad)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || got != nil {
					t.Fatalf("Open = %q, %v; want %v", got, err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("Open = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestRingSealsWithTheFirstKey(t *testing.T) {
	k1, k2 := secretbox.NewKey(), secretbox.NewKey()
	r := ring(t, k2, k1, k2)
	if got := r.IDs(); len(got) != 2 || got[0] != secretbox.KeyID(k2) || got[1] != secretbox.KeyID(k1) {
		t.Fatalf("IDs = %v", got)
	}
	if id, _ := secretbox.SealedKeyID(r.Seal(nil, "x")); id != secretbox.KeyID(k2) {
		t.Fatalf("sealed with %s, want the first key %s", id, secretbox.KeyID(k2))
	}
	if !r.Has(secretbox.KeyID(k1)) || r.Has(secretbox.KeyID(secretbox.NewKey())) {
		t.Fatal("Has")
	}
}

func TestParse(t *testing.T) {
	k1, k2 := secretbox.NewKey(), secretbox.NewKey()
	e1, e2 := secretbox.EncodeKey(k1), secretbox.EncodeKey(k2)
	cases := []struct {
		name string
		text string
		ids  []string
		err  string
	}{
		{"one key", e1 + "\n", []string{secretbox.KeyID(k1)}, ""},
		{"comments and lines", "# new\n" + e2 + "\r\n# old\n" + e1 + "\n", []string{secretbox.KeyID(k2), secretbox.KeyID(k1)}, ""},
		{"commas", e1 + "," + e2, []string{secretbox.KeyID(k1), secretbox.KeyID(k2)}, ""},
		{"empty", "# nothing\n\n", nil, "no key given"},
		{"short", secretbox.EncodeKey(k1[:16]), nil, "key 1 is not 32 bytes"},
		{"not base64", e1 + "\n%%%%", nil, "key 2 is not 32 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := secretbox.Parse(tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse = %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(r.IDs(), " "); got != strings.Join(tc.ids, " ") {
				t.Fatalf("IDs = %s, want %s", got, strings.Join(tc.ids, " "))
			}
		})
	}
}

func TestCreateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "secret.key")
	if _, err := secretbox.ReadFile(path); !secretbox.IsNotExist(err) {
		t.Fatalf("ReadFile of a missing file = %v", err)
	}
	made, err := secretbox.CreateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v; want 0600", fi.Mode(), err)
	}
	if di, err := os.Stat(filepath.Dir(path)); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("key folder mode %v, %v; want 0700", di.Mode(), err)
	}
	read, err := secretbox.ReadFile(path)
	if err != nil || read.ID() != made.ID() {
		t.Fatalf("ReadFile = %v, %v; want key %s", read, err, made.ID())
	}
	plain, err := read.Open(made.Seal([]byte("x"), "t"), "t")
	if err != nil || !bytes.Equal(plain, []byte("x")) {
		t.Fatalf("a text sealed with the new key opens with the file read again: %q %v", plain, err)
	}
	if _, err := secretbox.CreateFile(path); err == nil {
		t.Fatal("CreateFile replaced an existing key file")
	}
	if again, err := secretbox.ReadFile(path); err != nil || again.ID() != made.ID() {
		t.Fatal("the key file changed")
	}
}
