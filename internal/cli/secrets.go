package cli

import (
	"context"
	"flag"
	"os"

	"github.com/patchd/patchd/internal/secretbox"
	"github.com/patchd/patchd/internal/store"
)

// secretsAdmin defines the flags and the action of patchd admin secrets
// rotate-key|status: the key that seals the database's secrets
// (docs/security.md, Secrets at rest).
//
// rotate-key seals every secret again, in one transaction: with the key of
// --new-key-file (a new key is written to it when it does not exist), or
// without it with the first key of the server's own key ring (the last
// step of a rolling rotation). status counts the secrets by the key that
// sealed them.
func secretsAdmin(ctx context.Context, verb string) (func(fs *flag.FlagSet), func(s *store.Store) (any, error)) {
	var newFile string
	define := func(fs *flag.FlagSet) {
		if verb == "rotate-key" {
			fs.StringVar(&newFile, "new-key-file", "", "file of the new key (created with a new random key, 0600, when it does not exist); "+
				"without it the secrets are sealed again with the first key of --secret-key-file or PATCHD_SECRET_KEY")
		}
	}
	do := func(s *store.Store) (any, error) {
		if verb == "status" {
			return s.SecretStatus(ctx)
		}
		var next *secretbox.Keyring
		created := false
		if newFile != "" {
			var err error
			next, err = secretbox.ReadFile(newFile)
			if secretbox.IsNotExist(err) {
				next, err = secretbox.CreateFile(newFile)
				created = err == nil
			}
			if err != nil {
				return nil, err
			}
		}
		n, err := s.RotateSecretKey(ctx, next)
		if err != nil {
			if created {
				os.Remove(newFile)
			}
			return nil, err
		}
		st, err := s.SecretStatus(ctx)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"ok": true, "keyId": st.KeyID, "sealed": n}
		if newFile != "" {
			out["keyFile"], out["created"] = newFile, created
			out["next"] = "every secret is now sealed with the key of " + newFile + " only: give every server that key " +
				"(its --secret-key-file or PATCHD_SECRET_KEY) before it starts again; keep a copy apart from the database's backups"
		}
		return out, nil
	}
	return define, do
}
