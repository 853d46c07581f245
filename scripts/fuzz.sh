#!/usr/bin/env bash
# Runs every fuzz target (func FuzzXxx in a _test.go file) of the module for
# FUZZ_TIME each (default 5s, as in `make test`; longer by hand, e.g.
# FUZZ_TIME=10m scripts/fuzz.sh). go test -fuzz takes one target at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZ_TIME:-5s}
status=0
while IFS=: read -r file name; do
  dir=./$(dirname "$file")
  echo "fuzz: $dir $name ($fuzztime)"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$dir"; then
    status=1
  fi
done < <(git ls-files '*_test.go' | xargs grep -oE '^func Fuzz[A-Za-z0-9_]+' | sed 's/func //' | sort)
exit $status
