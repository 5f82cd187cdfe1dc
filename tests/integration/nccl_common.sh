# Sourced by the NCCL tests: find libnccl.so.2 or skip (exit 77).
# Order: $NCCLRR_NCCL, the -Dnccl_path hint ($NCCL_HINT), ldconfig,
# /usr/local/cuda*/lib*/libnccl.so.2.
find_nccl() {
	local c
	for c in "${NCCLRR_NCCL:-}" "${NCCL_HINT:-}"; do
		[ -n "$c" ] && [ -r "$c" ] && { echo "$c"; return 0; }
	done
	c=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
	[ -n "$c" ] && [ -r "$c" ] && { echo "$c"; return 0; }
	for c in /usr/local/cuda*/lib*/libnccl.so.2; do
		[ -r "$c" ] && { echo "$c"; return 0; }
	done
	return 1
}
NCCL=$(find_nccl) || {
	echo "SKIP: no libnccl.so.2 found (set NCCLRR_NCCL=/path/libnccl.so.2 or meson -Dnccl_path=...)"
	exit 77
}
export NCCLRR_NCCL=$NCCL
