package agentdist

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/agentsvc"
)

// MSI identities: the UpgradeCode is the product's for ever (a newer MSI
// replaces an older one), the component's GUID is the binary's.
const (
	msiUpgradeCode = "6C0E8F3A-3F5E-4B8E-9A55-0D8C4A1B2E11"
	msiComponent   = "6C0E8F3A-3F5E-4B8E-9A55-0D8C4A1B2E12"
)

// msiSource is the WiX source wixl builds. SERVER and TOKEN are public
// properties (msiexec /i patchd-agent.msi SERVER=https://… TOKEN=… /qn):
// with TOKEN the deferred custom action enrolls (as SYSTEM, before the
// service starts); without it the service is installed and waits for an
// enrollment. Upgrades keep the state in %ProgramData%\patchd-agent.
//
// The ProductVersion is the agent's release version: a MajorUpgrade (one
// UpgradeCode for ever, a new ProductCode for each build) replaces an
// older or equal version (a package of the same agent rebuilt for another
// server replaces the installed one rather than installing beside it:
// upgradeSameVersion makes the bound inclusive) and refuses to replace a newer
// one.
func msiSource(exe, server string, v packageVersion) string {
	state := `[CommonAppDataFolder]patchd-agent`
	serverProp := ""
	if server != "" { // an MSI property cannot be empty
		serverProp = `
    <Property Id="SERVER" Value="` + wixEscape(server) + `"/>`
	}
	return `<?xml version="1.0" encoding="utf-8"?>
<Wix xmlns="http://schemas.microsoft.com/wix/2006/wi">
  <Product Id="*" Name="patchd agent" Language="1033" Version="` + v.MSI + `" Manufacturer="patchd" UpgradeCode="` + msiUpgradeCode + `">
    <Package InstallerVersion="500" Compressed="yes" InstallScope="perMachine" Description="patchd agent" Manufacturer="patchd"/>
    <Media Id="1" Cabinet="agent.cab" EmbedCab="yes"/>
    <MajorUpgrade DowngradeErrorMessage="A newer patchd agent is installed."/>` + serverProp + `
    <Directory Id="TARGETDIR" Name="SourceDir">
      <Directory Id="ProgramFiles64Folder">
        <Directory Id="INSTALLDIR" Name="patchd">
          <Component Id="Agent" Guid="` + msiComponent + `" Win64="yes">
            <File Id="AgentExe" Name="patchd-agent.exe" Source="` + wixEscape(exe) + `" KeyPath="yes"/>
            <ServiceInstall Id="AgentService" Name="` + agentsvc.ServiceName + `" DisplayName="patchd agent"
              Description="Checks in with the patchd server, reports inventory and installs updates."
              Type="ownProcess" Start="auto" ErrorControl="normal" Arguments="run --state &quot;` + state + `&quot;"/>
            <ServiceControl Id="AgentServiceControl" Name="` + agentsvc.ServiceName + `" Start="install" Stop="both" Remove="uninstall" Wait="no"/>
          </Component>
        </Directory>
      </Directory>
    </Directory>
    <Feature Id="Agent" Level="1"><ComponentRef Id="Agent"/></Feature>
    <CustomAction Id="Enroll" FileKey="AgentExe" Execute="deferred" Impersonate="no" Return="check"
      ExeCommand="enroll --server &quot;[SERVER]&quot; --token &quot;[TOKEN]&quot; --state &quot;` + state + `&quot;"/>
    <InstallExecuteSequence>
      <Custom Action="Enroll" After="InstallServices">TOKEN AND NOT REMOVE</Custom>
    </InstallExecuteSequence>
  </Product>
</Wix>
`
}

// CanBuildMSI tells whether this server has the tools the Windows
// package is built with (wixl and msibuild, Debian's msitools).
func CanBuildMSI() bool {
	for _, tool := range []string{"wixl", "msibuild"} {
		if _, err := exec.LookPath(tool); err != nil {
			return false
		}
	}
	return true
}

// buildMSI builds the Windows package with wixl (Debian's msitools),
// signing the binary first and the MSI after when a signer is set.
func (pk *Packager) buildMSI(ctx context.Context, bin Binary, v packageVersion, server, out string) error {
	wixl, err := exec.LookPath("wixl")
	if err != nil {
		return fmt.Errorf("%w: building the MSI needs wixl (apt-get install wixl msitools)", ErrNoTool)
	}
	tmp, err := os.MkdirTemp("", "patchd-msi-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	exe := filepath.Join(tmp, "patchd-agent.exe")
	if err := copyFile(bin.Path, exe, 0o644); err != nil {
		return err
	}
	if pk.Sign != nil && !pk.Sign.Signed(ctx, exe) {
		if err := pk.Sign.SignFile(ctx, exe); err != nil {
			return err
		}
	}
	wxs := filepath.Join(tmp, "agent.wxs")
	// wixl finds sources relative to its working folder only.
	if err := os.WriteFile(wxs, []byte(msiSource(filepath.Base(exe), server, v)), 0o644); err != nil {
		return err
	}
	msi := filepath.Join(tmp, "agent.msi")
	cmd := exec.CommandContext(ctx, wixl, "-a", "x64", "-o", msi, wxs)
	cmd.Dir = tmp
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build msi: wixl: %w: %s", err, strings.TrimSpace(string(b)))
	}
	if err := addMSIRecovery(ctx, tmp, msi); err != nil {
		return err
	}
	if err := upgradeSameVersion(ctx, tmp, msi, v); err != nil {
		return err
	}
	if pk.Sign != nil {
		if err := pk.Sign.SignFile(ctx, msi); err != nil {
			return err
		}
	}
	return copyFile(msi, out, 0o644)
}

