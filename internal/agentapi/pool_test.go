package agentapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
)

// Bodies are read into pooled buffers by pooled gzip readers: agents
// sending inventories of different sizes at once, compressed and not,
// with broken bodies between them, each have exactly their last inventory
// stored (nothing of another body, or of an earlier one read into the
// same buffer, is left in it).
func TestPooledBodiesKeepNothing(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	const agents, rounds = 8, 6
	ags := make([]*apitest.Agent, agents)
	for i := range ags {
		ags[i] = e.Enroll(fmt.Sprintf("uid-pool-%d", i), fmt.Sprintf("pool-%02d", i), "windows")
	}
	// doc is agent i's inventory of round r: its software names and its
	// dataset's rows say whose it is, and rounds alternate long and short
	// documents, so that a short body lands in a buffer a long one filled.
	doc := func(i, r int) agentproto.Inventory {
		d := apitest.Sample(fmt.Sprintf("pool-%02d", i), "windows")
		n := 2
		if r%2 == 0 {
			n = 40
		}
		d.Software = d.Software[:0]
		rows := make([]map[string]any, 0, n)
		for k := range n {
			v := fmt.Sprintf("%d.%d.%d", i, r, k)
			d.Software = append(d.Software, agentproto.Software{Name: fmt.Sprintf("App %d-%d-%d", i, r, k), Version: &v})
			rows = append(rows, map[string]any{"name": fmt.Sprintf("svc-%d-%d-%d", i, r, k), "state": strings.Repeat("x", 50*(i+1))})
		}
		d.Datasets = map[string][]map[string]any{"services": rows}
		return d
	}
	var wg sync.WaitGroup
	for i, ag := range ags {
		wg.Go(func() {
			for r := range rounds {
				body := doc(i, r)
				var ans apitest.Answer
				if r%3 == 1 {
					ans = e.Call(http.MethodPut, agentproto.PathInventory, ag.Secret, body, false, agentproto.HeaderInventoryHash, fmt.Sprintf("h-%d-%d", i, r))
				} else {
					ans = ag.Inventory(body, fmt.Sprintf("h-%d-%d", i, r))
				}
				if ans.Status != http.StatusOK {
					t.Errorf("agent %d round %d: %d %s", i, r, ans.Status, ans.Body)
				}
				// A broken gzip body, and one that ends early: refused,
				// their reader and buffer given back.
				if ans := e.Call(http.MethodPut, agentproto.PathInventory, ag.Secret, []byte("\x1f\x8b not gzip"), false, "Content-Encoding", "gzip"); ans.Status != http.StatusBadRequest {
					t.Errorf("agent %d broken gzip: %d %s", i, ans.Status, ans.Body)
				}
				if ans := e.Call(http.MethodPut, agentproto.PathInventory, ag.Secret, []byte(`{"system":{"hostname":`), true); ans.Status != http.StatusBadRequest {
					t.Errorf("agent %d cut document: %d %s", i, ans.Status, ans.Body)
				}
			}
		})
	}
	wg.Wait()
	last := rounds - 1
	for i, ag := range ags {
		d, err := e.Admin.GetEndpoint(ctx, ag.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, sw := range d.Software {
			got = append(got, sw.Name)
		}
		for _, sw := range doc(i, last).Software {
			want = append(want, sw.Name)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("agent %d software: %v, want %v", i, got, want)
		}
	}
	seen := 0
	for d, err := range e.Store.Datasets(ctx, e.Org.ID, "services") {
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(ags, func(a *apitest.Agent) bool { return a.ID == d.EndpointID })
		want := doc(i, last).Datasets["services"]
		if len(d.Rows) != len(want) {
			t.Fatalf("agent %d: %d dataset rows, want %d", i, len(d.Rows), len(want))
		}
		for k, row := range d.Rows {
			if row["name"] != want[k]["name"] || row["state"] != want[k]["state"] {
				t.Errorf("agent %d dataset row %d: %v, want %v", i, k, row, want[k])
			}
		}
		seen++
	}
	if seen != agents {
		t.Fatalf("datasets of %d endpoints, want %d", seen, agents)
	}
}
