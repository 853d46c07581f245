#!/usr/bin/env bash
# Runs the tests that involve VPP against a real VPP, after `make test` ran
# them against vppsim:
#   - VPP_API_SOCKET set: against that VPP (the user's; tests that restart
#     VPP skip, since it is never restarted);
#   - otherwise, with a VPP build folder (NETAGENT_VPP_DIR, default
#     ../shared/vpp beside the project): each test package starts a VPP of
#     its own from it, restarts it where a test restarts VPP, and stops it;
#   - neither: says so in one line and succeeds.
# Needs root (VPP, veth pairs, namespaces). Extra arguments go to go test.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every test of the VPP packages; of the daemon's and the CLI's end-to-end
# tests those with VPP in their name (the others ran in the first run and
# do not involve VPP).
PKGS=(./tests/vpprun/ ./plugins/vpp/...)
E2E_PKGS=(./cmd/agent/ ./tests/agentctl/)
E2E_RUN=VPP

if [ -n "${VPP_API_SOCKET:-}" ]; then
  # vppctl of the VPP build, when there is one (the tests look for it on
  # PATH otherwise, and skip what needs it without it)
  if [ -z "${NETAGENT_VPP_DIR:-}" ] && [ -x ../shared/vpp/bin/vppctl ]; then
    NETAGENT_VPP_DIR=$(cd ../shared/vpp && pwd -P)
    export NETAGENT_VPP_DIR
  fi
  echo "test-real-vpp: the VPP tests against the VPP at VPP_API_SOCKET=$VPP_API_SOCKET (packages one at a time)"
  go test -race -count=1 -p 1 -timeout 20m "$@" "${PKGS[@]}"
  exec go test -race -count=1 -p 1 -timeout 20m -run "$E2E_RUN" "$@" "${E2E_PKGS[@]}"
fi

dir=${NETAGENT_VPP_DIR:-../shared/vpp}
if [ ! -x "$dir/start.sh" ]; then
  echo "test-real-vpp: SKIPPED the real-VPP run: no VPP build at $dir (start.sh); the VPP tests ran against vppsim only. To run them against a VPP: VPP_API_SOCKET=/run/vpp/api.sock scripts/test-real-vpp.sh, or NETAGENT_VPP_DIR=<a folder with start.sh and stop.sh>"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "test-real-vpp: SKIPPED the real-VPP run: starting VPP needs root" >&2
  exit 0
fi
NETAGENT_VPP_DIR=$(cd "$dir" && pwd -P)
export NETAGENT_VPP_DIR
echo "test-real-vpp: the VPP tests against a real VPP from $NETAGENT_VPP_DIR, one VPP per test package"
go test -race -count=1 -timeout 20m "$@" "${PKGS[@]}"
exec go test -race -count=1 -timeout 20m -run "$E2E_RUN" "$@" "${E2E_PKGS[@]}"
