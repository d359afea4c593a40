#!/bin/sh
# check-catalogs.sh: what a catalog repository's CI checks on a change, with csi-olm. The csi-olm
# image carries it as /usr/share/csi-olm/check-catalogs.sh; the GitHub Actions workflow and the
# Tekton Task beside it run it there (docs/ci/README.md).
#
#   check-catalogs.sh TREE PUBLISHED [SINCE]
#
#   TREE       the catalogs of one index, a directory per OpenShift minor (TREE/v4.N/)
#   PUBLISHED  the catalogs.txt of the release the change follows: "<catalog> <minor> <image>"
#              lines, whose <catalog> is TREE's last name (certified for catalog/certified)
#   SINCE      optional: TREE before the change; the cluster-upgrade check then fails only on
#              installs the change newly leaves stuck, not on those the published tree had
#
#   CHANGED         the minors to check, space-separated (v4.10 v4.11): those the change
#                   touches; unset or empty, every minor of TREE
#   CSI_OLM         the csi-olm to run (csi-olm, from PATH)
#   REGISTRY_FLAGS  flags for pulling the published catalog images (--use-http, --ca-file F,
#                   --skip-tls-verify), word-split
#
# Per minor: `catalog validate`, then `catalog diff --breaking` from the minor's published image
# to the change. Then `catalog cluster-upgrade` over the whole tree, since every minor's catalog
# takes the clusters upgrading from the one before. Every check runs, even after one fails, and
# the script exits with csi-olm's codes: 0 when all pass, 1 when one found a problem, 2 when one
# could not run.
set -u

usage() {
	echo "usage: check-catalogs.sh TREE PUBLISHED [SINCE]" >&2
	exit 2
}
[ $# -ge 2 ] && [ $# -le 3 ] || usage
tree=${1%/}
published=$2
since=${3:-}
csi_olm=${CSI_OLM:-csi-olm}
registry_flags=${REGISTRY_FLAGS:-}
catalog=${tree##*/}
[ -d "$tree" ] || { echo "check-catalogs: $tree is not a directory" >&2; exit 2; }
[ -r "$published" ] || { echo "check-catalogs: cannot read $published" >&2; exit 2; }

status=0
failed=""

# check NAME COMMAND...: runs one check, and keeps the worst exit status (2 over 1 over 0).
check() {
	name=$1
	shift
	echo "==> $name: $*"
	"$@"
	rc=$?
	case $rc in
	0) return ;;
	1) [ "$status" -eq 2 ] || status=1 ;;
	*) status=2 ;;
	esac
	failed="$failed
  $name (exit $rc)"
}

# finding MESSAGE: a problem the script finds itself.
finding() {
	echo "==> $1"
	[ "$status" -eq 2 ] || status=1
	failed="$failed
  $1"
}

# published_image MINOR: the image PUBLISHED lists for TREE's catalog at MINOR, if any.
published_image() {
	while read -r c m image rest; do
		if [ "$c" = "$catalog" ] && [ "$m" = "$1" ]; then
			echo "$image"
			return
		fi
	done <"$published"
}

minors=${CHANGED:-}
if [ -z "$minors" ]; then
	for dir in "$tree"/v*/; do
		[ -d "$dir" ] || continue
		dir=${dir%/}
		minors="${minors:+$minors }${dir##*/}"
	done
fi
[ -n "$minors" ] || { echo "check-catalogs: $tree has no minor's catalog (v4.N/)" >&2; exit 2; }

for minor in $minors; do
	image=$(published_image "$minor")
	if [ ! -d "$tree/$minor" ]; then
		if [ -n "$image" ]; then
			finding "$catalog $minor: published as $image, and $tree/$minor is gone: clusters at $minor lose their catalog"
		else
			echo "==> $catalog $minor: neither in $tree nor published, nothing to check"
		fi
		continue
	fi
	check "validate $catalog $minor" "$csi_olm" catalog validate "$tree/$minor"
	if [ -n "$image" ]; then
		# shellcheck disable=SC2086 # the registry flags are words
		check "diff --breaking $catalog $minor" "$csi_olm" catalog diff --breaking $registry_flags "$image" "$tree/$minor"
	else
		echo "==> $catalog $minor: not in $published, a new minor: nothing published to break"
	fi
done

if [ -n "$since" ]; then
	check "cluster-upgrade $catalog" "$csi_olm" catalog cluster-upgrade "$tree" --since "$since"
else
	check "cluster-upgrade $catalog" "$csi_olm" catalog cluster-upgrade "$tree"
fi

if [ "$status" -eq 0 ]; then
	echo "check-catalogs: $catalog passed every check ($minors)"
else
	echo "check-catalogs: $catalog failed:$failed"
fi
exit "$status"
