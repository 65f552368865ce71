#!/usr/bin/env bash
# Fault test of a patchd cluster: three replicas on a PostgreSQL
# cluster of the test's own (initdb in a temporary folder, on its own port:
# nothing of the machine's PostgreSQL is touched), simulated agents
# (patchd-sim, one simulator per replica) and an HTTPS webhook receiver.
# Under load it kills a replica with SIGKILL and starts it again, takes the
# receiver down for a while, and restarts PostgreSQL; then it prints
#
#   - acknowledged vs survived writes: enrollments and inventories the
#     simulators were answered 200 for, against the rows in the database;
#   - webhook deliveries: events raised, received once, received more than
#     once (duplicates), never received (lost);
#   - false alerts: ENDPOINT_OFFLINE events, although every agent kept
#     checking in (its replica was back within seconds).
#
# Usage: scripts/fault-test.sh [ENDPOINTS] (default 600; half as many
# again enroll during the faults). Needs PostgreSQL's
# server binaries (/usr/lib/postgresql/*/bin), python3 and openssl. Run as
# root, the cluster runs as the postgres user. Figures: docs/scale-out.md.
set -euo pipefail
cd "$(dirname "$0")/.."

ENDPOINTS=${1:-600}
PER=$((ENDPOINTS / 3))
PGPORT=${PGPORT:-55432}
PORT0=${PORT0:-18080}
HOOKPORT=${HOOKPORT:-18443}

