# shellcheck shell=bash
# The start every traces/*/record.sh shares; sourced, with the script's
# own arguments, as `. "$(dirname "$0")/../record_common.sh"`: strict
# mode; here: the script's directory; root: the source tree; build: the
# build directory, the first argument (default ROOT/build), shifted off
# (the rest are trace names); ncclrr: the CLI built there.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
shift || true
# shellcheck disable=SC2034 # (used by the scripts that source this)
ncclrr=$build/cli/ncclrr

# use_nccl: the relinked NCCL 2.22.3 of the build (scripts/nccl.sh), or
# $NCCLRR_NCCL; fails when there is none
use_nccl() {
	export NCCLRR_NCCL=${NCCLRR_NCCL:-$build/nccl/2.22.3/libnccl.so.2}
	[ -r "$NCCLRR_NCCL" ] || { echo "record.sh: no NCCL at $NCCLRR_NCCL: run scripts/nccl.sh setup" >&2; exit 1; }
}
