package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
)

func TestDatasetsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, o := acmeStore(t)
	big := make([]map[string]any, 500)
	for i := range big {
		big[i] = map[string]any{"name": fmt.Sprintf("proc-%d", i), "pid": float64(i)}
	}
	for i, name := range []string{"b-host", "a-host"} {
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: name, Hostname: name, Platform: "linux", SecretHash: name}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		doc := agentproto.Inventory{System: agentproto.System{Hostname: name}, Datasets: map[string][]map[string]any{
			"processes": big[:100+300*i], "time-zone": {{"zone": "UTC"}}}}
		n, err := inventory.Check(&doc, "linux", "debian", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReplaceInventory(ctx, o.ID, id, n, "h", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for d, err := range s.Datasets(ctx, o.ID, "processes") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s:%d:%v", d.EndpointName, len(d.Rows), d.Rows[len(d.Rows)-1]["name"]))
	}
	if fmt.Sprint(got) != "[a-host:400:proc-399 b-host:100:proc-99]" {
		t.Fatalf("processes: %v", got)
	}
	n := 0
	for d, err := range s.Datasets(ctx, o.ID, "time-zone") {
		if err != nil || d.Rows[0]["zone"] != "UTC" {
			t.Fatalf("small dataset: %+v %v", d, err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("time-zone rows of %d endpoints", n)
	}
}
