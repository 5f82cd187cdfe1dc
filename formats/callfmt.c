/* SPDX-License-Identifier: MIT */
/* callfmt.c - schema-driven text rendering of calls. */
#include <arpa/inet.h>
#include <errno.h>
#include <fnmatch.h>
#include <netinet/in.h>
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

bool nrr_call_failed(const nrr_call *c)
{
	if (c->kind != NRR_CALL || !c->done || !c->fn)
		return false;
	switch (c->fn->ret) {
	case NRR_RET_CURESULT:
	case NRR_RET_CUDART:
		/* 600 = CUDA_ERROR_NOT_READY / cudaErrorNotReady: a polling answer */
		return c->result != 0 && c->result != 600;
	case NRR_RET_NCCL:
		return c->result != 0 && c->result != 7; /* ncclInProgress */
	case NRR_RET_NVML:
		return c->result != 0;
	case NRR_RET_ERRNO:
		return c->result == -1 && c->err != EAGAIN && c->err != EINPROGRESS &&
		       c->err != EINTR && c->err != EWOULDBLOCK;
	case NRR_RET_POSERR:
		return c->result != 0 && c->result != EAGAIN && c->result != EBUSY;
	case NRR_RET_PTR:
		return c->result == 0;
	default:
		return false;
	}
}

const char *nrr_call_benign(const nrr_call *c)
{
	const nrr_benign_rule *r = nrr_call_benign_rule(c);
	return r ? r->why : NULL;
}

