#!/usr/bin/env bash
# End-to-end performance of patchd, measured from outside: real
# `patchd serve` processes, the simulated fleet of patchd-load (the sim
# package: the agent protocol as patchd-agent speaks it), CPU from /proc,
# latencies from the clients. It prints the figures docs/performance.md
# reports, with the load average each was measured at:
#
#   enroll    ENDPOINTS endpoints enroll and send their full inventory; the
#             time until the last inventory is stored, then checked through
#             the API (endpoints and software totals);
#   checkin   the steady state of that fleet as patchd-agent runs it (long
#             polls back to back, no API clients): server CPU per check-in
#             (and PostgreSQL's, its backends included);
#   latency   the same fleet checking in every 60 s without long polls:
#             check-in p50 / p99 and CPU per check-in;
#   api       wrk against the authenticated GET /api/v1/groups and, in the
#             same run (alternating, API_RUNS pairs of 10 s), against a bare
#             net/http handler serving a body of the same shape: the ratio
#             of requests/s over all the pairs, and each pair's;
#   scale     (SCALE=N, e.g. 100000) N endpoints on one SQLite server,
#             checking in every 60 s: RSS, peak RSS, check-in p50 / p99.
#
# Usage: scripts/perf-e2e.sh [sqlite|postgres|both|none]   (default sqlite;
# none runs only the SCALE run)
#   ENDPOINTS=10000 WARMUP=70s POLL_WARMUP=240s STEADY=120s SCALE=0 API_RUNS=5 OUT=folder KEEP=1
# The long polls' warm-up is longer: once the fleet holds its long polls
# the server's heap grows for about three minutes more (10,000 long polls
# hold ~100 MiB of net/http's buffers), and until it has its size the
# kernel hands it fresh pages (500 page faults a second, ~8 % of the
# server's CPU), a cost a server pays once, not with each check-in.
# STEADY=120s holds one collection of the heap (the runtime collects at
# least every two minutes).
# PostgreSQL runs on a cluster of its own (initdb in the work folder, its
# own port): the machine's PostgreSQL is not touched. Needs jq, curl, wrk
# (apt-get install wrk) and, for PostgreSQL, its server binaries; run as
# root (the cluster runs as the postgres user) or as a user who may run
# initdb. The machine should be otherwise idle: every figure comes with the
# load average at its start and end.
set -euo pipefail
cd "$(dirname "$0")/.."

ENGINES=${1:-sqlite}
ENDPOINTS=${ENDPOINTS:-10000}
WARMUP=${WARMUP:-70s}
POLL_WARMUP=${POLL_WARMUP:-240s}
STEADY=${STEADY:-120s}
SCALE=${SCALE:-0}
API_RUNS=${API_RUNS:-5}
PGPORT=${PGPORT:-55433}
PORT=${PORT:-18300}

for tool in jq curl; do
  command -v "$tool" >/dev/null || { echo "perf-e2e: $tool is needed" >&2; exit 2; }
done
case "$ENGINES" in
  sqlite) ENGINES="sqlite" ;;
  postgres) ENGINES="postgres" ;;
  both) ENGINES="sqlite postgres" ;;
  none) ENGINES="" ;;
  *) echo "usage: $0 [sqlite|postgres|both|none]" >&2; exit 2 ;;
esac

work=$(mktemp -d /tmp/patchd-perf.XXXXXX)
chmod 755 "$work"
OUT=${OUT:-$work/reports}
mkdir -p "$OUT"
server_pid=""
pgbin=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  [ -n "${bare_pid:-}" ] && kill "$bare_pid" 2>/dev/null || true
  [ -d "$work/pg/data" ] && pgrun "$pgbin/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true
  wait 2>/dev/null || true
  if [ -z "${KEEP:-}" ]; then rm -rf "$work/data" "$work/pg" "$work/state"; fi
}
trap cleanup EXIT
log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
pgrun() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# The agents' sockets: one per simulated agent holding a long poll.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

log "building patchd and patchd-load"
go build -o "$work/" ./cmd/patchd ./cmd/patchd-load
P="$work/patchd"
L="$work/patchd-load"

# start_server NAME DB: a fresh patchd on PORT (GOMEMLIMIT from the
# environment); sets server_pid, CID, CS, ET.
start_server() {
  local name=$1 db=$2
  rm -rf "$work/data/$name"
  mkdir -p "$work/data/$name"
  "$P" serve --addr "127.0.0.1:$PORT" --base-url "http://127.0.0.1:$PORT" --db "$db" --data "$work/data/$name" \
    --no-agent-build --log-level warn >"$work/$name.out" 2>"$work/$name.log" &
  server_pid=$!
  for _ in $(seq 1 150); do
    curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
    sleep 0.2
  done
  curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null || { echo "patchd did not start:" >&2; tail "$work/$name.log" >&2; exit 1; }
  CID=$(sed -n 's/^ *API client_id: *//p' "$work/$name.out")
  CS=$(sed -n 's/^ *API client_secret: *\([^ ]*\).*/\1/p' "$work/$name.out")
  ET=$(sed -n 's/^ *Enrollment token: *\([^ ]*\).*/\1/p' "$work/$name.out")
}

stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

token() {
  curl -fs -d grant_type=client_credentials -d "client_id=$CID" -d "client_secret=$CS" \
    "http://127.0.0.1:$PORT/api/oauth/token" | jq -r .access_token
}

total() { curl -fs -H "Authorization: Bearer $1" "http://127.0.0.1:$PORT/api/v1/$2" | jq -r .total; }

# load NAME ARGS...: patchd-load against the server, its JSON report in
# $OUT/NAME.json.
load() {
  local name=$1
  shift
  "$L" --server "http://127.0.0.1:$PORT" --enroll-token "$ET" --client-id "$CID" --client-secret "$CS" \
    --server-pid "$server_pid" "$@" >"$OUT/$name.json" 2>"$OUT/$name.log"
}

# Table rows, printed at the end.
rows=()
row() { rows+=("$(printf '| %s | %s | %s | %s |' "$@")"); }

fleet() { # ENGINE DB DBPID
  local engine=$1 db=$2 dbpid=$3 dbargs=()
  [ "$dbpid" != 0 ] && dbargs=(--db-pid "$dbpid")
  start_server "$engine" "$db"
  local state="$work/state/$engine"
  local la0
  la0=$(loadavg)
  log "$engine: $ENDPOINTS endpoints enroll and send their inventories"
  load "$engine-enroll" --endpoints "$ENDPOINTS" --clients 0 --duration 1s --state-dir "$state" --db "$db"
  local tok eps sw
  tok=$(token)
  eps=$(total "$tok" "endpoints?limit=1")
  sw=$(total "$tok" "software?limit=1")
  row "$engine: $ENDPOINTS endpoints enroll + full inventory stored" \
    "$(jq -r '.enrollSeconds' "$OUT/$engine-enroll.json") s; through the API: $eps endpoints, $sw software rows" \
    "$la0 → $(loadavg)" "$(jq -r '.processes[0].peakRssMiB' "$OUT/$engine-enroll.json") MiB peak RSS"

  la0=$(loadavg)
  log "$engine: steady check-ins, long polls ($POLL_WARMUP warm-up, $STEADY measured)"
  load "$engine-checkin" --endpoints "$ENDPOINTS" --clients 0 --warmup "$POLL_WARMUP" --duration "$STEADY" --state-dir "$state" "${dbargs[@]}"
  local r="$OUT/$engine-checkin.json" dbcpu=""
  [ "$dbpid" != 0 ] && dbcpu=", PostgreSQL $(jq -r '.databaseCpuPerCheckinMicros' "$r") µs"
  row "$engine: steady check-in (long polls), server CPU per check-in" \
    "$(jq -r '.serverCpuPerCheckinMicros' "$r") µs$dbcpu ($(jq -r '.checkinsPerSecond' "$r") check-ins/s, server $(jq -r '.processes[0].cpuPercent' "$r") %)" \
    "$la0 → $(loadavg)" "$(jq -r '.processes[0].rssMiB' "$r") MiB RSS"

  la0=$(loadavg)
  log "$engine: check-ins every 60 s without long polls ($STEADY measured)"
  load "$engine-latency" --endpoints "$ENDPOINTS" --clients 0 --wait 0 --checkin 60s --warmup "$WARMUP" --duration "$STEADY" --state-dir "$state" "${dbargs[@]}"
  r="$OUT/$engine-latency.json"
  dbcpu=""
  [ "$dbpid" != 0 ] && dbcpu=", PostgreSQL $(jq -r '.databaseCpuPerCheckinMicros' "$r") µs"
  row "$engine: check-in every 60 s (no long poll): p50 / p99, CPU per check-in" \
    "$(jq -r '.fleet[0].checkinLatencyMs.p50' "$r") / $(jq -r '.fleet[0].checkinLatencyMs.p99' "$r") ms, $(jq -r '.serverCpuPerCheckinMicros' "$r") µs$dbcpu" \
    "$la0 → $(loadavg)" "$(jq -r '.checkinsPerSecond' "$r") check-ins/s"

  if command -v wrk >/dev/null; then
    api "$engine"
  else
    row "$engine: API throughput" "wrk is not installed (apt-get install wrk)" "" ""
  fi
  stop_server
}

