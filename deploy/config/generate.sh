#!/usr/bin/env bash
# Writes proxy.json and target.json here (or into $1): every option of each
# role with its help, at the values a single-host systemd install uses
# (deploy/systemd/). Run after an option is added or changed; the test
# suite checks that the files here are what this prints.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${SHOAL_BUILD:-$here/../../build}/bin
out=${1:-$here}
"$bin/shoal-proxy" --example-config \
  --host 127.0.0.1 --port 8080 --public_url http://127.0.0.1:8080 \
  --state_dir /var/lib/shoal/proxy \
  --cluster_secret_file /etc/shoal/cluster.secret \
  --auth_keys_file /etc/shoal/auth_keys > "$out/proxy.json"
"$bin/shoal-target" --example-config \
  --host 127.0.0.1 --primary_url http://127.0.0.1:8080 \
  --cluster_secret_file /etc/shoal/cluster.secret \
  --auth_keys_file /etc/shoal/auth_keys > "$out/target.json"
