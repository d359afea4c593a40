#!/usr/bin/env bash
# Fails when git tracks a file over 1 MiB or a binary file (one with a NUL byte), unless the file
# is listed in hack/tracked-files.allow: git holds source, and generated goldens only where a
# test reads them. Run by `make verify`.
set -euo pipefail
cd "$(dirname "$0")/.."

limit=$((1024 * 1024))
allow=hack/tracked-files.allow
declare -A allowed=()
while IFS= read -r line; do
	line=${line%%#*}
	line=${line//[[:space:]]/}
	[[ -n $line ]] && allowed[$line]=1
done <"$allow"

bad=()
while IFS= read -r -d '' f; do
	[[ -f $f && -z ${allowed[$f]:-} ]] || continue
	size=$(stat -c %s "$f")
	if ((size > limit)); then
		bad+=("$f: $((size / 1024)) KiB, over the 1 MiB limit")
	elif [[ $size -gt 0 ]] && ! grep -qI . "$f"; then
		bad+=("$f: binary (contains a NUL byte)")
	fi
done < <(git ls-files -z)

if ((${#bad[@]} > 0)); then
	echo "tracked files that do not belong in git (a build output or test binary?):" >&2
	printf '  %s\n' "${bad[@]}" >&2
	echo "remove them (git rm --cached) and .gitignore them; a golden file a test reads goes in $allow" >&2
	exit 1
fi
