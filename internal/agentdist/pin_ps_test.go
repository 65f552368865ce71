package agentdist_test

import (
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/agentdist"
)

// TestPowerShellPinCheck runs the pin check the printed Windows line
// carries (the same lines as install.ps1's) in pwsh: ca.pem is accepted
// only when it is exactly the pinned certificate (the forged file and the
// other malformed answers are refused), and a server certificate only when
// the chain built from it ends in exactly the pinned CA and it bears the
// server's name: not the attacker's certificate, though the chain the
// system built holds the pinned CA, nor one naming the pinned CA as issuer
// without its signature. The TLS plumbing around it (ServicePointManager,
// the unverified read of ca.pem on a connection of its own) is Windows
// PowerShell's and is not run here.
func TestPowerShellPinCheck(t *testing.T) {
	pwsh, err := exec.LookPath("pwsh")
	if err != nil {
		t.Skip("pwsh (PowerShell) is not installed here, so the PowerShell pin check is not run: install PowerShell (packages.microsoft.com) to run it")
	}
	dir := t.TempDir()
	// The pinned CA and a server certificate it issued; the attacker's CA
	// and his certificate, and one naming the pinned CA as its issuer but
	// signed by his key.
	ca, caKey := testCA(t, "patchd test CA")
	caDER := ca.Raw
	good := testLeaf(t, ca, caKey).Certificate[0]
	evil, evilLeaf, evilKey := attackerCA(t)
	posing := &x509.Certificate{Subject: ca.Subject, SubjectKeyId: ca.SubjectKeyId}
	forgedIssuer := testLeaf(t, posing, evilKey).Certificate[0]
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	realPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	pin := hex.EncodeToString(sha256Of(caDER))

	line := agentdist.InstallersFor("https://127.0.0.1:8443", "pde_x", pin).Windows
	_, check, ok := strings.Cut(line, "try { ")
	check, _, ok2 := strings.Cut(check, " Set-PatchdPinnedTrust (")
	if !ok || !ok2 {
		t.Fatalf("the Windows line carries no pin check:\n%s", line)
	}
	var ps strings.Builder
	ps.WriteString("$ErrorActionPreference = 'Stop'\n")
	ps.WriteString(check + "\n")
	ps.WriteString("$pin = '" + pin + "'\n")
	ps.WriteString("function Load($p) { return [IO.File]::ReadAllText($p) }\n")
	ps.WriteString("function Cert($p) { return New-Object Security.Cryptography.X509Certificates.X509Certificate2(,[IO.File]::ReadAllBytes($p)) }\n")
	cases := forgedCAFiles(realPEM, evil)
	cases["real"] = realPEM
	for name, body := range cases {
		p := write(strings.ReplaceAll(name, " ", "-")+".pem", body)
		ps.WriteString("try { [void](ConvertFrom-PatchdCAPem (Load '" + p + "') $pin); 'pem " + name + ": accepted' } catch { 'pem " + name + ": ' + $_.Exception.Message }\n")
	}
	ps.WriteString("try { [void](ConvertFrom-PatchdCAPem (Load '" + write("other-pin.pem", realPEM) + "') ('0' * 64)); 'pem other pin: accepted' } catch { 'pem other pin: ' + $_.Exception.Message }\n")
	ps.WriteString("$ca = ConvertFrom-PatchdCAPem (Load '" + write("ca.pem", realPEM) + "') $pin\n")
	ps.WriteString("$check = New-PatchdCertCheck $ca\n")
	ps.WriteString("$good = Cert '" + write("good.der", good) + "'\n")
	ps.WriteString("$evil = Cert '" + write("evil.der", evilLeaf.Certificate[0]) + "'\n")
	ps.WriteString("$evilCA = Cert '" + write("evil-ca.der", evil) + "'\n")
	ps.WriteString("$forged = Cert '" + write("forged-issuer.der", forgedIssuer) + "'\n")
	// The chain the system would hand the callback for the attacker:
	// his certificate, his CA and the pinned CA all in it.
	ps.WriteString("$sys = New-Object Security.Cryptography.X509Certificates.X509Chain\n")
	ps.WriteString("$sys.ChainPolicy.RevocationMode = 'NoCheck'; $sys.ChainPolicy.VerificationFlags = 'AllowUnknownCertificateAuthority'\n")
	ps.WriteString("[void]$sys.ChainPolicy.ExtraStore.Add($evilCA); [void]$sys.ChainPolicy.ExtraStore.Add($ca); [void]$sys.Build($evil)\n")
	ps.WriteString("'chain good: ' + (& $check $null $good $null 4)\n")
	ps.WriteString("'chain good, name mismatch: ' + (& $check $null $good $null 6)\n")
	ps.WriteString("'chain good, no certificate: ' + (& $check $null $null $null 1)\n")
	ps.WriteString("'chain the CA itself: ' + (& $check $null $ca $null 4)\n")
	ps.WriteString("'chain attacker: ' + (& $check $null $evil $sys 4)\n")
	ps.WriteString("'chain attacker CA: ' + (& $check $null $evilCA $sys 4)\n")
	ps.WriteString("'chain forged issuer: ' + (& $check $null $forged $sys 4)\n")
	script := write("check.ps1", []byte(ps.String()))
	out, err := exec.Command(pwsh, "-NoProfile", "-NonInteractive", "-File", script).CombinedOutput()
	if err != nil {
		t.Fatalf("pwsh: %v\n%s", err, out)
	}
	got := string(out)
	want := []string{
		"pem real: accepted",
		"pem other pin: the CA the server sent does not match the pin in the token (its SHA-256 is " + pin + "): someone may be intercepting; nothing was run or installed",
		"chain good: True", "chain good, name mismatch: False", "chain good, no certificate: False", "chain the CA itself: True",
		"chain attacker: False", "chain attacker CA: False", "chain forged issuer: False",
	}
	for name := range forgedCAFiles(realPEM, evil) {
		want = append(want, "pem "+name+": the ca.pem the server sent is not exactly one certificate: someone may be intercepting; nothing was run or installed")
	}
	for _, w := range want {
		if !strings.Contains(got, w+"\n") {
			t.Errorf("pwsh did not say %q:\n%s", w, got)
		}
	}
}
