// Package agentproto holds the wire types of the agent protocol v1
// (docs/design/agent-protocol.md). The server, patchd-agent and patchd-sim
// all speak through these types; the package imports nothing of the server,
// so the agent can depend on it.
package agentproto

import (
	"encoding/json"
	"strings"
	"time"
)

// Paths of the agent calls, relative to the server's base address.
const (
	PathEnroll    = "/agent/v1/enroll"
	PathCheckin   = "/agent/v1/checkin"
	PathInventory = "/agent/v1/inventory"
	// PathCommandStatus is formatted with the command id.
	PathCommandStatus = "/agent/v1/commands/%s/status"
	// PathCA answers, without authentication, the certificate agents pin
	// (PEM): the server's own CA, or the last certificate of the
	// operator's chain; 404 when agents use their system store.
	PathCA = "/agent/v1/ca.pem"
	// PathUninstalled is where an agent told to uninstall (a check-in
	// answered "uninstall") reports what its removal did (a patchd
	// addition): once, with the removed endpoint's secret.
	PathUninstalled = "/agent/v1/uninstalled"
	// PathStopping is where a running agent says it stops (a patchd
	// addition): its service manager stops it, or the computer shuts down
	// or restarts. The endpoint shows disconnected until its next check-in.
	PathStopping = "/agent/v1/stopping"
)

// StoppingReport is the body of POST PathStopping. Reason says what stops
// the agent, for the log: StopSignal (SIGTERM or SIGINT, what systemd,
// OpenRC, SysV init and launchd send) or StopService (the Windows Service
// Control Manager: stop, or shutdown); other values are taken as given.
type StoppingReport struct {
	Reason string `json:"reason,omitempty"`
}

// Reasons of a StoppingReport.
const (
	StopSignal  = "signal"
	StopService = "service"
)

// MaxStoppingReason bounds StoppingReport.Reason, in bytes.
const MaxStoppingReason = 64

// UninstalledReport is the body of POST PathUninstalled: whether the
// removal finished (the service gone from its manager, the state folder
// and the agent's files removed), with which service manager, and what it
// could not remove or run.
type UninstalledReport struct {
	Complete bool     `json:"complete"`
	Manager  string   `json:"manager"`
	Problems []string `json:"problems,omitempty"`
}

// PathRelease, formatted with os and arch, answers the Release of the
// agent the server publishes for that platform (a patchd addition, no
// authentication: the download is public too). The binary is at
// PathDownload.
const (
	PathRelease  = "/agent/v1/release/%s/%s"
	PathDownload = "/agent/v1/download/%s/%s"
)

// Release describes a published agent binary: its version, SHA-256 and the
// Ed25519 signature of ReleaseMessage by the release key.
type Release struct {
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	Version   string `json:"version"`
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
	Signature string `json:"signature"` // base64 (standard) of 64 bytes
}

// ReleaseMessage is what a release key signs: the platform, the version
// and the binary's SHA-256 (lowercase hex), so that a signature vouches for
// exactly one binary as exactly one version (an old signed release cannot
// be passed off as a new one, nor one platform's as another's).
func ReleaseMessage(goos, arch, version, sha256hex string) []byte {
	return []byte("patchd-agent release v1\n" + goos + "/" + arch + "\n" + version + "\n" + strings.ToLower(sha256hex) + "\n")
}

// HeaderInventoryHash carries, on PUT /agent/v1/inventory, the hash the
// agent will send as inventoryHash in its check-ins. Without it the server
// uses the SHA-256 of the (decompressed) body.
const HeaderInventoryHash = "X-Inventory-Hash"

// Body size limits (decompressed).
const (
	MaxInventoryBytes = 32 << 20
	MaxOtherBytes     = 1 << 20
	MaxWaitSeconds    = 60
)

