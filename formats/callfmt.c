/* SPDX-License-Identifier: MIT */
/* callfmt.c - schema-driven text rendering of calls. */
#include <arpa/inet.h>
#include <errno.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "callfmt.h"

bool nrr_name_match(const char *globs, const char *name)
{
	char buf[256];
	for (const char *p = globs; *p;) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		if (n < sizeof(buf)) {
			memcpy(buf, p, n);
			buf[n] = 0;
			if (fnmatch(buf, name, 0) == 0)
				return true;
		}
		p += n + (c ? 1 : 0);
	}
	return false;
}

int nrr_msghdr_decode(const nrr_value *v, nrr_msghdr_rec *m)
{
	const uint8_t *p = v->p, *end = v->p + v->len;
	uint64_t x;
	int e;
	memset(m, 0, sizeof(*m));
	if (!p)
		return NRR_ETRUNC;
	if ((e = nrr_get_uvar(&p, end, &m->iovlen)) || (e = nrr_get_uvar(&p, end, &m->len)) ||
	    (e = nrr_get_uvar(&p, end, &x)))
		return e;
	if (x > 64 || x > (uint64_t)(end - p))
		return x > 64 ? NRR_ECORRUPT : NRR_ETRUNC;
	m->head = p;
	m->head_len = (uint32_t)x;
	p += x;
	if (p >= end)
		return NRR_ETRUNC;
	unsigned n = *p++;
	if (n > 16)
		return NRR_ECORRUPT;
	for (unsigned i = 0; i < n; i++)
		if ((e = nrr_get_svar(&p, end, &m->fds[i])))
			return e;
	m->nfd = n;
	if (p == end)
		return 0;   /* an older record: no name */
	if ((e = nrr_get_uvar(&p, end, &x)))
		return e;
	if (x > (uint64_t)(end - p))
		return NRR_ETRUNC;
	m->has_name = true;
	m->name_len = (uint32_t)x;
	m->name = x ? p : NULL;
	return 0;
}

int nrr_mmsg_decode(const nrr_value *v, nrr_mmsg_rec *m, int max)
{
	const uint8_t *p = v->p, *end = v->p + v->len;
	if (!p || !v->len)
		return 0;
	int n = *p++;
	if (n > max)
		return NRR_ECORRUPT;
	for (int i = 0; i < n; i++) {
		uint64_t hl, nl;
		int e;
		if ((e = nrr_get_uvar(&p, end, &m[i].len)) || (e = nrr_get_uvar(&p, end, &hl)))
			return e;
		if (hl > 32 || hl > (uint64_t)(end - p))
			return hl > 32 ? NRR_ECORRUPT : NRR_ETRUNC;
		m[i].head = p;
		m[i].head_len = (uint32_t)hl;
		p += hl;
		if ((e = nrr_get_uvar(&p, end, &nl)))
			return e;
		if (nl > (uint64_t)(end - p))
			return NRR_ETRUNC;
		m[i].name = nl ? p : NULL;
		m[i].name_len = (uint32_t)nl;
		p += nl;
	}
	return n;
}

#define SGES_STR_(x) #x
#define SGES_STR(x) SGES_STR_(x)

const char *nrr_sges_why(enum nrr_sges s)
{
	switch (s) {
	case NRR_SGES_KEPT: return "";
	case NRR_SGES_NONE: return "recorded by a tracer before the sge trailer";
	case NRR_SGES_MANY_WRS: return "the chain was longer than the " SGES_STR(NRR_SGE_WRS) " requests the tracer keeps sges of";
	case NRR_SGES_MANY_SGES: return "a request had more than the " SGES_STR(NRR_SGE_MAX) " sges the tracer keeps";
	case NRR_SGES_NO_ROOM: return "the recorded value had no room left for them";
	case NRR_SGES_CUT: return "the sge trailer was cut short";
	}
	return "unknown";
}

