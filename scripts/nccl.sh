#!/usr/bin/env bash
# NCCL for the fake cluster: real NCCL objects (libnccl_static.a, which holds
# NCCL without the CUDA runtime) relinked into libnccl.so.2 against ncclrr's
# own CUDA runtime (build/replayer/fake/libcudart.so.N). See
# ../shared/FAKE_CUDA.md and replayer/fake/README.md for why the NCCL under
# /usr/local/cuda cannot be used.
#
#   scripts/nccl.sh fetch [VERSION...]   download Debian's libnccl-dev (default
#                                        2.22.3-1-1, trixie; 'sid' is sid's
#                                        newest, 2.29.7-1-1 when written)
#   scripts/nccl.sh relink ARCHIVE [-o OUTROOT]
#                                        relink any libnccl_static.a (Debian's,
#                                        or NVIDIA's of the version you run) into
#                                        OUTROOT/<version>/libnccl.so.2
#                                        (default OUTROOT: build/nccl), with its
#                                        build facts in BUILDINFO beside it
#                                        (what `ncclrr nccl list` shows)
#   scripts/nccl.sh setup                fetch and relink $NCCLRR_NCCL_VERSIONS
#                                        (default: the pinned one and sid's);
#                                        when a download fails, say why and exit
#                                        0 so that everything else builds and
#                                        tests (the tests that need it skip)
#
# Downloads use apt with a private sources list built from this machine's own
# Debian mirror (no host name is written here), Debian's archive keyring (the
# signature checks stay on) and private state and cache directories under
# $NCCLRR_CACHE (default ~/.cache/ncclrr), reused when present. The system's
# apt configuration is not touched.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PINNED=2.22.3-1-1
cache=${NCCLRR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ncclrr}
say() { echo "nccl.sh: $*" >&2; }
die() { say "$*"; exit 1; }

suite_of() { # Debian version -> suite holding it in contrib
	case $1 in
	2.22.3-1-1) echo trixie ;;
	*) echo sid ;;
	esac
}

apt_opts() {
	local d=$cache/apt
	echo -o "Dir::Etc::SourceList=$d/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
		-o "Dir::State=$d/state" -o "Dir::Cache=$d/cache" -o Dir::State::status=/dev/null \
		-o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)"
}

apt_lists() {
	local d=$cache/apt
	mkdir -p "$d/state/lists/partial" "$d/cache/archives/partial"
	if [ ! -f "$d/sources.list" ]; then
		local codename mirror
		codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
		[ -n "$codename" ] || die "cannot tell this system's Debian release from /etc/os-release"
		mirror=$(apt-get update --print-uris 2>/dev/null |
			sed -n "s|^'\(.*\)/dists/$codename/InRelease'.*|\1|p" | head -n 1)
		[ -n "$mirror" ] || die "no Debian mirror for '$codename' in this machine's apt configuration"
		local key=/usr/share/keyrings/debian-archive-keyring.gpg
		[ -r "$key" ] || die "$key is missing: install debian-archive-keyring"
		printf 'deb [signed-by=%s] %s %s contrib\n' "$key" "$mirror" trixie "$key" "$mirror" sid >"$d/sources.list"
	fi
	# lists younger than a day are reused
	if [ -z "$(find "$d/state/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -n 1)" ]; then
		# shellcheck disable=SC2046
		apt-get $(apt_opts) -qq update || die "apt-get update with $d/sources.list failed (no network?)"
	fi
}

# sid -> sid's current libnccl-dev version (from the private lists)
resolve() {
	if [ "$1" != sid ]; then
		echo "$1"
		return 0
	fi
	apt_lists
	local v
	# shellcheck disable=SC2046
	v=$(apt-cache $(apt_opts) madison libnccl-dev 2>/dev/null | awk -F' *[|] *' '$3 ~ / sid\// {print $2; exit}')
	[ -n "$v" ] || die "no libnccl-dev in sid contrib (see the apt lists under $cache/apt)"
	echo "$v"
}

