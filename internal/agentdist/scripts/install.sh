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

sha256_of() {
	if command -v sha256sum >/dev/null 2>&1; then sha256sum | cut -c1-64
	elif command -v shasum >/dev/null 2>&1; then shasum -a 256 | cut -c1-64
	elif command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 -r | cut -c1-64
	else die "no sha256sum, shasum or openssl to check the download"
	fi
}

b64decode() {
	if base64 --decode </dev/null >/dev/null 2>&1; then base64 --decode
	elif command -v openssl >/dev/null 2>&1; then openssl base64 -d -A
	else die "no base64 or openssl to read the CA"
	fi
}

# fetch URL FILE [tls options]: curl, else wget.
fetch() {
	url=$1; out=$2; shift 2
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL --proto '=https,http' "$@" -o "$out" "$url"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$out" "$@" "$url"
	else
		die "neither curl nor wget is installed"
	fi
}

# The pin: a token printed as <token>.<64 hex> carries the SHA-256 of the
# server's CA certificate (DER). The CA is fetched without verification and
# kept only when its hash is the pin; everything after is verified with it.
PIN=''
case "$TOKEN" in
	*.*) last=${TOKEN##*.}
		if [ ${#last} -eq 64 ] && [ -z "$(printf %s "$last" | tr -d '0-9a-f')" ]; then PIN=$last; fi ;;
esac
TLS=''
if [ -n "$CA_FILE" ]; then
	[ -r "$CA_FILE" ] || die "cannot read --ca-file $CA_FILE"
	TLS=ca
	cp "$CA_FILE" "$TMP/ca.pem"
elif [ -n "$PIN" ]; then
	case "$SERVER" in https://*) ;; *) die "a pinned token needs an https:// server" ;; esac
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL --proto '=https' -k -o "$TMP/ca.pem" "$SERVER/agent/v1/ca.pem" || die "cannot fetch $SERVER/agent/v1/ca.pem"
	else
		wget -q --no-check-certificate -O "$TMP/ca.pem" "$SERVER/agent/v1/ca.pem" || die "cannot fetch $SERVER/agent/v1/ca.pem"
	fi
	[ "$(grep -c 'BEGIN CERTIFICATE' "$TMP/ca.pem")" = 1 ] || die "the server's ca.pem is not one certificate"
	got=$(sed -e '/-----/d' "$TMP/ca.pem" | tr -d '\r\n' | b64decode | sha256_of)
	[ "$got" = "$PIN" ] || die "the server's CA does not match the pin in the token (got $got): someone may be intercepting; nothing was installed"
	TLS=ca
	say "the server's CA matches the token's pin"
fi
get() {
	if [ "$TLS" = ca ]; then
		if command -v curl >/dev/null 2>&1; then fetch "$1" "$2" --cacert "$TMP/ca.pem"; else fetch "$1" "$2" --ca-certificate="$TMP/ca.pem"; fi
	else
		fetch "$1" "$2"
	fi
}

URL="$SERVER/agent/v1/download/$OS/$ARCH"
say "downloading the agent for $OS/$ARCH from $SERVER"
get "$URL.sha256" "$TMP/patchd-agent.sha256" || die "cannot download $URL.sha256"
get "$URL" "$TMP/patchd-agent" || die "cannot download $URL"
want=$(cut -c1-64 "$TMP/patchd-agent.sha256")
got=$(sha256_of <"$TMP/patchd-agent")
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
	say "installed $BIN; no service registered (--no-start): run $BIN run"
	exit 0
fi
# install copies the agent to $BIN and registers and (re)starts the service;
# without a service manager it changes nothing and says what to do.
"$NEW" install --state "$STATE_DIR" || die "the service could not be installed (the computer is enrolled; see above)"
say "done: the agent runs as a service and checks in with $SERVER"
