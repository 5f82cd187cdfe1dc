#!/usr/bin/env bash
# Install what ncclrr needs (Debian 12 packages) and build it in ./build.
# Sourced by scripts/main-job.sh and scripts/test-all.sh; safe to run again.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(meson ninja-build pkg-config gcc g++ binutils python3 libzstd-dev liblttng-ust-dev
          lttng-tools libbabeltrace2-dev babeltrace2 libibverbs-dev rdma-core ibverbs-utils
          libprotobuf-c-dev protobuf-c-compiler zlib1g-dev procps iproute2 debian-archive-keyring)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup: run as root (or install these Debian packages first): ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -f build/build.ninja ]; then
	meson setup build --buildtype=debugoptimized >/dev/null
fi
ninja -C build
# real NCCL for the fake cluster: Debian's libnccl-dev relinked against
# ncclrr's CUDA runtime into build/nccl/VERSION (scripts/nccl.sh)
bash scripts/nccl.sh setup
