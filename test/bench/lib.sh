# Shared helpers of the benchmark scripts (sourced). Everything runs on
# 127.0.0.1 with ports below the kernel's ephemeral range, and stops by
# itself; each script cleans up what it started.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LOADER="$ROOT/build/bin/shoal-loader"
BENCH_DIR=${BENCH_DIR:-$(mktemp -d /tmp/shoal-bench-XXXXXX)}
chmod 755 "$BENCH_DIR" # nginx workers run as nobody
BASE_PORT=${BENCH_PORT:-$((20000 + RANDOM % 8000))}
NGINX_PID=""
HAPROXY_PID=""

NETNS=""
bench_cleanup() {
  [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null || true
  [ -n "$HAPROXY_PID" ] && kill "$HAPROXY_PID" 2>/dev/null || true
  local pid
  pid=$(cat "$BENCH_DIR/nginx/nginx.pid" 2>/dev/null) && kill "$pid" 2>/dev/null || true
  if [ -n "$NETNS" ]; then
    ip link del "${NETNS}h" 2>/dev/null || true
    ip netns del "$NETNS" 2>/dev/null || true
  fi
  local d
  for d in "$BENCH_DIR"/cluster*; do # every cluster a script started
    [ -d "$d" ] && SHOAL_DATA="$d" "$ROOT/deploy/local/cluster.sh" stop >/dev/null 2>&1 || true
  done
  rm -rf "$BENCH_DIR"
}
trap bench_cleanup EXIT

# start_cluster TARGETS -> prints nothing; sets PROXY
start_cluster() {
  export SHOAL_DATA="$BENCH_DIR/cluster" SHOAL_PORT=$BASE_PORT SHOAL_TARGETS=${1:-1}
  export SHOAL_MOUNTPATHS=${SHOAL_MOUNTPATHS:-1}
  export SHOAL_EXTRA_ARGS="${SHOAL_EXTRA_ARGS:---log_level warn}"
  PROXY=$("$ROOT/deploy/local/cluster.sh" start)
}

# start_nginx ROOT PORT [extra http-block config] [listen address] [netns]
start_nginx() {
  local root=$1 port=$2 extra=${3:-} addr=${4:-127.0.0.1} ns=${5:-}
  mkdir -p "$BENCH_DIR/nginx"
  cat > "$BENCH_DIR/nginx/nginx.conf" <<CONF
worker_processes 2;
error_log $BENCH_DIR/nginx/error.log warn;
pid $BENCH_DIR/nginx/nginx.pid;
daemon off;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path $BENCH_DIR/nginx/body;
  proxy_temp_path $BENCH_DIR/nginx/proxy;
  fastcgi_temp_path $BENCH_DIR/nginx/fcgi;
  uwsgi_temp_path $BENCH_DIR/nginx/uwsgi;
  scgi_temp_path $BENCH_DIR/nginx/scgi;
  $extra
  server {
    listen $addr:$port;
    root $root;
    location / { }
  }
}
CONF
  if [ -n "$ns" ]; then
    ip netns exec "$ns" nginx -c "$BENCH_DIR/nginx/nginx.conf" -p "$BENCH_DIR/nginx" &
  else
    nginx -c "$BENCH_DIR/nginx/nginx.conf" -p "$BENCH_DIR/nginx" &
  fi
  NGINX_PID=$!
  wait_up "http://$addr:$port/" 50 || { cat "$BENCH_DIR/nginx/error.log" >&2; return 1; }
}

# wait_up URL [TRIES]: until URL answers at all (TRIES of 0.1 s, 100)
wait_up() {
  local url=$1
  for _ in $(seq "${2:-100}"); do
    curl -s -o /dev/null "$url" && return 0
    sleep 0.1
  done
  echo "$url did not start" >&2
  return 1
}

# start_haproxy PORT UPSTREAM_PORT: haproxy on 127.0.0.1:PORT in front of
# 127.0.0.1:UPSTREAM_PORT, as a user would set it up for speed: two
# threads for two cores, keep-alive both ways, idle server connections
# shared by every client (http-reuse always), no logging.
start_haproxy() {
  local port=$1 up=$2
  mkdir -p "$BENCH_DIR/haproxy"
  cat > "$BENCH_DIR/haproxy/haproxy.cfg" <<CONF
global
  nbthread 2
  maxconn 4000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option http-keep-alive
  http-reuse always
frontend front
  bind 127.0.0.1:$port
  default_backend up
backend up
  server nginx 127.0.0.1:$up maxconn 2000
CONF
  haproxy -f "$BENCH_DIR/haproxy/haproxy.cfg" -db &
  HAPROXY_PID=$!
  wait_up "http://127.0.0.1:$port/" 50
}