const nrr_benign_rule *nrr_call_benign_rule(const nrr_call *c)
{
	if (!nrr_call_failed(c))
		return NULL;
	/* the errno of the failure: -1 / NULL with errno, or a poserr result */
	int64_t err = c->fn->ret == NRR_RET_POSERR ? c->result : (int64_t)c->err;
	bool has_err = c->fn->ret == NRR_RET_ERRNO || c->fn->ret == NRR_RET_PTR || c->fn->ret == NRR_RET_POSERR;
	for (size_t i = 0; i < nrr_benign_nrules; i++) {
		const nrr_benign_rule *r = &nrr_benign_rules[i];
		if (r->fn ? strcmp(r->fn, c->fn->name) != 0 : !c->fn->domain || strcmp(r->domain, c->fn->domain) != 0)
			continue;
		if (r->err && !has_err)
			continue;
		for (unsigned k = 0; k < r->n; k++)
			if (r->v[k] == (r->err ? err : c->result))
				return r;
	}
	return NULL;
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

static void put_str(FILE *f, const uint8_t *p, uint32_t len, uint32_t total)
{
	uint32_t show = len > 96 ? 96 : len;
	fputc('"', f);
	for (uint32_t i = 0; i < show; i++) {
		uint8_t ch = p[i];
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch < 0x20 || ch >= 0x7f)
			fprintf(f, "\\x%02x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
	if (show < total)
		fprintf(f, "…(%u bytes)", total);
}

static void put_hex(FILE *f, const uint8_t *p, uint32_t len, uint32_t total)
{
	uint32_t show = len > 16 ? 16 : len;
	if (!total) {
		fputs("<>", f);
		return;
	}
	for (uint32_t i = 0; i < show; i++)
		fprintf(f, "%02x", p[i]);
	if (show < total)
		fprintf(f, "…(%u bytes)", total);
}

static void put_sockaddr(FILE *f, const uint8_t *p, uint32_t len, uint32_t total)
{
	char host[INET6_ADDRSTRLEN];
	sa_family_t fam;
	if (len < sizeof(fam)) {
		put_hex(f, p, len, total);
		return;
	}
	memcpy(&fam, p, sizeof(fam));
	if (fam == AF_INET && len >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in in;
		memcpy(&in, p, sizeof(in));
		inet_ntop(AF_INET, &in.sin_addr, host, sizeof(host));
		fprintf(f, "%s:%u", host, ntohs(in.sin_port));
	} else if (fam == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 in6;
		memcpy(&in6, p, sizeof(in6));
		inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof(host));
		fprintf(f, "[%s]:%u", host, ntohs(in6.sin6_port));
	} else if (fam == AF_UNIX) {
		uint32_t off = (uint32_t)offsetof(struct sockaddr_un, sun_path);
		fputs("unix:", f);
		if (len > off && p[off] == 0 && len > off + 1) {
			fputc('@', f);
			put_str(f, p + off + 1, len - off - 1, len - off - 1);
		} else if (len > off) {
			uint32_t n = (uint32_t)strnlen((const char *)p + off, len - off);
			put_str(f, p + off, n, n);
		}
	} else {
		fprintf(f, "af%u:", fam);
		put_hex(f, p, len, total);
	}
}

void nrr_format_value(FILE *f, const nrr_arg_schema *a, const nrr_value *v)
{
	const char *name;
	switch (a->fmt) {
	case NRR_FMT_U:
		fprintf(f, "%llu", (unsigned long long)v->u);
		break;
	case NRR_FMT_I:
		fprintf(f, "%lld", (long long)v->u);
		break;
	case NRR_FMT_BOOL:
		fputs(v->u ? "true" : "false", f);
		break;
	case NRR_FMT_ENUM:
		name = nrr_enum_name(a->table, (int64_t)v->u);
		if (name)
			fputs(name, f);
		else
			fprintf(f, "%lld", (long long)v->u);
		break;
	case NRR_FMT_FLAGS: {
		uint64_t left = v->u;
		bool any = false;
		if (!left) {
			name = nrr_enum_name(a->table, 0);
			fputs(name ? name : "0", f);
			break;
		}
		for (uint32_t i = 0; a->table && i < a->table->n; i++) {
			uint64_t bit = (uint64_t)a->table->values[i];
			if (bit && (left & bit) == bit) {
				fprintf(f, "%s%s", any ? "|" : "", a->table->names[i]);
				left &= ~bit;
				any = true;
			}
		}
		if (left)
			fprintf(f, "%s0x%llx", any ? "|" : "", (unsigned long long)left);
		break;
	}
	case NRR_FMT_FD:
		fprintf(f, "fd:%lld", (long long)v->u);
		break;
	case NRR_FMT_HANDLE:
	case NRR_FMT_X:
		if (v->u)
			fprintf(f, "0x%llx", (unsigned long long)v->u);
		else
			fputs("NULL", f);
		break;
	case NRR_FMT_STR:
		put_str(f, v->p, v->len, v->total);
		break;
	case NRR_FMT_SOCKADDR:
		put_sockaddr(f, v->p, v->len, v->total);
		break;
	default:
		put_hex(f, v->p, v->len, v->total);
		break;
	}
}

/* sendmsg's / recvmsg's `msg` (custom:msghdr): decoded rather than hex. */
static bool is_msghdr(const nrr_fn_schema *fn, const nrr_arg_schema *a)
{
	return a->fmt == NRR_FMT_BYTES && !strcmp(a->name, "msg") && !strcmp(fn->domain, "socket") &&
	       (!strcmp(fn->name, "sendmsg") || !strcmp(fn->name, "recvmsg"));
}

/* {len=N, head=HEX, fds=[…], name=ADDR}: name only when recorded and set. */
static void put_msghdr(FILE *f, const nrr_arg_schema *a, const nrr_value *v)
{
	nrr_msghdr_rec m;
	if (nrr_msghdr_decode(v, &m)) {
		nrr_format_value(f, a, v);
		return;
	}
	fprintf(f, "{len=%llu, head=", (unsigned long long)m.len);
	put_hex(f, m.head, m.head_len, m.head_len);
	if (m.nfd) {
		fputs(", fds=[", f);
		for (uint32_t i = 0; i < m.nfd; i++)
			fprintf(f, "%s%lld", i ? "," : "", (long long)m.fds[i]);
		fputc(']', f);
	}
	if (m.name_len) {
		fputs(", name=", f);
		put_sockaddr(f, m.name, m.name_len, m.name_len);
	}
	fputc('}', f);
}

/* sendmmsg's / recvmmsg's `msgvec`: [{len=N, head=HEX, name=ADDR}, …] */
static void put_mmsg(FILE *f, const nrr_arg_schema *a, const nrr_value *v)
{
	nrr_mmsg_rec m[NRR_MMSG_MAX];
	int n = nrr_mmsg_decode(v, m, NRR_MMSG_MAX);
	if (n < 0) {
		nrr_format_value(f, a, v);
		return;
	}
	fputc('[', f);
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s{len=%llu, head=", i ? ", " : "", (unsigned long long)m[i].len);
		put_hex(f, m[i].head, m[i].head_len, m[i].head_len);
		if (m[i].name_len) {
			fputs(", name=", f);
			put_sockaddr(f, m[i].name, m[i].name_len, m[i].name_len);
		}
		fputc('}', f);
	}
	fputc(']', f);
}

void nrr_format_args(FILE *f, const nrr_call *c)
{
	bool first = true;
	for (unsigned i = 0; i < c->fn->nargs; i++) {
		const nrr_arg_schema *a = &c->fn->args[i];
		fprintf(f, "%s%s=", first ? "" : ", ", a->name);
		first = false;
		if ((c->present >> i & 1) && is_msghdr(c->fn, a))
			put_msghdr(f, a, &c->args[i]);
		else if ((c->present >> i & 1) && a->fmt == NRR_FMT_BYTES && !strcmp(a->name, "msgvec") &&
			 !strcmp(c->fn->domain, "socket"))
			put_mmsg(f, a, &c->args[i]);
		else if (c->present >> i & 1)
			nrr_format_value(f, a, &c->args[i]);
		else
			fputs(c->args_lost && (a->dir & NRR_DIR_IN) ? "?" : "…", f);
	}
}

void nrr_format_result(FILE *f, const nrr_call *c)
{
	const char *name;
	switch (c->fn->ret) {
	case NRR_RET_VOID:
		fputs("void", f);
		break;
	case NRR_RET_CURESULT:
	case NRR_RET_CUDART:
	case NRR_RET_NCCL:
	case NRR_RET_NVML:
		name = nrr_enum_name(c->fn->rtable, c->result);
		fprintf(f, "%s (%lld)", name ? name : "?", (long long)c->result);
		break;
	case NRR_RET_ERRNO:
		if (c->result == -1)
			fprintf(f, "-1 %s (%s)", strerrorname_np((int)c->err) ? strerrorname_np((int)c->err) : "E?",
				strerror((int)c->err));
		else
			fprintf(f, "%lld", (long long)c->result);
		break;
	case NRR_RET_POSERR:
		if (c->result)
			fprintf(f, "%s (%s)", strerrorname_np((int)c->result) ? strerrorname_np((int)c->result) : "E?",
				strerror((int)c->result));
		else
			fputs("0", f);
		break;
	case NRR_RET_PTR:
		if (c->result)
			fprintf(f, "0x%llx", (unsigned long long)c->result);
		else if (c->err)
			fprintf(f, "NULL %s", strerrorname_np((int)c->err) ? strerrorname_np((int)c->err) : "");
		else
			fputs("NULL", f);
		break;
	default:
		fprintf(f, "%lld", (long long)c->result);
		break;
	}
}

void nrr_format_dur(FILE *f, uint64_t ns)
{
	if (ns < 1000)
		fprintf(f, "%lluns", (unsigned long long)ns);
	else if (ns < 1000000)
		fprintf(f, "%.1fus", ns / 1e3);
	else if (ns < 1000000000)
		fprintf(f, "%.1fms", ns / 1e6);
	else
		fprintf(f, "%.2fs", ns / 1e9);
}

void nrr_format_call(FILE *f, const nrr_call *c, double t_rel, const char *who)
{
	fprintf(f, "%.6f %s ", t_rel, who);
	if (c->kind == NRR_CALL_LOG) {
		fprintf(f, "%*slog[%u] ", 2 * c->depth, "", c->log_level);
		uint32_t n = c->log_len;
		while (n && (c->log[n - 1] == '\n' || c->log[n - 1] == '\r'))
			n--;
		fwrite(c->log, 1, n, f);
		return;
	}
	fprintf(f, "#%llu %*s", (unsigned long long)c->seq, 2 * c->depth, "");
	switch (c->phase) {
	case NRR_PHASE_ENTER:
		fprintf(f, "%s(", c->fn->name);
		nrr_format_args(f, c);
		fputs(" <unfinished ...>", f);
		return;
	case NRR_PHASE_INFLIGHT:
		fprintf(f, "%s(", c->fn->name);
		nrr_format_args(f, c);
		fputs(") <in flight at end of trace, ", f);
		nrr_format_dur(f, c->dur);
		fputs(" so far>", f);
		return;
	case NRR_PHASE_RESUME:
		fprintf(f, "<... %s resumed> (", c->fn->name);
		break;
	default:
		fprintf(f, "%s(", c->fn->name);
		break;
	}
	nrr_format_args(f, c);
	fputs(")", f);
	if (c->fn->ret != NRR_RET_VOID) {
		fputs(" = ", f);
		nrr_format_result(f, c);
	}
	fputc(' ', f);
	nrr_format_dur(f, c->dur);
	if (c->repeat) {
		fprintf(f, " [+%llu identical, ", (unsigned long long)c->repeat);
		nrr_format_dur(f, c->repeat_ns);
		fputc(']', f);
	}
}
