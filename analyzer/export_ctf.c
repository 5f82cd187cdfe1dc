/* SPDX-License-Identifier: MIT */
/*
 * export_ctf.c - native traces (.nrt) as a Babeltrace2 source component
 * (`source.ncclrr.nrt`), and `ncclrr export --ctf DIR` = that source ->
 * filter.utils.muxer -> sink.ctf.fs in one graph of this process.
 *
 * The events have the shape of the LTTng-UST providers that
 * `ncclrr record --backend lttng` uses (formats/gen/ncclrr_gen.py --emit
 * lttng), plus fields only a complete trace knows, so that formats/ctf.c
 * reads the CTF written here back into .nrt:
 *   ncclrr_<domain>:<fn>_enter  in-args, seq, depth, inflight
 *   ncclrr_<domain>:<fn>_leave  ret, err, failed, out-args, seq, depth,
 *                               duration_ns, repeat, repeat_ns
 *   ncclrr_log:line             level, text, depth
 *   ncclrr_log:meta             text (the file's metadata, first event)
 *   ncclrr:inflight             fn, seq, depth, duration_ns: a call that
 *                               holds nested calls and never returned
 * Every event has the common context { vpid, vtid }.  A complete call with
 * no nested call (reader phase CALL) gives an _enter at its enter time and
 * a _leave at its leave time; phase ENTER gives the _enter, RESUME the
 * _leave, INFLIGHT an _enter with inflight=1 (or ncclrr:inflight when its
 * _enter was already sent), a log line one ncclrr_log:line.  Times are the
 * wall clock (ns since the Unix epoch), non-decreasing in every stream.
 *
 * One CTF trace per .nrt (process), one stream and one output port per
 * thread; environment: hostname, host, pid, rank, nccl_version and every
 * other metadata key except env.* (dots become '_').
 */
#include <errno.h>
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export_ctf.h"
#include "nrr_meta.h"
#include "nrt.h"

#if NCCLRR_HAVE_BT2
#include "callfmt.h"
#include "nrt_ctf.h"

const char nrr_ctf_src_description[] = "Read ncclrr native traces (.nrt files)";
/* ------------------------------------------------ babeltrace.support-info */
/* Is @path a file that starts with the .nrt magic (FORMAT.md)? */
static bool nrt_file(const char *path)
{
	static const unsigned char magic[8] = { 0x89, 'N', 'R', 'T', '\r', '\n', 0x1a, '\n' };
	unsigned char b[8];
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	bool ok = fread(b, 1, sizeof(b), f) == sizeof(b) && !memcmp(b, magic, sizeof(b));
	fclose(f);
	return ok;
}

/* Does directory @path hold a .nrt trace (not recursively)? */
static bool nrt_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return false;
	bool found = false;
	struct dirent *e;
	char f[4096];
	while (!found && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 4 && !strcmp(e->d_name + l - 4, ".nrt") &&
		    snprintf(f, sizeof(f), "%s/%s", path, e->d_name) < (int)sizeof(f))
			found = nrt_file(f);
	}
	closedir(d);
	return found;
}

/* `babeltrace2 DIR` (babeltrace2-convert's discovery) asks each source
 * whether it reads an input: a run directory holding .nrt traces, or an
 * .nrt file (weight 1), grouped by directory so that the files of one run
 * go to one component, as `inputs` of run directories do. */