// Limits of the text an agent sends, in bytes of UTF-8. Text never holds
// the NUL character. A document over a limit is refused with 400 and
// nothing of it is stored (docs/design/notes.md).
const (
	MaxHostname      = 255  // EnrollRequest.Hostname, System.Hostname
	MaxMachineUID    = 255  // EnrollRequest.MachineUID
	MaxEnrollToken   = 512  // EnrollRequest.EnrollToken
	MaxOSText        = 255  // EnrollRequest.OS and OSVersion
	MaxArch          = 64   // EnrollRequest.Arch
	MaxAgentVersion  = 64   // EnrollRequest and CheckinRequest.AgentVersion
	MaxUser          = 256  // CheckinRequest.User
	MaxIPAddresses   = 256  // entries of CheckinRequest.IPAddresses, each an IP address
	MaxInventoryHash = 128  // CheckinRequest.InventoryHash
	MaxUpdateReason  = 512  // UpdateFailure.Reason
	MaxDrive         = 1024 // Disk.Drive
	MaxMACAddress    = 64   // each entry of System.MACAddresses
)

// Command types.
const (
	TypeRunScript         = "RUN_SCRIPT"
	TypeDeployUpdates     = "DEPLOY_UPDATES"
	TypeReboot            = "REBOOT"
	TypeDeploySoftware    = "DEPLOY_SOFTWARE"
	TypeUninstallSoftware = "UNINSTALL_SOFTWARE"
)

// Command statuses an agent reports.
const (
	StatusRunning = "RUNNING"
	StatusSuccess = "SUCCESS"
	StatusFailed  = "FAILED"
)

// EnrollRequest is the body of POST /agent/v1/enroll.
type EnrollRequest struct {
	EnrollToken  string `json:"enrollToken"`
	MachineUID   string `json:"machineUid"`
	Hostname     string `json:"hostname"`
	Platform     string `json:"platform"` // windows, linux or macos
	OS           string `json:"os"`
	OSVersion    string `json:"osVersion"`
	Arch         string `json:"arch"`
	AgentVersion string `json:"agentVersion"`
	// InsecureChannel is true when the agent talks to the server over
	// plain HTTP to an address that is not loopback, which it does only
	// when enrolled with --insecure-http. A patchd addition; the server
	// shows it on the endpoint (insecureChannel).
	InsecureChannel bool `json:"insecureChannel,omitempty"`
}

// EnrollResponse answers a successful enrollment.
type EnrollResponse struct {
	EndpointID     string `json:"endpointId"`
	AgentSecret    string `json:"agentSecret"`
	CheckinSeconds int    `json:"checkinSeconds"`
	// RefreshSeconds is how often the agent refreshes its package
	// metadata (apt-get update, dnf makecache; on Windows and macOS the
	// inventory's update search is online already) before collecting its
	// inventory; each agent spreads it with jitter. A patchd addition:
	// 0 or absent (an older server) leaves the agent's default.
	RefreshSeconds int `json:"refreshSeconds,omitempty"`
}

// CheckinRequest is the body of POST /agent/v1/checkin.
type CheckinRequest struct {
	LastBootAt    *time.Time `json:"lastBootAt"`
	PendingReboot bool       `json:"pendingReboot"`
	User          *string    `json:"user"`
	IPAddresses   []string   `json:"ipAddresses"`
	AgentVersion  string     `json:"agentVersion"`
	InventoryHash string     `json:"inventoryHash"`
	// UpdateFailure reports a self-update that failed or was rolled back
	// (a patchd addition): sent with the check-ins until one is answered,
	// then not again. An older server ignores it.
	UpdateFailure *UpdateFailure `json:"updateFailure,omitempty"`
}

// UpdateFailure is one self-update the agent gave up: the release version
// it tried, why (bad signature, tampered download, does not start, rolled
// back after it did not check in in time), and when.
type UpdateFailure struct {
	Version string    `json:"version"`
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"`
}

// CheckinResponse carries the endpoint's pending commands.
type CheckinResponse struct {
	Commands        []Command `json:"commands"`
	CheckinSeconds  int       `json:"checkinSeconds"`
	InventoryWanted bool      `json:"inventoryWanted"`
	Uninstall       bool      `json:"uninstall"`
	// RefreshSeconds: as in EnrollResponse (a patchd addition).
	RefreshSeconds int `json:"refreshSeconds,omitempty"`
	// AgentTarget is the agent version the endpoint's organization wants
	// ("latest": whatever the server publishes for the agent's platform).
	// The agent reads the release at PathRelease, verifies it and updates
	// itself when it differs from its own version. A patchd addition;
	// absent: leave the agent as it is.
	AgentTarget string `json:"agentTarget,omitempty"`
	// ScanNow asks the agent to refresh its package metadata and send its
	// inventory at once (a "scan now" from the API, the console or
	// patchctl). A patchd addition; an older agent ignores it.
	ScanNow bool `json:"scanNow,omitempty"`
}

