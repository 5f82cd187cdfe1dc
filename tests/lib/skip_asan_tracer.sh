# Sourced by the tests that record: an AddressSanitizer build of the tracer
# cannot be preloaded into programs (the ASan runtime must come first in a
# process), so they skip (77) in such a build.
# usage: . skip_asan_tracer.sh; skip_asan_tracer PATH/libncclrr-trace.so
skip_asan_tracer() {
	if ldd "$1" 2>/dev/null | grep -c libasan >/dev/null; then
		echo "SKIP: the tracer is built with AddressSanitizer, which cannot be preloaded into other programs; run this test in a build without -Db_sanitize"
		exit 77
	fi
}