int nrr_wr_decode(const nrr_value *v, bool send, nrr_wr_rec *w, enum nrr_sges *sges)
{
	const uint8_t *p = v->p, *end = v->p + v->len;
	unsigned nf = send ? NRR_WR_SEND_FIELDS : NRR_WR_RECV_FIELDS;
	*sges = NRR_SGES_NONE;
	if (!p || !v->len)
		return 0;
	unsigned n = *p++;
	if (n > NRR_ENTRIES_MAX)
		return NRR_ECORRUPT;
	memset(w, 0, n * sizeof(*w));
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < nf; k++) {
			int e = nrr_get_uvar(&p, end, &w[i].f[k]);
			if (e)
				return e;
		}
	uint64_t chain, why;
	if (p == end || nrr_get_uvar(&p, end, &chain) || !n)
		return (int)n;   /* no trailer: the requests alone */
	if (!chain) {
		/* the writer's mark: why it left the trailer out */
		if (!nrr_get_uvar(&p, end, &why) && why >= NRR_SGES_MANY_WRS && why <= NRR_SGES_NO_ROOM)
			*sges = (enum nrr_sges)why;
		return (int)n;
	}
	if (chain != n)
		return (int)n;   /* one of another chain: the requests alone */
	for (unsigned i = 0; i < n; i++) {
		uint64_t k;
		if (nrr_get_uvar(&p, end, &k) || k > NRR_SGE_MAX)
			goto cut;
		for (unsigned j = 0; j < k; j++)
			if (nrr_get_uvar(&p, end, &w[i].sge[j].addr) || nrr_get_uvar(&p, end, &w[i].sge[j].len) ||
			    nrr_get_uvar(&p, end, &w[i].sge[j].lkey))
				goto cut;
		w[i].nsge = (unsigned)k;
	}
	*sges = NRR_SGES_KEPT;
	return (int)n;
cut:
	for (unsigned i = 0; i < n; i++)
		w[i].nsge = 0;
	*sges = NRR_SGES_CUT;
	return (int)n;
}

/* @return true when @r is an error under return convention @ret */
static bool conv_error(uint8_t ret, int64_t r)
{
	switch (ret) {
	case NRR_RET_CURESULT:
	case NRR_RET_CUDART:
	case NRR_RET_NCCL:
	case NRR_RET_NVML:
	case NRR_RET_POSERR:
		return r != 0;
	case NRR_RET_ERRNO:
		return r == -1;
	case NRR_RET_PTR:
		return r == 0;
	default:
		return false;
	}
}

/* the errno of a failed call: -1 / NULL with errno, or a poserr result;
 * false when its convention has none */
static bool call_errno(const nrr_call *c, int64_t *err)
{
	switch (c->fn->ret) {
	case NRR_RET_ERRNO:
	case NRR_RET_PTR:
		*err = c->err;
		return true;
	case NRR_RET_POSERR:
		*err = c->result;
		return true;
	default:
		return false;
	}
}

static bool in_set(const int64_t *v, unsigned n, int64_t x)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static bool matches(const nrr_result_set *s, const nrr_call *c, bool error)
{
	int64_t err;
	return in_set(s->ret, s->nret, c->result) || (error && call_errno(c, &err) && in_set(s->err, s->nerr, err));
}

unsigned nrr_call_entry_errors(const nrr_call *c, unsigned *first, int64_t *status)
{
	const nrr_fn_schema *fn = c->fn;
	int a = fn ? fn->fail_arg : -1;
	if (c->kind != NRR_CALL || !c->done || a < 0 || a >= NRR_MAX_ARGS || !(c->present >> a & 1) ||
	    !c->args[a].p || !c->args[a].len)
		return 0;
	const uint8_t *p = c->args[a].p, *end = p + c->args[a].len;
	unsigned n = *p++, bad = 0;
	for (unsigned i = 0; i < n; i++) {
		for (unsigned k = 0; k < fn->fail_nfields; k++) {
			uint64_t v;
			if (nrr_get_uvar(&p, end, &v))
				return bad;   /* a cut record: the entries read so far */
			if (k == fn->fail_field && v && !bad++) {
				*first = i;
				*status = (int64_t)v;
			}
		}
	}
	return bad;
}

enum nrr_call_class nrr_call_class(const nrr_call *c)
{
	if (c->kind != NRR_CALL || !c->done || !c->fn)
		return NRR_CLASS_OK;
	const nrr_fn_schema *fn = c->fn;
	bool error = conv_error(fn->ret, c->result);
	int a = fn->notready_arg;
	if (matches(&fn->notready, c, error) ||
	    (a >= 0 && a < NRR_MAX_ARGS && (c->present >> a & 1) && (int64_t)c->args[a].u == fn->notready_out))
		return NRR_CLASS_NOT_READY;
	if (matches(&fn->transient, c, error))
		return NRR_CLASS_TRANSIENT;
	unsigned i;
	int64_t st;
	return error || nrr_call_entry_errors(c, &i, &st) ? NRR_CLASS_FAILED : NRR_CLASS_OK;
}

bool nrr_call_failed(const nrr_call *c)
{
	return nrr_call_class(c) == NRR_CLASS_FAILED;
}

