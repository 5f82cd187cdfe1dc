# Sourced by the tests that replay with small socket buffers: skips the
# test (77) where `unshare -n` is refused (not root), and defines
#   small_buffers CMD ARGS...
# which runs CMD in a network namespace of its own (loopback up) whose TCP
# buffers stop at 64 KB; the machine's own buffers are untouched.
# usage: . smallbuf.sh
unshare -n true 2>/dev/null || { echo "SKIP: unshare -n needs root (CAP_SYS_ADMIN)"; exit 77; }
small_buffers() {
	unshare -n bash -c 'ip link set lo up && echo "4096 16384 65536" >/proc/sys/net/ipv4/tcp_rmem &&
		echo "4096 16384 65536" >/proc/sys/net/ipv4/tcp_wmem && exec "$@"' _ "$@"
}