# loader_json ARGS... -> the loader's JSON summary on stdout
loader_json() {
  "$LOADER" --json --stats-interval 0 "$@"
}

# field JSON OP KEY -> a number from the summary (0 when absent)
field() {
  python3 -c 'import json,sys; j=json.loads(sys.argv[1]); o=j["ops"].get(sys.argv[2],{}); print(o.get(sys.argv[3],0) if sys.argv[3] in o else o.get("latency_us",{}).get(sys.argv[3],0))' "$1" "$2" "$3"
}

errors() {
  python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(sum(sum(o.get("errors",{}).values()) for o in j["ops"].values()))' "$1"
}

# verdict RATIO GOAL -> PASS or BELOW
verdict() {
  python3 -c 'import sys; print("PASS" if float(sys.argv[1]) >= float(sys.argv[2]) else "BELOW")' "$1" "$2"
}

ratio() {
  python3 -c 'import sys; b=float(sys.argv[2]); print("%.2f" % (float(sys.argv[1])/b if b else 0))' "$1" "$2"
}

# disk_write_mibs MB -> the disk's sequential write speed in MiB/s: dd of MB
# MiB in 16 MiB blocks into the bench directory, fdatasync at the end
disk_write_mibs() {
  dd if=/dev/zero of="$BENCH_DIR/dd.bin" bs=16M count=$(($1 / 16)) conv=fdatasync 2> "$BENCH_DIR/dd.log"
  rm -f "$BENCH_DIR/dd.bin"
  python3 - "$BENCH_DIR/dd.log" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", t)
print("%.1f" % (int(m.group(1)) / float(m.group(2)) / 1048576))
PY
}

# make_files DIR COUNT SIZE_BYTES PREFIX: files DIR/PREFIXnnnnnnnn of random bytes
make_files() {
  local dir=$1 count=$2 size=$3 prefix=$4
  mkdir -p "$dir/$(dirname "$prefix")"
  python3 - "$dir" "$count" "$size" "$prefix" <<'PY'
import os, sys
d, n, size, prefix = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
block = os.urandom(size)
for i in range(n):
    with open(os.path.join(d, "%s%08d" % (prefix, i)), "wb") as f:
        f.write(block[i % 251:] + block[:i % 251])
PY
}

# stop_nginx: stop the nginx started last
stop_nginx() {
  local pid
  pid=$(cat "$BENCH_DIR/nginx/nginx.pid" 2>/dev/null) && kill "$pid" 2>/dev/null || true
  [ -n "$NGINX_PID" ] && wait "$NGINX_PID" 2>/dev/null || true
  NGINX_PID=""
  rm -rf "$BENCH_DIR/nginx"
}

# make_far_host DELAY_MS RATE: a network namespace of our own, reached over
# a veth pair shaped like a remote cloud; sets FAR_ADDR.
make_far_host() {
  NETNS="shoalfar$$"
  local delay=$1 rate=$2
  ip netns add "$NETNS"
  ip link add "${NETNS}h" type veth peer name "${NETNS}n"
  ip link set "${NETNS}n" netns "$NETNS"
  ip addr add 10.203.0.1/30 dev "${NETNS}h"
  ip link set "${NETNS}h" up
  ip netns exec "$NETNS" ip addr add 10.203.0.2/30 dev "${NETNS}n"
  ip netns exec "$NETNS" ip link set "${NETNS}n" up
  ip netns exec "$NETNS" ip link set lo up
  # netem gives delay and rate; a kernel without it (sch_netem) still has
  # tbf, which shapes the rate only
  if tc qdisc add dev "${NETNS}h" root netem delay "${delay}ms" rate "$rate" 2>/dev/null; then
    ip netns exec "$NETNS" tc qdisc add dev "${NETNS}n" root netem delay "${delay}ms" rate "$rate"
    FAR_DESC="${delay}ms each way, $rate (netem)"
  else
    tc qdisc add dev "${NETNS}h" root tbf rate "$rate" burst 256kb latency 100ms
    ip netns exec "$NETNS" tc qdisc add dev "${NETNS}n" root tbf rate "$rate" burst 256kb latency 100ms
    FAR_DESC="$rate (tbf; no netem here: no added delay)"
  fi
  FAR_ADDR=10.203.0.2
}
