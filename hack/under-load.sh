#!/usr/bin/env bash
# Runs a command on a loaded machine, as a busy CI host or a developer's laptop would give it: a
# test that passes only on an idle machine waits for too little (a timing, not what its comment
# promises), and this is how such tests are found.
#
#   hack/under-load.sh make e2e           one core kept busy
#   hack/under-load.sh --half make e2e    every core kept busy: the command gets half the machine
#
# The load is busy loops, one shell each, at the command's own priority, so that they take their
# share of every core from everything the command starts: its test processes, the API servers, and
# the real node's pods, which a CPU cgroup of the command's would not hold (the kubelet puts
# containers in cgroups of its own). Two busy loops on a 2-core machine leave a single-threaded
# program half of a core's time, and the machine's whole work takes about twice as long. They are
# killed when the command ends, however it ends; the command's exit status is this script's.
set -euo pipefail
hogs=1
if [[ ${1:-} == --half ]]; then
	hogs=$(nproc)
	shift
fi
(($#)) || { echo "usage: hack/under-load.sh [--half] COMMAND [ARG...]" >&2; exit 2; }
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
for _ in $(seq 1 "$hogs"); do
	bash -c 'while :; do :; done' &
	pids+=($!)
done
echo "under-load: $hogs busy loop(s) (pids ${pids[*]}) on $(nproc) cores while: $*"
"$@"
