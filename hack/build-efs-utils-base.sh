#!/usr/bin/env bash
# Builds the efs-utils base image of the EFS CSI driver (efs-utils-base/Containerfile) with podman,
# or buildah when podman is missing. The build args default to efs-utils-base/efs-utils.env;
# BASE_IMAGE, BUILDER_IMAGE, EFS_UTILS_VERSION and EFS_UTILS_COMMIT in the environment override
# them, and IMAGE overrides the tag (localhost/csi-olm/efs-utils-base:<efs-utils version>).
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../efs-utils-base" && pwd)"
args=(BASE_IMAGE BUILDER_IMAGE EFS_UTILS_VERSION EFS_UTILS_COMMIT)

# A commit belongs to one version: never pair an overridden version with the default commit.
if [[ -n "${EFS_UTILS_VERSION:-}" && -z "${EFS_UTILS_COMMIT:-}" ]]; then
	echo "build-efs-utils-base: EFS_UTILS_VERSION=${EFS_UTILS_VERSION} needs the commit of its tag in EFS_UTILS_COMMIT too" >&2
	exit 1
fi

# Read the file as data rather than sourcing it, so that the environment keeps precedence.
while IFS='=' read -r key value; do
	[[ -z "${key}" || "${key}" == \#* ]] && continue
	if [[ -z "${!key:-}" ]]; then
		printf -v "${key}" '%s' "${value}"
	fi
done <"${dir}/efs-utils.env"

for arg in "${args[@]}"; do
	if [[ -z "${!arg:-}" ]]; then
		echo "build-efs-utils-base: ${arg} is empty; set it in ${dir}/efs-utils.env or the environment" >&2
		exit 1
	fi
done
IMAGE="${IMAGE:-localhost/csi-olm/efs-utils-base:${EFS_UTILS_VERSION}}"

if command -v podman >/dev/null; then
	build=(podman build)
elif command -v buildah >/dev/null; then
	build=(buildah build)
else
	echo "build-efs-utils-base: neither podman nor buildah is on PATH; install one of them to build ${IMAGE}" >&2
	exit 1
fi

build_args=()
for arg in "${args[@]}"; do
	build_args+=(--build-arg "${arg}=${!arg}")
done

echo "build-efs-utils-base: ${build[*]} ${IMAGE} (efs-utils ${EFS_UTILS_VERSION} on ${BASE_IMAGE})"
"${build[@]}" --file "${dir}/Containerfile" --tag "${IMAGE}" "${build_args[@]}" "${dir}"
