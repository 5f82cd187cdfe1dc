#!/usr/bin/env bash
# The generator rejects bad descriptions with "file:line: what" and exit 1.
# usage: test_gen.sh PYTHON GENERATOR TYPES_API
set -u
py=$1 gen=$2 types=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
expect() { # name, api text, message regexp
	printf '%s\n' "$2" >"$tmp/x.api"
	mkdir -p "$tmp/out"
	out=$("$py" "$gen" --out-dir "$tmp/out" --emit "${EMIT:-list}" "$types" "$tmp/x.api" 2>&1); rc=$?
	if [ $rc -eq 1 ] && grep -Eq "$3" <<<"$out"; then pass=$((pass + 1)); else
		echo "FAIL: $1: rc=$rc out=$out"; fail=$((fail + 1)); fi
}
expect "fn before domain" 'fn int f(int a)' 'x.api:1: fn before any "domain"'
expect "unknown keyword" $'domain d\nfrobnicate' 'x.api:2: unknown keyword'
expect "duplicate fn" $'domain d\nfn int f(int a)\nfn int f(int b)' 'x.api:3: f already described at .*x.api:2'
expect "unknown param" $'domain d\nfn int f(int a)\n  in b u' 'x.api:3: f has no parameter "b"'
expect "unknown encoding" $'domain d\nfn int f(int a)\n  in a wobble' 'x.api:3: unknown encoding'
expect "unknown enum" $'domain d\nfn int f(int a)\n  in a enum:Nope' 'unknown enum Nope'
expect "unknown type" $'domain d\nfn int f(struct thing t)' 'no encoding for parameter "t"'
expect "bad buf length" $'domain d\nfn int f(const void *p, int n)\n  in p buf:m' 'length "m" of p is not a parameter'
expect "out not pointer" $'domain d\nfn int f(int a)\n  out a u' 'out parameter a must be a pointer'
expect "result syntax" $'domain d\nfn void *f(int a)\n  result n u' 'x.api:3: expected "result NAME u\|x FUNCTION \[runid\]"'
expect "runid on bytes without fields" $'domain d\nfn int f(int *a)\n  out a custom:wc runid' 'x.api:3: runid wants "runid" on a number'
expect "runid fields on a number" $'domain d\nfn int f(int a)\n  in a u runid=1' 'x.api:3: runid wants'
expect "runid field beyond its entry" $'domain d\nfn int f(int *a)\n  out a custom:wc runid=6/6' 'x.api:3: runid wants'
expect "runid fields twice" $'domain d\nfn int f(int *a, int *b)\n  out a custom:wc runid=1\n  out b custom:wc runid=1' 'f: runid=FIELDS on more than one parameter'
expect "result of an int" $'domain d\nfn int f(int a)\n  result n u nrr_res_n' 'x.api:3: "result" needs a function returning a pointer'
expect "result named as a param" $'domain d\nfn void *f(int a)\n  result a u nrr_res_a' 'x.api:3: f already has a field "a"'
expect "bad ret" $'domain d ret=weird' 'unknown return convention'
expect "enum value" $'domain d\nenum E\n  A = x' 'expected "SYMBOL = VALUE"'
expect "bad role" $'domain d\nfn int f(int a) role=teleport' 'x.api:2: role wants one of'
expect "bad arg role" $'domain d\nfn int f(int a) arg=thing:a' 'x.api:2: arg wants "arg=ROLE:PARAM"'
expect "arg role names no param" $'domain d\nfn int f(int a) arg=fd:b' 'f: arg=fd:b names no recorded parameter'
expect "bad notready" $'domain d\nfn int f(int a) notready=out:a' 'x.api:2: notready wants'
expect "bad failed" $'domain d\nfn int f(int *a)\n  out a custom:wc failed=6/6:T' 'x.api:3: failed wants "failed=FIELD/NFIELDS:TABLE"'
expect "failed on an in param" $'domain d\nfn int f(int *a)\n  in a custom:wc failed=1/6:T' 'x.api:3: failed= is for an out parameter recorded as bytes'
expect "failed unknown table" $'domain d\nfn int f(int *a)\n  out a custom:wc failed=1/6:Nope' 'x.api:3: f: failed=: unknown enum Nope'
expect "bad transient errno" $'domain d\nfn int f(int a) transient=err:ENOTANERRNO' 'x.api:2: transient=err: wants errno names'
expect "bad conv" $'conv weird transient=err:EINTR' 'x.api:1: conv wants'
expect "bad conv option" $'conv errno retry=err:EINTR' 'x.api:1: unknown conv option'
expect "bad benign condition" $'domain d\nfn int f(int fd) benign=probe:err:EINVAL:fd=x' 'x.api:2: benign=...:PARAM=N wants a parameter name and a number'
expect "benign condition names no param" $'domain d\nfn int f(int fd) benign=probe:err:EINVAL:nofd=-1' 'x.api:2: f: benign=...:nofd=-1 names no parameter recorded as a number at enter'
expect "benign condition on a domain" $'domain d benign=probe:err:EINVAL:fd=-1' 'x.api:1: benign=...:fd=-1: a parameter condition is for a function'
expect "bad unread" $'domain d\nfn int f(int a, int b) unread=a:b' 'x.api:2: unread wants "unread=PARAM:WHEN:V1\|V2"'
expect "unread names no param" $'domain d\nfn int f(int a, int b) unread=a:c:1' 'f: unread=a:c:... names no recorded parameter c'
expect "bad since" $'domain d\nfn int f(int a) since=12.5' 'x.api:2: since wants a CUDA version number'
expect "entry syntax" $'domain d\nentry cuX since=2000' 'x.api:2: expected "entry RETTYPE NAME\(PARAMS\) \[since=VERSION\]"'
expect "entry before domain" 'entry CUresult cuX(int a) since=2000' 'x.api:1: entry before any "domain"'
expect "enum message" $'domain d\nenum E\n  A = 1 "no end' 'x.api:3: expected "SYMBOL = VALUE" or'
# the fake driver's table, version script and error names (--emit fake-cuda)
EMIT=fake-cuda expect "entry of a fn" $'domain cuda_driver\nfn int cuF(int a) since=2000\nentry CUresult cuF(int a) since=3000' \
	'x.api:3: cuF is described by a fn line .*x.api:2.*since=3000'
