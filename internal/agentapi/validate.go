package agentapi

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"unicode/utf8"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/httpx"
)

// The agent's text is checked here, at the edge, before anything of it is
// kept: the presence batch writes many endpoints' check-ins in one
// transaction, so a value the database refuses would fail them all.

func invalid(format string, args ...any) error {
	return httpx.Errorf(http.StatusBadRequest, "invalid_request", fmt.Sprintf(format, args...))
}

// checkText refuses text that is not UTF-8, holds NUL or is longer than
// max bytes.
func checkText(field, v string, max int) error {
	if len(v) > max || !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
		return invalid("%s must be text without NUL of at most %d bytes", field, max)
	}
	return nil
}

// checkEnroll checks an enrollment's text (the required fields are checked
// by the caller).
func checkEnroll(req *agentproto.EnrollRequest) error {
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"enrollToken", req.EnrollToken, agentproto.MaxEnrollToken},
		{"machineUid", req.MachineUID, agentproto.MaxMachineUID},
		{"hostname", req.Hostname, agentproto.MaxHostname},
		{"os", req.OS, agentproto.MaxOSText},
		{"osVersion", req.OSVersion, agentproto.MaxOSText},
		{"arch", req.Arch, agentproto.MaxArch},
		{"agentVersion", req.AgentVersion, agentproto.MaxAgentVersion},
	} {
		if err := checkText(f.name, f.v, f.max); err != nil {
			return err
		}
	}
	return nil
}

// checkCheckin checks a check-in and puts its IP addresses in their
// canonical form (what group rules and the console compare).
func checkCheckin(req *agentproto.CheckinRequest) error {
	if req.User != nil {
		if err := checkText("user", *req.User, agentproto.MaxUser); err != nil {
			return err
		}
	}
	if err := checkText("agentVersion", req.AgentVersion, agentproto.MaxAgentVersion); err != nil {
		return err
	}
	if err := checkText("inventoryHash", req.InventoryHash, agentproto.MaxInventoryHash); err != nil {
		return err
	}
	if len(req.IPAddresses) > agentproto.MaxIPAddresses {
		return invalid("ipAddresses lists more than %d addresses", agentproto.MaxIPAddresses)
	}
	for i, s := range req.IPAddresses {
		addr, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return invalid("ipAddresses[%d] is not an IP address", i)
		}
		req.IPAddresses[i] = addr.String()
	}
	if f := req.UpdateFailure; f != nil {
		f.Version, f.Reason = strings.TrimSpace(f.Version), strings.TrimSpace(f.Reason)
		if f.Version == "" || f.Reason == "" {
			return invalid("updateFailure needs a version and a reason")
		}
		if err := checkText("updateFailure.version", f.Version, agentproto.MaxAgentVersion); err != nil {
			return err
		}
		if err := checkText("updateFailure.reason", f.Reason, agentproto.MaxUpdateReason); err != nil {
			return err
		}
	}
	return nil
}