# api ENGINE: wrk, alternating between the bare handler and patchd.
api() {
  local engine=$1 tok la0 bare=0 pd=0 b p
  tok=$(token)
  "$L" bare --addr "127.0.0.1:$((PORT + 1))" &
  bare_pid=$!
  sleep 0.5
  # A first short run of each, not counted: connections, caches, the
  # fleet's closed connections behind.
  wrk -t2 -c32 -d3s "http://127.0.0.1:$((PORT + 1))/api/v1/groups" >/dev/null
  wrk -t2 -c32 -d3s -H "Authorization: Bearer $tok" "http://127.0.0.1:$PORT/api/v1/groups" >"$OUT/$engine-wrk-0.txt"
  la0=$(loadavg)
  log "$engine: wrk, bare net/http and GET /api/v1/groups, $API_RUNS × 10 s each, alternating"
  for i in $(seq 1 "$API_RUNS"); do
    wrk -t2 -c32 -d10s "http://127.0.0.1:$((PORT + 1))/api/v1/groups" >"$OUT/$engine-wrk-bare-$i.txt"
    wrk -t2 -c32 -d10s -H "Authorization: Bearer $tok" "http://127.0.0.1:$PORT/api/v1/groups" >"$OUT/$engine-wrk-patchd-$i.txt"
    b=$(awk '/Requests\/sec/ {print $2}' "$OUT/$engine-wrk-bare-$i.txt")
    p=$(awk '/Requests\/sec/ {print $2}' "$OUT/$engine-wrk-patchd-$i.txt")
    if grep -q "Non-2xx" "$OUT/$engine-wrk-patchd-$i.txt"; then
      echo "perf-e2e: patchd answered errors to wrk (run $i):" >&2
      cat "$OUT/$engine-wrk-patchd-$i.txt" >&2
    fi
    echo "$engine run $i: bare $b req/s, patchd $p req/s ($(printf '%.2f' "$(echo "$p / $b" | bc -l)"))" >>"$OUT/$engine-api.txt"
    bare=$(echo "$bare + $b" | bc -l)
    pd=$(echo "$pd + $p" | bc -l)
  done
  kill "$bare_pid" 2>/dev/null || true
  wait "$bare_pid" 2>/dev/null || true
  bare_pid=""
  row "$engine: GET /api/v1/groups against bare net/http (wrk -t2 -c32)" \
    "$(printf '%.2f' "$(echo "$pd / $bare" | bc -l)") ($(printf '%.0f' "$(echo "$pd / $API_RUNS" | bc -l)") vs $(printf '%.0f' "$(echo "$bare / $API_RUNS" | bc -l)") req/s)" \
    "$la0 → $(loadavg)" "$(tr '\n' ';' <"$OUT/$engine-api.txt")"
}

for engine in $ENGINES; do
  case $engine in
    sqlite)
      fleet sqlite "sqlite:$work/data/sqlite/patchd.db" 0
      ;;
    postgres)
      pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
      log "PostgreSQL of the run on port $PGPORT ($work/pg)"
      mkdir -p "$work/pg"
      [ "$(id -u)" = 0 ] && chown postgres "$work/pg"
      pgrun "$pgbin/initdb" -D "$work/pg/data" -A trust -U postgres >/dev/null
      pgrun "$pgbin/pg_ctl" -D "$work/pg/data" -l "$work/pg/log" -w \
        -o "-p $PGPORT -k $work/pg -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=1GB" start >/dev/null
      pm=$(head -n1 "$work/pg/data/postmaster.pid")
      fleet postgres "postgres://postgres@127.0.0.1:$PGPORT/postgres?sslmode=disable" "$pm"
      pgrun "$pgbin/pg_ctl" -D "$work/pg/data" -m fast stop >/dev/null
      ;;
  esac
done

if [ "$SCALE" -gt 0 ]; then
  # One server, SQLite, memory bounded as docs/scale-out.md advises; the
  # agents check in every 60 s without long polls (a server holds at most
  # as many long polls as its open-files limit allows).
  GOMEMLIMIT=${GOMEMLIMIT:-1GiB} start_server scale "sqlite:$work/data/scale/patchd.db"
  la0=$(loadavg)
  log "scale: $SCALE endpoints on one SQLite server"
  load scale --endpoints "$SCALE" --clients 0 --wait 0 --checkin 60s --warmup 60s --duration "$STEADY" \
    --state-dir "$work/state/scale" --db "$work/data/scale/patchd.db"
  r="$OUT/scale.json"
  row "sqlite: $SCALE endpoints, check-in every 60 s: p50 / p99" \
    "$(jq -r '.fleet[0].checkinLatencyMs.p50' "$r") / $(jq -r '.fleet[0].checkinLatencyMs.p99' "$r") ms ($(jq -r '.checkinsPerSecond' "$r") check-ins/s, $(jq -r '.serverCpuPerCheckinMicros' "$r") µs CPU each; enrolled in $(jq -r '.enrollSeconds' "$r") s)" \
    "$la0 → $(loadavg)" "RSS $(jq -r '.processes[0].rssMiB' "$r") MiB, peak $(jq -r '.processes[0].peakRssMiB' "$r") MiB (GOMEMLIMIT ${GOMEMLIMIT:-1GiB})"
  stop_server
fi

echo
echo "patchd $(git rev-parse --short HEAD), $(nproc) cores, $(date -u +%Y-%m-%d); reports in $OUT"
echo
echo "| measurement | result | load average (start → end) | also |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
