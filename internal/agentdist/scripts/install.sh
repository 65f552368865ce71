#!/bin/sh
# patchd agent installer for Linux and macOS, served by the patchd server at
# @SERVER@/install.sh. It detects the architecture, downloads the agent from
# the server, checks its SHA-256, installs it to /usr/local/bin/patchd-agent,
# enrolls this computer and registers and starts the service (systemd,
# OpenRC or SysV init on Linux, launchd on macOS). Running it again upgrades
# the agent in place and keeps the enrollment.
#
#   curl -fsSL @SERVER@/install.sh | sudo sh -s -- --token TOKEN
#
# Options: --token T (as printed: a token ending in .<pin> pins the
# server's CA), --server URL, --ca-file F (a private CA to trust),
# --insecure-http (plain http to a non-loopback server; not recommended),
# --no-start (install and enroll, register no service), --reenroll,
# --proxy URL (HTTPS_PROXY for the downloads and the agent's service).
set -eu

SERVER='@SERVER@'
TOKEN=''
CA_FILE=''
INSECURE=''
NO_START=''
REENROLL=''
PROXY=''
BIN=/usr/local/bin/patchd-agent
STATE_DIR=''

die() { echo "patchd install: $*" >&2; exit 1; }
say() { echo "patchd install: $*"; }

while [ $# -gt 0 ]; do
	case "$1" in
		--token) [ $# -ge 2 ] || die "--token needs a value"; TOKEN=$2; shift 2 ;;
		--token=*) TOKEN=${1#*=}; shift ;;
		--server) [ $# -ge 2 ] || die "--server needs a value"; SERVER=$2; shift 2 ;;
		--server=*) SERVER=${1#*=}; shift ;;
		--ca-file) [ $# -ge 2 ] || die "--ca-file needs a value"; CA_FILE=$2; shift 2 ;;
		--ca-file=*) CA_FILE=${1#*=}; shift ;;
		--insecure-http) INSECURE=1; shift ;;
		--proxy) [ $# -ge 2 ] || die "--proxy needs a value"; PROXY=$2; shift 2 ;;
		--proxy=*) PROXY=${1#*=}; shift ;;
		--no-start) NO_START=1; shift ;;
		--reenroll) REENROLL=1; shift ;;
		-h|--help) sed -n '2,18p' "$0" 2>/dev/null || true; exit 0 ;;
		*) die "unknown option $1" ;;
	esac
done
SERVER=${SERVER%/}
if [ -n "$PROXY" ]; then
	# curl, wget and the agent read these; patchd-agent install records
	# them for the service.
	HTTPS_PROXY=$PROXY; HTTP_PROXY=$PROXY; https_proxy=$PROXY; http_proxy=$PROXY
	export HTTPS_PROXY HTTP_PROXY https_proxy http_proxy
fi

[ "$(id -u)" = 0 ] || die "run as root (curl … | sudo sh -s -- --token …)"

case "$(uname -s)" in
	Linux) OS=linux; STATE_DIR=/var/lib/patchd-agent ;;
	Darwin) OS=darwin; STATE_DIR="/Library/Application Support/patchd-agent" ;;
	*) die "unsupported system $(uname -s): use the Windows installer (install.ps1) or a package" ;;
esac
case "$(uname -m)" in
	x86_64|amd64) ARCH=amd64 ;;
	aarch64|arm64|armv8*) ARCH=arm64 ;;
	*) die "unsupported architecture $(uname -m): the agent is built for amd64 and arm64" ;;
esac

TMP=$(mktemp -d 2>/dev/null || mktemp -d -t patchd)
trap 'rm -rf "$TMP"' EXIT INT TERM

# --- fetch (every one-line installer runs these lines too) ---
# Here and in the pin check below: no single quote (the line carries it inside one), no comment
# after code, no backslash at a line's end: the line is these lines
# without comments, joined by blanks (by "; " after a line ending a
# command).

