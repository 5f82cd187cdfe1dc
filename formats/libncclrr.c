/* SPDX-License-Identifier: MIT */
/*
 * libncclrr.c - the public reader API (include/ncclrr/ncclrr.h) over the
 * format core (nrt.h): opaque handles and accessors, so that the core's
 * structures can change without breaking programs linked against
 * libncclrr.so.0.  Only the ncclrr_* functions are exported
 * (libncclrr.map).
 */
#include "ncclrr/ncclrr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callfmt.h"
#include "ncclrr_config.h"
#include "nrt.h"

struct ncclrr_call {
	const nrr_call *c;
	const nrr_reader *r;
	size_t file;
};

struct ncclrr_reader {
	nrr_reader **files;
	size_t nfiles;
	nrr_merge *merge;
	struct ncclrr_call cur;
	char *meta;         /* the last ncclrr_reader_meta() value */
	size_t meta_cap;
	char error[1024];
	int done;
};

NCCLRR_API const char *ncclrr_strerror(int err)
{
	return nrr_strerror(err);
}

NCCLRR_API const char *ncclrr_version_string(void)
{
	return NCCLRR_VERSION;
}

NCCLRR_API void ncclrr_reader_close(ncclrr_reader *r)
{
	if (!r)
		return;
	if (r->merge)
		nrr_merge_close(r->merge);
	for (size_t i = 0; i < r->nfiles; i++)
		nrr_reader_close(r->files[i]);
	free(r->files);
	free(r->meta);
	free(r);
}

NCCLRR_API int ncclrr_reader_open(ncclrr_reader **out, const char *const *paths, size_t nfiles, char *errbuf,
				  size_t errlen)
{
	int rc;
	ncclrr_reader *r = NULL;
	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (out)
		*out = NULL;
	if (!out || !paths || !nfiles) {
		rc = -EINVAL;
		if (errbuf)
			snprintf(errbuf, errlen, "Cannot open traces: no trace file given");
		goto error;
	}
	r = calloc(1, sizeof(*r));
	if (!r || !(r->files = calloc(nfiles, sizeof(*r->files)))) {
		rc = -ENOMEM;
		goto error_msg;
	}
	for (; r->nfiles < nfiles; r->nfiles++) {
		nrr_diag d;
		if (!paths[r->nfiles]) {
			rc = -EINVAL;
			if (errbuf)
				snprintf(errbuf, errlen, "Cannot open traces: path %zu of %zu is NULL", r->nfiles,
					 nfiles);
			goto error;
		}
		rc = nrr_reader_open(&r->files[r->nfiles], paths[r->nfiles], &d);
		if (rc < 0) {
			if (errbuf)
				nrr_diag_format(&d, errbuf, errlen);
			goto error;
		}
	}
	rc = nrr_merge_open(&r->merge, r->files, r->nfiles);
	if (rc < 0)
		goto error_msg;
	*out = r;
	return 0;
error_msg:
	if (errbuf)
		snprintf(errbuf, errlen, "Cannot open traces: %s", nrr_strerror(rc));
error:
	ncclrr_reader_close(r);
	return rc;
}

NCCLRR_API size_t ncclrr_reader_nfiles(const ncclrr_reader *r)
{
	return r->nfiles;
}

NCCLRR_API const char *ncclrr_reader_meta(ncclrr_reader *r, size_t file, const char *key)
{
	if (file >= r->nfiles || !key)
		return NULL;
	const nrr_meta_kv *kv;
	size_t n = nrr_reader_meta_keys(r->files[file], &kv), kl = strlen(key);
	for (size_t i = 0; i < n; i++) {
		if (kv[i].key_len != kl || memcmp(kv[i].key, key, kl) != 0)
			continue;
		if (kv[i].value_len + 1 > r->meta_cap) {
			char *m = realloc(r->meta, kv[i].value_len + 1);
			if (!m)
				return NULL;
			r->meta = m;
			r->meta_cap = kv[i].value_len + 1;
		}
		memcpy(r->meta, kv[i].value, kv[i].value_len);
		r->meta[kv[i].value_len] = '\0';
		return r->meta;
	}
	return NULL;
}

NCCLRR_API int ncclrr_reader_next(ncclrr_reader *r, const ncclrr_call **call)
{
	if (r->done)
		return 0;
	const nrr_call *c;
	size_t idx;
	int rc = nrr_merge_next(r->merge, &c, &idx);
	if (rc == NRR_EEOF) {
		r->done = 1;
		return 0;
	}
	if (rc < 0) {
		nrr_diag_format(nrr_merge_diag(r->merge), r->error, sizeof(r->error));
		r->done = 1;
		return rc;
	}
	r->cur = (struct ncclrr_call){ .c = c, .r = r->files[idx], .file = idx };
	*call = &r->cur;
	return 1;
}

NCCLRR_API const char *ncclrr_reader_error(const ncclrr_reader *r)
{
	return r->error;
}