bt_component_class_query_method_status nrr_ctf_src_query(bt_self_component_class_source *cls,
	bt_private_query_executor *qe, const char *object, const bt_value *params, void *method_data,
	const bt_value **result)
{
	(void)cls;
	(void)qe;
	(void)method_data;
	if (strcmp(object, "babeltrace.support-info") != 0)
		return BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_UNKNOWN_OBJECT;
	const bt_value *in = params && bt_value_is_map(params) ? bt_value_map_borrow_entry_value_const(params, "input")
								: NULL;
	const bt_value *ty = params && bt_value_is_map(params) ? bt_value_map_borrow_entry_value_const(params, "type")
								: NULL;
	if (!in || !ty || !bt_value_is_string(in) || !bt_value_is_string(ty))
		return BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_ERROR;
	const char *input = bt_value_string_get(in), *type = bt_value_string_get(ty);
	double weight = 0;
	char group[4096] = "";
	if (!strcmp(type, "directory") && nrt_dir(input)) {
		weight = 1.0;
	} else if (!strcmp(type, "file") && nrt_file(input)) {
		weight = 1.0;
		snprintf(group, sizeof(group), "%s", input);
		char *slash = strrchr(group, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(group, sizeof(group), ".");
	}
	bt_value *res = bt_value_map_create();
	if (!res)
		return BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_MEMORY_ERROR;
	if (bt_value_map_insert_real_entry(res, "weight", weight) ||
	    (group[0] && bt_value_map_insert_string_entry(res, "group", group))) {
		bt_value_put_ref(res);
		return BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_MEMORY_ERROR;
	}
	*result = res;
	return BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_OK;
}

const char nrr_ctf_src_help[] =
	"Parameter `inputs` (array of strings): .nrt files, or run directories whose\n"
	"*.nrt files are read.  One CTF trace per file (traced process), one stream per\n"
	"thread; events ncclrr_<domain>:<fn>_enter/_leave, ncclrr_log:line,\n"
	"ncclrr_log:meta and ncclrr:inflight, on the wall clock.\n";

/* ------------------------------------------------------------ model */

enum kind { K_U, K_X, K_S, K_ENUM, K_STR, K_BYTES, K_SOCK };

struct argmap {
	uint16_t arg;    /* index in fn->args */
	uint8_t kind;
	uint16_t idx;    /* first payload member (K_BYTES/K_SOCK: the length, array, _len[, _text]) */
};

/* One event class with where each value goes in its payload. */
struct ecinfo {
	bt_event_class *ec;
	uint16_t nmap;
	struct argmap *map;
	uint16_t i_seq, i_depth, i_inflight, i_ret, i_err, i_failed, i_dur, i_repeat, i_repeat_ns;
};

struct proc {
	nrr_reader *r;
	bt_trace_class *tc;
	bt_stream_class *sc;
	bt_trace *trace;
	uint32_t nfns;
	struct ecinfo *ev;     /* [2 * (id - 1) + leave] */
	bt_event_class *log_ec, *meta_ec, *infl_ec;
	uint32_t main_stream;
};

struct port {
	struct proc *p;
	uint32_t stream;
};

struct src {
	bt_self_component *self;
	struct proc *procs;
	size_t nprocs;
	bool own;
	struct port *ports;
	size_t nports;
};

/* ------------------------------------------------------------ input files */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Append @path (a .nrt file, or a directory's *.nrt) to @list. */
static int expand_input(const char *path, char ***list, size_t *n, char *msg, size_t msglen)
{
	struct stat st;
	if (stat(path, &st)) {
		snprintf(msg, msglen, "Cannot open trace: file=%s: %s", path, strerror(errno));
		return -1;
	}
	char **x;
	if (!S_ISDIR(st.st_mode)) {
		x = realloc(*list, (*n + 1) * sizeof(*x));
		if (!x || !(x[*n] = strdup(path))) {
			free(x == *list ? NULL : x);
			snprintf(msg, msglen, "out of memory");
			return -1;
		}
		*list = x;
		(*n)++;
		return 0;
	}
	DIR *d = opendir(path);
	if (!d) {
		snprintf(msg, msglen, "Cannot open directory: dir=%s: %s", path, strerror(errno));
		return -1;
	}
	size_t before = *n;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l <= 4 || strcmp(e->d_name + l - 4, ".nrt"))
			continue;
		x = realloc(*list, (*n + 1) * sizeof(*x));
		if (!x)
			break;
		*list = x;
		if (asprintf(&x[*n], "%s/%s", path, e->d_name) < 0)
			break;
		(*n)++;
	}
	closedir(d);
	if (*n == before) {
		snprintf(msg, msglen, "Cannot find traces: dir=%s holds no .nrt file", path);
		return -1;
	}
	qsort(*list + before, *n - before, sizeof(char *), cmp_str);
	return 0;
}

/* ------------------------------------------------------------ trace IR */

/* Append member @name (made unique with '_' suffixes) to structure @s.
 * @return its index, or -1. */
static int add_member(bt_field_class *s, const char *name, bt_field_class *fc)
{
	char buf[160];
	snprintf(buf, sizeof(buf), "%s", name);
	while (bt_field_class_structure_borrow_member_by_name(s, buf) && strlen(buf) + 1 < sizeof(buf))
		strcat(buf, "_");
	int idx = (int)bt_field_class_structure_get_member_count(s);
	int rc = fc && bt_field_class_structure_append_member(s, buf, fc) == BT_FIELD_CLASS_STRUCTURE_APPEND_MEMBER_STATUS_OK
			 ? idx : -1;
	bt_field_class_put_ref(fc);
	return rc;
}

static bt_field_class *uint_fc(bt_trace_class *tc, unsigned bits, bool hex)
{
	bt_field_class *fc = bt_field_class_integer_unsigned_create(tc);
	if (fc) {
		bt_field_class_integer_set_field_value_range(fc, bits);
		if (hex)
			bt_field_class_integer_set_preferred_display_base(fc, BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_HEXADECIMAL);
	}
	return fc;
}

static bt_field_class *sint_fc(bt_trace_class *tc)
{
	return bt_field_class_integer_signed_create(tc);
}

/* A signed enumeration with the symbols of @t (a plain signed integer
 * without a table). */
static bt_field_class *enum_fc(bt_trace_class *tc, const nrr_enum_schema *t)
{
	if (!t || t->flags || !t->n)
		return sint_fc(tc);
	bt_field_class *fc = bt_field_class_enumeration_signed_create(tc);
	for (uint32_t i = 0; fc && i < t->n; i++) {
		if (bt_field_class_enumeration_signed_borrow_mapping_by_label_const(fc, t->names[i]))
			continue;
		bt_integer_range_set_signed *rs = bt_integer_range_set_signed_create();
		if (!rs || bt_integer_range_set_signed_add_range(rs, t->values[i], t->values[i]) ||
		    bt_field_class_enumeration_signed_add_mapping(fc, t->names[i], rs)) {
			bt_integer_range_set_signed_put_ref(rs);
			bt_field_class_put_ref(fc);
			return NULL;
		}
		bt_integer_range_set_signed_put_ref(rs);
	}
	return fc;
}

static bool arg_kind(const nrr_arg_schema *a, uint8_t *k)
{
	switch (a->fmt) {
	case NRR_FMT_U: case NRR_FMT_BOOL: *k = K_U; break;
	case NRR_FMT_X: case NRR_FMT_HANDLE: case NRR_FMT_FLAGS: *k = K_X; break;
	case NRR_FMT_I: case NRR_FMT_FD: *k = K_S; break;
	case NRR_FMT_ENUM: *k = a->table && !a->table->flags ? K_ENUM : K_S; break;
	case NRR_FMT_STR: *k = K_STR; break;
	case NRR_FMT_SOCKADDR: *k = K_SOCK; break;
	default:
		*k = a->wire == NRR_WIRE_B ? K_BYTES : a->wire == NRR_WIRE_S ? K_S : K_U;
		break;
	}
	return true;
}

