/* SPDX-License-Identifier: MIT */
/* schema.c - parse the schema text carried by every trace (FORMAT.md "Schema"). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrr_hash.h"
#include "nrt.h"
#include "nrt_internal.h"

struct nrr_schema {
	char *text;               /* private copy, tokenised in place */
	nrr_enum_schema *enums;
	uint32_t nenums, cenums;
	nrr_fn_schema *fns;       /* fns[id - 1] */
	uint32_t nfns, cfns;
	nrr_arg_schema *args;     /* all args, fns point into it */
	uint32_t nargs, cargs;
	int64_t *values;          /* enum values, enums point into them */
	const char **names;
	uint32_t nvalues;
	uint64_t enum_probes;     /* names compared while parsing (test_format) */
};

static const struct {
	const char *name;
	uint8_t fmt, wire;
} fmts[] = {
	{ "u", NRR_FMT_U, NRR_WIRE_U },
	{ "i", NRR_FMT_I, NRR_WIRE_S },
	{ "x", NRR_FMT_X, NRR_WIRE_U },
	{ "bool", NRR_FMT_BOOL, NRR_WIRE_U },
	{ "enum", NRR_FMT_ENUM, NRR_WIRE_S },
	{ "flags", NRR_FMT_FLAGS, NRR_WIRE_U },
	{ "handle", NRR_FMT_HANDLE, NRR_WIRE_U },
	{ "fd", NRR_FMT_FD, NRR_WIRE_S },
	{ "str", NRR_FMT_STR, NRR_WIRE_B },
	{ "bytes", NRR_FMT_BYTES, NRR_WIRE_B },
	{ "sockaddr", NRR_FMT_SOCKADDR, NRR_WIRE_B },
};