// Command is an order for one endpoint.
type Command struct {
	ID        string          `json:"id"`
	RunID     string          `json:"runId"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"createdAt"`
	NotAfter  *time.Time      `json:"notAfter"`
}

// DeployUpdatesPayload is the resolved payload of a DEPLOY_UPDATES command
// as handed to the agent: the exact updates to install.
type DeployUpdatesPayload struct {
	Updates []DeployUpdate `json:"updates"`
}

// DeployUpdate is one update an agent is told to install.
type DeployUpdate struct {
	Key           string  `json:"key"`
	Title         string  `json:"title"`
	KB            *string `json:"kb"`
	WingetID      *string `json:"wingetId"`
	PackageName   *string `json:"packageName"`
	LatestVersion *string `json:"latestVersion"`
	// ProductKey is the Update.ProductKey the agent reported (the macOS
	// softwareupdate label). Optional: without it a macOS agent finds the
	// label by Title.
	ProductKey *string `json:"productKey,omitempty"`
}

// RunScriptPayload is the payload of a RUN_SCRIPT command. The server
// resolves stored scripts before handing the command out.
type RunScriptPayload struct {
	Script           string            `json:"script"`
	Language         string            `json:"language"` // sh, bash, powershell, python, cmd
	Parameters       map[string]string `json:"parameters,omitempty"`
	TimeoutSeconds   int               `json:"timeoutSeconds,omitempty"`
	RebootExitCodes  []int             `json:"rebootExitCodes,omitempty"`
	SuccessExitCodes []int             `json:"successExitCodes,omitempty"`
}

