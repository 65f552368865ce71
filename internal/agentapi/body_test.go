package agentapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
)

// A check-in body is read into a buffer of its Content-Length: a body
// that ends before it, or that announces more than the protocol allows,
// is refused in the Error shape and records nothing.
func TestCheckinBodyLength(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ag := e.Enroll("uid-body", "body-01", "linux")
	u, err := url.Parse(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	send := func(length int64, body string) (int, string) {
		t.Helper()
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST %s?wait=0 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			agentproto.PathCheckin, u.Host, ag.Secret, length, body)
		if int64(len(body)) < length && length <= agentproto.MaxOtherBytes {
			// The server reads the rest until the client ends it. Only
			// then: a whole request's connection stays open, or the
			// server would take the end for the agent going away (499).
			conn.(*net.TCPConn).CloseWrite()
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if resp.StatusCode != http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatalf("status %d without the Error shape: %v", resp.StatusCode, err)
			}
		}
		return resp.StatusCode, e.Error + ": " + e.Description
	}
	whole := `{"agentVersion":"1.0.0","pendingReboot":true}`
	if status, ans := send(int64(len(whole)), whole); status != http.StatusOK {
		t.Fatalf("whole body: %d %s", status, ans)
	}
	if status, ans := send(int64(len(whole))+40, whole); status != http.StatusBadRequest || !strings.Contains(ans, "invalid_request: the body could not be read") {
		t.Errorf("short body: %d %s", status, ans)
	}
	if status, ans := send(agentproto.MaxOtherBytes+1, whole); status != http.StatusRequestEntityTooLarge || !strings.HasPrefix(ans, "request_too_large") {
		t.Errorf("body over the limit: %d %s", status, ans)
	}
}
