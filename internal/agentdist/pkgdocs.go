package agentdist

import (
	"strings"
	"time"
)

// copyrightFile is the .deb's /usr/share/doc/patchd-agent/copyright
// (Debian's machine-readable format) and the .rpm's license file: the
// agent is patchd's code (Apache-2.0) linked statically with the Go
// standard library (BSD-3-Clause); it links no other module.
var copyrightFile = `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: patchd
Source: https://github.com/patchd/patchd

Files: *
Copyright: patchd contributors
License: Apache-2.0

Files: usr/bin/patchd-agent
Copyright: patchd contributors
 2009 The Go Authors
License: Apache-2.0 and BSD-3-Clause
Comment: patchd-agent is a Go program: the Go standard library is linked
 into it.

` + apacheLicenseStanza + `
License: BSD-3-Clause
` + indentLicense(`Copyright 2009 The Go Authors.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are
met:

   * Redistributions of source code must retain the above copyright
notice, this list of conditions and the following disclaimer.
   * Redistributions in binary form must reproduce the above
copyright notice, this list of conditions and the following disclaimer
in the documentation and/or other materials provided with the
distribution.
   * Neither the name of Google LLC nor the names of its
contributors may be used to endorse or promote products derived from
this software without specific prior written permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS
"AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT
LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR
A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT
OWNER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL,
SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT
LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE,
DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY
THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
(INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.`)

// apacheLicenseStanza is the copyright files' Apache-2.0 stanza (the
// agent's and the server's packages).
const apacheLicenseStanza = `License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License");
 you may not use this file except in compliance with the License.
 You may obtain a copy of the License at
 .
 https://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS,
 WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 See the License for the specific language governing permissions and
 limitations under the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0
 can be found in "/usr/share/common-licenses/Apache-2.0".
`

// indentLicense indents a license text for a copyright file's stanza
// (one space; an empty line is " .").
func indentLicense(text string) string {
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if l == "" {
			b.WriteString(" .\n")
		} else {
			b.WriteString(" " + l + "\n")
		}
	}
	return b.String()
}

// debChangelog is the native package's /usr/share/doc/patchd-agent/changelog
// (before compression): one entry, for the packaged version.
func debChangelog(version, maintainer string, at time.Time) []byte {
	return []byte("patchd-agent (" + version + ") unstable; urgency=medium\n\n" +
		"  * patchd agent " + version + ", packaged from the agent the patchd server\n" +
		"    publishes.\n\n" +
		" -- " + maintainer + "  " + at.UTC().Format(time.RFC1123Z) + "\n")
}

// rpmReadme is the .rpm's documentation file.
const rpmReadme = `patchd-agent
============

The agent of the patchd patch-management server: it checks in with the
server, reports this computer's inventory and installs the updates the
server's administrators approve.

Enroll at installation: write PATCHD_TOKEN=... (and optionally
PATCHD_SERVER=https://...) to /etc/patchd-agent/enroll.conf (mode 0600)
before installing the package, or set them in the environment of rpm.
Enroll later: patchd-agent enroll --server URL --token TOKEN, then start
the patchd-agent service.

The enrollment is kept in /var/lib/patchd-agent; rpm -e leaves it.
Documentation: https://github.com/patchd/patchd/blob/main/docs/agents.md
`

// lintianOverrides are the lintian tags the .deb accepts, each with its
// reason (lintian prints the comment with the overridden tag).
const lintianOverrides = `# patchd-agent is a Go program, linked statically like every Go program
# without cgo: one file that runs on every Linux distribution and release,
# whatever their C library.
patchd-agent: statically-linked-binary [usr/bin/patchd-agent]
# The inventory is read with dpkg-query. The agent only looks whether
# /var/lib/dpkg/status exists (is dpkg the package manager?) and reads the
# modification time of /var/lib/dpkg/info/PACKAGE.list as a package's
# installation date, which dpkg-query does not report; it never writes there.
patchd-agent: uses-dpkg-database-directly [usr/bin/patchd-agent]
`

