#!/usr/bin/env bash
# Runs the README's two commands and CI's script the way a new machine meets them, and times each
# step: a clean clone of HEAD, empty Go module and build caches, an empty tool cache, and none of
# the Debian packages the make targets install (they are purged first, so the targets must
# install them again). Then it runs .ci/run again WARM times with the caches it filled.
#
#   hack/fresh-machine.sh [--warm N] [--dir DIR] [--keep-packages]
#
# It needs root (apt-get purge) and a quiet machine: the figures it prints are the budgets'
# (BENCHMARKS.md#ci-time). Everything it creates lives in DIR (a new temporary directory by
# default), which it leaves for inspection; the purged packages stay purged until a make target
# installs them again.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

warm=0 dir="" purge=1
while (($#)); do
	case $1 in
	--warm) warm=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	--keep-packages) purge=0; shift ;;
	*) echo "usage: hack/fresh-machine.sh [--warm N] [--dir DIR] [--keep-packages]" >&2; exit 2 ;;
	esac
done
[[ $warm =~ ^[0-9]+$ ]] || { echo "hack/fresh-machine.sh: --warm takes a number, not $warm" >&2; exit 2; }
if ((purge)) && [[ $(id -u) -ne 0 ]]; then
	echo "hack/fresh-machine.sh: purging the Debian packages needs root (or --keep-packages)" >&2
	exit 2
fi
dir=${dir:-$(mktemp -d /tmp/csi-olm-fresh.XXXXXX)}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# Every package a make target installs when missing: the node's, Graphviz and buildah.
packages=$(make -s -C "$repo" print-debian-packages)
if ((purge)); then
	# Only what a Debian base system lacks: util-linux and iproute2, say, are on every machine
	# (priority required or important) and are not the project's to remove.
	remove=()
	for p in $packages; do
		if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" &&
			$(dpkg-query -W -f='${Priority}' "$p") == optional ]]; then
			remove+=("$p")
		fi
	done
	if ((${#remove[@]})); then
		echo "fresh-machine: purging ${remove[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${remove[@]}" >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get autoremove --purge -y -qq >/dev/null
	fi
	for bin in dot buildah podman containerd runc socat; do
		! command -v "$bin" >/dev/null || { echo "fresh-machine: $bin is still on PATH after the purge" >&2; exit 1; }
	done
fi

rm -rf "$dir/clone" "$dir/cache"
git clone -q "$repo" "$dir/clone"
export GOMODCACHE="$dir/cache/gomod" GOCACHE="$dir/cache/go-build" XDG_CACHE_HOME="$dir/cache/xdg"
mkdir -p "$GOMODCACHE" "$GOCACHE" "$XDG_CACHE_HOME"
cd "$dir/clone"
echo "fresh-machine: clone of $(git rev-parse --short HEAD) in $dir/clone, caches in $dir/cache"

results=()
# run NAME COMMAND...: runs the step with its output in $dir/NAME.log, and records its wall time
# and its CPU time: the kernel's count (user and system) for the step and every process it waited
# for, which does not depend on how busy or quick the machine was that day.
run() {
	local name=$1 begin=$SECONDS rc=0 TIMEFORMAT='%U %S'
	shift
	echo "fresh-machine: $name ($*), log in $dir/$name.log"
	{ time "$@" >"$dir/$name.log" 2>&1; } 2>"$dir/$name.cpu" || rc=$?
	local took=$((SECONDS - begin)) cpu
	cpu=$(awk '{ print $1 + $2 }' "$dir/$name.cpu")
	results+=("$(printf '%-16s %6d s  %5.1f min  %7.0f CPU s  %s' "$name" "$took" "$(bc <<<"scale=1; $took / 60")" "$cpu" \
		"$([[ $rc -eq 0 ]] && echo ok || echo "FAILED ($rc)")")")
	grep '^ci:   ' "$dir/$name.log" | sed "s/^ci:  /  $name:/" >>"$dir/ci-steps.txt" || true
	return $rc
}

status=0
run make-catalog make catalog || status=1
[[ -z $(git status --porcelain) ]] || { echo "fresh-machine: make catalog left the clone changed:"; git status --short; status=1; }
((status)) || run ci-cold bash .ci/run || status=1
for i in $(seq 1 "$warm"); do
	((status)) || run "ci-warm-$i" bash .ci/run || status=1
done

echo
echo "fresh-machine: $(nproc) cores, $(go version | cut -d' ' -f3), commit $(git rev-parse --short HEAD)"
printf 'fresh-machine:   %s\n' "${results[@]}"
[[ ! -s $dir/ci-steps.txt ]] || { echo "fresh-machine: .ci/run's steps"; cat "$dir/ci-steps.txt"; }
exit $status