/* ------------------------------------------------------------------ calls */

NCCLRR_API int ncclrr_call_kind(const ncclrr_call *c)
{
	return c->c->kind == NRR_CALL_LOG ? NCCLRR_KIND_LOG : NCCLRR_KIND_CALL;
}

NCCLRR_API int ncclrr_call_phase(const ncclrr_call *c)
{
	return c->c->phase;
}

NCCLRR_API const char *ncclrr_call_name(const ncclrr_call *c)
{
	return c->c->fn ? c->c->fn->name : "log";
}

NCCLRR_API const char *ncclrr_call_domain(const ncclrr_call *c)
{
	return c->c->fn ? c->c->fn->domain : "log";
}

NCCLRR_API size_t ncclrr_call_file(const ncclrr_call *c)
{
	return c->file;
}

NCCLRR_API uint32_t ncclrr_call_tid(const ncclrr_call *c)
{
	return c->c->tid;
}

NCCLRR_API uint64_t ncclrr_call_seq(const ncclrr_call *c)
{
	return c->c->kind == NRR_CALL_LOG ? 0 : c->c->seq;
}

NCCLRR_API unsigned ncclrr_call_depth(const ncclrr_call *c)
{
	return c->c->depth;
}

NCCLRR_API uint64_t ncclrr_call_wall_ns(const ncclrr_call *c)
{
	return nrr_reader_wall(c->r, c->c->ts);
}

NCCLRR_API uint64_t ncclrr_call_duration_ns(const ncclrr_call *c)
{
	return c->c->dur;
}

NCCLRR_API uint64_t ncclrr_call_repeat(const ncclrr_call *c)
{
	return c->c->repeat;
}

NCCLRR_API int64_t ncclrr_call_result(const ncclrr_call *c)
{
	return c->c->done ? c->c->result : 0;
}

NCCLRR_API uint32_t ncclrr_call_errno(const ncclrr_call *c)
{
	return c->c->err;
}

NCCLRR_API int ncclrr_call_failed(const ncclrr_call *c)
{
	return c->c->kind != NRR_CALL_LOG && c->c->done && nrr_call_failed(c->c);
}

NCCLRR_API unsigned ncclrr_call_nargs(const ncclrr_call *c)
{
	return c->c->fn ? c->c->fn->nargs : 0;
}

NCCLRR_API const char *ncclrr_call_arg_name(const ncclrr_call *c, unsigned i)
{
	return i < ncclrr_call_nargs(c) ? c->c->fn->args[i].name : NULL;
}

/* Argument @i when it was recorded in this event and has wire type @wire_b
 * (bytes) or not. */
static const nrr_value *arg(const ncclrr_call *c, unsigned i, int wire_b)
{
	if (i >= ncclrr_call_nargs(c) || i >= NRR_MAX_ARGS || !(c->c->present & (1u << i)))
		return NULL;
	if ((c->c->fn->args[i].wire == NRR_WIRE_B) != !!wire_b)
		return NULL;
	return &c->c->args[i];
}

NCCLRR_API int ncclrr_call_arg_u64(const ncclrr_call *c, unsigned i, uint64_t *v)
{
	const nrr_value *a = arg(c, i, 0);
	if (!a)
		return 0;
	*v = a->u;
	return 1;
}

NCCLRR_API int ncclrr_call_arg_bytes(const ncclrr_call *c, unsigned i, const uint8_t **data, size_t *len,
				     size_t *total)
{
	const nrr_value *a = arg(c, i, 1);
	if (!a)
		return 0;
	*data = a->p;
	*len = a->len;
	if (total)
		*total = a->total;
	return 1;
}

NCCLRR_API const char *ncclrr_call_log(const ncclrr_call *c, size_t *len)
{
	if (c->c->kind != NRR_CALL_LOG)
		return NULL;
	*len = c->c->log_len;
	return c->c->log;
}

NCCLRR_API int ncclrr_call_format(const ncclrr_call *c, char *buf, size_t size)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	const nrr_call *k = c->c;
	if (k->kind == NRR_CALL_LOG) {
		uint32_t n = k->log_len;
		while (n && (k->log[n - 1] == '\n' || k->log[n - 1] == '\r'))
			n--;
		fprintf(f, "log[%u] %.*s", k->log_level, (int)n, k->log);
	} else {
		if (k->phase == NRR_PHASE_RESUME)
			fprintf(f, "<... %s resumed> (", k->fn->name);
		else
			fprintf(f, "%s(", k->fn->name);
		nrr_format_args(f, k);
		fputc(')', f);
		if (k->done && k->fn->ret != NRR_RET_VOID) {
			fputs(" = ", f);
			nrr_format_result(f, k);
		}
	}
	if (fclose(f) != 0 || !text) {
		free(text);
		return -ENOMEM;
	}
	if (size)
		snprintf(buf, size, "%s", text);
	free(text);
	return len > (size_t)INT32_MAX ? -ENOMEM : (int)len;
}
