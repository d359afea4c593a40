#!/usr/bin/env bash
# Builds pinned tool binaries into a cache outside the clone and prints their paths.
#
#   hack/tools.sh <tool>...   build (if missing) and print the path of each tool
#   hack/tools.sh all         build every tool
#   hack/tools.sh -j N ...    build up to N independent tools at once first (see build_parallel)
#
# Versions are pinned in one place each, so a tool is always the version the code and the test bed
# are written against:
#   opm, controller-gen                      this module's go.mod (the `tool` block)
#   kube-apiserver, kube-controller-manager, hack/tools/kube/go.mod, a separate tools module so
#   kube-scheduler, kubelet, kube-proxy,     k8s.io/kubernetes never enters the main go.mod
#   kubectl, etcd                            (kubectl: the admin's CLI of the README's quick
#                                            start, which the end-to-end test runs as oc)
#   pause                                    the pause binary of the real node's pod sandboxes,
#                                            compiled (gcc -static) from that k8s.io/kubernetes
#                                            module's build/pause/linux/pause.c
#   kwok, kwok-crds                          kwok_version below (built in its own module graph;
#                                            kwok-crds is the directory of kwok's CRDs)
#   registry                                 hack/tools/registry/go.mod: the CNCF distribution
#                                            registry, which the test bed serves images from on
#                                            loopback, with only the filesystem storage driver
#   coredns                                  hack/tools/coredns/go.mod: the real node's cluster
#                                            DNS, with only the plugins its Corefile names
#   grpc_health_probe                        grpc_health_probe_version below: the probe OLM's
#                                            registry pods run, carried by the catalog images
#   benchstat                                benchstat_version below: compares the Go benchmark
#                                            output of `make bench` between two commits
#   olm, catalog, olm-crds, cpb              this module's go.mod (olm, catalog and cpb built in
#                                            its graph, cpb static as OLM's util image carries
#                                            it into bundle images; the CRDs copied from that
#                                            OLM module)
#   operator-controller, catalogd,           olmv1_version below: OLM v1, both binaries built
#   olmv1-crds                               together inside its own go.mod, statically; the
#                                            CRDs (standard feature set) copied from it
#   csi-provisioner                          provisioner_version below: the real provisioner
#                                            sidecar of the EFS controller pod (built inside its
#                                            own go.mod, like OLM)
#   kube-rbac-proxy                          this module's go.mod (the `tool` block): the
#                                            controller pod's metrics proxy, which the real node
#                                            runs, built against this module's Kubernetes
#   openshift-crds                           this module's github.com/openshift/api (prints the
#                                            module's directory; the test bed reads its CRDs)
#   storage-manifest-check                   hack/tools/kube/cmd/storage-manifest-check against
#                                            the k8s.io/kubernetes of hack/tools/kube/go.mod:
#                                            checks the drivers' external-storage test manifests
# The cache is keyed by tool and version: a second run builds nothing (existence checks only), and
# a version bump builds the new one next to the old. The kube binaries asked for in one run are
# built by one go build; olm and catalog are built together; olm-crds is copied from OLM's module
# without building it.
set -euo pipefail
cd "$(dirname "$0")/.."

kwok_version=v0.7.0
grpc_health_probe_version=v0.4.61
# golang.org/x/perf publishes no releases; this is a commit the Go module proxy serves.
benchstat_version=v0.0.0-20260908200009-22c9c6c9d4da
olm_module=github.com/operator-framework/operator-lifecycle-manager
# OLM v1. Built in its own go.mod (a module copy), so its Kubernetes libraries need not be this
# module's. v1.6 and later need pkg.package-operator.run/boxcutter, whose host the Go module
# proxy here refuses, and their standard runtime uses it too (its tracking cache); v1.5.1 is the
# newest release the proxy serves that builds without it (docs/olm-v1.md#installing-with-olm-v1).
olmv1_version=v1.5.1
olmv1_module=github.com/operator-framework/operator-controller
provisioner_version=v5.3.0
provisioner_module=github.com/kubernetes-csi/external-provisioner/v5

