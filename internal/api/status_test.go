package api_test

import (
	"testing"

	"github.com/patchd/patchd/client"
)

// errOf answers the error of a client call that answers a value too.
func errOf[T any](_ T, err error) error { return err }

// wantStatus marks t failed unless err is an API answer of status.
func wantStatus(t *testing.T, err error, status int, what string) {
	t.Helper()
	if !client.IsStatus(err, status) {
		t.Errorf("%s: %v", what, err)
	}
}

// mustStatus stops t unless err is an API answer of status.
func mustStatus(t *testing.T, err error, status int, what string) {
	t.Helper()
	if !client.IsStatus(err, status) {
		t.Fatalf("%s: %v", what, err)
	}
}