const char *nrr_call_benign(const nrr_call *c)
{
	const nrr_benign_rule *r = nrr_call_benign_rule(c);
	return r ? r->why : NULL;
}

/* true when @c satisfies @r's parameter condition (benign=...:PARAM=N):
 * the trace's schema has a parameter of that name recorded as a number at
 * enter, and the call recorded N.  Looked up by name, so an older trace
 * whose layout differs, or one that did not record it, is not matched. */
static bool benign_arg_holds(const nrr_benign_rule *r, const nrr_call *c)
{
	if (!r->arg)
		return true;
	for (uint16_t i = 0; i < c->fn->nargs && i < NRR_MAX_ARGS; i++) {
		const nrr_arg_schema *a = &c->fn->args[i];
		if (strcmp(a->name, r->arg))
			continue;
		return a->dir != NRR_DIR_OUT && a->wire != NRR_WIRE_B && (c->present >> i & 1) &&
		       (int64_t)c->args[i].u == r->arg_v;
	}
	return false;
}

const nrr_benign_rule *nrr_call_benign_rule(const nrr_call *c)
{
	if (!nrr_call_failed(c))
		return NULL;
	int64_t err = 0;
	bool has_err = call_errno(c, &err);
	for (size_t i = 0; i < nrr_benign_nrules; i++) {
		const nrr_benign_rule *r = &nrr_benign_rules[i];
		if (r->fn ? strcmp(r->fn, c->fn->name) != 0 : !c->fn->domain || strcmp(r->domain, c->fn->domain) != 0)
			continue;
		if ((r->err && !has_err) || !benign_arg_holds(r, c))
			continue;
		for (unsigned k = 0; k < r->n; k++)
			if (r->v[k] == (r->err ? err : c->result))
				return r;
	}
	return NULL;
}

