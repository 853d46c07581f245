#!/usr/bin/env bash
# Runs every fuzz target (func FuzzXxx in a _test.go file) of the module for
# FUZZ_TIME each (default 5s, as in `make test`; longer by hand, e.g.
# FUZZ_TIME=10m scripts/fuzz.sh). go test -fuzz takes one target at a time.
#
# Go 1.26's fuzzing coordinator can fail a target with a bare "context
# deadline exceeded" when -fuzztime ends while a worker is busy, mostly on a
# loaded machine (golang/go#75804, fixed in Go 1.27). That failure writes no
# failing input; a real one always does (testdata/fuzz/<target>/). So a
# target that fails with that message and no new input is run once more,
# and fails the script only if it fails again.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZ_TIME:-5s}
status=0

# inputs lists the failing inputs saved for a target.
inputs() { ls "$1/testdata/fuzz/$2" 2>/dev/null | sort || true; }

run_target() {
  local dir=$1 name=$2 before out rc
  before=$(inputs "$dir" "$name")
  out=$(mktemp)
  rc=0
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$dir" 2>&1 | tee "$out" || rc=$?
  if [ "$rc" -ne 0 ] && [ "$(inputs "$dir" "$name")" = "$before" ] &&
    grep -q '^    context deadline exceeded$' "$out"; then
    rc=75 # the coordinator's race: no input was found
  fi
  rm -f "$out"
  return "$rc"
}

while IFS=: read -r file name; do
  dir=./$(dirname "$file")
  echo "fuzz: $dir $name ($fuzztime)"
  rc=0
  run_target "$dir" "$name" || rc=$?
  if [ "$rc" -eq 75 ]; then
    echo "fuzz: $name stopped with Go's fuzztime race (golang/go#75804, no failing input); running it again"
    rc=0
    run_target "$dir" "$name" || rc=$?
  fi
  if [ "$rc" -ne 0 ]; then
    status=1
  fi
done < <(git ls-files '*_test.go' | xargs grep -oE '^func Fuzz[A-Za-z0-9_]+' | sed 's/func //' | sort)
exit $status
