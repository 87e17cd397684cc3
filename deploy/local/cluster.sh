#!/usr/bin/env bash
# Start, stop or inspect a local Shoal cluster on 127.0.0.1.
#
#   cluster.sh start|stop|status|restart-node NAME|kill-node NAME
#
# Environment:
#   SHOAL_PROXIES     proxies (default 1; the first is primary)
#   SHOAL_TARGETS     targets (default 3)
#   SHOAL_MOUNTPATHS  mountpaths per target (default 2)
#   SHOAL_PORT        first proxy's port (default 8080); the other nodes
#                     take the ports after it
#   SHOAL_RAFT_PORT   first proxy's consensus port (default SHOAL_PORT +
#                     1000); the other proxies take the ports after it
#   SHOAL_HOST        the address every node listens on (default 127.0.0.1)
#   SHOAL_DATA        mountpaths, logs and state (default /tmp/shoal)
#   SHOAL_BUILD       build directory holding bin/ (default build)
#   SHOAL_AUTH_KEYS   client credentials, ACCESS:SECRET[,...] (default none:
#                     anonymous access, loopback only); written one a line
#                     to $SHOAL_DATA/auth_keys (mode 0600), which the
#                     daemons are given as auth_keys_file
#   SHOAL_EXTRA_ARGS  extra daemon options, e.g. "--log_level debug"
#   SHOAL_TLS         1: every node serves HTTPS, with a CA and a certificate
#                     for SHOAL_HOST made once in $SHOAL_DATA/tls (clients
#                     verify with $SHOAL_DATA/tls/ca.pem)
# Node NAMEs are p0.. for proxies and t0.. for targets.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
P=${SHOAL_PROXIES:-1}
T=${SHOAL_TARGETS:-3}
M=${SHOAL_MOUNTPATHS:-2}
PORT=${SHOAL_PORT:-8080}
RAFT_PORT=${SHOAL_RAFT_PORT:-$((PORT + 1000))}
DATA=${SHOAL_DATA:-/tmp/shoal}
BUILD=${SHOAL_BUILD:-build}
BIN="$here/$BUILD/bin"
EXTRA=${SHOAL_EXTRA_ARGS:-}
AUTH_KEYS=${SHOAL_AUTH_KEYS:-}
unset SHOAL_AUTH_KEYS     # not in the daemons' environment either: they read keys_file
HOST=${SHOAL_HOST:-127.0.0.1}
TLS=${SHOAL_TLS:-0}
SCHEME=http
[ "$TLS" = 1 ] && SCHEME=https
PRIMARY="$SCHEME://$HOST:$PORT"

die() { echo "cluster.sh: $*" >&2; exit 1; }

for v in "$P" "$T" "$M" "$PORT" "$RAFT_PORT"; do
  [[ "$v" =~ ^[0-9]+$ ]] || die "SHOAL_PROXIES, SHOAL_TARGETS, SHOAL_MOUNTPATHS and SHOAL_PORT must be numbers"
done
[ "$P" -ge 1 ] || die "SHOAL_PROXIES must be at least 1"
[ "$M" -ge 1 ] || die "SHOAL_MOUNTPATHS must be at least 1"

# A killed daemon can linger as a zombie when nothing reaps it; kill -0
# would still call it alive.
alive() { # pid
  [ -r "/proc/$1/stat" ] && ! sed -E 's/^[0-9]+ \(.*\) //' "/proc/$1/stat" | grep -q '^Z'
}

node_port() { # name -> port
  local kind=${1:0:1} i=${1:1}
  if [ "$kind" = p ]; then echo $((PORT + i)); else echo $((PORT + P + i)); fi
}