work=$(mktemp -d /tmp/patchd-fault.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for i in 1 2 3; do [ -f "$work/r$i.pid" ] && kill "$(cat "$work/r$i.pid")" 2>/dev/null || true; done
  [ -f "$work/hook.pid" ] && kill "$(cat "$work/hook.pid")" 2>/dev/null || true
  [ -d "$work/pg/data" ] && pgrun "$PGBIN/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true
  wait 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*"; }

PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
pgrun() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

log "building patchd, patchd-sim, patchctl"
go build -o "$work/patchd" ./cmd/patchd
go build -o "$work/patchd-sim" ./cmd/patchd-sim
go build -o "$work/patchctl" ./cmd/patchctl

log "PostgreSQL of the test on port $PGPORT ($work/pg)"
mkdir -p "$work/pg"
[ "$(id -u)" = 0 ] && chown postgres "$work/pg"
pgrun "$PGBIN/initdb" -D "$work/pg/data" -A trust -U postgres >/dev/null
pgstart() {
  pgrun "$PGBIN/pg_ctl" -D "$work/pg/data" -l "$work/pg/log" -w \
    -o "-p $PGPORT -k $work/pg -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
}
pgstart
DB="postgres://postgres@127.0.0.1:$PGPORT/postgres?sslmode=disable"
psqlq() { "$PGBIN/psql" -X -qAt "$DB" -c "$1"; }

log "webhook receiver on https://127.0.0.1:$HOOKPORT"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/hook.key" -out "$work/hook.pem" 2>/dev/null
cat >"$work/hook.py" <<'PY'
import http.server, json, ssl, sys
port, cert, key, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            m = json.loads(body)
            with open(out, "a") as f:
                f.write("%s %s\n" % (m.get("id"), m.get("event")))
        except Exception:
            pass
        self.send_response(204)
        self.end_headers()
    def log_message(self, *a):
        pass
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
s = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
s.serve_forever()
PY
: >"$work/received"
hook_up() {
  python3 "$work/hook.py" "$HOOKPORT" "$work/hook.pem" "$work/hook.key" "$work/received" &
  echo $! >"$work/hook.pid"
}
hook_down() { kill "$(cat "$work/hook.pid")"; wait "$(cat "$work/hook.pid")" 2>/dev/null || true; rm -f "$work/hook.pid"; }
hook_up

replica() {
  local i=$1
  SSL_CERT_FILE="$work/hook.pem" "$work/patchd" serve --addr "127.0.0.1:$((PORT0 + i))" --base-url "http://127.0.0.1:$((PORT0 + i))" \
    --db "$DB" --data "$work/r$i" --secret-key-file "$work/secret.key" --checkin-interval 20s --allow-private-webhooks --no-agent-build --log-level warn \
    >>"$work/r$i.out" 2>>"$work/r$i.log" &
  echo $! >"$work/r$i.pid"
  disown
  for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$((PORT0 + i))/readyz" >/dev/null && return 0
    sleep 0.2
  done
  echo "replica $i did not become ready; $work/r$i.log:" >&2; tail "$work/r$i.log" >&2; exit 1
}
log "three replicas on ports $((PORT0 + 1))-$((PORT0 + 3))"
replica 1
replica 2
replica 3
client_id=$(sed -n 's/^ *API client_id: *//p' "$work/r1.out")
secret=$(sed -n 's/^ *API client_secret: *\([^ ]*\).*/\1/p' "$work/r1.out")
token=$(sed -n 's/^ *Enrollment token: *\([^ ]*\).*/\1/p' "$work/r1.out")
export PATCHCTL_SERVER="http://127.0.0.1:$((PORT0 + 1))" PATCHCTL_CLIENT_ID="$client_id" PATCHCTL_CLIENT_SECRET="$secret"
echo "hook-secret-0123456789" | "$work/patchctl" alerts create --name "new endpoints" --trigger NEW_ENDPOINT \
  --webhook-url "https://127.0.0.1:$HOOKPORT/hook" --webhook-secret-stdin --retry-minutes 30 >/dev/null
echo "hook-secret-0123456789" | "$work/patchctl" alerts create --name "offline" --trigger ENDPOINT_OFFLINE --threshold 1 \
  --webhook-url "https://127.0.0.1:$HOOKPORT/hook" --webhook-secret-stdin --retry-minutes 30 >/dev/null

# sim N REPLICA FIRST COUNT CONCURRENCY: a simulator of COUNT agents from
# index FIRST against a replica.
sim() {
  "$work/patchd-sim" --server "http://127.0.0.1:$((PORT0 + $2))" --enroll-token "$token" --endpoints "$4" \
    --first-index "$3" --seed 21 --checkin 20s --concurrency "$5" --progress 30s \
    --state "$work/sim$1.state" >"$work/sim$1.json" 2>>"$work/sim$1.log" &
  pids+=($!)
}
log "$ENDPOINTS simulated agents ($PER per replica), check-in every 20 s"
for i in 1 2 3; do sim "$i" "$i" $(((i - 1) * PER)) "$PER" 8; done

sleep 40
log "kill -9 of replica 2 under check-in load, started again 5 s later"
kill -9 "$(cat "$work/r2.pid")"
sleep 5
replica 2
sleep 30
log "webhook receiver down for 60 s; $((PER / 2)) more agents enroll through replica 2 meanwhile (NEW_ENDPOINT events to retry)"
hook_down
sim 4 2 $((3 * PER)) $((PER / 2)) 2
sleep 60
hook_up
log "webhook receiver up"
sleep 20
log "PostgreSQL restarted (fast shutdown, 3 s down)"
pgrun "$PGBIN/pg_ctl" -D "$work/pg/data" -m fast stop >/dev/null
sleep 3
pgstart
sleep 40
log "kill -9 of replica 3 while $((PER / 2)) more agents enroll through it (one at a time), started again 5 s later"
sim 5 3 $((3 * PER + PER / 2)) $((PER / 2)) 1
sleep 2
kill -9 "$(cat "$work/r3.pid")"
sleep 5
replica 3
sleep 60

log "stopping the simulators"
for p in "${pids[@]}"; do kill -TERM "$p"; done
for p in "${pids[@]}"; do wait "$p" || true; done
pids=()
log "waiting for the alert outbox to drain (retries back off; at most 10 minutes)"
for _ in $(seq 1 120); do
  [ "$(psqlq "SELECT count(*) FROM alert_outbox WHERE done_at IS NULL")" = 0 ] && break
  sleep 5
done

sum() { python3 -c 'import json,sys; print(sum(json.load(open(f))[sys.argv[1]] for f in sys.argv[2:]))' "$@"; }
acked_enroll=$(sum enrolled "$work"/sim[1-5].json)
acked_inv=$(sum inventoriesSent "$work"/sim[1-5].json)
checkins=$(sum checkins "$work"/sim[1-5].json)
sim_errors=$(python3 -c 'import json,sys; print(sum(sum(json.load(open(f))["errors"].values()) for f in sys.argv[1:]))' "$work"/sim[1-5].json)
endpoints=$(psqlq "SELECT count(*) FROM endpoints")
with_inv=$(psqlq "SELECT count(*) FROM endpoints WHERE inventory_hash IS NOT NULL")
events=$(psqlq "SELECT count(*) FROM alert_events ev JOIN alert_rules r ON r.id = ev.rule_id WHERE r.trigger_kind = 'NEW_ENDPOINT'")
offline=$(psqlq "SELECT count(*) FROM alert_events ev JOIN alert_rules r ON r.id = ev.rule_id WHERE r.trigger_kind = 'ENDPOINT_OFFLINE'")
undelivered=$(psqlq "SELECT count(*) FROM alert_outbox WHERE done_at IS NULL")
retried=$(psqlq "SELECT count(*) FROM alert_outbox WHERE attempts > 1")
received=$(grep -c NEW_ENDPOINT "$work/received" || true)
distinct=$(grep NEW_ENDPOINT "$work/received" | sort -u | wc -l)
expected=$(psqlq "SELECT string_agg(ev.id, ' ') FROM alert_events ev JOIN alert_rules r ON r.id = ev.rule_id WHERE r.trigger_kind = 'NEW_ENDPOINT'")
lost=0
for id in $expected; do grep -q "^$id " "$work/received" || lost=$((lost + 1)); done

cat <<REPORT

== patchd fault test: $((ENDPOINTS + PER)) agents, 3 replicas, 2 replica kills, receiver down 60 s, PostgreSQL restart
writes      enrollments acknowledged $acked_enroll, endpoints in the database $endpoints
            inventories acknowledged $acked_inv (endpoints with one: $with_inv; several of one endpoint keep the last)
            check-ins answered $checkins; agents' failed calls (refused, cut off, 5xx; retried) $sim_errors
webhooks    NEW_ENDPOINT events $events, received $received, distinct $distinct, duplicates $((received - distinct)), lost $lost, still queued $undelivered
            deliveries that needed retries (receiver down): $retried
alerts      ENDPOINT_OFFLINE events $offline (every agent kept checking in: each is a false alert)
REPORT
if [ "$acked_enroll" -gt "$endpoints" ] || [ "$lost" -gt 0 ] || [ "$offline" -gt 0 ]; then
  echo "FAULTS FOUND (files kept in $work)"; KEEP=1; exit 1
fi
