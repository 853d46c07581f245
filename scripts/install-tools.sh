#!/usr/bin/env bash
# Installs what building, testing and regenerating code need, at pinned versions.
# Safe to run again: it installs only what is missing or at another version.
#   scripts/install-tools.sh          test dependencies (graphviz, iproute2, ping,
#                                     chromium and chromium-driver for the
#                                     browser tests of the web view)
#   scripts/install-tools.sh proto    also protoc and protoc-gen-go
# With a VPP build beside the project (NETAGENT_VPP_DIR, default
# ../shared/vpp), also the Debian packages of VPP's runtime libraries that
# the tests against a real VPP need (its README lists them).
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.5.1
# protoc comes from Debian bookworm's protobuf-compiler (3.21.12); the version is
# written into every generated file, so `make proto-check` compares like with like.
PROTOC_VERSION=3.21.12

need_apt=()
command -v dot >/dev/null 2>&1 || need_apt+=(graphviz)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v ping >/dev/null 2>&1 || need_apt+=(iputils-ping)
# The browser tests (tests/browser) drive Debian's headless Chromium through
# its chromedriver, at the paths those packages install.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
[ -x /usr/bin/chromedriver ] || need_apt+=(chromium-driver)
vpp_dir=${NETAGENT_VPP_DIR:-$(dirname "$0")/../../shared/vpp}
if [ -x "$vpp_dir/start.sh" ]; then
  for pkg in libunwind8 liblzma5 libssl3 libnl-3-200 libnl-route-3-200; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need_apt+=("$pkg")
  done
fi
if [ "${1:-}" = proto ]; then
  if ! protoc --version 2>/dev/null | grep -q "$PROTOC_VERSION"; then
    need_apt+=(protobuf-compiler)
  fi
  # google/protobuf/*.proto (ligato/generic/meta.proto imports descriptor.proto)
  [ -f /usr/include/google/protobuf/descriptor.proto ] || need_apt+=(libprotobuf-dev)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-tools: need root to install: ${need_apt[*]}" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if [ "${1:-}" = proto ]; then
  gobin=$(go env GOPATH)/bin
  if ! "$gobin/protoc-gen-go" --version 2>/dev/null | grep -q "$PROTOC_GEN_GO_VERSION"; then
    go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
  fi
  if ! "$gobin/protoc-gen-go-grpc" --version 2>/dev/null | grep -q "${PROTOC_GEN_GO_GRPC_VERSION#v}"; then
    go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
  fi
fi
