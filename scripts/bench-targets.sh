#!/usr/bin/env bash
# bench-targets.sh: issue 17's targets on this host, each with the
# reference it is judged against, measured in the same run.
#
# Runs, ROUNDS times (default 3), one after the other:
#   plugins/vpp/bench        Create, CreateFloor, ResyncInSync, ResyncInSyncFloor,
#                            ResyncAfterRestart (real VPP)
#   tests/agentctl           ConfigUpdateVPPRoutes (real VPP), ConfigUpdateRoutes
#   plugins/linux/l3plugin   RoutesAgainstIPBatch/10000
#   plugins/linux/ifplugin   VethPairDeletes
# then prints one line per target: each round's value, their median, the
# target, and whether the median meets it. Absolute times follow the
# host's speed (see docs/benchmarks.md); the ratios are taken against a
# reference measured in the same iteration.
#
# Needs root (network namespaces). The VPP targets need a VPP build:
# NETAGENT_VPP_DIR (default ../shared/vpp); without one they are skipped,
# and said so. The raw benchmark output goes to bench-targets.txt;
# `scripts/bench-targets.sh --summary` prints the table again from it,
# without running anything.
#
# With each VPP benchmark, VPP's own CPU time during it (vpp-cpu-s/op, from
# the kernel's accounting of the VPP process): what VPP itself needed, which
# no agent can take away; a target below it cannot be met on this VPP.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${ROUNDS:-3}
out=bench-targets.txt
summary=0
case "${1:-}" in
"") ;;
--summary) summary=1 ;;
*)
	echo "bench-targets: unknown argument $1 (--summary: print the table from $out, run nothing)" >&2
	exit 2
	;;
esac

bench() { # package, -bench regexp, -benchtime
	GOMAXPROCS=2 go test -run '^$' -bench "$2" -benchtime "$3" -timeout 30m "$1" | tee -a "$out" | grep '^Benchmark' || true
}

# run runs the benchmarks ROUNDS times, their output into $out.
run() {
	: >"$out"
	if [ "$(id -u)" -ne 0 ]; then
		echo "bench-targets: needs root (the Linux benchmarks make network namespaces)" >&2
		exit 2
	fi
	vppdir=${NETAGENT_VPP_DIR:-../shared/vpp}
	if [ -x "$vppdir/start.sh" ]; then
		export NETAGENT_VPP_DIR=$(cd "$vppdir" && pwd -P)
		vpp=1
	else
		echo "bench-targets: no VPP build at $vppdir (set NETAGENT_VPP_DIR): the VPP targets are SKIPPED" >&2
		vpp=0
	fi
	unset VPP_API_SOCKET # each benchmark starts a VPP of its own

	for r in $(seq "$rounds"); do
		echo "== round $r of $rounds ($(uptime | sed 's/.*load/load/'))" | tee -a "$out"
		if [ "$vpp" = 1 ]; then
			bench ./plugins/vpp/bench/ '^Benchmark(Create|CreateFloor|ResyncAfterRestart)$' 3x
			bench ./plugins/vpp/bench/ '^Benchmark(ResyncInSync|ResyncInSyncFloor)$' 20x
			bench ./tests/agentctl/ '^BenchmarkConfigUpdateVPPRoutes$' 5x
		fi
		bench ./tests/agentctl/ '^BenchmarkConfigUpdateRoutes$' 5x
		bench ./plugins/linux/l3plugin/ '^BenchmarkRoutesAgainstIPBatch$/^10000$' 5x
		bench ./plugins/linux/ifplugin/ '^BenchmarkVethPairDeletes$' 3x
	done
}

if [ "$summary" = 1 ]; then
	if [ ! -s "$out" ]; then
		echo "bench-targets: no $out to summarize: run scripts/bench-targets.sh first" >&2
		exit 2
	fi
	rounds=$(grep -c '^== round' "$out" || true)
else
	run
fi

# metric BENCHMARK UNIT [SCALE]: the values of a metric over the rounds
# (scaled), one per line.
metric() {
	awk -v name="$1" -v unit="$2" -v scale="${3:-1}" '
		$1 ~ "^" name "(-[0-9]+)?$" { for (i = 3; i < NF; i += 2) if ($(i+1) == unit) printf "%.4g\n", $i * scale }' "$out"
}

