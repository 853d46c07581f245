#!/usr/bin/env bash
# Builds the agent and runs it as root with an embedded etcd and
# examples/veth-route.yaml: a namespace "app" with a veth pair to the host,
# addresses, a route and an ARP entry. Ctrl-C stops it; the network
# configuration stays (remove it with `ip netns del app`). The etcd data is
# in .run/etcd (git-ignored; NETAGENT_RUN_DIR moves it), reused by every
# run: what was put into etcd stays, and runs do not pile up directories
# (etcd preallocates a 64 MB WAL segment in each). rm -rf .run starts
# afresh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-tools.sh
mkdir -p bin
go build -o bin/agent ./cmd/agent
go build -o bin/agentctl ./cmd/agentctl
data=${NETAGENT_RUN_DIR:-.run}/etcd
mkdir -p "$data"
cat <<MSG
netagent: starting with examples/veth-route.yaml (etcd data in $data, kept for the next run)
  agentctl: bin/agentctl status; bin/agentctl values; bin/agentctl config history
  status:   curl -s http://127.0.0.1:9191/scheduler/status
  graph:    http://127.0.0.1:9191/scheduler/graph (SVG) or ?format=dot
  history:  curl -s 'http://127.0.0.1:9191/scheduler/txn-history?format=text'
  kernel:   ip netns exec app ip addr; ip netns exec app ip route
  etcd:     http://127.0.0.1:2379 (keys under /vnf-agent/vpp1/)
MSG
exec bin/agent --etcd-embedded "$data" --init-file examples/veth-route.yaml --txn-log stderr --vpp-socket "${VPP_SOCKET:-off}" "$@"
