package server

import (
	"net/http"
	"testing"
)

func TestConnsCrowded(t *testing.T) {
	c := &conns{crowded: 2}
	c.track(nil, http.StateNew)
	if c.Crowded() {
		t.Fatal("crowded at one connection of two")
	}
	c.track(nil, http.StateNew)
	c.track(nil, http.StateActive)
	if !c.Crowded() {
		t.Fatal("not crowded at two connections of two")
	}
	c.track(nil, http.StateClosed)
	if c.Crowded() {
		t.Fatal("still crowded after a connection closed")
	}
	if (&conns{}).Crowded() {
		t.Fatal("crowded without a limit")
	}
}