# fetch VERSION -> prints the directory holding libnccl_static.a
fetch_one() {
	local v dir
	v=$(resolve "$1") || return 1
	dir=$cache/libnccl-dev_$v
	if [ -f "$dir/usr/lib/x86_64-linux-gnu/libnccl_static.a" ]; then
		echo "$dir/usr/lib/x86_64-linux-gnu"
		return 0
	fi
	apt_lists
	local deb=$cache/debs
	mkdir -p "$deb"
	if ! ls "$deb"/libnccl-dev_"${v}"_*.deb >/dev/null 2>&1; then
		say "downloading libnccl-dev $v ($(suite_of "$v") contrib, about 115 MB)"
		# shellcheck disable=SC2046
		(cd "$deb" && apt-get $(apt_opts) -qq download "libnccl-dev=$v") ||
			die "cannot download libnccl-dev=$v (see above)"
	fi
	rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
	dpkg-deb -x "$(ls "$deb"/libnccl-dev_"${v}"_*.deb | head -n 1)" "$dir.tmp"
	[ -f "$dir.tmp/usr/lib/x86_64-linux-gnu/libnccl_static.a" ] || die "libnccl-dev $v has no libnccl_static.a"
	rm -rf "$dir" && mv "$dir.tmp" "$dir"
	echo "$dir/usr/lib/x86_64-linux-gnu"
}