# The cluster secret lives in a file only its owner reads; the daemons
# are given its path, never the value.
secret_file() {
  mkdir -p "$DATA"
  if [ ! -s "$DATA/cluster.secret" ]; then
    (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DATA/cluster.secret")
  fi
  echo "$DATA/cluster.secret"
}

# The client keys too: a command line is every user's to read (ps), so
# SHOAL_AUTH_KEYS goes one key a line into a file of mode 0600, replaced
# whole (a node starting meanwhile reads the old file or the new one).
keys_file() {
  local f="$DATA/auth_keys"
  mkdir -p "$DATA"
  (umask 077; tr ',' '\n' <<<"$AUTH_KEYS" > "$f.new" && mv -f "$f.new" "$f")
  echo "$f"
}

# SHOAL_TLS=1: a CA and one certificate every node serves (for SHOAL_HOST,
# localhost and 127.0.0.1), made once.
tls_files() {
  local d="$DATA/tls"
  if [ ! -s "$d/cert.pem" ]; then
    mkdir -p "$d"
    (umask 077
     openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=Shoal local CA" \
       -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
     openssl req -newkey rsa:2048 -nodes -subj "/CN=$HOST" -keyout "$d/key.pem" \
       -out "$d/node.csr" 2>/dev/null
     local san="subjectAltName=DNS:localhost,IP:127.0.0.1"
     [[ "$HOST" =~ ^[0-9.]+$ ]] && san+=",IP:$HOST" || san+=",DNS:$HOST"
     openssl x509 -req -in "$d/node.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
       -days 3650 -extfile <(echo "$san") -out "$d/cert.pem" 2>/dev/null) ||
      die "cannot make the TLS certificates in $d"
    chmod 644 "$d/ca.pem" "$d/cert.pem"
  fi
  echo "--tls_cert_file $d/cert.pem --tls_key_file $d/key.pem --tls_ca_file $d/ca.pem"
}

curl_tls() {
  [ "$TLS" = 1 ] && echo "--cacert $DATA/tls/ca.pem"
  return 0
}

# Every proxy's URL: a node joins through whichever answers.
seeds() {
  local i out=$PRIMARY
  for ((i = 1; i < P; i++)); do out+=",$SCHEME://$HOST:$((PORT + i))"; done
  echo "$out"
}

start_node() { # name
  local name=$1 port kind dir
  port=$(node_port "$name")
  kind=${name:0:1}
  dir="$DATA/$name"
  mkdir -p "$dir/state" "$DATA/logs"
  if [ -f "$dir/pid" ] && alive "$(cat "$dir/pid")"; then
    return 0
  fi
  local args=(--host "$HOST" --port "$port" --state_dir "$dir/state" --cluster_secret_file "$(secret_file)")
  [ -z "$AUTH_KEYS" ] || args+=(--auth_keys_file "$(keys_file)")
  # shellcheck disable=SC2207
  [ "$TLS" = 1 ] && args+=($(tls_files))
  if [ "$kind" = p ]; then
    args+=(--raft_port $((RAFT_PORT + ${name:1})))
    [ "$name" = p0 ] || args+=(--primary_url "$(seeds)")
    # shellcheck disable=SC2086
    nohup "$BIN/shoal-proxy" "${args[@]}" $EXTRA >>"$DATA/logs/$name.log" 2>&1 &
  else
    local mps=() j
    for ((j = 0; j < M; j++)); do mps+=("$dir/mp$j"); done
    args+=(--primary_url "$(seeds)" --mountpaths "$(IFS=,; echo "${mps[*]}")")
    # shellcheck disable=SC2086
    nohup "$BIN/shoal-target" "${args[@]}" $EXTRA >>"$DATA/logs/$name.log" 2>&1 &
  fi
  echo $! > "$dir/pid"
}

all_nodes() {
  local i
  for ((i = 0; i < P; i++)); do echo "p$i"; done
  for ((i = 0; i < T; i++)); do echo "t$i"; done
}

# The map a node holds, as "<version> <nodes> <nodes down>" ("" when it
# answers none).
map_of() { # url
  local m
  # shellcheck disable=SC2046
  m=$(curl -sf $(curl_tls) --max-time 2 "$1/v1/cluster" 2>/dev/null) || return 0
  echo "$(grep -o '"version":[0-9]*' <<<"$m" | head -1 | cut -d: -f2)" \
       "$(grep -o '"role"' <<<"$m" | wc -l)" "$(grep -o '"state":"down"' <<<"$m" | wc -l)"
}

# Until the cluster has settled: every node in the primary's map and none
# down there (a node in maintenance from before a restart stays so), and
# every node healthy and holding that same map (a request made while a
# target still joins, or while a node's map lags, would place names that
# then move).
wait_ready() {
  local want=$((P + T)) i
  for ((i = 0; i < 300; i++)); do
    local pm
    pm=$(map_of "$PRIMARY")
    if [ -n "$pm" ] && [ "$(cut -d' ' -f2 <<<"$pm")" -ge "$want" ] &&
       [ "$(cut -d' ' -f3 <<<"$pm")" = 0 ]; then
      local ok=1 n url
      for n in $(all_nodes); do
        url="$SCHEME://$HOST:$(node_port "$n")"
        # shellcheck disable=SC2046
        curl -sf $(curl_tls) --max-time 2 "$url/v1/health" >/dev/null || ok=0
        [ "$(map_of "$url" | cut -d' ' -f1)" = "$(cut -d' ' -f1 <<<"$pm")" ] || ok=0
      done
      [ $ok = 1 ] && return 0
    fi
    for n in $(all_nodes); do
      local pf="$DATA/$n/pid"
      if [ -f "$pf" ] && ! alive "$(cat "$pf")"; then
        tail -5 "$DATA/logs/$n.log" >&2 || true
        die "node $n exited during start-up (log: $DATA/logs/$n.log)"
      fi
    done
    sleep 0.1
  done
  die "cluster did not come up (logs in $DATA/logs)"
}

stop_node() { # name [signal]
  local pf="$DATA/$1/pid" sig=${2:-TERM} i
  [ -f "$pf" ] || return 0
  local pid
  pid=$(cat "$pf")
  # a pid file left by a node that crashed long ago may name another process now
  if alive "$pid" && grep -qa 'shoal-' "/proc/$pid/cmdline" 2>/dev/null; then
    kill "-$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      alive "$pid" || break
      sleep 0.1
    done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pf"
}

# Sourced (deploy/netns/cluster.sh): the functions only.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

case "${1:-}" in
start)
  [ -x "$BIN/shoal-proxy" ] && [ -x "$BIN/shoal-target" ] || die "no daemons in $BIN: run make first"
  start_node p0
  for n in $(all_nodes); do start_node "$n"; done
  wait_ready
  echo "$PRIMARY"
  ;;
stop)
  # every node started here, those added with start-node beyond the counts too
  for n in $( (all_nodes; for f in "$DATA"/[pt][0-9]*/pid; do
                 [ -f "$f" ] && basename "$(dirname "$f")"; done) | sort -u | sort -r); do
    stop_node "$n"
  done
  ;;
status)
  for n in $(all_nodes); do
    pf="$DATA/$n/pid"
    if [ -f "$pf" ] && alive "$(cat "$pf")"; then
      echo "$n up   pid $(cat "$pf") port $(node_port "$n")"
    else
      echo "$n down port $(node_port "$n")"
    fi
  done
  # shellcheck disable=SC2046
  curl -s $(curl_tls) --max-time 2 "$PRIMARY/v1/cluster" || echo "(primary unreachable)"
  ;;
kill-node)
  stop_node "${2:?node name}" KILL
  ;;
stop-node)
  stop_node "${2:?node name}"
  ;;
start-node)
  start_node "${2:?node name}"
  ;;
*)
  echo "usage: $0 start|stop|status|stop-node NAME|kill-node NAME|start-node NAME" >&2
  exit 2
  ;;
esac