# target LABEL LIMIT VALUES...: the values, their median and the verdict
# (LIMIT -: a reference, no verdict).
target() {
	local label=$1 limit=$2
	shift 2
	if [ $# -eq 0 ]; then
		printf '%-58s %s\n' "$label" "SKIPPED (not measured)"
		return
	fi
	local med
	med=$(printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
	if [ "$limit" = - ]; then
		printf '%-58s %-28s median %s\n' "$label" "$*" "$med"
		return
	fi
	local verdict="not met"
	awk -v m="$med" -v l="$limit" 'BEGIN {exit !(m <= l)}' && verdict="met"
	printf '%-58s %-28s median %-8s target <= %-6s %s\n' "$label" "$*" "$med" "$limit" "$verdict"
}

# ratio NUMS DENS: NUMS[i]/DENS[i] of two lists of values (one per round,
# in round order); a round without both gives none.
ratio() {
	paste <(printf '%s\n' $1) <(printf '%s\n' $2) | awk 'NF == 2 && $2 > 0 { printf "%.3g\n", $1 / $2 }'
}

echo
echo "Issue 17's targets, $rounds round(s) (raw output: $out):"
# The VPP benchmarks report ns/value over their 11,000 values.
per=0.000011
target "VPP: create of the interfaces and routes (s)" 0.25 $(metric BenchmarkCreate ns/value $per)
target "  VPP's own floor: the same requests, no agent (s)" - $(metric BenchmarkCreateFloor ns/value $per)
target "  create / its floor, round by round (proposed: <= 1.3)" - $(ratio "$(metric BenchmarkCreate ns/value)" "$(metric BenchmarkCreateFloor ns/value)")
target "  VPP's own CPU time during the create (s)" - $(metric BenchmarkCreate vpp-cpu-s/op)
target "  create / VPP's CPU time in it, round by round" - $(ratio "$(metric BenchmarkCreate ns/value $per)" "$(metric BenchmarkCreate vpp-cpu-s/op)")
target "  VPP's own CPU time during its floor (s)" - $(metric BenchmarkCreateFloor vpp-cpu-s/op)
target "VPP: resync after a VPP restart (s)" 0.25 $(metric BenchmarkResyncAfterRestart ns/value $per)
target "  restart resync / the create's floor, round by round" - $(ratio "$(metric BenchmarkResyncAfterRestart ns/value)" "$(metric BenchmarkCreateFloor ns/value)")
target "  VPP's own CPU time during the restart resync (s)" - $(metric BenchmarkResyncAfterRestart vpp-cpu-s/op)
target "  restart resync / VPP's CPU time in it, round by round" - $(ratio "$(metric BenchmarkResyncAfterRestart ns/value $per)" "$(metric BenchmarkResyncAfterRestart vpp-cpu-s/op)")
target "VPP: in-sync resync (s)" 0.1 $(metric BenchmarkResyncInSync ns/value $per)
target "  VPP's own floor: the same dumps, no agent (s)" - $(metric BenchmarkResyncInSyncFloor ns/value $per)
target "  VPP's own CPU time during the resync (s)" - $(metric BenchmarkResyncInSync vpp-cpu-s/op)
target "VPP: 10k routes config update --wait, end to end (s)" 0.2 $(metric BenchmarkConfigUpdateVPPRoutes update-s)
target "  the same / pipelined GoVPP reference" - $(metric BenchmarkConfigUpdateVPPRoutes update/pipe)
target "VPP: its transaction (s)" 0.15 $(metric BenchmarkConfigUpdateVPPRoutes update-txn-s)
target "Linux: 10k routes transaction, create / ip -batch" 1.5 $(metric 'BenchmarkRoutesAgainstIPBatch/10000' create-x)
target "Linux: the same, delete / ip -batch" 1.5 $(metric 'BenchmarkRoutesAgainstIPBatch/10000' delete-x)
target "Linux: config update --wait (YAML) / ip -batch" 2 $(metric 'BenchmarkConfigUpdateRoutes/YAML' update/ip)
target "Linux: config update --wait (JSON) / ip -batch" 2 $(metric 'BenchmarkConfigUpdateRoutes/JSON' update/ip)
target "Linux: delete of 500 veth pairs / ip group set + delete" 1.5 $(metric BenchmarkVethPairDeletes x-ip-group)
