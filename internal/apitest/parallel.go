package apitest

import (
	"context"
	"testing"
)

// NewParallel marks t parallel and starts a server for it (New), and
// answers the Env with the context its calls use: the first lines of
// most API tests.
func NewParallel(t *testing.T, opts ...Option) (*Env, context.Context) {
	t.Helper()
	t.Parallel()
	return New(t, opts...), context.Background()
}