static const char *const rets[] = {
	[NRR_RET_VOID] = "void", [NRR_RET_CURESULT] = "curesult",
	[NRR_RET_CUDART] = "cudart", [NRR_RET_NCCL] = "nccl",
	[NRR_RET_NVML] = "nvml", [NRR_RET_ERRNO] = "errno",
	[NRR_RET_POSERR] = "poserr", [NRR_RET_PTR] = "ptr", [NRR_RET_INT] = "int",
};

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elt)
{
	if (need <= *cap)
		return 0;
	uint32_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, (size_t)n * elt);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static int fail(nrr_diag *d, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(nrr_diag *d, unsigned line, const char *fmt, ...)
{
	if (d) {
		char m[400];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(m, sizeof(m), fmt, ap);
		va_end(ap);
		d->code = NRR_ESCHEMA;
		snprintf(d->msg, sizeof(d->msg), "schema line %u: %s; the trace's schema block is damaged or from an incompatible writer", line, m);
	}
	return NRR_ESCHEMA;
}

static int parse_i64(const char *s, int64_t *v)
{
	char *e;
	errno = 0;
	long long x = strtoll(s, &e, 10);
	if (errno || e == s || *e)
		return -1;
	*v = x;
	return 0;
}

/* Enum names while parsing: open addressing over indexes + 1 (0: free),
 * so that a schema of N enums parses in O(N), not O(N^2). */
struct enum_index {
	uint32_t *slot;
	size_t mask;
	uint64_t probes;          /* names compared: O(N) for N enums */
};

static int enum_index_init(struct enum_index *x, uint32_t n)
{
	size_t size = 16;
	while (size < 2 * (size_t)n + 2)
		size *= 2;
	x->mask = size - 1;
	x->slot = calloc(size, sizeof(*x->slot));
	return x->slot ? 0 : -ENOMEM;
}

/* The enum named @name, or NULL; with @add (the enum just made, not yet
 * found) the slot where it goes is taken for it. */
static nrr_enum_schema *find_enum(const nrr_schema *s, struct enum_index *x, const char *name,
				  nrr_enum_schema *add)
{
	size_t i = (size_t)nrr_hash(name, strlen(name), NRR_HASH_INIT) & x->mask;
	for (; x->slot[i]; i = (i + 1) & x->mask)
		if (++x->probes, strcmp(s->enums[x->slot[i] - 1].name, name) == 0)
			return &s->enums[x->slot[i] - 1];
	if (add)
		x->slot[i] = (uint32_t)(add - s->enums) + 1;
	return NULL;
}

void nrr_schema_free(nrr_schema *s)
{
	if (!s)
		return;
	free(s->text);
	free(s->enums);
	free(s->fns);
	free(s->args);
	free(s->values);
	free(s->names);
	free(s);
}

/* Split @line (NUL terminated) into at most @max tokens separated by single spaces. */
static int tokens(char *line, char **tok, int max)
{
	int n = 0;
	char *p = line;
	while (*p) {
		if (n == max)
			return -1;
		tok[n++] = p;
		while (*p && *p != ' ')
			p++;
		if (*p == ' ') {
			*p++ = 0;
			if (!*p)
				return -1; /* trailing space */
		}
	}
	return n;
}

/* ---------------------------------------------------- call semantics */

static int word_index(const char *const *names, int n, const char *w, size_t len)
{
	for (int i = 0; i < n; i++)
		if (names[i] && strlen(names[i]) == len && !memcmp(names[i], w, len))
			return i;
	return -1;
}

static int arg_named(const nrr_fn_schema *fn, const char *w, size_t len)
{
	for (int i = 0; i < fn->nargs && i < 127; i++)
		if (strlen(fn->args[i].name) == len && !memcmp(fn->args[i].name, w, len))
			return i;
	return -1;
}

/* "V1|V2" (up to @end) into @v / @n */
static bool sem_values(const char *p, const char *end, int64_t *v, uint8_t *n)
{
	while (p < end) {
		char *e;
		errno = 0;
		long long x = strtoll(p, &e, 10);
		if (e == p || errno || (e < end && *e != '|') || e > end || *n >= NRR_SEM_MAXV)
			return false;
		v[(*n)++] = x;
		p = e < end ? e + 1 : e;
	}
	return *n > 0;
}

/* Where a failed: item's table is looked up: the schema's own tables,
 * else the built-in one of the function of that name (a trace written
 * before failed= does not carry it). */
struct sem_tables {
	const nrr_schema *s;
	struct enum_index *names;
	const nrr_enum_schema *builtin;
};

/* "failed:out:ARG:FIELD/NFIELDS:TABLE" from @c1 (its first ':') to @end.
 * @return false when it is malformed, or (@strict) names no out bytes
 * parameter of @fn. */
static bool sem_failed(nrr_fn_schema *fn, const char *c1, const char *end, bool strict, const struct sem_tables *t)
{
	const char *q = c1 + 1;
	if ((size_t)(end - q) < 4 || memcmp(q, "out:", 4))
		return false;
	q += 4;
	const char *c = memchr(q, ':', (size_t)(end - q));
	if (!c)
		return false;
	int a = arg_named(fn, q, (size_t)(c - q));
	char *e;
	errno = 0;
	unsigned long field = strtoul(c + 1, &e, 10), nfields = 0;
	if (e == c + 1 || *e != '/' || e >= end)
		return false;
	const char *f = e + 1;
	nfields = strtoul(f, &e, 10);
	if (e == f || e >= end || *e != ':' || errno || field >= nfields || nfields > 16 || e + 1 >= end)
		return false;
	char tname[128];
	size_t tl = (size_t)(end - e - 1);
	if (tl >= sizeof(tname))
		return false;
	memcpy(tname, e + 1, tl);
	tname[tl] = 0;
	bool bytes = a >= 0 && fn->args[a].fmt == NRR_FMT_BYTES && (fn->args[a].dir & NRR_DIR_OUT);
	if (!bytes)
		return !strict;   /* the built-in item of a function recorded otherwise: none */
	fn->fail_arg = (int8_t)a;
	fn->fail_field = (uint8_t)field;
	fn->fail_nfields = (uint8_t)nfields;
	fn->fail_table = find_enum(t->s, t->names, tname, NULL);
	if (!fn->fail_table && t->builtin && !strcmp(t->builtin->name, tname))
		fn->fail_table = t->builtin;
	return true;
}

/* "runid:ARG" or "runid:ARG:F|F[/NFIELDS]" from @c1 (its first ':') to
 * @end: a number, or fields of a bytes value of uvars, that each run
 * chooses anew.  @return false when it is malformed, or (@strict) names no
 * parameter recorded so. */
static bool sem_runid(nrr_fn_schema *fn, const char *c1, const char *end, bool strict)
{
	const char *q = c1 + 1;
	const char *c = memchr(q, ':', (size_t)(end - q));
	int a = arg_named(fn, q, c ? (size_t)(c - q) : (size_t)(end - q));
	if (a >= NRR_MAX_ARGS || a >= 32)
		a = -1;
	uint8_t fmt = a >= 0 ? fn->args[a].fmt : 0;
	if (!c) {
		if (a >= 0 && (fmt == NRR_FMT_U || fmt == NRR_FMT_X || fmt == NRR_FMT_I)) {
			fn->runid |= 1u << a;
			return true;
		}
		return !strict;
	}
	uint16_t fields = 0;
	unsigned long nfields = 0;
	const char *f = c + 1;
	for (;;) {
		char *e;
		errno = 0;
		unsigned long v = strtoul(f, &e, 10);
		if (e == f || errno || v >= 16)
			return false;
		fields |= (uint16_t)(1u << v);
		if (e < end && *e == '|') {
			f = e + 1;
			continue;
		}
		if (e < end && *e == '/') {
			f = e + 1;
			nfields = strtoul(f, &e, 10);
			if (e == f || nfields > 16 || nfields == 0 || fields >> nfields)
				return false;
		}
		if (e != end)
			return false;
		break;
	}
	if (a < 0 || fmt != NRR_FMT_BYTES || (fn->runid_arg >= 0 && fn->runid_arg != a))
		return !strict;   /* the built-in item of a function recorded otherwise: none */
	fn->runid_arg = (int8_t)a;
	fn->runid_nfields = (uint8_t)nfields;
	fn->runid_fields |= fields;
	return true;
}

/* Apply the sem= text @sem (FORMAT.md "Call semantics") to @fn, whose
 * args are known.  @strict (the trace's own): a parameter it names must
 * exist.  Items of kinds this reader does not know are skipped (a later
 * version's).  @return NULL, or the item that is wrong. */
static const char *sem_apply(nrr_fn_schema *fn, const char *sem, bool strict, const struct sem_tables *t,
			     size_t *badlen)
{
	const char *p = sem;
	while (*p) {
		const char *end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		const char *c1 = memchr(p, ':', (size_t)(end - p));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
		size_t klen = c1 ? (size_t)(c1 - p) : (size_t)(end - p);
		bool ok = true;
		if (klen == 4 && !memcmp(p, "role", 4)) {
			int r = c1 ? word_index(nrr_sem_roles, NRR_ROLE_N, c1 + 1, (size_t)(end - c1 - 1)) : -1;
			ok = c1 && end > c1 + 1;   /* a role this reader does not know: none */
			if (r >= 0)
				fn->role = (uint8_t)r;
		} else if (klen == 3 && !memcmp(p, "arg", 3)) {
			int r = c2 ? word_index(nrr_sem_argroles, NRR_ARGROLE_N, c1 + 1, (size_t)(c2 - c1 - 1)) : -1;
			int a = r >= 0 ? arg_named(fn, c2 + 1, (size_t)(end - c2 - 1)) : -1;
			ok = c2 && (r < 0 || a >= 0 || !strict);
			if (r >= 0)
				fn->arg[r] = (int8_t)a;
		} else if ((klen == 8 && !memcmp(p, "notready", 8)) || (klen == 9 && !memcmp(p, "transient", 9))) {
			nrr_result_set *set = klen == 8 ? &fn->notready : &fn->transient;
			size_t wlen = c2 ? (size_t)(c2 - c1 - 1) : 0;
			if (wlen == 3 && !memcmp(c1 + 1, "ret", 3)) {
				ok = sem_values(c2 + 1, end, set->ret, &set->nret);
			} else if (wlen == 3 && !memcmp(c1 + 1, "err", 3)) {
				ok = sem_values(c2 + 1, end, set->err, &set->nerr);
			} else if (wlen == 3 && !memcmp(c1 + 1, "out", 3) && klen == 8) {
				const char *c3 = memchr(c2 + 1, ':', (size_t)(end - c2 - 1));
				int a = c3 ? arg_named(fn, c2 + 1, (size_t)(c3 - c2 - 1)) : -1;
				uint8_t n = 0;
				int64_t v;
				ok = c3 && (a >= 0 || !strict) && sem_values(c3 + 1, end, &v, &n) && n == 1;
				if (ok && a >= 0) {
					fn->notready_arg = (int8_t)a;
					fn->notready_out = v;
				}
			} else {
				ok = false;
			}
		} else if (klen == 6 && !memcmp(p, "failed", 6)) {
			ok = c1 && sem_failed(fn, c1, end, strict, t);
		} else if (klen == 5 && !memcmp(p, "runid", 5)) {
			ok = c1 && end > c1 + 1 && sem_runid(fn, c1, end, strict);
		}
		if (!ok) {
			*badlen = (size_t)(end - p);
			return p;
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}

static int sem_cmp(const void *k, const void *e)
{
	return strcmp(k, ((const nrr_sem_builtin *)e)->name);
}

/* The item of @sem that starts with @key ("failed:"), or NULL. */
static const char *sem_item(const char *sem, const char *key)
{
	for (const char *p = sem; p && (p = strstr(p, key)); p++)
		if (p == sem || p[-1] == ',')
			return p;
	return NULL;
}

/* Apply the one item @item of the built-in sem= (up to its ','). */
static void sem_apply_item(nrr_fn_schema *fn, const char *item, const struct sem_tables *t)
{
	char one[256];
	size_t blen = 0, n = strcspn(item, ",");
	if (n < sizeof(one)) {
		memcpy(one, item, n);
		one[n] = 0;
		(void)sem_apply(fn, one, false, t, &blen);
	}
}

/* Each function's semantics: its sem= attribute, else the built-in
 * description of the function of that name, else of its return
 * convention (a trace written before sem= existed).  A sem= without a
 * failed: item (written before failed= existed) takes the built-in one
 * of the function of that name, when the trace records its parameter as
 * bytes: the entries' layout is the same since they were first recorded.
 * A sem= without a role: item takes the built-in role (dev_open came
 * after sem=): what a call does depends on no layout (FORMAT.md "Call
 * semantics").  One without an arg:ROLE item of a role the build gives
 * the function takes the build's, and one without runid: items the
 * built-in ones. */
static int sem_resolve(nrr_schema *s, struct enum_index *names, const unsigned *fnline, nrr_diag *d)
{
	for (uint32_t i = 0; i < s->nfns; i++) {
		nrr_fn_schema *fn = &s->fns[i];
		memset(fn->arg, -1, sizeof(fn->arg));
		fn->notready_arg = -1;
		fn->fail_arg = -1;
		fn->runid = 0;
		fn->runid_arg = -1;
		fn->runid_nfields = 0;
		fn->runid_fields = 0;
		bool own = fn->sem != NULL;
		const nrr_sem_builtin *b = bsearch(fn->name, nrr_sem_builtin_fns, nrr_sem_builtin_nfns, sizeof(*b), sem_cmp);
		struct sem_tables t = { s, names, b ? b->table : NULL };
		if (!own) {
			const nrr_sem_builtin *cb = b;
			for (size_t k = 0; !cb && k < nrr_sem_builtin_nconvs; k++)
				if (!strcmp(nrr_sem_builtin_convs[k].name, rets[fn->ret]))
					cb = &nrr_sem_builtin_convs[k];
			fn->sem = cb ? cb->sem : NULL;
		}
		size_t blen = 0;
		const char *bad = fn->sem ? sem_apply(fn, fn->sem, own, &t, &blen) : NULL;
		if (bad && own)
			return fail(d, fnline[i], "%s: bad call semantics item '%.*s' in sem= (FORMAT.md \"Call semantics\"); "
				    "the trace's schema is damaged or from a newer writer: re-record it or update ncclrr",
				    fn->name, (int)(blen > 80 ? 80 : blen), bad);
		const char *item = own && fn->fail_arg < 0 && b ? sem_item(b->sem, "failed:") : NULL;
		if (item)
			sem_apply_item(fn, item, &t);
		item = own && b && !sem_item(fn->sem, "role:") ? sem_item(b->sem, "role:") : NULL;
		if (item)
			sem_apply_item(fn, item, &t);
		/* a sem= without an arg:ROLE item for a role the build gives
		 * the function (local came after sem=): the built-in one */
		for (item = own && b ? sem_item(b->sem, "arg:") : NULL; item; item = sem_item(item + 1, "arg:")) {
			char key[32];
			size_t rl = strcspn(item + 4, ":,");
			if (rl + 6 <= sizeof(key)) {
				snprintf(key, sizeof(key), "arg:%.*s:", (int)rl, item + 4);
				if (!sem_item(fn->sem, key))
					sem_apply_item(fn, item, &t);
			}
		}
		/* a sem= without runid: items (written before they existed, as
		 * traces/nccl_ib/): the built-in ones, where the trace records
		 * the parameter the same way (a number; bytes of uvars) */
		for (item = own && b && !sem_item(fn->sem, "runid:") ? sem_item(b->sem, "runid:") : NULL; item;
		     item = sem_item(item + 1, "runid:"))
			sem_apply_item(fn, item, &t);
	}
	return 0;
}

int nrr_schema_parse(nrr_schema **out, const char *text, size_t len, nrr_diag *d)
{
	struct enum_index names = { 0 };
	unsigned *fnline = NULL;   /* the line of each fn, for sem_resolve()'s errors */
	nrr_schema *s = calloc(1, sizeof(*s));
	int rc = -ENOMEM;
	unsigned lineno = 0;
	if (!s)
		goto error;
	s->text = malloc(len + 1);
	if (!s->text)
		goto error;
	memcpy(s->text, text, len);
	s->text[len] = 0;
	const char *nul = memchr(s->text, 0, len);
	if (nul) {
		unsigned nl = 1;   /* name the line the NUL is on */
		for (const char *q = s->text; q < nul; q++)
			nl += *q == '\n';
		rc = fail(d, nl, "NUL byte in schema text");
		goto error;
	}

	/* Pass 1 counts, so pointers into the arrays stay valid. */
	uint32_t ne = 0, nf = 0, na = 0, nv = 0;
	for (const char *p = s->text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		if (l > 2 && p[0] == 'e' && p[1] == 'n' && p[2] == 'u') ne++;
		else if (l > 2 && p[0] == 'f' && p[1] == 'n' && p[2] == ' ') nf++;
		else if (l > 1 && p[0] == 'a' && p[1] == ' ') na++;
		else if (l > 1 && p[0] == 'v' && p[1] == ' ') nv++;
		p += l + (nl ? 1 : 0);
	}
	if (grow((void **)&s->enums, &s->cenums, ne + 1, sizeof(*s->enums)) ||
	    grow((void **)&s->fns, &s->cfns, nf + 1, sizeof(*s->fns)) ||
	    !(fnline = calloc(nf + 1, sizeof(*fnline))) ||
	    grow((void **)&s->args, &s->cargs, na + 1, sizeof(*s->args)) ||
	    !(s->values = calloc(nv + 1, sizeof(*s->values))) ||
	    !(s->names = calloc(nv + 1, sizeof(*s->names))) || enum_index_init(&names, ne))
		goto error;

	char *p = s->text;
	bool header = false, ended = false;
	nrr_enum_schema *cur_enum = NULL;
	nrr_fn_schema *cur_fn = NULL;
	while (*p && !ended) {
		char *nl = strchr(p, '\n');
		if (!nl) {
			rc = fail(d, lineno + 1, "line not terminated by a newline (text truncated?)");
			goto error;
		}
		*nl = 0;
		char *line = p;
		p = nl + 1;
		lineno++;
		char *tok[8];
		int nt = tokens(line, tok, 8);
		if (nt <= 0) {
			rc = fail(d, lineno, nt == 0 ? "empty line" : "too many fields or stray space");
			goto error;
		}
		if (!header) {
			if (nt != 2 || strcmp(tok[0], "ncclrr-schema") != 0) {
				rc = fail(d, lineno, "expected 'ncclrr-schema 1'");
				goto error;
			}
			if (strcmp(tok[1], "1") != 0) {
				rc = fail(d, lineno, "schema version '%s' is newer than this reader (1)", tok[1]);
				goto error;
			}
			header = true;
			continue;
		}
		if (strcmp(tok[0], "end") == 0 && nt == 1) {
			ended = true;
		} else if (strcmp(tok[0], "enum") == 0 && (nt == 2 || (nt == 3 && strcmp(tok[2], "flags") == 0))) {
			/* (format 3.0: tables may follow functions, as a writer
			 * that writes functions on first use adds them) */
			cur_fn = NULL;
			cur_enum = &s->enums[s->nenums];
			memset(cur_enum, 0, sizeof(*cur_enum));
			cur_enum->name = tok[1];
			if (find_enum(s, &names, tok[1], cur_enum)) {
				rc = fail(d, lineno, "enum '%s' defined twice", tok[1]);
				goto error;
			}
			s->nenums++;
			cur_enum->flags = nt == 3;
			cur_enum->values = &s->values[s->nvalues];
			cur_enum->names = &s->names[s->nvalues];
		} else if (strcmp(tok[0], "v") == 0 && nt == 3) {
			int64_t v;
			if (!cur_enum) {
				rc = fail(d, lineno, "value outside an enum block");
				goto error;
			}
			if (parse_i64(tok[1], &v)) {
				rc = fail(d, lineno, "bad enum value '%s'", tok[1]);
				goto error;
			}
			s->values[s->nvalues] = v;
			s->names[s->nvalues] = tok[2];
			s->nvalues++;
			cur_enum->n++;
		} else if (strcmp(tok[0], "fn") == 0 && nt >= 5) {
			int64_t id;
			if (parse_i64(tok[1], &id) || id != (int64_t)s->nfns + 1) {
				rc = fail(d, lineno, "fn id '%s' out of sequence (expected %u)", tok[1], s->nfns + 1);
				goto error;
			}
			cur_enum = NULL;
			fnline[s->nfns] = lineno;
			cur_fn = &s->fns[s->nfns++];
			memset(cur_fn, 0, sizeof(*cur_fn));
			cur_fn->id = (uint32_t)id;
			cur_fn->name = tok[2];
			cur_fn->name_len = (uint16_t)strnlen(tok[2], UINT16_MAX);
			cur_fn->domain = tok[3];
			cur_fn->args = &s->args[s->nargs];
			char *colon = strchr(tok[4], ':');
			if (colon) {
				*colon = 0;
				cur_fn->ret_table = colon + 1;
				cur_fn->rtable = find_enum(s, &names, colon + 1, NULL);
				if (!cur_fn->rtable) {
					rc = fail(d, lineno, "unknown enum '%s'", colon + 1);
					goto error;
				}
			}
			size_t r;
			for (r = 0; r < sizeof(rets) / sizeof(rets[0]); r++)
				if (strcmp(rets[r], tok[4]) == 0)
					break;
			if (r == sizeof(rets) / sizeof(rets[0])) {
				rc = fail(d, lineno, "unknown return convention '%s'", tok[4]);
				goto error;
			}
			cur_fn->ret = (uint8_t)r;
			for (int i = 5; i < nt; i++) {
				if (strcmp(tok[i], "blocking") == 0)
					cur_fn->flags |= NRR_FN_BLOCKING;
				else if (strcmp(tok[i], "poll") == 0)
					cur_fn->flags |= NRR_FN_POLL;
				else if (strcmp(tok[i], "instant") == 0)
					cur_fn->flags |= NRR_FN_INSTANT;
				else if (strncmp(tok[i], "sem=", 4) == 0 && tok[i][4])
					cur_fn->sem = tok[i] + 4;
				/* else a hint of a later version: attributes never change
				 * how records decode (FORMAT.md), so it is skipped */
			}
		} else if (strcmp(tok[0], "a") == 0 && (nt == 4 || nt == 5)) {
			if (!cur_fn) {
				rc = fail(d, lineno, "argument outside a fn block");
				goto error;
			}
			if (cur_fn->nargs >= NRR_MAX_ARGS) {
				rc = fail(d, lineno, "more than %d arguments", NRR_MAX_ARGS);
				goto error;
			}
			nrr_arg_schema *a = &s->args[s->nargs++];
			memset(a, 0, sizeof(*a));
			if (strcmp(tok[1], "in") == 0) a->dir = NRR_DIR_IN;
			else if (strcmp(tok[1], "out") == 0) a->dir = NRR_DIR_OUT;
			else if (strcmp(tok[1], "inout") == 0) a->dir = NRR_DIR_INOUT;
			else {
				rc = fail(d, lineno, "bad direction '%s'", tok[1]);
				goto error;
			}
			a->name = tok[2];
			a->name_len = (uint16_t)strnlen(tok[2], UINT16_MAX);
			char *colon = strchr(tok[3], ':');
			if (colon) {
				*colon = 0;
				a->kind = colon + 1;
			}
			size_t f;
			for (f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++)
				if (strcmp(fmts[f].name, tok[3]) == 0)
					break;
			if (f == sizeof(fmts) / sizeof(fmts[0])) {
				rc = fail(d, lineno, "unknown format '%s'", tok[3]);
				goto error;
			}
			a->fmt = fmts[f].fmt;
			a->wire = fmts[f].wire;
			if (a->fmt == NRR_FMT_ENUM || a->fmt == NRR_FMT_FLAGS) {
				a->table = a->kind ? find_enum(s, &names, a->kind, NULL) : NULL;
				if (!a->table) {
					rc = fail(d, lineno, "%s needs a known table, got '%s'", tok[3], a->kind ? a->kind : "");
					goto error;
				}
			} else if (a->fmt == NRR_FMT_HANDLE && !a->kind) {
				rc = fail(d, lineno, "handle needs a kind");
				goto error;
			}
			if (nt == 5) {
				if (strcmp(tok[4], "create") == 0) a->hflags = NRR_HANDLE_CREATE;
				else if (strcmp(tok[4], "consume") == 0) a->hflags = NRR_HANDLE_CONSUME;
				else {
					rc = fail(d, lineno, "unknown arg attribute '%s'", tok[4]);
					goto error;
				}
			}
			if (a->dir & NRR_DIR_IN) {
				cur_fn->nin++;
				cur_fn->in_mask |= 1u << cur_fn->nargs;
			}
			if (a->dir & NRR_DIR_OUT) {
				cur_fn->nout++;
				cur_fn->out_mask |= 1u << cur_fn->nargs;
			}
			if (a->wire == NRR_WIRE_B)
				cur_fn->b_mask |= 1u << cur_fn->nargs;
			cur_fn->nargs++;
		} else {
			rc = fail(d, lineno, "unknown line '%s'", tok[0]);
			goto error;
		}
	}
	if (!ended) {
		rc = fail(d, lineno, "missing 'end' (schema truncated)");
		goto error;
	}
	if ((rc = sem_resolve(s, &names, fnline, d)))
		goto error;
	free(fnline);
	free(names.slot);
	s->enum_probes = names.probes;
	*out = s;
	return 0;
error:
	free(fnline);
	free(names.slot);
	nrr_schema_free(s);
	return rc;
}

const nrr_fn_schema *nrr_schema_fn(const nrr_schema *s, uint32_t id)
{
	return id >= 1 && id <= s->nfns ? &s->fns[id - 1] : NULL;
}

const nrr_fn_schema *nrr_schema_fn_by_name(const nrr_schema *s, const char *name)
{
	for (uint32_t i = 0; i < s->nfns; i++)
		if (strcmp(s->fns[i].name, name) == 0)
			return &s->fns[i];
	return NULL;
}

uint64_t nrr_schema_enum_probes(const nrr_schema *s)
{
	return s->enum_probes;
}

uint32_t nrr_schema_nfns(const nrr_schema *s)
{
	return s->nfns;
}

const char *nrr_enum_name(const nrr_enum_schema *t, int64_t v)
{
	if (!t)
		return NULL;
	for (uint32_t i = 0; i < t->n; i++)
		if (t->values[i] == v)
			return t->names[i];
	return NULL;
}