# The NCCL version of an archive, from the version string NCCL prints
# ("NCCL version 2.22.3+cuda12.1"): "2.22.3 12"
archive_version() {
	local s
	# (grep stops at the first match: strings' SIGPIPE is no failure)
	s=$(strings -a "$1" | grep -m1 -oE 'NCCL version [0-9]+\.[0-9]+\.[0-9]+(\+cuda[0-9]+\.[0-9]+)?' || true)
	[ -n "$s" ] || die "$1: no 'NCCL version X.Y.Z' string: not an NCCL archive?"
	local v=${s#NCCL version }
	local cuda=12
	case $v in *+cuda*) cuda=${v#*+cuda} ;; esac
	echo "${v%%+*} ${cuda%%.*} $cuda"
}

relink() {
	local archive=$1 outroot=$2 source=${3:-"archive $1"}
	[ -r "$archive" ] || die "cannot read $archive: give the path of a libnccl_static.a"
	ar t "$archive" >/dev/null 2>&1 || die "$archive is not an ar archive (libnccl_static.a)"
	command -v g++ >/dev/null || die "g++ is needed to relink NCCL: apt-get install g++"
	local v cuda cuda_full
	read -r v cuda cuda_full < <(archive_version "$archive")
	local rt=$top/build/replayer/fake/libcudart.so.$cuda
	[ -f "$rt" ] || die "$rt is missing: build ncclrr first (ninja -C build); NCCL $v wants CUDA runtime $cuda"
	local out=$outroot/$v
	if [ -f "$out/BUILDINFO" ] && [ "$out/libnccl.so.2" -nt "$archive" ] && [ "$out/libnccl.so.2" -nt "$rt" ] &&
		[ "$out/libnccl.so.2" -nt "$0" ] && [ "$out/libnccl.so.2" -nt "$top/scripts/nccl_sysfs.c" ] &&
		[ "$out/libnccl.so.2" -nt "$top/scripts/nccl_sysfs.wrap" ] &&
		[ "$out/libnccl.so.2" -nt "$top/scripts/nccl_isoc23_compat.c" ]; then
		echo "$out/libnccl.so.2"
		return 0
	fi
	local tmp
	tmp=$(mktemp -d)
	# enhcompat.o holds weak stubs of cudaGetDriverEntryPoint and four more
	# runtime functions that answer cudaErrorStubLibrary: linked in, they
	# would beat the runtime's and NCCL would find no cuMem driver calls
	cp "$archive" "$tmp/nccl.a"
	ar d "$tmp/nccl.a" enhcompat.o 2>/dev/null || true
	cc -O2 -fPIC -c "$top/scripts/nccl_isoc23_compat.c" -o "$tmp/compat.o"
	# NCCL's file calls go through nccl_sysfs.c, which answers a virtual
	# host's /sys/class/infiniband and the like from $NCCLRR_SYSFS (the
	# view `ncclrr run` writes) and passes everything else on
	cc -O2 -fPIC -c "$top/scripts/nccl_sysfs.c" -o "$tmp/sysfs.o"
	local wrap="" sym
	for sym in $(grep -v '^#' "$top/scripts/nccl_sysfs.wrap"); do wrap="$wrap -Wl,--wrap=$sym"; done
	mkdir -p "$out"
	say "relinking NCCL $v against ncclrr's libcudart.so.$cuda into $out"
	# shellcheck disable=SC2086
	g++ -shared -o "$out/libnccl.so.2.tmp" -Wl,-soname,libnccl.so.2 -Wl,--no-relax $wrap \
		-Wl,--whole-archive "$tmp/nccl.a" -Wl,--no-whole-archive "$tmp/compat.o" "$tmp/sysfs.o" \
		-L"$(dirname "$rt")" -l:"libcudart.so.$cuda" -lpthread -ldl -lrt ||
		{ rm -rf "$tmp"; die "relinking $archive failed (see above)"; }
	rm -rf "$tmp"
	mv "$out/libnccl.so.2.tmp" "$out/libnccl.so.2"
	echo "$v" >"$out/VERSION"
	# build facts: where it came from, the CUDA it was built for, the
	# runtime functions it calls (checked against ncclrr's runtime by
	# `ncclrr nccl list`)
	{
		echo "version=$v"
		echo "cuda=$cuda_full"
		echo "source=$source"
		echo "archive=$archive"
		echo "sha256=$(sha256sum "$archive" | cut -d' ' -f1)"
		echo "relinked=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "runtime=$(nm -D --undefined-only "$out/libnccl.so.2" | awk '$2 ~ /^_*cuda/ {sub(/@.*/, "", $2); print $2}' | sort -u | tr '\n' ' ')"
	} >"$out/BUILDINFO.tmp"
	mv "$out/BUILDINFO.tmp" "$out/BUILDINFO"
	local inc
	inc=$(dirname "$(dirname "$(dirname "$archive")")")/include/nccl.h
	[ -f "$inc" ] && cp "$inc" "$out/"
	echo "$out/libnccl.so.2"
}

cmd=${1:-}
shift || true
case $cmd in
fetch)
	[ $# -gt 0 ] || set -- "$PINNED"
	for v in "$@"; do fetch_one "$v"; done
	;;
relink)
	[ $# -ge 1 ] || die "usage: scripts/nccl.sh relink ARCHIVE [-o OUTROOT]"
	archive=$1 outroot=$top/build/nccl
	shift
	if [ "${1:-}" = "-o" ] && [ -n "${2:-}" ]; then outroot=$2; fi
	relink "$archive" "$outroot" "archive $(realpath "$archive")"
	;;
setup)
	for v in ${NCCLRR_NCCL_VERSIONS:-$PINNED sid}; do
		if ! dir=$(fetch_one "$v"); then
			say "no libnccl-dev $v: the tests that need it will skip and say so (run 'scripts/nccl.sh setup' again with network)"
			continue
		fi
		deb=$(basename "$(dirname "$(dirname "$(dirname "$dir")")")")   # libnccl-dev_VERSION
		deb=${deb#libnccl-dev_}
		relink "$dir/libnccl_static.a" "$top/build/nccl" "Debian libnccl-dev $deb ($(suite_of "$deb") contrib)" >/dev/null
	done
	;;
*)
	sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'
	[ "$cmd" = "-h" ] || [ "$cmd" = "--help" ] || exit 2
	;;
esac