/* The event class @fn_@leave of @p, created at first use. */
static struct ecinfo *event_class(struct proc *p, const nrr_fn_schema *fn, bool leave)
{
	if (fn->id == 0 || fn->id > p->nfns)
		return NULL;
	struct ecinfo *e = &p->ev[2 * (fn->id - 1) + leave];
	if (e->ec)
		return e;
	bt_trace_class *tc = p->tc;
	bt_event_class *ec = bt_event_class_create(p->sc);
	bt_field_class *s = bt_field_class_structure_create(tc);
	char name[300];
	snprintf(name, sizeof(name), "ncclrr_%s:%s_%s", fn->domain ? fn->domain : "api", fn->name, leave ? "leave" : "enter");
	if (!ec || !s || bt_event_class_set_name(ec, name))
		goto error;
	e->map = calloc(fn->nargs + 1u, sizeof(*e->map));
	if (!e->map)
		goto error;
	int ok = 0;
	if (leave) {
		ok |= (e->i_ret = (uint16_t)add_member(s, "ret", enum_fc(tc, fn->rtable))) == (uint16_t)-1;
		ok |= (e->i_err = (uint16_t)add_member(s, "err", sint_fc(tc))) == (uint16_t)-1;
		ok |= (e->i_failed = (uint16_t)add_member(s, "failed", uint_fc(tc, 8, false))) == (uint16_t)-1;
	}
	for (uint16_t i = 0; i < fn->nargs; i++) {
		const nrr_arg_schema *a = &fn->args[i];
		if (!(a->dir & (leave ? NRR_DIR_OUT : NRR_DIR_IN)))
			continue;
		struct argmap *m = &e->map[e->nmap++];
		m->arg = i;
		arg_kind(a, &m->kind);
		char n2[160];
		int idx;
		switch (m->kind) {
		case K_U: idx = add_member(s, a->name, uint_fc(tc, 64, false)); break;
		case K_X: idx = add_member(s, a->name, uint_fc(tc, 64, true)); break;
		case K_S: idx = add_member(s, a->name, sint_fc(tc)); break;
		case K_ENUM: idx = add_member(s, a->name, enum_fc(tc, a->table)); break;
		case K_STR:
			idx = add_member(s, a->name, bt_field_class_string_create(tc));
			snprintf(n2, sizeof(n2), "%s_len", a->name);
			ok |= add_member(s, n2, uint_fc(tc, 64, false)) < 0;
			break;
		default: {   /* bytes: LTTng's sequence_hex layout, plus the total length */
			snprintf(n2, sizeof(n2), "_%s_length", a->name);
			bt_field_class *len = uint_fc(tc, 32, false);
			bt_field_class_get_ref(len);
			idx = add_member(s, n2, len);
			bt_field_class *elem = uint_fc(tc, 8, true);
			bt_field_class *arr = elem ? bt_field_class_array_dynamic_create(tc, elem, len) : NULL;
			bt_field_class_put_ref(elem);
			bt_field_class_put_ref(len);
			ok |= add_member(s, a->name, arr) < 0;
			snprintf(n2, sizeof(n2), "%s_len", a->name);
			ok |= add_member(s, n2, uint_fc(tc, 64, false)) < 0;
			if (m->kind == K_SOCK) {
				snprintf(n2, sizeof(n2), "%s_text", a->name);
				ok |= add_member(s, n2, bt_field_class_string_create(tc)) < 0;
			}
			break;
		}
		}
		ok |= idx < 0;
		m->idx = (uint16_t)idx;
	}
	ok |= (e->i_seq = (uint16_t)add_member(s, "seq", uint_fc(tc, 64, false))) == (uint16_t)-1;
	ok |= (e->i_depth = (uint16_t)add_member(s, "depth", uint_fc(tc, 8, false))) == (uint16_t)-1;
	if (leave) {
		ok |= (e->i_dur = (uint16_t)add_member(s, "duration_ns", uint_fc(tc, 64, false))) == (uint16_t)-1;
		ok |= (e->i_repeat = (uint16_t)add_member(s, "repeat", uint_fc(tc, 64, false))) == (uint16_t)-1;
		ok |= (e->i_repeat_ns = (uint16_t)add_member(s, "repeat_ns", uint_fc(tc, 64, false))) == (uint16_t)-1;
	} else {
		ok |= (e->i_inflight = (uint16_t)add_member(s, "inflight", uint_fc(tc, 8, false))) == (uint16_t)-1;
	}
	if (ok || bt_event_class_set_payload_field_class(ec, s))
		goto error;
	bt_field_class_put_ref(s);
	e->ec = ec;
	return e;
error:
	free(e->map);
	e->map = NULL;
	e->nmap = 0;
	bt_field_class_put_ref(s);
	bt_event_class_put_ref(ec);
	return NULL;
}

/* A fixed event class named @name with the string/integer members
 * @members ("s:NAME" string, "u:NAME" u64, "b:NAME" u8). */
static bt_event_class *simple_class(struct proc *p, const char *name, const char *const *members)
{
	bt_event_class *ec = bt_event_class_create(p->sc);
	bt_field_class *s = bt_field_class_structure_create(p->tc);
	bool bad = !ec || !s || bt_event_class_set_name(ec, name);
	for (; !bad && *members; members++) {
		const char *m = *members;
		bt_field_class *fc = m[0] == 's' ? bt_field_class_string_create(p->tc) : uint_fc(p->tc, m[0] == 'b' ? 8 : 64, false);
		bad = add_member(s, m + 2, fc) < 0;
	}
	if (!bad)
		bad = bt_event_class_set_payload_field_class(ec, s) != BT_EVENT_CLASS_SET_FIELD_CLASS_STATUS_OK;
	bt_field_class_put_ref(s);
	if (bad) {
		bt_event_class_put_ref(ec);
		return NULL;
	}
	return ec;
}