// addMSIRecovery adds the service's recovery to the MSI wixl built (wixl
// knows neither WiX's ServiceConfigFailureActions nor ServiceConfig): the
// MsiServiceConfigFailureActions row restarts the agent after
// agentsvc.RecoveryDelays, the count reset after agentsvc.RecoveryReset; the
// MsiServiceConfig row (SERVICE_CONFIG_FAILURE_ACTIONS_FLAG, 1) counts a
// failing exit code as a failure; the standard action
// MsiConfigureServices (Windows Installer 5.0, as the package requires)
// applies both between InstallServices and StartServices, at installation
// and reinstallation. msibuild (msitools, with wixl) imports the tables.
func addMSIRecovery(ctx context.Context, dir, msi string) error {
	msibuild, err := exec.LookPath("msibuild")
	if err != nil {
		return fmt.Errorf("%w: building the MSI needs msibuild (apt-get install msitools)", ErrNoTool)
	}
	var args []string
	for name, content := range msiRecoveryTables() {
		f := filepath.Join(dir, name+".idt")
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			return err
		}
		args = append(args, "-i", f)
	}
	args = append(args, "-q", "INSERT INTO `InstallExecuteSequence` (`Action`, `Condition`, `Sequence`) VALUES ('MsiConfigureServices', 'VersionMsi >= \"5.00\"', "+msiConfigureServicesSeq+")")
	cmd := exec.CommandContext(ctx, msibuild, append([]string{msi}, args...)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build msi: msibuild: %w: %s", err, strings.TrimSpace(string(b)))
	}
	return nil
}

// upgradeSameVersion makes the MSI replace an installed package of the
// same version (rebuilt for another server, or a prerelease of it), as
// WiX's AllowSameVersionUpgrades does; wixl ignores that attribute. The
// Upgrade table's row that finds older versions gets
// msidbUpgradeAttributesVersionMaxInclusive; the attributes are part of the
// row's key, so the row is replaced.
func upgradeSameVersion(ctx context.Context, dir, msi string, v packageVersion) error {
	cmd := exec.CommandContext(ctx, "msibuild", msi,
		"-q", "DELETE FROM `Upgrade` WHERE `ActionProperty` = 'WIX_UPGRADE_DETECTED'",
		"-q", "INSERT INTO `Upgrade` (`UpgradeCode`, `VersionMin`, `VersionMax`, `Attributes`, `ActionProperty`) VALUES "+
			"('{"+msiUpgradeCode+"}', '', '"+v.MSI+"', "+msiUpgradeAttributes+", 'WIX_UPGRADE_DETECTED')")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build msi: msibuild: %w: %s", err, strings.TrimSpace(string(b)))
	}
	return nil
}

// msiConfigureServicesSeq is MsiConfigureServices' place in the standard
// sequence: after InstallServices (5800), before StartServices (5900).
const msiConfigureServicesSeq = "5850"

// msidbUpgradeAttributesMigrateFeatures | VersionMaxInclusive.
const msiUpgradeAttributes = "513"

// msidbServiceConfigEventInstall | msidbServiceConfigEventReinstall.
const msiServiceConfigEvents = "5"

// msiRecoveryTables are the IDT files (name: content) of the recovery.
func msiRecoveryTables() map[string]string {
	actions := make([]string, len(agentsvc.RecoveryDelays))
	delays := make([]string, len(agentsvc.RecoveryDelays))
	for i, d := range agentsvc.RecoveryDelays {
		actions[i] = "1" // SC_ACTION_RESTART
		delays[i] = strconv.FormatInt(d.Milliseconds(), 10)
	}
	reset := strconv.Itoa(int(agentsvc.RecoveryReset / time.Second))
	row := func(cells ...string) string { return strings.Join(cells, "\t") + "\r\n" }
	return map[string]string{
		"MsiServiceConfigFailureActions": row("MsiServiceConfigFailureActions", "Name", "Event", "ResetPeriod", "RebootMessage", "Command", "Actions", "DelayActions", "Component_") +
			row("s72", "s255", "i2", "I4", "L255", "S255", "S255", "S255", "s72") +
			row("MsiServiceConfigFailureActions", "MsiServiceConfigFailureActions") +
			row("AgentRecovery", agentsvc.ServiceName, msiServiceConfigEvents, reset, "", "", strings.Join(actions, "[~]"), strings.Join(delays, "[~]"), "Agent"),
		// ConfigType 4: SERVICE_CONFIG_FAILURE_ACTIONS_FLAG.
		"MsiServiceConfig": row("MsiServiceConfig", "Name", "Event", "ConfigType", "Argument", "Component_") +
			row("s72", "s255", "i2", "i4", "S255", "s72") +
			row("MsiServiceConfig", "MsiServiceConfig") +
			row("AgentRecoveryOnErrorExit", agentsvc.ServiceName, msiServiceConfigEvents, "4", "1", "Agent"),
	}
}
