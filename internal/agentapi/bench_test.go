package agentapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
)

// BenchmarkCheckin measures the server's cost of one check-in that finds no
// command (the steady state of a fleet): authentication from the cache, the
// in-memory presence update, JSON in and out, and the middleware — served
// in-process, without a network.
func BenchmarkCheckin(b *testing.B) {
	e := apitest.New(b)
	const n = 1000
	agents := make([]*apitest.Agent, n)
	bodies := make([][]byte, n)
	for i := range agents {
		agents[i] = e.Enroll("uid-"+itoa(i), "host-"+itoa(i), "windows")
		if ans := agents[i].Inventory(apitest.Sample("host-"+itoa(i), "windows"), "hash"); ans.Status != 200 {
			b.Fatal(ans.Status)
		}
		user := `CORP\alice`
		bodies[i], _ = json.Marshal(agentproto.CheckinRequest{User: &user, IPAddresses: []string{"10.0.0.5", "fe80::1"},
			AgentVersion: "1.0.0", InventoryHash: "hash"})
	}
	h := e.Server.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i = (i + 1) % n
			req := httptest.NewRequest(http.MethodPost, agentproto.PathCheckin, bytes.NewReader(bodies[i]))
			req.Header.Set("Authorization", "Bearer "+agents[i].Secret)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("check-in: %d %s", w.Code, w.Body)
			}
		}
	})
}

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
		if i == 0 {
			return string(b)
		}
	}
}