static int cmp_name(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

bool nrr_fn_fault(const char *name)
{
	return name && bsearch(name, nrr_fault_fns, nrr_fault_nfns, sizeof(nrr_fault_fns[0]), cmp_name);
}

bool nrr_call_arg_unread(const nrr_call *c, uint16_t i)
{
	if (!c->fn || i >= c->fn->nargs)
		return false;
	for (size_t k = 0; k < nrr_unread_nrules; k++) {
		const nrr_unread_rule *r = &nrr_unread_rules[k];
		if (strcmp(r->fn, c->fn->name) || strcmp(r->arg, c->fn->args[i].name))
			continue;
		uint16_t w = 0;
		while (w < c->fn->nargs && strcmp(c->fn->args[w].name, r->when))
			w++;
		if (w >= c->fn->nargs || w >= NRR_MAX_ARGS || !(c->present & (1u << w)))
			continue;
		for (unsigned j = 0; j < r->n; j++)
			if ((int64_t)c->args[w].u == r->v[j])
				return true;
	}
	return false;
}

bool nrr_call_real_failure(const nrr_call *c)
{
	return nrr_call_failed(c) && !nrr_call_benign(c);
}

bool nrr_call_gpu_side(const nrr_call *c)
{
	return c->fn && c->fn->domain && strcmp(c->fn->domain, "socket") != 0;
}

static bool stop_signal(const char *end)
{
	return end && (!strcmp(end, "signal SIGTERM") || !strcmp(end, "signal SIGINT") || !strcmp(end, "signal SIGHUP"));
}

static int cmp_wall(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t nrr_job_stopped_at(size_t n, const char *(*end)(size_t i, void *arg, uint64_t *wall), void *arg)
{
	uint64_t *t = calloc(n + 1, sizeof(*t)), stop = UINT64_MAX;
	size_t k = 0;
	if (!t)
		return stop;
	for (size_t i = 0; i < n; i++) {
		uint64_t w = 0;
		if (stop_signal(end(i, arg, &w)) && w)
			t[k++] = w;
	}
	if (k) {
		qsort(t, k, sizeof(*t), cmp_wall);
		size_t j = k - 1;
		while (j > 0 && t[j] - t[j - 1] < NRR_STOP_BURST_NS)
			j--;
		stop = t[j];
	}
	free(t);
	return stop;
}

bool nrr_end_by_stop(const char *end, uint64_t end_wall, uint64_t stop)
{
	if (stop == UINT64_MAX)
		return false;
	if (!end || !end[0])
		return end_wall + NRR_NOEND_SLACK_NS >= stop;
	return stop_signal(end) && end_wall >= stop;
}

/* "…(N bytes)" after a shortened value */
static void put_total(nrr_out *o, uint32_t total)
{
	nrr_out_puts(o, "…(");
	nrr_out_u64(o, total);
	nrr_out_write(o, " bytes)", 7);
}

static void put_str(nrr_out *o, const uint8_t *p, uint32_t len, uint32_t total)
{
	uint32_t show = len > 96 ? 96 : len;
	nrr_out_putc(o, '"');
	for (uint32_t i = 0; i < show; i++) {
		uint8_t ch = p[i];
		if (ch == '"' || ch == '\\') {
			nrr_out_putc(o, '\\');
			nrr_out_putc(o, (char)ch);
		} else if (ch == '\n') {
			nrr_out_write(o, "\\n", 2);
		} else if (ch < 0x20 || ch >= 0x7f) {
			nrr_out_write(o, "\\x", 2);
			nrr_out_hexbytes(o, &ch, 1);
		} else {
			nrr_out_putc(o, (char)ch);
		}
	}
	nrr_out_putc(o, '"');
	if (show < total)
		put_total(o, total);
}

static void put_hex(nrr_out *o, const uint8_t *p, uint32_t len, uint32_t total)
{
	uint32_t show = len > 16 ? 16 : len;
	if (!total) {
		nrr_out_write(o, "<>", 2);
		return;
	}
	nrr_out_hexbytes(o, p, show);
	if (show < total)
		put_total(o, total);
}

static void put_sockaddr(nrr_out *o, const uint8_t *p, uint32_t len, uint32_t total)
{
	char host[INET6_ADDRSTRLEN];
	sa_family_t fam;
	if (len < sizeof(fam)) {
		put_hex(o, p, len, total);
		return;
	}
	memcpy(&fam, p, sizeof(fam));
	if (fam == AF_INET && len >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in in;
		memcpy(&in, p, sizeof(in));
		inet_ntop(AF_INET, &in.sin_addr, host, sizeof(host));
		nrr_out_puts(o, host);
		nrr_out_putc(o, ':');
		nrr_out_u64(o, ntohs(in.sin_port));
	} else if (fam == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 in6;
		memcpy(&in6, p, sizeof(in6));
		inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof(host));
		nrr_out_putc(o, '[');
		nrr_out_puts(o, host);
		nrr_out_write(o, "]:", 2);
		nrr_out_u64(o, ntohs(in6.sin6_port));
	} else if (fam == AF_UNIX) {
		uint32_t off = (uint32_t)offsetof(struct sockaddr_un, sun_path);
		nrr_out_write(o, "unix:", 5);
		if (len > off && p[off] == 0 && len > off + 1) {
			nrr_out_putc(o, '@');
			put_str(o, p + off + 1, len - off - 1, len - off - 1);
		} else if (len > off) {
			uint32_t n = (uint32_t)strnlen((const char *)p + off, len - off);
			put_str(o, p + off, n, n);
		}
	} else {
		nrr_out_write(o, "af", 2);
		nrr_out_u64(o, fam);
		nrr_out_putc(o, ':');
		put_hex(o, p, len, total);
	}
}

static void put_ptr(nrr_out *o, uint64_t v)
{
	if (v) {
		nrr_out_write(o, "0x", 2);
		nrr_out_hex(o, v);
	} else {
		nrr_out_write(o, "NULL", 4);
	}
}

void nrr_out_value(nrr_out *o, const nrr_arg_schema *a, const nrr_value *v)
{
	const char *name;
	switch (a->fmt) {
	case NRR_FMT_U:
		nrr_out_u64(o, v->u);
		break;
	case NRR_FMT_I:
		nrr_out_i64(o, (int64_t)v->u);
		break;
	case NRR_FMT_BOOL:
		nrr_out_puts(o, v->u ? "true" : "false");
		break;
	case NRR_FMT_ENUM:
		name = nrr_enum_name(a->table, (int64_t)v->u);
		if (name)
			nrr_out_puts(o, name);
		else
			nrr_out_i64(o, (int64_t)v->u);
		break;
	case NRR_FMT_FLAGS: {
		uint64_t left = v->u;
		bool any = false;
		if (!left) {
			name = nrr_enum_name(a->table, 0);
			nrr_out_puts(o, name ? name : "0");
			break;
		}
		for (uint32_t i = 0; a->table && i < a->table->n; i++) {
			uint64_t bit = (uint64_t)a->table->values[i];
			if (bit && (left & bit) == bit) {
				if (any)
					nrr_out_putc(o, '|');
				nrr_out_puts(o, a->table->names[i]);
				left &= ~bit;
				any = true;
			}
		}
		if (left) {
			if (any)
				nrr_out_putc(o, '|');
			nrr_out_write(o, "0x", 2);
			nrr_out_hex(o, left);
		}
		break;
	}
	case NRR_FMT_FD:
		nrr_out_write(o, "fd:", 3);
		nrr_out_i64(o, (int64_t)v->u);
		break;
	case NRR_FMT_HANDLE:
	case NRR_FMT_X:
		put_ptr(o, v->u);
		break;
	case NRR_FMT_STR:
		put_str(o, v->p, v->len, v->total);
		break;
	case NRR_FMT_SOCKADDR:
		put_sockaddr(o, v->p, v->len, v->total);
		break;
	default:
		put_hex(o, v->p, v->len, v->total);
		break;
	}
}

/* sendmsg's / recvmsg's `msg` (custom:msghdr): decoded rather than hex.
 * By name: the schema says only "bytes", the layout is that of the
 * encoder these two functions' description names (formats/api/custom.c). */
static bool is_msghdr(const nrr_fn_schema *fn, const nrr_arg_schema *a)
{
	return a->fmt == NRR_FMT_BYTES && a->name_len == 3 && !memcmp(a->name, "msg", 3) && !strcmp(fn->domain, "socket") &&
	       (!strcmp(fn->name, "sendmsg") || !strcmp(fn->name, "recvmsg"));
}

const nrr_value *nrr_call_msghdr(const nrr_call *c)
{
	if (!c->fn)
		return NULL;
	for (unsigned i = 0; i < c->fn->nargs && i < NRR_MAX_ARGS; i++)
		if (is_msghdr(c->fn, &c->fn->args[i]))
			return c->present >> i & 1 ? &c->args[i] : NULL;
	return NULL;
}

/* {len=N, head=HEX, fds=[…], name=ADDR}: name only when recorded and set. */
static void put_msghdr(nrr_out *o, const nrr_arg_schema *a, const nrr_value *v)
{
	nrr_msghdr_rec m;
	if (nrr_msghdr_decode(v, &m)) {
		nrr_out_value(o, a, v);
		return;
	}
	nrr_out_write(o, "{len=", 5);
	nrr_out_u64(o, m.len);
	nrr_out_write(o, ", head=", 7);
	put_hex(o, m.head, m.head_len, m.head_len);
	if (m.nfd) {
		nrr_out_write(o, ", fds=[", 7);
		for (uint32_t i = 0; i < m.nfd; i++) {
			if (i)
				nrr_out_putc(o, ',');
			nrr_out_i64(o, m.fds[i]);
		}
		nrr_out_putc(o, ']');
	}
	if (m.name_len) {
		nrr_out_write(o, ", name=", 7);
		put_sockaddr(o, m.name, m.name_len, m.name_len);
	}
	nrr_out_putc(o, '}');
}

/* sendmmsg's / recvmmsg's `msgvec`: [{len=N, head=HEX, name=ADDR}, …] */
static void put_mmsg(nrr_out *o, const nrr_arg_schema *a, const nrr_value *v)
{
	nrr_mmsg_rec m[NRR_MMSG_MAX];
	int n = nrr_mmsg_decode(v, m, NRR_MMSG_MAX);
	if (n < 0) {
		nrr_out_value(o, a, v);
		return;
	}
	nrr_out_putc(o, '[');
	for (int i = 0; i < n; i++) {
		if (i)
			nrr_out_write(o, ", ", 2);
		nrr_out_write(o, "{len=", 5);
		nrr_out_u64(o, m[i].len);
		nrr_out_write(o, ", head=", 7);
		put_hex(o, m[i].head, m[i].head_len, m[i].head_len);
		if (m[i].name_len) {
			nrr_out_write(o, ", name=", 7);
			put_sockaddr(o, m[i].name, m[i].name_len, m[i].name_len);
		}
		nrr_out_putc(o, '}');
	}
	nrr_out_putc(o, ']');
}

/* A schema's name: its length is known (a scan per field was 4 % of dump) */
static inline void put_name(nrr_out *o, const char *name, uint16_t len)
{
	if (len < UINT16_MAX)
		nrr_out_write(o, name, len);
	else
		nrr_out_puts(o, name);
}

/* ", name=" (no comma before the first) and, for the formats that are one
 * number, its value, through one local pointer.  @return whether the value
 * was written too. */
static bool put_arg_fast(nrr_out *o, const nrr_arg_schema *a, unsigned i, const nrr_value *v, bool present)
{
	size_t need = (size_t)a->name_len + 3 + 24;
	if (a->name_len == UINT16_MAX || need > o->cap) {
		if (i)
			nrr_out_write(o, ", ", 2);
		put_name(o, a->name, a->name_len);
		nrr_out_putc(o, '=');
		return false;
	}
	char *d0 = nrr_out_room(o, need), *d = d0;
	if (i) {
		d[0] = ',';
		d[1] = ' ';
		d += 2;
	}
	d = nrr_put_mem(d, a->name, a->name_len);
	*d++ = '=';
	bool done = present;
	if (present) {
		switch (a->fmt) {
		case NRR_FMT_U:
			d = nrr_put_u64(d, v->u);
			break;
		case NRR_FMT_I:
			d = nrr_put_i64(d, (int64_t)v->u);
			break;
		case NRR_FMT_FD:
			memcpy(d, "fd:", 3);
			d = nrr_put_i64(d + 3, (int64_t)v->u);
			break;
		case NRR_FMT_HANDLE:
		case NRR_FMT_X:
			if (v->u) {
				memcpy(d, "0x", 2);
				d = nrr_put_hex(d + 2, v->u);
			} else {
				memcpy(d, "NULL", 4);
				d += 4;
			}
			break;
		default:
			done = false;
			break;
		}
	}
	o->n += (size_t)(d - d0);
	return done;
}

void nrr_out_args(nrr_out *o, const nrr_call *c)
{
	for (unsigned i = 0; i < c->fn->nargs; i++) {
		const nrr_arg_schema *a = &c->fn->args[i];
		if (put_arg_fast(o, a, i, &c->args[i], c->present >> i & 1))
			continue;
		if ((c->present >> i & 1) && is_msghdr(c->fn, a))
			put_msghdr(o, a, &c->args[i]);
		else if ((c->present >> i & 1) && a->fmt == NRR_FMT_BYTES && a->name_len == 6 && !memcmp(a->name, "msgvec", 6) &&
			 !strcmp(c->fn->domain, "socket"))
			put_mmsg(o, a, &c->args[i]);
		else if (c->present >> i & 1)
			nrr_out_value(o, a, &c->args[i]);
		else
			nrr_out_puts(o, c->args_lost && (a->dir & NRR_DIR_IN) ? "?" : "…");
	}
}

/* The names and texts of the errnos below ERR_TABLE_N with their lengths,
 * looked up once: a polling recv's "-1 EAGAIN (Resource temporarily
 * unavailable)" is a good part of a trace, and two glibc calls and a byte
 * scan per line were 3 % of dump. */
#define ERR_TABLE_N 256
static struct errent { const char *name, *desc; uint16_t name_len, desc_len; } err_table[ERR_TABLE_N];
static pthread_once_t err_once = PTHREAD_ONCE_INIT;

static void err_table_init(void)
{
	for (int e = 0; e < ERR_TABLE_N; e++) {
		struct errent *x = &err_table[e];
		x->name = strerrorname_np(e);
		x->desc = strerrordesc_np(e);
		x->name_len = x->name ? (uint16_t)strlen(x->name) : 0;
		x->desc_len = x->desc ? (uint16_t)strlen(x->desc) : 0;
	}
}

static const struct errent *err_ent(int e)
{
	if (e < 0 || e >= ERR_TABLE_N)
		return NULL;
	pthread_once(&err_once, err_table_init);
	return &err_table[e];
}

static void put_errname(nrr_out *o, int e, const char *none)
{
	const struct errent *x = err_ent(e);
	if (x && x->name) {
		nrr_out_write(o, x->name, x->name_len);
		return;
	}
	const char *n = x ? NULL : strerrorname_np(e);
	nrr_out_puts(o, n ? n : none);
}

/* " (Connection refused)": strerror's text without its locale lookup (a
 * lock per call; the tools never set a locale, so the texts are the same) */
static void put_errdesc(nrr_out *o, int e)
{
	const struct errent *x = err_ent(e);
	const char *d = x ? x->desc : strerrordesc_np(e);
	nrr_out_write(o, " (", 2);
	if (x && d)
		nrr_out_write(o, d, x->desc_len);
	else if (d)
		nrr_out_puts(o, d);
	else
		nrr_out_puts(o, strerror(e));
	nrr_out_putc(o, ')');
}

void nrr_out_result(nrr_out *o, const nrr_call *c)
{
	const char *name;
	switch (c->fn->ret) {
	case NRR_RET_VOID:
		nrr_out_write(o, "void", 4);
		break;
	case NRR_RET_CURESULT:
	case NRR_RET_CUDART:
	case NRR_RET_NCCL:
	case NRR_RET_NVML:
		name = nrr_enum_name(c->fn->rtable, c->result);
		nrr_out_puts(o, name ? name : "?");
		nrr_out_write(o, " (", 2);
		nrr_out_i64(o, c->result);
		nrr_out_putc(o, ')');
		break;
	case NRR_RET_ERRNO:
		if (c->result == -1) {
			nrr_out_write(o, "-1 ", 3);
			put_errname(o, (int)c->err, "E?");
			put_errdesc(o, (int)c->err);
		} else {
			nrr_out_i64(o, c->result);
		}
		break;
	case NRR_RET_POSERR:
		if (c->result) {
			put_errname(o, (int)c->result, "E?");
			put_errdesc(o, (int)c->result);
		} else {
			nrr_out_putc(o, '0');
		}
		break;
	case NRR_RET_PTR:
		if (c->result) {
			put_ptr(o, (uint64_t)c->result);
		} else if (c->err) {
			nrr_out_write(o, "NULL ", 5);
			put_errname(o, (int)c->err, "");
		} else {
			nrr_out_write(o, "NULL", 4);
		}
		break;
	default:
		nrr_out_i64(o, c->result);
		break;
	}
	unsigned i, nbad;
	int64_t st;
	if ((nbad = nrr_call_entry_errors(c, &i, &st))) {
		/* " [wc[0] IBV_WC_RETRY_EXC_ERR (12), +3 failed]" */
		const nrr_fn_schema *fn = c->fn;
		const char *sym = nrr_enum_name(fn->fail_table, st);
		nrr_out_write(o, " [", 2);
		nrr_out_puts(o, fn->args[fn->fail_arg].name);
		nrr_out_putc(o, '[');
		nrr_out_u64(o, i);
		nrr_out_write(o, "] ", 2);
		nrr_out_puts(o, sym ? sym : "status");
		nrr_out_write(o, " (", 2);
		nrr_out_i64(o, st);
		nrr_out_putc(o, ')');
		if (nbad > 1) {
			nrr_out_write(o, ", +", 3);
			nrr_out_u64(o, nbad - 1);
			nrr_out_write(o, " failed", 7);
		}
		nrr_out_putc(o, ']');
	}
}

/* nrr_out_dur()'s text at @d (at most 32 bytes) for @ns below 2^53 */
static inline char *put_dur(char *d, uint64_t ns)
{
	if (ns < 1000) {
		d = nrr_put_u64(d, ns);
		memcpy(d, "ns", 2);
		return d + 2;
	}
	if (ns < 1000000) {
		d = nrr_put_fixed(d, (int64_t)ns, 3, 1);
		memcpy(d, "us", 2);
		return d + 2;
	}
	if (ns < 1000000000) {
		d = nrr_put_fixed(d, (int64_t)ns, 6, 1);
		memcpy(d, "ms", 2);
		return d + 2;
	}
	d = nrr_put_fixed(d, (int64_t)ns, 9, 2);
	*d++ = 's';
	return d;
}

void nrr_out_dur(nrr_out *o, uint64_t ns)
{
	if (ns < 1ull << 53 && o->cap >= 32) {
		char *d = nrr_out_room(o, 32);
		o->n += (size_t)(put_dur(d, ns) - d);
	} else if (ns < 1000) {
		nrr_out_u64(o, ns);
		nrr_out_write(o, "ns", 2);
	} else if (ns < 1000000) {
		nrr_out_fixed(o, (int64_t)ns, 3, 1);
		nrr_out_write(o, "us", 2);
	} else if (ns < 1000000000) {
		nrr_out_fixed(o, (int64_t)ns, 6, 1);
		nrr_out_write(o, "ms", 2);
	} else {
		nrr_out_fixed(o, ns > INT64_MAX ? INT64_MAX : (int64_t)ns, 9, 2);
		nrr_out_putc(o, 's');
	}
}

static void put_indent(nrr_out *o, unsigned depth)
{
	for (unsigned i = 0; i < depth; i++)
		nrr_out_write(o, "  ", 2);
}

/* "TIME WHO #SEQ INDENT" of a call's line (no "#SEQ " for a log's) through
 * one local pointer.  @return false when it does not fit the buffer or
 * the time takes printf (nothing written then). */
static bool put_head_fast(nrr_out *o, const nrr_call *c, int64_t t_ns, const char *who, size_t wholen)
{
	size_t need = 28 + 1 + wholen + 1 + 22 + 2 * (size_t)c->depth;
	if (need > o->cap || !nrr_fixed_fast(t_ns, 9, 6))
		return false;
	char *d0 = nrr_out_room(o, need), *d = d0;
	d = nrr_put_fixed(d, t_ns, 9, 6);
	*d++ = ' ';
	d = nrr_put_mem(d, who, wholen);
	*d++ = ' ';
	if (c->kind != NRR_CALL_LOG) {
		*d++ = '#';
		d = nrr_put_u64(d, c->seq);
		*d++ = ' ';
	}
	for (unsigned i = 0; i < c->depth; i++) {
		d[0] = d[1] = ' ';
		d += 2;
	}
	o->n += (size_t)(d - d0);
	return true;
}

void nrr_out_call(nrr_out *o, const nrr_call *c, int64_t t_ns, const char *who, size_t wholen)
{
	bool head = put_head_fast(o, c, t_ns, who, wholen);
	if (!head) {
		nrr_out_fixed(o, t_ns, 9, 6);
		nrr_out_putc(o, ' ');
		nrr_out_write(o, who, wholen);
		nrr_out_putc(o, ' ');
	}
	if (c->kind == NRR_CALL_LOG) {
		if (!head)
			put_indent(o, c->depth);
		nrr_out_write(o, "log[", 4);
		nrr_out_u64(o, c->log_level);
		nrr_out_write(o, "] ", 2);
		uint32_t n = c->log_len;
		while (n && (c->log[n - 1] == '\n' || c->log[n - 1] == '\r'))
			n--;
		nrr_out_write(o, c->log, n);
		return;
	}
	if (!head) {
		nrr_out_putc(o, '#');
		nrr_out_u64(o, c->seq);
		nrr_out_putc(o, ' ');
		put_indent(o, c->depth);
	}
	switch (c->phase) {
	case NRR_PHASE_ENTER:
		put_name(o, c->fn->name, c->fn->name_len);
		nrr_out_putc(o, '(');
		nrr_out_args(o, c);
		nrr_out_puts(o, " <unfinished ...>");
		return;
	case NRR_PHASE_INFLIGHT:
		put_name(o, c->fn->name, c->fn->name_len);
		nrr_out_putc(o, '(');
		nrr_out_args(o, c);
		nrr_out_puts(o, ") <in flight at end of trace, ");
		nrr_out_dur(o, c->dur);
		nrr_out_puts(o, " so far>");
		return;
	case NRR_PHASE_RESUME:
		nrr_out_write(o, "<... ", 5);
		put_name(o, c->fn->name, c->fn->name_len);
		nrr_out_puts(o, " resumed> (");
		break;
	default:
		put_name(o, c->fn->name, c->fn->name_len);
		nrr_out_putc(o, '(');
		break;
	}
	nrr_out_args(o, c);
	nrr_out_putc(o, ')');
	if (c->fn->ret != NRR_RET_VOID) {
		nrr_out_write(o, " = ", 3);
		nrr_out_result(o, c);
	}
	nrr_out_putc(o, ' ');
	nrr_out_dur(o, c->dur);
	if (c->repeat) {
		nrr_out_write(o, " [+", 3);
		nrr_out_u64(o, c->repeat);
		nrr_out_write(o, " identical, ", 12);
		nrr_out_dur(o, c->repeat_ns);
		nrr_out_putc(o, ']');
	}
}

/* The FILE forms: one small buffer on the stack, flushed at the end. */
#define VIA_OUT(f, ...)                                  \
	do {                                             \
		char buf_[1024];                         \
		nrr_out o_;                              \
		nrr_out_init(&o_, (f), buf_, sizeof(buf_)); \
		__VA_ARGS__;                             \
		nrr_out_flush(&o_);                      \
	} while (0)

void nrr_format_value(FILE *f, const nrr_arg_schema *a, const nrr_value *v)
{
	VIA_OUT(f, nrr_out_value(&o_, a, v));
}

void nrr_format_args(FILE *f, const nrr_call *c)
{
	VIA_OUT(f, nrr_out_args(&o_, c));
}

void nrr_format_result(FILE *f, const nrr_call *c)
{
	VIA_OUT(f, nrr_out_result(&o_, c));
}

void nrr_format_dur(FILE *f, uint64_t ns)
{
	VIA_OUT(f, nrr_out_dur(&o_, ns));
}

void nrr_format_call(FILE *f, const nrr_call *c, double t_rel, const char *who)
{
	VIA_OUT(f, nrr_out_call(&o_, c, (int64_t)(t_rel * 1e9 + (t_rel < 0 ? -0.5 : 0.5)), who, strlen(who)));
}
