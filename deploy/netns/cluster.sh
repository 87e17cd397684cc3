#!/usr/bin/env bash
# A Shoal cluster across "hosts" on one machine: every node in a network
# namespace of its own, with its own address on a bridge this script
# makes, its link shaped (netem delay and rate where the kernel has netem,
# a tbf rate limit otherwise), so that nodes talk over a network and not
# over 127.0.0.1. Needs root.
#
#   cluster.sh start|stop|status|kill-host NAME|start-host NAME|addr NAME
#
# Environment (besides deploy/local/cluster.sh's SHOAL_PROXIES, default 1,
# SHOAL_TARGETS, default 4, SHOAL_MOUNTPATHS, SHOAL_DATA, SHOAL_BUILD,
# SHOAL_AUTH_KEYS, SHOAL_EXTRA_ARGS):
#   SHOAL_NETNS_ID        0..250: the network 10.78.ID.0/24 and the names'
#                         suffix, so that several clusters can coexist
#   SHOAL_NETNS_RATE      each host's link rate (default 2gbit)
#   SHOAL_NETNS_PROXY_RATE  a proxy's link rate (default SHOAL_NETNS_RATE:
#                         gateways often have the fatter links)
#   SHOAL_NETNS_DELAY_MS  added one-way delay where netem exists (default 1)
#   SHOAL_NETNS_MTU       the links' MTU (default 1500; 9000 for jumbo frames)
# Proxies are 10.78.ID.10+i:8080, targets 10.78.ID.50+i:8081; this host is
# 10.78.ID.1. Without SHOAL_AUTH_KEYS the nodes serve anonymously
# (allow_anonymous), on the namespaces' addresses only. kill-host kills a
# node with SIGKILL and takes its link down; start-host brings both back.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
export SHOAL_TARGETS=${SHOAL_TARGETS:-4} SHOAL_DATA=${SHOAL_DATA:-/tmp/shoal-netns}
# shellcheck source=../local/cluster.sh
source "$here/deploy/local/cluster.sh"
ID=${SHOAL_NETNS_ID:-0}
RATE=${SHOAL_NETNS_RATE:-2gbit}
PROXY_RATE=${SHOAL_NETNS_PROXY_RATE:-$RATE}
MTU=${SHOAL_NETNS_MTU:-1500}
DELAY=${SHOAL_NETNS_DELAY_MS:-1}
NET="10.78.$ID"
BR="shbr$ID"
[[ "$ID" =~ ^[0-9]+$ ]] && [ "$ID" -le 250 ] || die "SHOAL_NETNS_ID must be 0..250"

addr() { # name -> address
  local i=${1:1}
  if [ "${1:0:1}" = p ]; then echo "$NET.$((10 + i))"; else echo "$NET.$((50 + i))"; fi
}
ns() { echo "sh$ID$1"; }          # name -> namespace
veth() { echo "sh$ID$1"; }        # name -> the host side of its link
nport() { [ "${1:0:1}" = p ] && echo 8080 || echo 8081; }
url() { echo "http://$(addr "$1"):$(nport "$1")"; }

net_up() {
  [ "$(id -u)" = 0 ] || die "network namespaces need root"
  ip link show "$BR" >/dev/null 2>&1 && return 0
  ip link add "$BR" type bridge
  ip addr add "$NET.1/24" dev "$BR"
  ip link set "$BR" mtu "$MTU" up
}

# shape DEV RATE [netns]: delay and rate on DEV's egress
shape() {
  local x=()
  [ -n "${3:-}" ] && x=(ip netns exec "$3")
  "${x[@]}" tc qdisc add dev "$1" root netem delay "${DELAY}ms" rate "$2" 2>/dev/null ||
    "${x[@]}" tc qdisc add dev "$1" root tbf rate "$2" burst 1mb latency 50ms
}

host_up() { # name
  local n=$1 s v
  s=$(ns "$n") v=$(veth "$n")
  ip netns list | grep -qw "$s" && return 0
  ip netns add "$s"
  ip link add "$v" mtu "$MTU" type veth peer name "${v}n" mtu "$MTU"
  ip link set "${v}n" netns "$s"
  ip netns exec "$s" ip addr add "$(addr "$n")/24" dev "${v}n"
  ip netns exec "$s" ip link set "${v}n" up
  ip netns exec "$s" ip link set lo up
  ip link set "$v" master "$BR" up
  local rate=$RATE
  [ "${n:0:1}" = p ] && rate=$PROXY_RATE
  shape "$v" "$rate"
  shape "${v}n" "$rate" "$s"
}