EMIT=fake-cuda expect "entry twice" $'domain cuda_driver\nentry CUresult cuG(void) since=2000\nentry CUresult cuG(void) since=3000' 'x.api:3: entry cuG repeats'
EMIT=fake-cuda expect "same version twice" $'domain cuda_driver\nentry CUresult cuG(void) since=2000\nentry CUresult cuG_v2(int a) since=2000' \
	'two variants of cuG claim version 2000'
EMIT=fake-cuda expect "entry not CUresult" $'domain cuda_driver\nentry int cuK(void) since=2000' 'x.api:2: cuK returns int'
EMIT=fake-cuda expect "entry without since" $'domain cuda_driver\nentry CUresult cuQ(void)' 'x.api:2: cuQ has no since=VERSION'
EMIT=fake-cuda expect "no message" $'domain cuda_driver\nenum CUresult\n  CUDA_SUCCESS = 0' 'CUresult: CUDA_SUCCESS has no message'
printf 'domain cuda_driver\nfn CUresult cuF_v2(int a) since=3020\nentry CUresult cuF(int a, const char *s) since=2000\nentry CUresult cuH(void) since=11000\nenum CUresult\n  CUDA_SUCCESS = 0 "no error"\n  CUDA_ERROR_NOT_READY = 600 "device not ready"\n' >"$tmp/fc.api"
mkdir -p "$tmp/fc"
if "$py" "$gen" --out-dir "$tmp/fc" --emit fake-cuda "$types" "$tmp/fc.api" &&
	[ "$(grep '^T(' "$tmp/fc/nrr_fake_cuda_table.h" | tr '\n' ' ')" = 'T("cuF", 3020, cuF_v2) T("cuF", 2000, cuF) T("cuH", 11000, cuH) ' ] &&
	[ "$(grep -c '^    cu' "$tmp/fc/libcuda.map")" = 3 ] &&
	grep -q '{ 0, "CUDA_SUCCESS", "no error" },' "$tmp/fc/nrr_fake_cuda_errors.h" &&
	grep -q '^CUresult fake_cuF(int a, const char\* s);$' "$tmp/fc/nrr_fake_cuda_entry.h" &&
	grep -A4 '^FAKE_EXPORT CUresult cuF_v2(int a)$' "$tmp/fc/nrr_fake_cuda_entry.c" | tr '\n\t' '  ' |
		grep -q '{  FAKE_COUNT("cuF", CUresult);  return fake_cuF_v2(a); }'; then pass=$((pass + 1)); else
	echo "FAIL: fake-cuda output: $(cat "$tmp"/fc/* 2>&1)"; fail=$((fail + 1)); fi
# the fake NVML's version script, error names and entry points (--emit fake-nvml)
EMIT=fake-nvml expect "since= without a lookup" $'domain nvml ret=nvml:nvmlReturn_t\nentry nvmlReturn_t nvmlQ(void) since=2000' \
	'x.api:2: nvmlQ: since= is the CUDA driver.s lookup version'
EMIT=fake-nvml expect "nvml entry of a fn" $'domain nvml ret=nvml:nvmlReturn_t\nfn nvmlReturn_t nvmlF(int a) fake\nentry nvmlReturn_t nvmlF(int a)\nenum nvmlReturn_t\n  NVML_SUCCESS = 0 "Success"' \
	'x.api:3: nvmlF is described by a fn line .*x.api:2.*give that line fake'