static void env_key(char *dst, size_t n, const char *k, size_t kl)
{
	size_t j = 0;
	for (size_t i = 0; i < kl && j + 1 < n; i++) {
		char c = k[i];
		dst[j++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ? c : '_';
	}
	dst[j] = 0;
}

/* Trace class, clock, stream class, trace and environment of @p. */
static int proc_setup(struct src *s, struct proc *p, char *msg, size_t msglen)
{
	const nrr_schema *schema = nrr_reader_schema(p->r);
	const nrr_file_info *fi = nrr_reader_info(p->r);
	p->nfns = nrr_schema_nfns(schema);
	p->ev = calloc(2 * (size_t)p->nfns + 1, sizeof(*p->ev));
	p->tc = bt_trace_class_create(s->self);
	bt_clock_class *cc = bt_clock_class_create(s->self);
	if (!p->ev || !p->tc || !cc)
		goto nomem;
	bt_clock_class_set_name(cc, "wall");
	bt_clock_class_set_description(cc, "CLOCK_REALTIME of the traced host, ns since the Unix epoch");
	bt_clock_class_set_frequency(cc, 1000000000);
	bt_clock_class_set_origin_is_unix_epoch(cc, BT_TRUE);
	p->sc = bt_stream_class_create(p->tc);
	if (!p->sc || bt_stream_class_set_default_clock_class(p->sc, cc))
		goto nomem;
	bt_stream_class_set_supports_packets(p->sc, BT_TRUE, BT_TRUE, BT_TRUE);
	bt_field_class *ctx = bt_field_class_structure_create(p->tc);
	if (!ctx || add_member(ctx, "vpid", sint_fc(p->tc)) < 0 || add_member(ctx, "vtid", sint_fc(p->tc)) < 0 ||
	    bt_stream_class_set_event_common_context_field_class(p->sc, ctx)) {
		bt_field_class_put_ref(ctx);
		goto nomem;
	}
	bt_field_class_put_ref(ctx);
	static const char *const log_m[] = { "u:level", "s:text", "b:depth", NULL };
	static const char *const meta_m[] = { "s:text", NULL };
	static const char *const infl_m[] = { "s:fn", "u:seq", "b:depth", "u:duration_ns", NULL };
	p->log_ec = simple_class(p, "ncclrr_log:line", log_m);
	p->meta_ec = simple_class(p, "ncclrr_log:meta", meta_m);
	p->infl_ec = simple_class(p, "ncclrr:inflight", infl_m);
	p->trace = bt_trace_create(p->tc);
	if (!p->log_ec || !p->meta_ec || !p->infl_ec || !p->trace)
		goto nomem;

	/* nrr_reader_meta() answers in one buffer: copy each value */
	char host[128], rank[32], name[300];
	const char *v = nrr_reader_meta(p->r, "host");
	snprintf(host, sizeof(host), "%s", v && *v ? v : "unknown");
	long rk = nrr_meta_rank(p->r);
	if (rk >= 0)
		snprintf(rank, sizeof(rank), "%ld", rk);
	else
		rank[0] = 0;
	if (*rank)
		snprintf(name, sizeof(name), "rank%s-%s-%u", rank, host, fi->pid);
	else
		snprintf(name, sizeof(name), "%s-%u", host, fi->pid);
	bt_trace_set_name(p->trace, name);
	bt_trace_set_environment_entry_string(p->trace, "hostname", host);
	bt_trace_set_environment_entry_string(p->trace, "tracer_name", "ncclrr");
	bt_trace_set_environment_entry_string(p->trace, "trace_file", nrr_reader_path(p->r));
	bt_trace_set_environment_entry_integer(p->trace, "pid", fi->pid);
	size_t len;
	const char *t = nrr_reader_meta_text(p->r, &len), *end = t + len;
	while (t && t < end) {
		const char *nl = memchr(t, '\n', (size_t)(end - t));
		size_t n = nl ? (size_t)(nl - t) : (size_t)(end - t);
		const char *eq = memchr(t, '=', n);
		if (eq && eq > t && !(eq - t > 4 && !memcmp(t, "env.", 4)) && !(eq - t == 3 && !memcmp(t, "pid", 3))) {
			char key[128], *val = strndup(eq + 1, n - (size_t)(eq - t) - 1);
			env_key(key, sizeof(key), t, (size_t)(eq - t));
			if (val)
				bt_trace_set_environment_entry_string(p->trace, key, val);
			free(val);
		}
		t += n + 1;
	}
	p->main_stream = 0;
	for (uint32_t i = 0; i < fi->nstreams; i++)
		if (nrr_reader_stream(p->r, i)->tid == fi->pid)
			p->main_stream = i;
	bt_clock_class_put_ref(cc);
	return 0;
nomem:
	bt_clock_class_put_ref(cc);
	snprintf(msg, msglen, "Failed to create the trace IR: file=%s (out of memory)", nrr_reader_path(p->r));
	return -1;
}

/* ------------------------------------------------------------ component */

static void src_free(struct src *s)
{
	for (size_t i = 0; i < s->nprocs; i++) {
		struct proc *p = &s->procs[i];
		for (size_t k = 0; p->ev && k < 2 * (size_t)p->nfns; k++) {
			bt_event_class_put_ref(p->ev[k].ec);
			free(p->ev[k].map);
		}
		free(p->ev);
		bt_event_class_put_ref(p->log_ec);
		bt_event_class_put_ref(p->meta_ec);
		bt_event_class_put_ref(p->infl_ec);
		bt_trace_put_ref(p->trace);
		bt_stream_class_put_ref(p->sc);
		bt_trace_class_put_ref(p->tc);
		if (s->own)
			nrr_reader_close(p->r);
	}
	free(s->procs);
	free(s->ports);
	free(s);
}

bt_component_class_initialize_method_status nrr_ctf_src_init(bt_self_component_source *self,
	bt_self_component_source_configuration *config, const bt_value *params, void *init_data)
{
	bt_self_component *sc = bt_self_component_source_as_self_component(self);
	struct src *s = calloc(1, sizeof(*s));
	char msg[1200] = "out of memory";
	char **files = NULL;
	size_t nfiles = 0;
	if (!s)
		goto error;
	s->self = sc;
	if (init_data) {
		const struct nrr_ctf_init *in = init_data;
		s->procs = calloc(in->n + 1, sizeof(*s->procs));
		if (!s->procs)
			goto error;
		for (size_t i = 0; i < in->n; i++)
			s->procs[s->nprocs++].r = in->r[i];
	} else {
		s->own = true;
		const bt_value *inputs = params ? bt_value_map_borrow_entry_value_const(params, "inputs") : NULL;
		if (!inputs || !bt_value_is_array(inputs) || !bt_value_array_get_length(inputs)) {
			snprintf(msg, sizeof(msg), "Missing or empty `inputs` parameter: give an array of .nrt files or run "
						   "directories, e.g. -p 'inputs=[\"run/\"]'");
			goto error;
		}
		for (uint64_t i = 0; i < bt_value_array_get_length(inputs); i++) {
			const bt_value *v = bt_value_array_borrow_element_by_index_const(inputs, i);
			if (!bt_value_is_string(v)) {
				snprintf(msg, sizeof(msg), "Invalid `inputs` parameter: element %llu is not a string",
					 (unsigned long long)i);
				goto error;
			}
			if (expand_input(bt_value_string_get(v), &files, &nfiles, msg, sizeof(msg)))
				goto error;
		}
		s->procs = calloc(nfiles + 1, sizeof(*s->procs));
		if (!s->procs)
			goto error;
		for (size_t i = 0; i < nfiles; i++) {
			nrr_diag d;
			if (nrr_reader_open(&s->procs[s->nprocs].r, files[i], &d)) {
				nrr_diag_format(&d, msg, sizeof(msg));
				goto error;
			}
			s->nprocs++;
		}
	}
	for (size_t i = 0; i < s->nprocs; i++) {
		struct proc *p = &s->procs[i];
		if (proc_setup(s, p, msg, sizeof(msg)))
			goto error;
		uint32_t ns = nrr_reader_info(p->r)->nstreams;
		struct port *x = realloc(s->ports, (s->nports + ns + 1) * sizeof(*x));
		if (!x)
			goto error;
		s->ports = x;
		for (uint32_t k = 0; k < ns; k++)
			s->ports[s->nports++] = (struct port){ p, k };
	}
	for (size_t i = 0; i < s->nports; i++) {
		struct port *pt = &s->ports[i];
		char name[200];
		/* the file's index keeps names unique when a file is given twice */
		snprintf(name, sizeof(name), "%zu:%s/tid-%u", (size_t)(pt->p - s->procs), bt_trace_get_name(pt->p->trace),
			 nrr_reader_stream(pt->p->r, pt->stream)->tid);
		if (bt_self_component_source_add_output_port(self, name, pt, NULL) !=
		    BT_SELF_COMPONENT_ADD_PORT_STATUS_OK) {
			snprintf(msg, sizeof(msg), "Failed to add output port: name=%s", name);
			goto error;
		}
	}
	for (size_t i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	bt_self_component_set_data(sc, s);
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
error:
	for (size_t i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	if (s)
		src_free(s);
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(sc, "%s", msg);
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
}

void nrr_ctf_src_finalize(bt_self_component_source *self)
{
	struct src *s = bt_self_component_get_data(bt_self_component_source_as_self_component(self));
	if (s)
		src_free(s);
}

/* ------------------------------------------------------------ iterator */

enum { ST_BEGIN, ST_EVENTS, ST_END, ST_DONE };

struct it {
	struct port *pt;
	nrr_cursor *cur;
	bt_stream *stream;
	bt_packet *packet;
	int state;
	uint64_t last;        /* time of the last message, wall ns */
	uint32_t tid;
	const bt_message *q[8];
	unsigned qh, qn;
	uint64_t open[NRR_MAX_DEPTH + 1];   /* seqs of calls whose _enter was sent (phase ENTER) */
	unsigned nopen;
	char scratch[512];
};

bt_message_iterator_class_initialize_method_status nrr_ctf_it_init(bt_self_message_iterator *self,
	bt_self_message_iterator_configuration *config, bt_self_component_port_output *port)
{
	struct port *pt = bt_self_component_port_get_data(bt_self_component_port_output_as_self_component_port(port));
	struct it *it = calloc(1, sizeof(*it));
	if (!it)
		return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	it->pt = pt;
	it->tid = nrr_reader_stream(pt->p->r, pt->stream)->tid;
	int rc = nrr_cursor_open(&it->cur, pt->p->r, pt->stream);
	if (rc) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(self, "Cannot read trace: file=%s stream=%u: %s",
			nrr_reader_path(pt->p->r), pt->stream, nrr_strerror(rc));
		free(it);
		return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	it->stream = bt_stream_create(pt->p->sc, pt->p->trace);
	if (!it->stream) {
		nrr_cursor_close(it->cur);
		free(it);
		return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	}
	char name[64];
	snprintf(name, sizeof(name), "tid-%u", it->tid);
	bt_stream_set_name(it->stream, name);
	bt_self_message_iterator_set_data(self, it);
	return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

void nrr_ctf_it_finalize(bt_self_message_iterator *self)
{
	struct it *it = bt_self_message_iterator_get_data(self);
	if (!it)
		return;
	while (it->qn) {
		bt_message_put_ref(it->q[it->qh]);
		it->qh = (it->qh + 1) % 8;
		it->qn--;
	}
	nrr_cursor_close(it->cur);
	bt_packet_put_ref(it->packet);
	bt_stream_put_ref(it->stream);
	free(it);
}

static bool push(struct it *it, const bt_message *m)
{
	if (!m || it->qn == 8) {
		bt_message_put_ref(m);
		return false;
	}
	it->q[(it->qh + it->qn) % 8] = m;
	it->qn++;
	return true;
}

static void set_u(bt_field *s, uint16_t i, uint64_t v)
{
	bt_field_integer_unsigned_set_value(bt_field_structure_borrow_member_field_by_index(s, i), v);
}

static void set_s(bt_field *s, uint16_t i, int64_t v)
{
	bt_field_integer_signed_set_value(bt_field_structure_borrow_member_field_by_index(s, i), v);
}

/* String field @f = the @n bytes at @p up to the first NUL. */
static void set_str(bt_field *f, const void *p, size_t n)
{
	const char *z = p ? memchr(p, 0, n) : NULL;
	bt_field_string_clear(f);
	if (p && n)
		bt_field_string_append_with_length(f, p, z ? (uint64_t)(z - (const char *)p) : n);
}

static void fill_args(struct it *it, bt_field *s, const struct ecinfo *e, const nrr_call *c)
{
	for (uint16_t k = 0; k < e->nmap; k++) {
		const struct argmap *m = &e->map[k];
		const nrr_arg_schema *a = &c->fn->args[m->arg];
		bool have = c->present >> m->arg & 1;
		const nrr_value *v = &c->args[m->arg];
		switch (m->kind) {
		case K_U:
		case K_X:
			set_u(s, m->idx, have ? v->u : 0);
			break;
		case K_S:
		case K_ENUM:
			set_s(s, m->idx, have ? (int64_t)v->u : 0);
			break;
		case K_STR:
			set_str(bt_field_structure_borrow_member_field_by_index(s, m->idx), have ? v->p : NULL, have ? v->len : 0);
			set_u(s, (uint16_t)(m->idx + 1), have ? v->total : 0);
			break;
		default: {
			uint32_t n = have ? v->len : 0;
			set_u(s, m->idx, n);
			bt_field *arr = bt_field_structure_borrow_member_field_by_index(s, (uint16_t)(m->idx + 1));
			bt_field_array_dynamic_set_length(arr, n);
			for (uint32_t i = 0; i < n; i++)
				bt_field_integer_unsigned_set_value(bt_field_array_borrow_element_field_by_index(arr, i), v->p[i]);
			set_u(s, (uint16_t)(m->idx + 2), have ? v->total : 0);
			if (m->kind == K_SOCK) {
				it->scratch[0] = 0;
				if (have) {
					FILE *f = fmemopen(it->scratch, sizeof(it->scratch), "w");
					if (f) {
						nrr_format_value(f, a, v);
						fclose(f);
					}
				}
				set_str(bt_field_structure_borrow_member_field_by_index(s, (uint16_t)(m->idx + 3)), it->scratch,
					strnlen(it->scratch, sizeof(it->scratch)));
			}
			break;
		}
		}
	}
}

/* An event message of class @ec at @ns (kept non-decreasing) with the
 * common context set; @payload receives its payload. */
static bt_message *new_event(bt_self_message_iterator *self, struct it *it, const bt_event_class *ec, uint64_t ns,
			     bt_field **payload)
{
	if (ns < it->last)
		ns = it->last;
	it->last = ns;
	bt_message *m = bt_message_event_create_with_packet_and_default_clock_snapshot(self, ec, it->packet, ns);
	if (!m)
		return NULL;
	bt_event *ev = bt_message_event_borrow_event(m);
	bt_field *ctx = bt_event_borrow_common_context_field(ev);
	set_s(ctx, 0, nrr_reader_info(it->pt->p->r)->pid);
	set_s(ctx, 1, it->tid);
	*payload = bt_event_borrow_payload_field(ev);
	return m;
}

static bool call_event(bt_self_message_iterator *self, struct it *it, const nrr_call *c, bool leave, bool inflight)
{
	struct proc *p = it->pt->p;
	struct ecinfo *e = event_class(p, c->fn, leave);
	if (!e)
		return false;
	bt_field *s;
	uint64_t t = nrr_reader_wall(p->r, leave || inflight ? nrr_call_key(c) : c->ts);
	if (inflight)
		t = nrr_reader_wall(p->r, c->ts);
	if (leave && c->phase == NRR_PHASE_CALL)
		t = nrr_reader_wall(p->r, c->ts + c->dur);
	bt_message *m = new_event(self, it, e->ec, t, &s);
	if (!m)
		return false;
	fill_args(it, s, e, c);
	set_u(s, e->i_seq, c->seq);
	set_u(s, e->i_depth, c->depth);
	if (leave) {
		set_s(s, e->i_ret, c->result);
		set_s(s, e->i_err, c->err);
		set_u(s, e->i_failed, nrr_call_failed(c));
		set_u(s, e->i_dur, c->dur);
		set_u(s, e->i_repeat, c->repeat);
		set_u(s, e->i_repeat_ns, c->repeat_ns);
	} else {
		set_u(s, e->i_inflight, inflight);
	}
	return push(it, m);
}

/* Messages for the next event of the stream (or its end). */
static int produce(bt_self_message_iterator *self, struct it *it)
{
	struct proc *p = it->pt->p;
	bt_field *s;
	bt_message *m;
	const nrr_call *c = NULL;
	if (it->state == ST_END) {
		if (!it->packet) {   /* a stream without a record */
			it->packet = bt_packet_create(it->stream);
			it->last = nrr_reader_info(p->r)->wall_ns;
			if (!it->packet || !push(it, bt_message_packet_beginning_create_with_default_clock_snapshot(self, it->packet, it->last)))
				return -ENOMEM;
		}
		if (!push(it, bt_message_packet_end_create_with_default_clock_snapshot(self, it->packet, it->last)) ||
		    !push(it, bt_message_stream_end_create(self, it->stream)))
			return -ENOMEM;
		it->state = ST_DONE;
		return 0;
	}
	int rc = nrr_cursor_next(it->cur, &c);
	if (rc == NRR_EEOF) {
		if (it->state == ST_BEGIN && !push(it, bt_message_stream_beginning_create(self, it->stream)))
			return -ENOMEM;
		it->state = ST_END;
		return 0;
	}
	if (rc) {
		char buf[1200];
		nrr_diag_format(nrr_cursor_diag(it->cur), buf, sizeof(buf));
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(self, "%s", buf);
		return rc;
	}
	if (it->state == ST_BEGIN) {
		/* stream, packet, and on the main thread the metadata first */
		uint64_t t0 = nrr_reader_wall(p->r, c->ts);
		bool main = it->pt->stream == p->main_stream;
		if (main && nrr_reader_info(p->r)->wall_ns < t0)
			t0 = nrr_reader_info(p->r)->wall_ns;
		it->last = t0;
		it->packet = bt_packet_create(it->stream);
		if (!it->packet || !push(it, bt_message_stream_beginning_create(self, it->stream)) ||
		    !push(it, bt_message_packet_beginning_create_with_default_clock_snapshot(self, it->packet, t0)))
			return -ENOMEM;
		if (main) {
			size_t len;
			const char *txt = nrr_reader_meta_text(p->r, &len);
			if (!(m = new_event(self, it, p->meta_ec, t0, &s)))
				return -ENOMEM;
			set_str(bt_field_structure_borrow_member_field_by_index(s, 0), txt, len);
			if (!push(it, m))
				return -ENOMEM;
		}
		it->state = ST_EVENTS;
	}
	bool ok = true;
	if (c->kind == NRR_CALL_LOG) {
		if (!(m = new_event(self, it, p->log_ec, nrr_reader_wall(p->r, c->ts), &s)))
			return -ENOMEM;
		set_u(s, 0, c->log_level);
		uint32_t n = c->log_len;
		while (n && (c->log[n - 1] == '\n' || c->log[n - 1] == '\r'))
			n--;
		set_str(bt_field_structure_borrow_member_field_by_index(s, 1), c->log, n);
		set_u(s, 2, c->depth);
		return push(it, m) ? 0 : -ENOMEM;
	}
	switch (c->phase) {
	case NRR_PHASE_CALL:
		ok = call_event(self, it, c, false, false) && call_event(self, it, c, true, false);
		break;
	case NRR_PHASE_ENTER:
		ok = call_event(self, it, c, false, false);
		if (it->nopen <= NRR_MAX_DEPTH)
			it->open[it->nopen++] = c->seq;
		break;
	case NRR_PHASE_RESUME:
		ok = call_event(self, it, c, true, false);
		if (it->nopen && it->open[it->nopen - 1] == c->seq)
			it->nopen--;
		break;
	default:   /* INFLIGHT */
		if (it->nopen && it->open[it->nopen - 1] == c->seq) {
			it->nopen--;
			if (!(m = new_event(self, it, p->infl_ec, nrr_reader_wall(p->r, nrr_call_key(c)), &s)))
				return -ENOMEM;
			set_str(bt_field_structure_borrow_member_field_by_index(s, 0), c->fn->name, strlen(c->fn->name));
			set_u(s, 1, c->seq);
			set_u(s, 2, c->depth);
			set_u(s, 3, c->dur);
			ok = push(it, m);
		} else {
			ok = call_event(self, it, c, false, true);
		}
		break;
	}
	return ok ? 0 : -ENOMEM;
}

bt_message_iterator_class_next_method_status nrr_ctf_it_next(bt_self_message_iterator *self,
	bt_message_array_const msgs, uint64_t capacity, uint64_t *count)
{
	struct it *it = bt_self_message_iterator_get_data(self);
	uint64_t n = 0;
	while (n < capacity) {
		if (it->qn) {
			msgs[n++] = it->q[it->qh];
			it->qh = (it->qh + 1) % 8;
			it->qn--;
			continue;
		}
		if (it->state == ST_DONE)
			break;
		int rc = produce(self, it);
		if (rc == -ENOMEM) {
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(self,
				"Failed to create a message: file=%s stream=%u (out of memory)", nrr_reader_path(it->pt->p->r),
				it->pt->stream);
			rc = -1;
		}
		if (rc) {
			for (uint64_t i = 0; i < n; i++)
				bt_message_put_ref(msgs[i]);
			*count = 0;
			return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
		}
	}
	*count = n;
	if (!n)
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
	return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
}

/* ------------------------------------------------------------ export */

static const bt_plugin *find_plugin(const char *name)
{
	const bt_plugin *p = NULL;
	if (bt_plugin_find(name, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &p) != BT_PLUGIN_FIND_STATUS_OK)
		return NULL;
	return p;
}

/* The oldest cause of the current thread's error (the component that
 * failed first: ours for a bad trace), or @dflt. */
static void take_error(char *err, size_t errlen, const char *dflt)
{
	const bt_error *e = bt_current_thread_take_error();
	uint64_t n = e ? bt_error_get_cause_count(e) : 0;
	if (n)
		snprintf(err, errlen, "%s", bt_error_cause_get_message(bt_error_borrow_cause_by_index(e, 0)));
	else
		snprintf(err, errlen, "%s", dflt);
	if (e)
		bt_error_release(e);
}

static bool dir_usable(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	if (stat(dir, &st)) {
		if (errno == ENOENT)
			return true;
		snprintf(err, errlen, "Cannot use output directory: dir=%s: %s", dir, strerror(errno));
		return false;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "Cannot use output directory: dir=%s exists and is not a directory", dir);
		return false;
	}
	DIR *d = opendir(dir);
	struct dirent *e;
	bool empty = d != NULL;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = false;
	if (d)
		closedir(d);
	if (!empty)
		snprintf(err, errlen, "Cannot use output directory: dir=%s is not empty (give a new directory or remove it)", dir);
	return empty;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (ftw->level > 0)
		remove(path);
	return 0;
}

int nrr_export_ctf(struct nrr_reader *const *r, size_t n, const char *outdir, char *err, size_t errlen)
{
	int rc = 2;
	struct stat st0;
	bool existed = stat(outdir, &st0) == 0;
	const bt_plugin *ctf = NULL, *utils = NULL;
	bt_message_iterator_class *mic = NULL;
	bt_component_class_source *cls = NULL;
	bt_graph *g = NULL;
	bt_value *sparams = NULL;
	const bt_component_source *src = NULL;
	const bt_component_filter *mux = NULL;
	const bt_component_sink *sink = NULL;
	struct nrr_ctf_init init = { r, n };

	if (!dir_usable(outdir, err, errlen))
		return 2;
	/* errors reach the caller through @err, not as log lines on stderr
	 * (LIBBABELTRACE2_INIT_LOG_LEVEL still turns logging on) */
	bt_logging_level level = BT_LOGGING_LEVEL_NONE;
	if (getenv("LIBBABELTRACE2_INIT_LOG_LEVEL"))
		level = bt_logging_get_global_level();
	else
		bt_logging_set_global_level(BT_LOGGING_LEVEL_NONE);
	ctf = find_plugin("ctf");
	utils = find_plugin("utils");
	const bt_component_class_sink *sink_cls = ctf ? bt_plugin_borrow_sink_component_class_by_name_const(ctf, "fs") : NULL;
	const bt_component_class_filter *mux_cls =
		utils ? bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer") : NULL;
	if (!sink_cls || !mux_cls) {
		snprintf(err, errlen, "Cannot find the Babeltrace2 plugins ctf (sink.ctf.fs) and utils (filter.utils.muxer): "
				      "install the babeltrace2 package");
		goto end;
	}
	mic = bt_message_iterator_class_create(nrr_ctf_it_next);
	if (!mic || bt_message_iterator_class_set_initialize_method(mic, nrr_ctf_it_init) ||
	    bt_message_iterator_class_set_finalize_method(mic, nrr_ctf_it_finalize))
		goto nomem;
	cls = bt_component_class_source_create("nrt", mic);
	if (!cls || bt_component_class_source_set_initialize_method(cls, nrr_ctf_src_init) ||
	    bt_component_class_source_set_finalize_method(cls, nrr_ctf_src_finalize))
		goto nomem;
	g = bt_graph_create(0);
	sparams = bt_value_map_create();
	if (!g || !sparams || bt_value_map_insert_string_entry(sparams, "path", outdir) ||
	    bt_value_map_insert_bool_entry(sparams, "quiet", BT_TRUE))
		goto nomem;
	if (bt_graph_add_source_component_with_initialize_method_data(g, cls, "ncclrr", NULL, &init,
		    level, &src) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		take_error(err, errlen, "Cannot read the traces");
		goto end;
	}
	if (bt_graph_add_filter_component(g, mux_cls, "mux", NULL, level, &mux) !=
		    BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_sink_component(g, sink_cls, "ctf", sparams, level, &sink) !=
		    BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		take_error(err, errlen, "Cannot create the sink.ctf.fs component");
		goto end;
	}
	if (!nrr_bt2_connect_muxed(g, src, mux, sink)) {
		take_error(err, errlen, "Failed to connect the graph");
		goto end;
	}
	bt_graph_run_status st;
	while ((st = bt_graph_run(g)) == BT_GRAPH_RUN_STATUS_AGAIN)
		;
	if (st != BT_GRAPH_RUN_STATUS_OK) {
		take_error(err, errlen, "Babeltrace2 failed to write the CTF trace");
		goto end;
	}
	rc = 0;
	goto end;
nomem:
	snprintf(err, errlen, "Failed to build the Babeltrace2 graph (out of memory)");
end:
	bt_graph_put_ref(g);
	bt_value_put_ref(sparams);
	bt_component_class_source_put_ref(cls);
	bt_message_iterator_class_put_ref(mic);
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
	if (rc) {
		/* what a failed run wrote: the directory was empty or new */
		nftw(outdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		if (!existed)
			rmdir(outdir);
	}
	return rc;
}

#else /* !NCCLRR_HAVE_BT2 */

int nrr_export_ctf(struct nrr_reader *const *r, size_t n, const char *outdir, char *err, size_t errlen)
{
	(void)r;
	(void)n;
	snprintf(err, errlen, "Cannot export CTF to dir=%s: this ncclrr was built without libbabeltrace2 "
			      "(install libbabeltrace2-dev and configure with meson -Dbabeltrace2=enabled)", outdir);
	return 2;
}

#endif
