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
# again enroll during the faults).
#
# scripts/fault-test.sh failover sync|async [ENDPOINTS] (default 150) runs
# the fail-over scenario instead: a primary and a streaming standby made by
# the script (initdb, pg_basebackup -R; synchronous or asynchronous
# replication), three replicas with the multi-host --db
# (target_session_attrs=read-write) and the standby as --db-read, the
# simulated fleet, API writers and readers on every replica, one-off
# automations due around the fault, webhooks; the primary is stopped with
# pg_ctl stop -m immediate under load and the standby promoted 10 s later.
# It prints acknowledged against surviving writes (API and agent
# protocol), the time until every replica writes again, what clients were
# answered, scheduled runs duplicated or missed, webhooks duplicated or
# lost and false offline alerts.
#
# Needs PostgreSQL's
# server binaries (/usr/lib/postgresql/*/bin), python3 and openssl. Run as
# root, the cluster runs as the postgres user. Figures: docs/scale-out.md.
set -euo pipefail
cd "$(dirname "$0")/.."

SCENARIO=restarts
if [ "${1:-}" = failover ]; then
  SCENARIO=failover
  MODE=${2:-sync}
  case "$MODE" in sync | async) ;; *) echo "usage: $0 failover sync|async [ENDPOINTS]" >&2; exit 2 ;; esac
  shift $(($# < 2 ? $# : 2))
  ENDPOINTS=${1:-150}
else
  ENDPOINTS=${1:-600}
fi
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
  for d in data standby; do
    [ -f "$work/pg/$d/postmaster.pid" ] && pgrun "$PGBIN/pg_ctl" -D "$work/pg/$d" -m immediate stop >/dev/null 2>&1 || true
  done
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
PSQLDB=$DB
psqlq() { "$PGBIN/psql" -X -qAt "$PSQLDB" -c "$1"; }
DBREAD=()
if [ "$SCENARIO" = failover ]; then
  SBPORT=$((PGPORT + 1))
  log "streaming standby on port $SBPORT (pg_basebackup -R), $MODE replication"
  pgrun "$PGBIN/pg_basebackup" -h 127.0.0.1 -p "$PGPORT" -U postgres -D "$work/pg/standby" -R -X stream -c fast
  echo "primary_conninfo = 'host=127.0.0.1 port=$PGPORT user=postgres application_name=standby1'" | pgrun tee -a "$work/pg/standby/postgresql.auto.conf" >/dev/null
  pgrun "$PGBIN/pg_ctl" -D "$work/pg/standby" -l "$work/pg/standby.log" -w \
    -o "-p $SBPORT -k $work/pg -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
  if [ "$MODE" = sync ]; then
    psqlq "ALTER SYSTEM SET synchronous_standby_names = 'standby1'"
    psqlq "ALTER SYSTEM SET synchronous_commit = 'on'"
    psqlq "SELECT pg_reload_conf()" >/dev/null
  fi
  for _ in $(seq 1 50); do
    [ "$(psqlq "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" = 1 ] && break
    sleep 0.2
  done
  log "replication: $(psqlq "SELECT application_name || ' ' || state || ' ' || sync_state FROM pg_stat_replication")"
  DB="postgres://postgres@127.0.0.1:$PGPORT,127.0.0.1:$SBPORT/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=3"
  DBREAD=(--db-read "postgres://postgres@127.0.0.1:$SBPORT/postgres?sslmode=disable&connect_timeout=3")
fi

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
    --db "$DB" "${DBREAD[@]}" --data "$work/r$i" --secret-key-file "$work/secret.key" --checkin-interval 20s --allow-private-webhooks --no-agent-build --log-level warn \
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
# writer I: creates groups through replica I every 0.2 s until told to
# stop, one line per call: time, HTTP status, group name.
writer() {
  local i=$1 n=0 code
  while [ ! -f "$work/stop-clients" ]; do
    n=$((n + 1))
    code=$(curl -s -o /dev/null -w '%{http_code}' -m 30 -H "Authorization: Bearer $API_TOKEN" -H 'Content-Type: application/json' \
      -d "{\"name\":\"w$i-$n\"}" "http://127.0.0.1:$((PORT0 + i))/api/v1/groups" || true)
    echo "$(date +%s.%N) $code w$i-$n" >>"$work/writes$i"
    sleep 0.2
  done
}
# reader I: lists endpoints (a lag-tolerant read) through replica I.
reader() {
  local i=$1 code
  while [ ! -f "$work/stop-clients" ]; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 -H "Authorization: Bearer $API_TOKEN" \
      "http://127.0.0.1:$((PORT0 + i))/api/v1/endpoints?limit=5" || true)
    echo "$(date +%s.%N) $code" >>"$work/reads$i"
    sleep 0.5
  done
}

failover_scenario() {
  API_TOKEN=$(curl -fs -d grant_type=client_credentials -d client_id="$client_id" -d client_secret="$secret" \
    "http://127.0.0.1:$((PORT0 + 1))/api/oauth/token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
  log "$ENDPOINTS simulated agents ($PER per replica), check-in every 20 s"
  for i in 1 2 3; do sim "$i" "$i" $(((i - 1) * PER)) "$PER" 8; done
  sleep 30
  # One-off automations due every 10 s from 20 s before the primary stops
  # to 70 s after: each must run exactly once.
  local base k due
  base=$(($(date +%s) + 30))
  for k in $(seq 0 9); do
    due=$(date -u -d "@$((base + k * 10))" +%Y-%m-%dT%H:%M:%SZ)
    curl -fs -o /dev/null -H "Authorization: Bearer $API_TOKEN" -H 'Content-Type: application/json' \
      -d "{\"name\":\"once-$k\",\"actionType\":\"RUN_SCRIPT\",\"kind\":\"SCHEDULED\",\"payload\":{\"script\":\"echo $k\",\"language\":\"bash\"},\"targetMode\":\"all\",\"scheduleKind\":\"ONCE\",\"runAt\":\"$due\",\"enabled\":true}" \
      "http://127.0.0.1:$((PORT0 + 1))/api/v1/automations" || { echo "automation once-$k refused" >&2; exit 1; }
  done
  log "API writers and readers on every replica; $((PER / 2)) more agents enroll through replica 2 (two at a time)"
  rm -f "$work/stop-clients"
  for i in 1 2 3; do
    writer "$i" &
    pids+=($!)
    reader "$i" &
    pids+=($!)
  done
  sim 4 2 $((3 * PER)) $((PER / 2)) 2
  sleep 50
  log "primary stopped (pg_ctl stop -m immediate)"
  local t_kill t_promote
  t_kill=$(date +%s.%N)
  echo "$t_kill" >"$work/t_kill"
  pgrun "$PGBIN/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null
  sleep 10
  log "standby promoted (pg_ctl promote)"
  t_promote=$(date +%s.%N)
  echo "$t_promote" >"$work/t_promote"
  pgrun "$PGBIN/pg_ctl" -D "$work/pg/standby" -w promote >/dev/null
  PSQLDB="postgres://postgres@127.0.0.1:$SBPORT/postgres?sslmode=disable"
  sleep 60
  touch "$work/stop-clients"
  sleep 60
  log "stopping the simulators"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" || true; done
  pids=()
  log "waiting for the alert outbox to drain (at most 10 minutes)"
  for _ in $(seq 1 120); do
    [ "$(psqlq "SELECT count(*) FROM alert_outbox WHERE done_at IS NULL")" = 0 ] && break
    sleep 5
  done

  psqlq "SELECT name FROM endpoint_groups WHERE name LIKE 'w%'" | sort >"$work/groups-in-db"
  local api
  api=$(python3 - "$work" "$t_kill" "$t_promote" <<'PY'
import collections, sys
work, t_kill, t_promote = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
indb = set(open(work + "/groups-in-db").read().split())
acked = lost = 0
codes = collections.Counter()
back = []
for i in (1, 2, 3):
    # The replica writes again at the first answered write after the
    # first failure that followed the primary's stop (times are when the
    # answer came).
    first_ok, failed = None, False
    for line in open("%s/writes%d" % (work, i)):
        t, code, name = line.split()
        t = float(t)
        codes["write " + code] += 1
        if code in ("200", "201"):
            acked += 1
            lost += name not in indb
            if failed and first_ok is None:
                first_ok = t
        elif t > t_kill:
            failed = True
    back.append(first_ok)
    for line in open("%s/reads%d" % (work, i)):
        t, code = line.split()
        t = float(t)
        if t_kill < t < t_promote + 2:
            codes["read during outage " + code] += 1
        else:
            codes["read " + code] += 1
surv = len(indb)
print("acked=%d surviving_acked=%d lost=%d in_db=%d" % (acked, acked - lost, lost, surv))
print("back=" + " ".join("%.1f" % (b - t_promote) if b else "never" for b in back))
print("codes=" + ", ".join("%s: %d" % kv for kv in sorted(codes.items())))
PY
)
  local acked_api lost_api in_db back codes
  acked_api=$(echo "$api" | sed -n 's/^acked=\([0-9]*\).*/\1/p')
  lost_api=$(echo "$api" | sed -n 's/.* lost=\([0-9]*\).*/\1/p')
  in_db=$(echo "$api" | sed -n 's/.* in_db=\([0-9]*\).*/\1/p')
  back=$(echo "$api" | sed -n 's/^back=//p')
  codes=$(echo "$api" | sed -n 's/^codes=//p')
  sum() { python3 -c 'import json,sys; print(sum(json.load(open(f))[sys.argv[1]] for f in sys.argv[2:]))' "$@"; }
  local acked_enroll acked_inv checkins sim_errors endpoints with_inv events offline undelivered received distinct expected lost runs_missed runs_dup
  acked_enroll=$(sum enrolled "$work"/sim[1-4].json)
  acked_inv=$(sum inventoriesSent "$work"/sim[1-4].json)
  checkins=$(sum checkins "$work"/sim[1-4].json)
  sim_errors=$(python3 -c 'import json,sys,collections
c=collections.Counter()
for f in sys.argv[1:]: c.update(json.load(open(f))["errors"])
print(", ".join("%s %d" % kv for kv in sorted(c.items())) or "none")' "$work"/sim[1-4].json)
  endpoints=$(psqlq "SELECT count(*) FROM endpoints")
  with_inv=$(psqlq "SELECT count(*) FROM endpoints WHERE inventory_hash IS NOT NULL")
  events=$(psqlq "SELECT count(*) FROM alert_events ev JOIN alert_rules r ON r.id = ev.rule_id WHERE r.trigger_kind = 'NEW_ENDPOINT'")
  offline=$(psqlq "SELECT count(*) FROM alert_events ev JOIN alert_rules r ON r.id = ev.rule_id WHERE r.trigger_kind = 'ENDPOINT_OFFLINE'")
  undelivered=$(psqlq "SELECT count(*) FROM alert_outbox WHERE done_at IS NULL")
  received=$(grep -c NEW_ENDPOINT "$work/received" || true)
  distinct=$(grep NEW_ENDPOINT "$work/received" | sort -u | wc -l)
  expected=$(psqlq "SELECT string_agg(ev.id, ' ') FROM alert_events ev JOIN alert_rules r ON r.id = ev.rule_id WHERE r.trigger_kind = 'NEW_ENDPOINT'")
  lost=0
  for id in $expected; do grep -q "^$id " "$work/received" || lost=$((lost + 1)); done
  runs_missed=$(psqlq "SELECT count(*) FROM automations a WHERE a.name LIKE 'once-%' AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.automation_id = a.id)")
  runs_dup=$(psqlq "SELECT count(*) FROM automations a WHERE a.name LIKE 'once-%' AND (SELECT count(*) FROM runs r WHERE r.automation_id = a.id) > 1")

  cat <<REPORT

== patchd fail-over test ($MODE replication): $((ENDPOINTS + PER / 2)) agents, 3 replicas, primary stopped (immediate) under load, standby promoted 10 s later
API writes  groups created and acknowledged (200) $acked_api, of them in the database after the fail-over $((acked_api - lost_api)), lost $lost_api (groups in the database: $in_db)
            each replica writes again, seconds after pg_ctl promote was called: $back
            answers: $codes
agent       enrollments acknowledged $acked_enroll, endpoints in the database $endpoints
            inventories acknowledged $acked_inv (endpoints with one: $with_inv)
            check-ins answered $checkins; agents' failed calls (retried): $sim_errors
schedule    one-off automations due around the fault: 10; missed $runs_missed, run more than once $runs_dup
webhooks    NEW_ENDPOINT events $events, received $received, distinct $distinct, duplicates $((received - distinct)), lost $lost, still queued $undelivered
alerts      ENDPOINT_OFFLINE events $offline (every agent kept checking in: each is a false alert)
REPORT
  if [ "$acked_enroll" -gt "$endpoints" ] || [ "$lost_api" -gt 0 ] || [ "$lost" -gt 0 ] || [ "$offline" -gt 0 ] ||
    [ "$runs_missed" -gt 0 ] || [ "$runs_dup" -gt 0 ]; then
    echo "FAULTS FOUND (files kept in $work)"
    KEEP=1
    return 1
  fi
}

if [ "$SCENARIO" = failover ]; then
  failover_scenario
  exit $?
fi
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