# Every tool is built static (no cgo) and -trimpath, as the Makefile builds the project: Go's cache
# keys compiled packages by those settings, so the packages the tools share with each other and
# with the operator (the standard library, client-go, gRPC...) compile once on a fresh machine.
# Kubernetes itself builds its control plane static; the kubelet too here, which Kubernetes links
# with cgo and the real node's flows run on without it; OLM too (build_olm).
# They link without DWARF (-w), as the tests do: nobody debugs a tool, and a big link takes a third
# less CPU (kube-apiserver 9.5 s -> 5.5 s). A build that sets -ldflags repeats -w, since the command
# line's -ldflags replaces GOFLAGS'.
export CGO_ENABLED=0
[[ " ${GOFLAGS:-} " == *" -trimpath "* ]] || export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"
[[ " ${GOFLAGS:-} " == *" -ldflags="* ]] || export GOFLAGS="$GOFLAGS -ldflags=-w"

cache="${CSI_OLM_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/csi-olm/tools}"
kube_dir=hack/tools/kube
all_tools=(opm controller-gen kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl
	pause etcd kwok kwok-crds olm catalog olm-crds cpb operator-controller catalogd olmv1-crds openshift-crds
	registry coredns grpc_health_probe csi-provisioner kube-rbac-proxy storage-manifest-check benchstat)
kube_bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