seeds_ns() {
  local i out
  out=$(url p0)
  for ((i = 1; i < P; i++)); do out+=",$(url "p$i")"; done
  echo "$out"
}

start_host_node() { # name
  local n=$1 dir="$DATA/$1" args
  mkdir -p "$dir/state" "$DATA/logs"
  if [ -f "$dir/pid" ] && alive "$(cat "$dir/pid")"; then return 0; fi
  host_up "$n"
  ip link set "$(veth "$n")" up
  args=(--host "$(addr "$n")" --port "$(nport "$n")" --state_dir "$dir/state"
        --cluster_secret_file "$(secret_file)")
  if [ -n "$AUTH_KEYS" ]; then args+=(--auth_keys_file "$(keys_file)"); else args+=(--allow_anonymous true); fi
  if [ "${n:0:1}" = p ]; then
    [ "$n" = p0 ] || args+=(--primary_url "$(seeds_ns)")
    # shellcheck disable=SC2086
    ip netns exec "$(ns "$n")" nohup "$BIN/shoal-proxy" "${args[@]}" $EXTRA \
      >>"$DATA/logs/$n.log" 2>&1 &
  else
    local mps=() j
    for ((j = 0; j < M; j++)); do mps+=("$dir/mp$j"); done
    args+=(--primary_url "$(seeds_ns)" --mountpaths "$(IFS=,; echo "${mps[*]}")")
    # shellcheck disable=SC2086
    ip netns exec "$(ns "$n")" nohup "$BIN/shoal-target" "${args[@]}" $EXTRA \
      >>"$DATA/logs/$n.log" 2>&1 &
  fi
  echo $! > "$dir/pid"
}

wait_ready_ns() {
  local i n ok
  for ((i = 0; i < 300; i++)); do
    ok=1
    [ "$(curl -s --max-time 2 "$(url p0)/v1/cluster" | grep -o '"role"' | wc -l)" -ge $((P + T)) ] || ok=0
    for n in $(all_nodes); do
      [ $ok = 1 ] && { curl -sf --max-time 2 "$(url "$n")/v1/health" >/dev/null || ok=0; }
      if [ -f "$DATA/$n/pid" ] && ! alive "$(cat "$DATA/$n/pid")"; then
        tail -5 "$DATA/logs/$n.log" >&2 || true
        die "node $n exited during start-up (log: $DATA/logs/$n.log)"
      fi
    done
    [ $ok = 1 ] && return 0
    sleep 0.1
  done
  die "cluster did not come up within 30 s (logs in $DATA/logs)"
}

case "${1:-}" in
start)
  [ -x "$BIN/shoal-proxy" ] && [ -x "$BIN/shoal-target" ] || die "no daemons in $BIN: run make first"
  net_up
  for n in $(all_nodes); do start_host_node "$n"; done
  wait_ready_ns
  url p0
  ;;
stop)
  for n in $(all_nodes | sort -r); do
    stop_node "$n"
    ip netns del "$(ns "$n")" 2>/dev/null || true
    ip link del "$(veth "$n")" 2>/dev/null || true
  done
  ip link del "$BR" 2>/dev/null || true
  ;;
status)
  for n in $(all_nodes); do
    if [ -f "$DATA/$n/pid" ] && alive "$(cat "$DATA/$n/pid")"; then s=up; else s=down; fi
    echo "$n $s $(url "$n") netns $(ns "$n")"
  done
  ;;
kill-host)
  n=${2:?host name}
  stop_node "$n" KILL
  ip link set "$(veth "$n")" down 2>/dev/null || true
  ;;
start-host)
  start_host_node "${2:?host name}"
  ;;
addr)
  url "${2:?host name}"
  ;;
*)
  echo "usage: $0 start|stop|status|kill-host NAME|start-host NAME|addr NAME" >&2
  exit 2
  ;;
esac