# pd_fetch URL FILE [CA]: downloads URL into FILE with curl, else wget,
# saying nothing (the caller says what failed). CA is the certificate file
# that alone verifies the server (https only), or -k for no verification
# (ca.pem only: it is checked against the pin).
pd_fetch() {
	if command -v curl >/dev/null 2>&1; then
		if [ "${3-}" = -k ]; then curl -fsLk --proto =https -o "$2" "$1"
		elif [ -n "${3-}" ]; then curl -fsL --proto =https --proto-redir =https --cacert "$3" -o "$2" "$1"
		else curl -fsL --proto =https,http -o "$2" "$1"
		fi
	elif command -v wget >/dev/null 2>&1; then
		if [ "${3-}" = -k ]; then wget -q --no-check-certificate -O "$2" "$1"
		elif [ -n "${3-}" ]; then wget -q --https-only --ca-certificate="$3" -O "$2" "$1"
		else wget -q -O "$2" "$1"
		fi
	else return 127
	fi
}
# --- end of fetch ---

# --- pin check (the pinned one-line installers run these lines too) ---
# pd_sha256 FILE: prints the lowercase hex SHA-256 of FILE.
pd_sha256() {
	if command -v sha256sum >/dev/null 2>&1; then pd_s=$(sha256sum <"$1") || return 1
	elif command -v shasum >/dev/null 2>&1; then pd_s=$(shasum -a 256 <"$1") || return 1
	elif command -v openssl >/dev/null 2>&1; then pd_s=$(openssl dgst -sha256 -r <"$1") || return 1
	else echo "patchd install: no sha256sum, shasum or openssl to check the downloads" >&2; return 1
	fi
	pd_s=${pd_s%% *}
	[ ${#pd_s} -eq 64 ] || { echo "patchd install: cannot compute a SHA-256 of $1" >&2; return 1; }
	echo "$pd_s"
}
# pd_b64 [-d]: base64 encoding, or decoding with -d, by base64 (GNU,
# macOS, BusyBox) or openssl; a failure of all fails.
pd_b64() {
	if [ "${1-}" = -d ]; then base64 --decode 2>/dev/null || base64 -d 2>/dev/null || openssl base64 -d 2>/dev/null
	else base64 2>/dev/null || openssl base64 2>/dev/null
	fi
}
# pd_pinned_ca SERVER PIN DIR: downloads SERVER/agent/v1/ca.pem without
# verification and writes DIR/ca.pem only when the download is, byte for
# byte, one certificate as patchd serves it (a BEGIN CERTIFICATE line, the
# base64 of its DER in lines of 64, an END CERTIFICATE line, LF endings)
# and that DER has the SHA-256 PIN. Anything else (another block of any
# kind, a junk line, CRLF) is refused. DIR/ca.pem is written here from the
# checked DER: what was downloaded never reaches curl or wget. A refusal
# says why in one line and returns 1.
pd_pinned_ca() {
	command -v curl >/dev/null 2>&1 || command -v wget >/dev/null 2>&1 || { echo "patchd install: neither curl nor wget is installed" >&2; return 1; }
	command -v base64 >/dev/null 2>&1 || command -v openssl >/dev/null 2>&1 || { echo "patchd install: neither base64 nor openssl is installed to read the CA" >&2; return 1; }
	pd_fetch "$1/agent/v1/ca.pem" "$3/ca.download" -k || { echo "patchd install: cannot fetch $1/agent/v1/ca.pem (curl or wget exit status $?)" >&2; return 1; }
	if grep -v -e ----- "$3/ca.download" >"$3/ca.body" && pd_b64 -d <"$3/ca.body" >"$3/ca.der" && { printf "%s\n" "-----BEGIN CERTIFICATE-----" && pd_b64 <"$3/ca.der" | tr -d "[:space:]" | fold -w 64 && printf "\n%s\n" "-----END CERTIFICATE-----"; } >"$3/ca.canonical" && cmp -s "$3/ca.download" "$3/ca.canonical"; then :
	else echo "patchd install: the ca.pem the server sent is not exactly one certificate: someone may be intercepting; nothing was run or installed" >&2; return 1
	fi
	pd_h=$(pd_sha256 "$3/ca.der") || return 1
	[ "$pd_h" = "$2" ] || { echo "patchd install: the CA the server sent does not match the pin in the token (its SHA-256 is $pd_h): someone may be intercepting; nothing was run or installed" >&2; return 1; }
	mv -f "$3/ca.canonical" "$3/ca.pem"
}
# --- end of the pin check ---

# The pin: a token printed as <token>.<64 hex> carries the SHA-256 of the
# server's CA certificate (DER). The CA is fetched without verification and
# kept only when it is that one certificate; everything after is verified
# with it alone.
PIN=''
case "$TOKEN" in
	*.*) last=${TOKEN##*.}
		if [ ${#last} -eq 64 ] && [ -z "$(printf %s "$last" | tr -d '0-9a-f')" ]; then PIN=$last; fi ;;
esac
command -v curl >/dev/null 2>&1 || command -v wget >/dev/null 2>&1 || die "neither curl nor wget is installed"
TLS=''
if [ -n "$CA_FILE" ]; then
	[ -r "$CA_FILE" ] || die "cannot read --ca-file $CA_FILE"
	TLS=$TMP/ca.pem
	cp "$CA_FILE" "$TLS"
elif [ -n "$PIN" ]; then
	case "$SERVER" in https://*) ;; *) die "a pinned token needs an https:// server" ;; esac
	pd_pinned_ca "$SERVER" "$PIN" "$TMP" || exit 1
	TLS=$TMP/ca.pem
	say "the server's CA matches the token's pin"
fi
# get URL FILE: downloads with the CA decided above (none: the system's).
get() { pd_fetch "$1" "$2" "$TLS"; }

URL="$SERVER/agent/v1/download/$OS/$ARCH"
say "downloading the agent for $OS/$ARCH from $SERVER"
get "$URL.sha256" "$TMP/patchd-agent.sha256" || die "cannot download $URL.sha256 (curl or wget exit status $?)"
get "$URL" "$TMP/patchd-agent" || die "cannot download $URL (curl or wget exit status $?)"
want=$(cut -c1-64 "$TMP/patchd-agent.sha256")
got=$(pd_sha256 "$TMP/patchd-agent") || exit 1
[ "$got" = "$want" ] || die "the download's SHA-256 $got is not the server's $want; nothing was installed"
# Run it from beside its final place: /tmp may be mounted noexec.
mkdir -p "$(dirname "$BIN")"
NEW="$BIN.new"
cp "$TMP/patchd-agent" "$NEW"
chmod 0755 "$NEW"
trap 'rm -rf "$TMP"; rm -f "$NEW"' EXIT INT TERM
"$NEW" version >/dev/null || die "the downloaded agent does not run on this computer"

# Enroll unless already enrolled (an upgrade keeps the enrollment).
if [ -f "$STATE_DIR/state.json" ] && [ -z "$REENROLL" ]; then
	say "already enrolled (state in $STATE_DIR): keeping the enrollment"
else
	[ -n "$TOKEN" ] || die "--token is required to enroll this computer"
	set -- enroll --server "$SERVER" --token "$TOKEN" --state "$STATE_DIR"
	[ -n "$CA_FILE" ] && set -- "$@" --ca-file "$CA_FILE"
	[ -n "$INSECURE" ] && set -- "$@" --insecure-http
	"$NEW" "$@" || die "enrollment failed; nothing was installed"
fi

if [ -n "$NO_START" ]; then
	mv -f "$NEW" "$BIN"
	say "installed $BIN; no service registered (--no-start): start it with: $BIN run --state '$STATE_DIR'"
	exit 0
fi
# install copies the agent to $BIN and registers and (re)starts the service;
# without a service manager it changes nothing and exits 4: the agent is
# then kept at $BIN, enrolled, and the command that runs it is printed.
rc=0
"$NEW" install --state "$STATE_DIR" 2>"$TMP/install.err" || rc=$?
if [ "$rc" = 4 ]; then
	mv -f "$NEW" "$BIN"
	die "installed $BIN and enrolled, but found no service manager (systemd, OpenRC, SysV init) to run it: start it with $BIN run --state '$STATE_DIR' from what starts programs at boot here (a container's entry point, a supervisor), or run this installer with --no-start"
fi
cat "$TMP/install.err" >&2
[ "$rc" = 0 ] || die "the service could not be installed (the computer is enrolled; see above)"
say "done: the agent runs as a service and checks in with $SERVER"