printf 'domain nvml ret=nvml:nvmlReturn_t\nfn nvmlReturn_t nvmlF_v2(int a) fake\nfn const char *nvmlS(nvmlReturn_t r) ret=ptr fake\nfn nvmlReturn_t nvmlT(void)\nentry nvmlReturn_t nvmlE(unsigned int *n)\nenum nvmlReturn_t\n  NVML_SUCCESS = 0 "Success"\n  NVML_ERROR_UNKNOWN = 999 "Unknown Error"\n' >"$tmp/fn.api"
mkdir -p "$tmp/fn"
if "$py" "$gen" --out-dir "$tmp/fn" --emit fake-nvml "$types" "$tmp/fn.api" &&
	[ "$(grep '^    nvml' "$tmp/fn/libnvidia-ml.map" | tr -d ' \n')" = 'nvmlF_v2;nvmlS;nvmlE;' ] &&
	grep -q '{ 999, "NVML_ERROR_UNKNOWN", "Unknown Error" },' "$tmp/fn/nrr_fake_nvml_errors.h" &&
	grep -q '^	NVML_ERROR_UNKNOWN = 999,$' "$tmp/fn/nrr_fake_nvml_errors.h" &&
	grep -q '^nvmlReturn_t fake_nvmlE(unsigned int\* n);$' "$tmp/fn/nrr_fake_nvml_entry.h" &&
	grep -A4 '^FAKE_EXPORT nvmlReturn_t nvmlF_v2(int a)$' "$tmp/fn/nrr_fake_nvml_entry.c" | tr '\n\t' '  ' |
		grep -q '{  FAKE_COUNT("nvmlF", nvmlReturn_t);  return fake_nvmlF_v2(a); }' &&
	grep -A3 '^FAKE_EXPORT const char\* nvmlS(nvmlReturn_t r)$' "$tmp/fn/nrr_fake_nvml_entry.c" | tr '\n\t' '  ' |
		grep -q '{  return fake_nvmlS(r); }'; then pass=$((pass + 1)); else
	echo "FAIL: fake-nvml output: $(cat "$tmp"/fn/* 2>&1)"; fail=$((fail + 1)); fi
# fault: the fake's counting macros' constants and the rerun's table
printf 'domain verbs\nfn int ibv_z(int a) fault\nfn int ibv_b(int a)\nfn int ibv_a(int a) fault\ndomain other\nfn int o_f(int a) fault\n' >"$tmp/fv.api"
mkdir -p "$tmp/fv"
if "$py" "$gen" --out-dir "$tmp/fv" --emit fake-verbs "$types" "$tmp/fv.api" &&
	"$py" "$gen" --out-dir "$tmp/fv" --emit benign "$types" "$tmp/fv.api" &&
	[ "$(grep -o 'NRR_FAULT_[a-z_]*' "$tmp/fv/nrr_fake_verbs_fault.h" | tr '\n' ' ')" = 'NRR_FAULT_ibv_z NRR_FAULT_ibv_a ' ] &&
	[ "$(sed -n '/nrr_fault_fns\[\] = {/,/^};/p' "$tmp/fv/nrr_benign_gen.c" | grep -o '"[a-z_]*"' | tr '\n' ' ')" = '"ibv_a" "ibv_z" "o_f" ' ]
then pass=$((pass + 1)); else echo "FAIL: fault output: $(cat "$tmp"/fv/* 2>&1)"; fail=$((fail + 1)); fi
# a struct:TYPE out parameter whose c line gives TYPE a body: its members
# for the replay's member-by-member compare (--emit replay)
printf 'c typedef struct { int a, b[3]; struct { int x; } s; void *p; } T_t;\ndomain verbs\nfn int ibv_q(void *q, T_t *t)\n  out t struct:T_t\n' >"$tmp/rp.api"
mkdir -p "$tmp/rp"
if "$py" "$gen" --out-dir "$tmp/rp" --emit replay "$types" "$tmp/rp.api" &&
	[ "$(sed -n '/nrr_rc_f_ibv_q_t\[\] = {/,/^};/p' "$tmp/rp/nrr_replay_gen.c" | grep -o '{ "[a-z]*", offsetof(T_t, [a-z]*)' | tr '\n' ' ')" = \
		'{ "a", offsetof(T_t, a) { "b", offsetof(T_t, b) { "s", offsetof(T_t, s) { "p", offsetof(T_t, p) ' ] &&
	grep -q '{ "t", NRR_RC_PTR, 0, 0, (uint32_t)(sizeof(T_t)), nrr_rc_f_ibv_q_t },' "$tmp/rp/nrr_replay_gen.c" &&
	grep -q '{ "q", NRR_RC_PTR, 0, 0, (uint32_t)(0), NULL },' "$tmp/rp/nrr_replay_gen.c"
then pass=$((pass + 1)); else echo "FAIL: replay members: $(grep -A8 'ibv_q' "$tmp/rp/nrr_replay_gen.c" 2>&1)"; fail=$((fail + 1)); fi
printf 'domain d\nfn int f(int a, const char *s, int *o)\n' >"$tmp/ok.api"
out=$("$py" "$gen" --emit list "$types" "$tmp/ok.api"); rc=$?
[ $rc -eq 0 ] && grep -q '^d f 3 -$' <<<"$out" && pass=$((pass + 1)) || { echo "FAIL: good description: $out"; fail=$((fail + 1)); }
echo "gen: $pass passed, $fail failed"
[ $fail -eq 0 ]