# Temporary build outputs, removed on exit (also on failure or interrupt); they live in the cache so
# finished results can be mv'd into place, which never leaves a half-written tool behind.
tmps=()
cleanup() { [[ ${#tmps[@]} -eq 0 ]] || rm -rf "${tmps[@]}"; }
trap cleanup EXIT
# A signal ends the script through exit, so the EXIT trap removes what a killed build left.
trap 'exit 130' INT
trap 'exit 143' TERM
# mktmp NAME: creates a temporary directory in the cache and sets tmp to it.
mktmp() {
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/.tmp.$1.XXXXXX")
	tmps+=("$tmp")
}

# modver GO.MOD MODULE: the version MODULE is required at, read straight from GO.MOD (no `go list`,
# which would load the module graph on every run).
modver() {
	local v
	v=$(awk -v m="$2" '!/=>/ && $1 == "require" && $2 == m { print $3; exit }
		!/=>/ && $1 == m && $2 ~ /^v/ { print $2; exit }' "$1")
	[[ -n $v ]] || { echo "hack/tools.sh: $2 not required in $1" >&2; return 1; }
	echo "$v"
}

# OLM's version is this module's (the `tool` block builds olm and catalog; build_olm).
olm_version=$(modver go.mod "$olm_module")

# build NAME MODULE PACKAGE [go build flags...]
build() {
	local name=$1 module=$2 pkg=$3
	shift 3
	local version out
	version=$(go list -m -f '{{.Version}}' "$module")
	out="$cache/$name/$version${variant:+-$variant}/$name"
	if [[ ! -x $out ]]; then
		echo "building $name $version into $out" >&2
		mkdir -p "$(dirname "$out")"
		# Build to a temporary name so an interrupted build never leaves a broken binary.
		tmps+=("$out.tmp.$$")
		go build "$@" -o "$out.tmp.$$" "$pkg"
		mv -f "$out.tmp.$$" "$out"
	fi
	echo "$out"
}

# modhash DIR [FIND ARGS...]: 12 hex digits of a hash of DIR's go.mod and go.sum, and of the files
# under DIR that FIND ARGS select, for a cache key that changes with any pin.
modhash() {
	local dir=$1
	shift
	(cd "$dir" && { cat go.mod go.sum; if (($#)); then find . "$@" | LC_ALL=C sort | xargs cat; fi; } |
		sha256sum | cut -c1-12)
}

# build_kube NAME: one of kube_bins from k8s.io/kubernetes as pinned in hack/tools/kube/go.mod;
# builds it together with the other kube binaries this run was asked for and lacks (one go build
# compiles their shared packages in parallel), but none that nobody asked for: `make test` needs
# no kubelet. The cache key has a hash of that go.mod and go.sum, whose other pins (kept at this
# module's versions, so that a fresh machine compiles the libraries both use once) change the
# binaries too.
build_kube() {
	local v key b missing=() tmp
	v=$(modver "$kube_dir/go.mod" k8s.io/kubernetes)
	key=$v-$(modhash "$kube_dir")
	for b in "$1" "${requested_kube[@]}"; do
		[[ -x $cache/$b/$key/$b || " ${missing[*]} " == *" $b "* ]] || missing+=("$b")
	done
	if ((${#missing[@]})); then
		echo "building ${missing[*]} $v into $cache/<tool>/$key/" >&2
		mktmp kube
		local major=${v#v} minor
		minor=${major#*.}
		minor=${minor%%.*}
		major=${major%%.*}
		# Without the version stamp the server reports v0.0.0-master, which breaks OLM's
		# minKubeVersion checks (docs/architecture.md#the-test-bed).
		local ldflags="-w" p
		for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			ldflags+=" -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor"
			ldflags+=" -X $p.gitTreeState=clean"
		done
		(cd "$kube_dir" && go build -ldflags "$ldflags" -o "$tmp/" \
			"${missing[@]/#/k8s.io/kubernetes/cmd/}")
		for b in "${missing[@]}"; do
			mkdir -p "$cache/$b/$key"
			mv -f "$tmp/$b" "$cache/$b/$key/$b"
		done
	fi
	echo "$cache/$1/$key/$1"
}

# build_pause: the pause binary from the pause.c of k8s.io/kubernetes as pinned in
# hack/tools/kube/go.mod, statically linked (the pause image holds nothing else), with the version
# its Makefile stamps.
build_pause() {
	local v out src tag
	v=$(modver "$kube_dir/go.mod" k8s.io/kubernetes)
	out="$cache/pause/$v/pause"
	if [[ ! -x $out ]]; then
		src=$(cd "$kube_dir" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause
		[[ -n $src && -f $src/linux/pause.c ]] || (cd "$kube_dir" && go mod download k8s.io/kubernetes)
		src=$(cd "$kube_dir" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause
		tag=$(awk '$1 == "TAG" && $2 == "?=" { print $3 }' "$src/Makefile")
		echo "building pause $tag (k8s.io/kubernetes $v) into $out" >&2
		mkdir -p "$(dirname "$out")"
		tmps+=("$out.tmp.$$")
		gcc -Os -Wall -Werror -static -DVERSION="v$tag-csi-olm" -o "$out.tmp.$$" "$src/linux/pause.c"
		mv -f "$out.tmp.$$" "$out"
	fi
	echo "$out"
}

# build_main NAME DIR MODULE PACKAGE: NAME from a main of this repository's in the tools module DIR
# (its own go.mod), against MODULE as pinned there. The cache key adds a hash of the module's
# go.mod, go.sum and Go code, so an edit to a main or a pin builds a new binary.
build_main() {
	local name=$1 dir=$2 module=$3 pkg=$4 v h out
	v=$(modver "$dir/go.mod" "$module")
	h=$(modhash "$dir" -name '*.go')
	out="$cache/$name/$v-$h/$name"
	if [[ ! -x $out ]]; then
		echo "building $name ($module $v) into $out" >&2
		mkdir -p "$(dirname "$out")"
		tmps+=("$out.tmp.$$")
		(cd "$dir" && go build -o "$out.tmp.$$" "$pkg")
		mv -f "$out.tmp.$$" "$out"
	fi
	echo "$out"
}

# build_kwok NAME: kwok at kwok_version, with `go install pkg@version`, so exactly kwok's own go.mod
# (which has no replaces), independent of this module's graph; or kwok-crds, the CRDs of kwok's
# own API (the test bed uses PortForward), copied from the module `go install` downloaded.
build_kwok() {
	local out="$cache/kwok/$kwok_version/kwok" crds="$cache/kwok/$kwok_version/crds" tmp dir
	if [[ ! -x $out || ! -d $crds ]]; then
		echo "building kwok $kwok_version and copying its CRDs into $(dirname "$out")" >&2
		mktmp kwok
		GOBIN="$tmp" go install \
			-ldflags "-w -X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v}" \
			"sigs.k8s.io/kwok/cmd/kwok@$kwok_version"
		dir="$(go env GOMODCACHE)/sigs.k8s.io/kwok@$kwok_version/kustomize/crd/bases"
		mkdir -p "$tmp/crds" "$(dirname "$out")"
		cp "$dir"/*.yaml "$tmp/crds/"
		mv -f "$tmp/kwok" "$out"
		rm -rf "$crds"
		mv "$tmp/crds" "$crds"
	fi
	case $1 in
	kwok) echo "$out" ;;
	kwok-crds) echo "$crds" ;;
	esac
}

# module_dir MODULE VERSION: sets dir to MODULE@VERSION in the module cache (read-only), downloading
# it from within $tmp: outside any module, so this module's go.mod/go.sum are never touched.
module_dir() {
	dir=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "$1@$2" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	[[ -n $dir && -d $dir ]] || {
		echo "hack/tools.sh: cannot download $1@$2" >&2
		return 1
	}
}

# module_copy MODULE VERSION: sets src to a writable copy of MODULE@VERSION in a new $tmp. Some
# modules only build inside their own go.mod, with its replace lines (docs/architecture.md#the-test-bed),
# which `go install pkg@version` refuses; they build in such a copy with -mod=mod.
module_copy() {
	local dir
	mktmp "$(basename "$1")"
	module_dir "$1" "$2"
	src="$tmp/src"
	cp -R "$dir" "$src"
	chmod -R u+w "$src"
}

# build_olm NAME: OLM's olm or catalog binary, at the version this module's go.mod requires and
# in this module's graph (go.mod's `tool` block), static like every tool. The operator and csi-olm
# already compile OLM's libraries and the Kubernetes ones beneath them, so both binaries cost a
# fresh machine 40 s of CPU instead of the 243 s of OLM's own go.mod. OLM's Makefile links them
# with cgo and SQLite's json1 tag, but neither links SQLite (`go list -deps` names no sqlite
# package).
build_olm() {
	variant=this-module build "$1" "$olm_module" "$olm_module/cmd/$1" \
		-ldflags "-w -X $olm_module/pkg/version.OLMVersion=$olm_version"
}

# build_olmv1 NAME: OLM v1's operator-controller or catalogd at olmv1_version, both built by one go
# build in a module_copy, as its Makefile builds them: static, with containers/image's pure-Go
# OpenPGP (no gpgme); the stack runs them as pods from images of these binaries.
build_olmv1() {
	local v=$olmv1_version tmp src b
	if [[ ! -x $cache/operator-controller/$v/operator-controller || ! -x $cache/catalogd/$v/catalogd ]]; then
		echo "building operator-controller, catalogd $v into $cache/<tool>/$v/" >&2
		export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/openshift/*,github.com/operator-framework/*"
		module_copy "$olmv1_module" "$v"
		(cd "$src" && GOFLAGS="$GOFLAGS -mod=mod" go build \
			-tags containers_image_openpgp \
			-ldflags "-w -X github.com/operator-framework/operator-controller/internal/shared/version.version=$v" \
			-o "$tmp/bin/" ./cmd/operator-controller ./cmd/catalogd)
		for b in operator-controller catalogd; do
			mkdir -p "$cache/$b/$v"
			mv -f "$tmp/bin/$b" "$cache/$b/$v/$b"
		done
	fi
	echo "$cache/$1/$v/$1"
}

# copy_crds DEST MODULE VERSION GLOB: copies the CRD manifests matching GLOB (relative to the
# module's root) from MODULE@VERSION into DEST, once, without building the module (controller
# tests install CRDs and run no OLM); prints DEST.
copy_crds() {
	local crds=$1 module=$2 version=$3 glob=$4 tmp dir
	if [[ ! -d $crds ]]; then
		echo "copying $module $version's CRDs into $crds" >&2
		export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/openshift/*,github.com/operator-framework/*"
		mktmp crds
		module_dir "$module" "$version"
		mkdir -p "$tmp/crds" "$(dirname "$crds")"
		# shellcheck disable=SC2086 # the glob is expanded on purpose
		cp "$dir"/$glob "$tmp/crds/"
		mv "$tmp/crds" "$crds"
	fi
	echo "$crds"
}

# build_in_copy NAME MODULE VERSION PACKAGE [ldflags]: one static binary built in a module_copy of
# MODULE@VERSION, so that an image may carry it.
build_in_copy() {
	local name=$1 module=$2 version=$3 pkg=$4 ldflags="-w ${5:-}" out="$cache/$1/$3/$1" tmp src
	if [[ ! -x $out ]]; then
		echo "building $name $version into $out" >&2
		module_copy "$module" "$version"
		(cd "$src" && GOFLAGS="$GOFLAGS -mod=mod" go build -ldflags "$ldflags" \
			-o "$tmp/$name" "$pkg")
		mkdir -p "$(dirname "$out")"
		mv -f "$tmp/$name" "$out"
	fi
	echo "$out"
}

# go_install NAME PACKAGE VERSION: a tool with `go install PACKAGE@VERSION`, so exactly its own
# go.mod, independent of this module's graph; statically linked, so that an image may carry it.
go_install() {
	local name=$1 pkg=$2 version=$3 out tmp
	out="$cache/$name/$version/$name"
	if [[ ! -x $out ]]; then
		echo "building $name $version into $out" >&2
		mktmp "$name"
		GOBIN="$tmp" go install "$pkg@$version"
		mkdir -p "$(dirname "$out")"
		mv -f "$tmp/$(basename "$pkg")" "$out"
	fi
	echo "$out"
}

tool() {
	case $1 in
	opm)
		# containers_image_openpgp avoids cgo gpgme, which cannot be installed here (docs/architecture.md#dependencies).
		# Linked statically (no cgo, so no SQLite catalogs, which csi-olm never reads): the catalog
		# images run this very binary on an empty base.
		local v
		v=$(go list -m -f '{{.Version}}' github.com/operator-framework/operator-registry)
		variant=static build opm github.com/operator-framework/operator-registry \
			github.com/operator-framework/operator-registry/cmd/opm \
			-tags containers_image_openpgp \
			-ldflags "-w -X github.com/operator-framework/operator-registry/cmd/opm/version.opmVersion=$v"
		;;
	controller-gen)
		build controller-gen sigs.k8s.io/controller-tools sigs.k8s.io/controller-tools/cmd/controller-gen
		;;
	kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kube-proxy | kubectl) build_kube "$1" ;;
	pause) build_pause ;;
	etcd) build_main etcd "$kube_dir" go.etcd.io/etcd/server/v3 ./cmd/etcd ;;
	storage-manifest-check) build_main storage-manifest-check "$kube_dir" k8s.io/kubernetes ./cmd/storage-manifest-check ;;
	kwok | kwok-crds) build_kwok "$1" ;;
	olm | catalog) build_olm "$1" ;;
	olm-crds) copy_crds "$cache/olm/$olm_version/crds" "$olm_module" "$olm_version" 'deploy/chart/crds/*.yaml' ;;
	# In this module's graph like olm and catalog: all but its main package are already compiled
	# there, where OLM's own go.mod compiled 17 MiB of other versions of them.
	cpb) variant=this-module build cpb "$olm_module" "$olm_module/util/cpb" -ldflags -w ;;
	operator-controller | catalogd) build_olmv1 "$1" ;;
	# OLM v1's CRDs (ClusterCatalog, ClusterExtension) in the standard feature set a cluster serves.
	olmv1-crds) copy_crds "$cache/olmv1-crds/$olmv1_version" "$olmv1_module" "$olmv1_version" 'config/base/*/crd/standard/olm.operatorframework.io_*.yaml' ;;
	registry) build_main registry hack/tools/registry github.com/distribution/distribution/v3 . ;;
	coredns) build_main coredns hack/tools/coredns github.com/coredns/coredns . ;;
	csi-provisioner)
		build_in_copy csi-provisioner "$provisioner_module" "$provisioner_version" ./cmd/csi-provisioner \
			"-X main.version=$provisioner_version"
		;;
	kube-rbac-proxy)
		# Built in this module's graph: it compiles against the Kubernetes libraries the operator
		# already compiled, where its own go.mod's older ones took a fresh machine four minutes of
		# CPU. csi-provisioner and kwok do not compile against them, so they keep their own. Its
		# version in go.mod is the newest release the Go module proxy serves; the EFS definition
		# names v0.20.0 (docs/development.md#the-real-node).
		local v
		v=$(modver go.mod github.com/brancz/kube-rbac-proxy)
		variant=this-module build kube-rbac-proxy github.com/brancz/kube-rbac-proxy \
			github.com/brancz/kube-rbac-proxy/cmd/kube-rbac-proxy \
			-ldflags "-w -X k8s.io/component-base/version.gitVersion=$v"
		;;
	grpc_health_probe) go_install grpc_health_probe github.com/grpc-ecosystem/grpc-health-probe "$grpc_health_probe_version" ;;
	benchstat) go_install benchstat golang.org/x/perf/cmd/benchstat "$benchstat_version" ;;
	openshift-crds)
		local v dir
		v=$(modver go.mod github.com/openshift/api)
		dir="$(go env GOMODCACHE)/github.com/openshift/api@$v"
		[[ -d $dir ]] || go mod download github.com/openshift/api
		echo "$dir"
		;;
	*)
		echo "hack/tools.sh: unknown tool $1 (known: ${all_tools[*]})" >&2
		return 2
		;;
	esac
}

# unit NAME: the build a tool belongs to. Tools of one unit are built by one job, in order: they
# share a build (the kube binaries, kwok and its CRDs, OLM's two binaries) or the compiled
# packages of one module graph (etcd and storage-manifest-check reuse what the kube binaries
# compiled, so building them beside it would compile Kubernetes twice).
unit() {
	case $1 in
	kube-* | kubelet | etcd | storage-manifest-check | pause) echo kube ;;
	kwok | kwok-crds) echo kwok ;;
	olm | catalog | olm-crds | cpb) echo olm ;;
	operator-controller | catalogd | olmv1-crds) echo olmv1 ;;
	*) echo "$1" ;;
	esac
}

# build_parallel TOOL...: builds the missing tools with up to jobs units at once, the units in the
# order first asked. On 2 cores this overlaps one unit's module downloads and single-threaded
# links with another's compiling. Every unit's output goes to its own log, printed whole when it
# failed (its downloads left out when it did not); every failure is reported, not only the first.
build_parallel() {
	local -a units=() pids=() logs=()
	local -A tools_of=()
	local t u
	for t in "$@"; do
		u=$(unit "$t")
		[[ -v "tools_of[$u]" ]] || units+=("$u")
		tools_of[$u]+=" $t"
	done
	mkdir -p "$cache"
	local logdir
	logdir=$(mktemp -d "$cache/.tmp.logs.XXXXXX")
	tmps+=("$logdir")
	local i running=0 status=0
	for i in "${!units[@]}"; do
		if ((running >= jobs)); then
			wait -n || true
			running=$((running - 1))
		fi
		logs[i]="$logdir/${units[i]}.log"
		# shellcheck disable=SC2086 # the unit's tool names, split on purpose
		"$0" ${tools_of[${units[i]}]} >/dev/null 2>"${logs[i]}" &
		pids[i]=$!
		running=$((running + 1))
	done
	for i in "${!units[@]}"; do
		if ! wait "${pids[i]}"; then
			echo "hack/tools.sh: building ${tools_of[${units[i]}]# } failed:" >&2
			cat "${logs[i]}" >&2
			status=1
		else
			grep -v '^go: downloading ' "${logs[i]}" >&2 || true
		fi
	done
	return $status
}

[[ $# -gt 0 ]] || { echo "usage: hack/tools.sh [-j N] <tool>...|all" >&2; exit 2; }
jobs=1
if [[ $1 == -j ]]; then
	[[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "hack/tools.sh: -j takes a positive number, not '${2:-}'" >&2; exit 2; }
	jobs=$2
	shift 2
fi
[[ $1 == all ]] && set -- "${all_tools[@]}"
for t in "$@"; do
	[[ " ${all_tools[*]} " == *" $t "* ]] || { echo "hack/tools.sh: unknown tool $t (known: ${all_tools[*]})" >&2; exit 2; }
done
((jobs == 1)) || build_parallel "$@"
requested_kube=()
for t in "$@"; do
	[[ " ${kube_bins[*]} " != *" $t "* ]] || requested_kube+=("$t")
done
for t in "$@"; do tool "$t"; done
