#!/usr/bin/env bash
# Builds pinned tool binaries into a cache outside the clone and prints their paths.
#
#   hack/tools.sh <tool>...   build (if missing) and print the path of each tool
#   hack/tools.sh all         build every tool
#
# Versions come from this module's go.mod (the `tool` block pins them), so a tool is always the
# version the code is written against. The cache is keyed by tool and version: a second run
# builds nothing, and a version bump builds the new one next to the old.
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${CSI_OLM_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/csi-olm/tools}"
all_tools=(opm controller-gen)

# build NAME MODULE PACKAGE [go build flags...]
build() {
	local name=$1 module=$2 pkg=$3
	shift 3
	local version out
	version=$(go list -m -f '{{.Version}}' "$module")
	out="$cache/$name/$version/$name"
	if [[ ! -x $out ]]; then
		echo "building $name $version into $out" >&2
		mkdir -p "$(dirname "$out")"
		# Build to a temporary name so an interrupted build never leaves a broken binary.
		go build "$@" -o "$out.tmp.$$" "$pkg"
		mv -f "$out.tmp.$$" "$out"
	fi
	echo "$out"
}

tool() {
	case $1 in
	opm)
		# containers_image_openpgp avoids cgo gpgme, which cannot be installed here (DESIGN.md §6).
		local v
		v=$(go list -m -f '{{.Version}}' github.com/operator-framework/operator-registry)
		build opm github.com/operator-framework/operator-registry \
			github.com/operator-framework/operator-registry/cmd/opm \
			-tags containers_image_openpgp \
			-ldflags "-X github.com/operator-framework/operator-registry/cmd/opm/version.opmVersion=$v"
		;;
	controller-gen)
		build controller-gen sigs.k8s.io/controller-tools sigs.k8s.io/controller-tools/cmd/controller-gen
		;;
	*)
		echo "hack/tools.sh: unknown tool $1 (known: ${all_tools[*]})" >&2
		return 2
		;;
	esac
}

[[ $# -gt 0 ]] || { echo "usage: hack/tools.sh <tool>...|all" >&2; exit 2; }
[[ $1 == all ]] && set -- "${all_tools[@]}"
for t in "$@"; do tool "$t"; done
