#!/usr/bin/env bash
# Regenerates the Go code of every .proto under proto/ into OUT (default: the
# source tree). `make proto` writes in place; `make proto-check` writes into a
# temporary directory and compares, to prove the committed code matches.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.}
export PATH="$(go env GOPATH)/bin:$PATH"
mapfile -t files < <(find proto -name '*.proto' | sort)
mkdir -p "$out"
protoc -I proto \
  --go_out="$out" --go_opt=module=github.com/netagent-io/netagent \
  --go-grpc_out="$out" --go-grpc_opt=module=github.com/netagent-io/netagent \
  "${files[@]}"