// RebootPayload is the payload of a REBOOT command.
type RebootPayload struct {
	Message        string `json:"message"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
}

// DeploySoftwarePayload is the payload of a DEPLOY_SOFTWARE command.
type DeploySoftwarePayload struct {
	WingetID string `json:"wingetId,omitempty"`
	URL      string `json:"url,omitempty"`
	Args     string `json:"args,omitempty"`
	// PackageName names a package of the OS package manager (apt, dnf) to
	// install on Linux. Optional.
	PackageName string `json:"packageName,omitempty"`
	// SHA256 is the hex digest the file downloaded from URL must have (a
	// patchd addition). Optional; when set, a mismatch fails the command
	// before anything runs. URL must be https.
	SHA256 string `json:"sha256,omitempty"`
}

// UninstallSoftwarePayload is the payload of an UNINSTALL_SOFTWARE command.
type UninstallSoftwarePayload struct {
	Name string `json:"name"`
}

// Inventory is the body of PUT /agent/v1/inventory: the whole inventory of
// the endpoint, replacing the previous one.
type Inventory struct {
	CollectedAt time.Time                   `json:"collectedAt"`
	System      System                      `json:"system"`
	Disks       []Disk                      `json:"disks"`
	Software    []Software                  `json:"software"`
	Updates     []Update                    `json:"updates"`
	Datasets    map[string][]map[string]any `json:"datasets"`
}

// System describes the computer.
type System struct {
	Hostname  string  `json:"hostname"`
	OS        *string `json:"os"`
	OSVersion *string `json:"osVersion"`
	OSBuild   *string `json:"osBuild"`
	// OSInstallationType is Windows' installation type ("Client", "Server",
	// "Server Core"; the registry's CurrentVersion\InstallationType), which
	// tells a Server Core host from one with the Desktop Experience for
	// vulnerability matching. Optional (added in protocol 1.x; servers
	// ignore it when absent, older servers ignore the unknown field).
	OSInstallationType *string  `json:"osInstallationType,omitempty"`
	Arch               string   `json:"arch"`
	Type               string   `json:"type"` // server or workstation
	Domain             *string  `json:"domain"`
	ADOU               *string  `json:"adOu"`
	Manufacturer       *string  `json:"manufacturer"`
	Model              *string  `json:"model"`
	SerialNumber       *string  `json:"serialNumber"`
	CPU                *string  `json:"cpu"`
	Cores              *int     `json:"cores"`
	RAMGB              *float64 `json:"ramGB"`
	MACAddresses       []string `json:"macAddresses"`
	Antivirus          *string  `json:"antivirus"`
	TimeZone           *string  `json:"timeZone"`
}

// Disk is one drive or mount point.
type Disk struct {
	Drive  string   `json:"drive"`
	SizeGB *float64 `json:"sizeGB"`
	FreeGB *float64 `json:"freeGB"`
}

// Software is one installed application or package.
type Software struct {
	Name         string  `json:"name"`
	Version      *string `json:"version"`
	Publisher    *string `json:"publisher"`
	InstallDate  *string `json:"installDate"`
	InstalledFor *string `json:"installedFor"`
	InstallType  *string `json:"installType"`
	// SourcePackage is the source package of a Linux binary package (dpkg
	// ${source:Package}, rpm SOURCERPM name); vulnerability advisories are
	// published per source package. Optional.
	SourcePackage *string `json:"sourcePackage,omitempty"`
}

// Update is one update missing on the endpoint now.
type Update struct {
	Title            string     `json:"title"`
	KB               *string    `json:"kb"`
	Severity         *string    `json:"severity"`
	Source           string     `json:"source"` // OS - Mandatory, OS - Optional, Applications
	Categories       []string   `json:"categories"`
	WingetID         *string    `json:"wingetId"`
	PackageName      *string    `json:"packageName"`
	InstalledVersion *string    `json:"installedVersion"`
	LatestVersion    *string    `json:"latestVersion"`
	RebootRequired   bool       `json:"rebootRequired"`
	ReleaseDate      *time.Time `json:"releaseDate"`
	// ProductKey identifies a macOS update (softwareupdate label) or another
	// OS update that has neither KB nor package name.
	ProductKey *string `json:"productKey,omitempty"`
	// Distro names the Linux distribution for package updates (debian, ubuntu, rhel…).
	Distro *string `json:"distro,omitempty"`
}

// Dataset names patchd-agent sends in Inventory.Datasets. Rows are objects
// with string keys; the columns of each are listed in agent/collect.
const (
	DatasetServices             = "services"
	DatasetProcesses            = "processes"
	DatasetNetworkAdapters      = "network-adapters"
	DatasetRoutingTables        = "routing-tables"
	DatasetLocalUsers           = "local-users"
	DatasetLocalGroups          = "local-groups"
	DatasetLocalAdministrators  = "local-administrators"
	DatasetTimeZone             = "time-zone"
	DatasetEnvironmentVariables = "environment-variables"
	DatasetStartupItems         = "startup-items"
	DatasetLogicalDisks         = "logical-disks"
	DatasetLoggedOnUsers        = "logged-on-users"
	DatasetOSInformation        = "os-information"
	DatasetFirmware             = "firmware"
)

// CommandStatus is the body of POST /agent/v1/commands/{id}/status.
type CommandStatus struct {
	Status   string    `json:"status"`
	Result   string    `json:"result"`
	ExitCode *int      `json:"exitCode"`
	At       time.Time `json:"at"`
}

// OK is the body of a plain success answer.
type OK struct {
	OK bool `json:"ok"`
}

// Error is the error shape shared with the REST API.
type Error struct {
	Error            string  `json:"error"`
	ErrorDescription *string `json:"error_description"`
}

// SplitEnrollToken splits an enrollment token as printed by the server,
// "<token>.<pin>", into the token and the pin: the lowercase hex SHA-256
// of the DER of the certificate the agent must find at the end of the
// server's chain. A token without a pin answers pin "". Tokens themselves
// are base64url (A-Z a-z 0-9 - _) after their prefix, so '.' never occurs
// in them.
func SplitEnrollToken(s string) (token, pin string) {
	s = strings.TrimSpace(s)
	i := strings.LastIndexByte(s, '.')
	if i < 0 || !IsPin(s[i+1:]) {
		return s, ""
	}
	return s[:i], s[i+1:]
}

// IsPin tells whether s is 64 lowercase hex digits.
func IsPin(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
