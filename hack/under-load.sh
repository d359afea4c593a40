#!/usr/bin/env bash
# Runs a command while one core is kept busy, as a loaded CI machine or a developer's laptop
# would: a test that passes only on an idle machine waits for too little (a timing, not what its
# comment promises), and this is how such tests are found.
#
#   hack/under-load.sh make e2e
#
# The busy loop is a shell of its own, at the same priority as the command, killed when the
# command ends however it ends.
set -euo pipefail
(($#)) || { echo "usage: hack/under-load.sh COMMAND [ARG...]" >&2; exit 2; }
bash -c 'while :; do :; done' &
hog=$!
trap 'kill "$hog" 2>/dev/null || true' EXIT
echo "under-load: pid $hog keeps one core busy while: $*"
"$@"
