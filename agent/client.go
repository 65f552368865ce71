package agent

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/patchd/patchd/agentproto"
)

// Client speaks the agent protocol to one server.
type Client struct {
	// Base is the server's address, e.g. https://patchd.example.com.
	Base   string
	Secret string
	HTTP   *http.Client
}

// HTTPError is an answer outside 2xx.
type HTTPError struct {
	Status      int
	Code        string
	Description string
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("server answered %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Description != "" {
		s += ": " + e.Description
	}
	return s
}

// StatusOf returns the HTTP status of err, or 0 when it is not an answer
// of the server (network trouble).
func StatusOf(err error) int {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Status
	}
	return 0
}

// Enroll exchanges an enrollment token for an endpoint id and secret.
func (c *Client) Enroll(ctx context.Context, req agentproto.EnrollRequest) (agentproto.EnrollResponse, error) {
	var resp agentproto.EnrollResponse
	err := c.do(ctx, http.MethodPost, agentproto.PathEnroll, req, &resp, false)
	return resp, err
}

// Checkin checks in; with wait > 0 the server may hold the call that long.
func (c *Client) Checkin(ctx context.Context, req agentproto.CheckinRequest, wait int) (agentproto.CheckinResponse, error) {
	var resp agentproto.CheckinResponse
	p := agentproto.PathCheckin
	if wait > 0 {
		p += "?wait=" + strconv.Itoa(wait)
	}
	err := c.do(ctx, http.MethodPost, p, req, &resp, true)
	return resp, err
}

// PutInventory replaces the endpoint's inventory. The header carries the
// hash the agent sends as inventoryHash in its check-ins (collect.Hash,
// collectedAt zeroed), so that the server compares like with like.
func (c *Client) PutInventory(ctx context.Context, inv *agentproto.Inventory, hash string) error {
	return c.do(ctx, http.MethodPut, agentproto.PathInventory, inv, nil, true, agentproto.HeaderInventoryHash, hash)
}

// Status reports a command's status.
func (c *Client) Status(ctx context.Context, commandID string, st agentproto.CommandStatus) error {
	return c.do(ctx, http.MethodPost, fmt.Sprintf(agentproto.PathCommandStatus, url.PathEscape(commandID)), st, nil, true)
}

// Uninstalled reports what the removal the server asked for did (a
// patchd addition; an older server answers 404).
func (c *Client) Uninstalled(ctx context.Context, rep agentproto.UninstalledReport) error {
	return c.do(ctx, http.MethodPost, agentproto.PathUninstalled, rep, nil, true)
}

// Stopping says the agent stops (a patchd addition; an older server
// answers 404).
func (c *Client) Stopping(ctx context.Context, rep agentproto.StoppingReport) error {
	return c.do(ctx, http.MethodPost, agentproto.PathStopping, rep, nil, true)
}

// do sends body as gzip-compressed JSON and decodes a 2xx answer into out.
func (c *Client) do(ctx context.Context, method, path string, body, out any, auth bool, header ...string) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(body); err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Base, "/")+path, &buf)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("User-Agent", "patchd-agent/"+Version)
	if auth {
		req.Header.Set("Authorization", "Bearer "+c.Secret)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, agentproto.MaxOtherBytes))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		he := &HTTPError{Status: resp.StatusCode}
		var e agentproto.Error
		if json.Unmarshal(data, &e) == nil {
			he.Code = e.Error
			if e.ErrorDescription != nil {
				he.Description = *e.ErrorDescription
			}
		}
		return he
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: answer: %w", method, path, err)
		}
	}
	return nil
}
