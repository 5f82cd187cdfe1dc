/* SPDX-License-Identifier: MIT */
/* hang_coll.c - which collective a process was in (hang_coll.h). */
#include <stdio.h>
#include <string.h>

#include "hang_coll.h"

enum {   /* ncclProfileEventType (profiler.api) */
	T_GROUP = 0x1, T_COLL = 0x2, T_P2P = 0x4, T_PROXY_OP = 0x8, T_GROUP_API = 0x100, T_COLL_API = 0x200,
	T_P2P_API = 0x400,
};

bool nrr_coll_is_event(const nrr_fn_schema *fn)
{
	return fn && fn->domain && !strcmp(fn->domain, "profiler");
}

static int arg_at(const nrr_call *c, const char *name)
{
	for (unsigned i = 0; i < c->fn->nargs && i < NRR_MAX_ARGS; i++)
		if (!strcmp(c->fn->args[i].name, name))
			return c->present >> i & 1 ? (int)i : -1;
	return -1;
}

static uint64_t arg_u(const nrr_call *c, const char *name)
{
	int i = arg_at(c, name);
	return i < 0 ? 0 : c->args[i].u;
}

/* " name=value" for a recorded, non-empty text argument */
static size_t put_str(char *buf, size_t len, size_t off, const nrr_call *c, const char *name, bool label)
{
	int i = arg_at(c, name);
	if (i < 0 || off >= len)
		return off;
	const nrr_value *v = &c->args[i];
	size_t n = v->p ? strnlen((const char *)v->p, v->len) : 0;
	if (!n)
		return off;
	int w = snprintf(buf + off, len - off, "%s%s%s%.*s", off ? " " : "", label ? name : "", label ? "=" : "",
			 (int)n, (const char *)v->p);
	return w < 0 ? off : off + (size_t)w;
}

static void on_start(struct nrr_coll_state *s, const nrr_call *c, uint64_t wall, bool coll)
{
	int type = (int)arg_u(c, "type");
	char *b = s->last;
	size_t len = sizeof(s->last), off = 0;
	off = put_str(b, len, off, c, "func", false);
	if (!off)
		off = (size_t)snprintf(b, len, "%s", coll ? "collective" : "point-to-point");
	if (off < len)
		off += (size_t)snprintf(b + off, len - off, " count=%llu", (unsigned long long)arg_u(c, "count"));
	off = put_str(b, len, off, c, "datatype", true);
	if (coll && type == T_COLL && off < len)
		off += (size_t)snprintf(b + off, len - off, " seq=%llu", (unsigned long long)arg_u(c, "seqNumber"));
	if (!coll && off < len)
		off += (size_t)snprintf(b + off, len - off, " peer=%d", (int)(int64_t)arg_u(c, "peer"));
	if (coll)
		off = put_str(b, len, off, c, "algo", true);
	if (coll)
		put_str(b, len, off, c, "proto", true);
	s->last_id = arg_u(c, "event");
	s->last_wall = wall;
	s->last_stopped = false;
}

void nrr_coll_on_event(struct nrr_coll_state *s, const nrr_call *c, uint64_t wall)
{
	/* by name: each event has fields of its own (collStart's algo and
	 * proto, p2pStart's peer, stop's type: profiler.api's layouts), read
	 * below by their names; a role would not say which */
	const char *n = c->fn->name;
	s->seen = true;
	if (!strcmp(n, "ncclProfiler_collStart")) {
		on_start(s, c, wall, true);
	} else if (!strcmp(n, "ncclProfiler_p2pStart")) {
		on_start(s, c, wall, false);
	} else if (!strcmp(n, "ncclProfiler_groupStart")) {
		if (s->ngroups < NRR_COLL_GROUPS)
			s->groups[s->ngroups++] = arg_u(c, "event");
	} else if (!strcmp(n, "ncclProfiler_proxyOpStart")) {
		s->proxy_open++;
	} else if (!strcmp(n, "ncclProfiler_stop")) {
		uint64_t id = arg_u(c, "event"), type = arg_u(c, "type");
		if (id == s->last_id)
			s->last_stopped = true;
		if (type == T_PROXY_OP && s->proxy_open)
			s->proxy_open--;
		if (type == T_GROUP || type == T_GROUP_API)
			for (unsigned k = 0; k < s->ngroups; k++)
				if (s->groups[k] == id) {
					s->groups[k] = s->groups[--s->ngroups];
					break;
				}
	}
}

bool nrr_coll_open(const struct nrr_coll_state *s)
{
	return s->last[0] && (!s->last_stopped || s->ngroups || s->proxy_open);
}