// rpmlintFilters are what rpmlint may say about the .rpm, each with its
// reason: RPMLintConfig's addFilter lines.
var rpmlintFilters = []struct{ pattern, reason string }{
	{"statically-linked-binary", "patchd-agent is a Go program, linked statically like every Go program without cgo: one file for every distribution, whatever its C library"},
	{"position-independent-executable-suggested", "the package carries the agent as it was published; a release built with go build -buildmode=pie satisfies this check"},
	{"only-non-binary-in-usr-lib", "the systemd unit is in /usr/lib/systemd/system, where RPM distributions keep packaged units"},
	{"no-manual-page-for-binary", "the package has patchd-agent(8); rpmlint 2.4 compares the binary's name with the manual page's section instead of its name"},
	{"manpage-not-compressed", "the manual page is compressed with gzip, as Fedora, RHEL and openSUSE compress theirs; rpmlint's built-in default expects bzip2"},
	{"invalid-license", "Apache-2.0 and BSD-3-Clause are SPDX identifiers, which Fedora and openSUSE use; Debian's rpmlint has no list of valid licenses"},
}

// RPMLintConfig is an rpmlintrc (rpmlint --rpmlintrc FILE) that filters
// what rpmlint says about the .rpm for a known reason, each written as a
// comment above its filter.
func RPMLintConfig() string {
	return rpmlintrc("the patchd-agent package", rpmlintFilters)
}

// rpmlintrc writes filters as an rpmlintrc for the package named, each
// filter under its reason.
func rpmlintrc(pkg string, filters []struct{ pattern, reason string }) string {
	var b strings.Builder
	b.WriteString("# rpmlint filters for " + pkg + ", with their reasons.\n")
	for _, f := range filters {
		b.WriteString("# " + f.reason + "\naddFilter(\"" + f.pattern + "\")\n")
	}
	return b.String()
}

// manPage is patchd-agent(8).
func manPage(version string, at time.Time) []byte {
	return []byte(`.TH PATCHD-AGENT 8 "` + at.UTC().Format("2006-01-02") + `" "patchd-agent ` + roffEscape(version) + `" "System Administration"
.SH NAME
patchd-agent \- agent of the patchd patch-management server
.SH SYNOPSIS
.B patchd-agent enroll
.B \-\-server
.I URL
.B \-\-token
.I TOKEN
.RB [ \-\-ca\-file
.IR FILE ]
.RB [ \-\-insecure\-http ]
.RB [ \-\-release\-key
.IR KEY ]
.RB [ \-\-state
.IR DIR ]
.br
.B patchd-agent run
.RB [ \-\-state
.IR DIR ]
.RB [ \-\-update\-grace
.IR DURATION ]
.RB [ \-\-release\-check
.IR DURATION ]
.br
.B patchd-agent install
.RB [ \-\-state
.IR DIR ]
.RB [ \-\-dry\-run ]
.br
.B patchd-agent uninstall
.RB [ \-\-state
.IR DIR ]
.RB [ \-\-keep\-state ]
.RB [ \-\-dry\-run ]
.br
.B patchd-agent inventory
.br
.B patchd-agent version
.SH DESCRIPTION
.B patchd-agent
runs as a service on a managed computer.
It checks in with a patchd server, reports the computer's inventory
(the installed software and the updates its package manager offers)
and installs the updates the server's administrators approve.
Every command takes
.B \-\-debug
to log at debug level too.
.SH COMMANDS
.TP
.B enroll
Enrolls the computer with the server, with an enrollment token the
server's administrators created, and keeps the enrollment in the state
folder.
.TP
.B run
Runs the agent: what the service does.
.TP
.B install
Copies the program to its place and registers and starts the service
(systemd, OpenRC, SysV init, launchd or the Windows service manager).
A computer with this package installed needs no
.BR install .
.TP
.B uninstall
Removes what
.B install
created, and the state unless
.BR \-\-keep\-state .
Remove this package with the package manager instead.
.TP
.B inventory
Prints the inventory the agent would report.
.TP
.B version
Prints the agent's version.
.SH FILES
.TP
.I /var/lib/patchd-agent
The state folder: the enrollment.
.TP
.I /etc/patchd-agent/enroll.conf
Read when the package is installed:
.B PATCHD_TOKEN
and
.B PATCHD_SERVER
in shell syntax enroll the computer.
.TP
.I /etc/default/patchd-agent
Environment of the service, such as
.BR HTTPS_PROXY .
.SH SEE ALSO
The patchd documentation:
.UR https://github.com/patchd/patchd/blob/main/docs/agents.md
.UE
`)
}

// roffEscape keeps a version from being read as roff.
func roffEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, ``, "-", `\-`).Replace(s)
}
