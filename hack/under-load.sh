#!/usr/bin/env bash
# Runs a command on a loaded or slower machine, as a busy CI host or a developer's laptop gives
# it: a test that passes only on an idle, quick machine waits for too little (a timing, not what
# its comment promises), and this is how such tests are found.
#
#   hack/under-load.sh make e2e           one core kept busy by a busy loop
#   hack/under-load.sh --half make e2e    the command gets half the machine's CPU time
#
# --half is a machine twice as slow: the command and everything it starts run in a CPU cgroup of
# their own whose quota is half of every core's time (cgroup v1's cpu.cfs_quota_us, or v2's
# cpu.max). Unlike busy loops, a quota slows every process of the command alike, so the priorities
# the command gives its own processes (`make e2e` runs its other flows at nice 10 beside the real
# node's) keep their meaning; busy loops at nice 0 took nine tenths of the CPU from a nice-10
# process instead of half. The real node's pods are the one part it does not slow: the kubelet
# puts containers in cgroups of its own, outside the command's.
#
# The busy loop or the cgroup goes when the command ends, however it ends; the command's exit
# status is this script's.
set -euo pipefail
half=0
if [[ ${1:-} == --half ]]; then
	half=1
	shift
fi
(($#)) || { echo "usage: hack/under-load.sh [--half] COMMAND [ARG...]" >&2; exit 2; }

if ((!half)); then
	bash -c 'while :; do :; done' &
	hog=$!
	trap 'kill "$hog" 2>/dev/null || true' EXIT
	echo "under-load: pid $hog keeps one core busy while: $*"
	"$@"
	exit
fi

[[ $(id -u) -eq 0 ]] || { echo "hack/under-load.sh --half: a CPU cgroup needs root" >&2; exit 2; }
cores=$(nproc) period=100000
quota=$((cores * period / 2))
if [[ -e /sys/fs/cgroup/cgroup.controllers ]]; then # cgroup v2
	group=/sys/fs/cgroup/csi-olm-under-load.$$
	mkdir "$group"
	echo "$quota $period" >"$group/cpu.max"
elif [[ -d /sys/fs/cgroup/cpu ]]; then # cgroup v1
	group=/sys/fs/cgroup/cpu/csi-olm-under-load.$$
	mkdir "$group"
	echo "$period" >"$group/cpu.cfs_period_us"
	echo "$quota" >"$group/cpu.cfs_quota_us"
else
	echo "hack/under-load.sh --half: no cgroup v1 cpu hierarchy nor cgroup v2 at /sys/fs/cgroup" >&2
	exit 2
fi
# The command runs as a child in the group; this shell stays outside it, to remove the group.
cleanup() {
	# A process still in the group (the command's, left running) keeps it from going: kill them.
	for _ in 1 2 3 4 5; do
		pids=$(cat "$group/cgroup.procs" 2>/dev/null || true)
		[[ -z $pids ]] && break
		kill -KILL $pids 2>/dev/null || true
		sleep 0.2
	done
	rmdir "$group" 2>/dev/null || echo "hack/under-load.sh: could not remove $group" >&2
}
trap cleanup EXIT
echo "under-load: $* runs with half of $cores cores' time (quota ${quota}us per ${period}us in $group)"
rc=0
bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' under-load "$group" "$@" || rc=$?
exit "$rc"
