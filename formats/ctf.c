/* SPDX-License-Identifier: MIT */
/*
 * ctf.c - LTTng-UST traces of the ncclrr_* providers, read with
 * libbabeltrace2 (source.ctf.fs -> filter.utils.muxer -> a sink of ours)
 * and written as .nrt files, so that every reader of the native format
 * (dump, stats, the analyzer, the replayer) reads them unchanged.
 *
 * The events carry the same values as the native records, field by field,
 * in the order of the schema's arguments (formats/gen/ncclrr_gen.py emits
 * both from formats/api/); the built-in schema says how each is encoded.
 */
#include <babeltrace2/babeltrace.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nrt.h"
#include "nrt_ctf.h"

/* Add every directory at most @depth levels below @dir that holds a CTF
 * `metadata` file to @inputs (NULL: stop at the first). @return found. */
static bool find_traces(const char *dir, int depth, bt_value *inputs)
{
	char p[PATH_MAX];
	struct stat st;
	if (snprintf(p, sizeof(p), "%s/metadata", dir) < (int)sizeof(p) && stat(p, &st) == 0 && S_ISREG(st.st_mode))
		return !inputs || bt_value_array_append_string_element(inputs, dir) == BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK;
	if (depth <= 0)
		return false;
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= (int)sizeof(p) || stat(p, &st) ||
		    !S_ISDIR(st.st_mode))
			continue;
		found |= find_traces(p, depth - 1, inputs);
		if (found && !inputs)
			break;
	}
	if (d)
		closedir(d);
	return found;
}

bool nrr_ctf_looks_like(const char *dir, int depth)
{
	return find_traces(dir, depth, NULL);
}

/* ------------------------------------------------------------ processes */

struct thread {
	int64_t vtid;
	nrr_tls *t;
};

struct proc {
	char host[128];
	int64_t vpid;
	nrr_writer *w;
	char path[PATH_MAX];
	struct thread *th;
	size_t nth, cth;
	uint64_t last_ns;
};

struct conv {
	const char *out_dir;
	const nrr_schema *schema;
	struct proc *p;
	size_t np, cp;
	int err;               /* first error (negative), or 0 */
	char errmsg[512];
	uint8_t *rec;          /* scratch for one record's arguments */
	size_t rec_cap;
};

static void conv_fail(struct conv *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void conv_fail(struct conv *c, int err, const char *fmt, ...)
{
	if (c->err)
		return;
	c->err = err;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
	va_end(ap);
}

static const bt_field *member(const bt_field *s, const char *name)
{
	return s && bt_field_get_class_type(s) == BT_FIELD_CLASS_TYPE_STRUCTURE
		       ? bt_field_structure_borrow_member_field_by_name_const(s, name)
		       : NULL;
}

static bool int_value(const bt_field *f, int64_t *v)
{
	if (!f)
		return false;
	bt_field_class_type t = bt_field_get_class_type(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
		*v = bt_field_integer_signed_get_value(f);
	else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		*v = (int64_t)bt_field_integer_unsigned_get_value(f);
	else
		return false;
	return true;
}

/* A byte value: an array of integers (hex sequences) or a string (text
 * sequences).  @return the bytes copied into @buf (at most @cap). */
static size_t bytes_value(const bt_field *f, uint8_t *buf, size_t cap)
{
	if (!f)
		return 0;
	bt_field_class_type t = bt_field_get_class_type(f);
	if (t == BT_FIELD_CLASS_TYPE_STRING) {
		uint64_t n = bt_field_string_get_length(f);
		n = n < cap ? n : cap;
		memcpy(buf, bt_field_string_get_value(f), n);
		return n;
	}
	if (!bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY))
		return 0;
	uint64_t n = bt_field_array_get_length(f);
	n = n < cap ? n : cap;
	for (uint64_t i = 0; i < n; i++) {
		int64_t v = 0;
		int_value(bt_field_array_borrow_element_field_by_index_const(f, i), &v);
		buf[i] = (uint8_t)v;
	}
	return n;
}

static struct proc *proc_of(struct conv *c, const char *host, int64_t vpid)
{
	for (size_t i = 0; i < c->np; i++)
		if (c->p[i].vpid == vpid && !strcmp(c->p[i].host, host))
			return &c->p[i];
	if (!nrr_grow(&c->p, c->np, &c->cp, sizeof(*c->p)))
		return NULL;
	struct proc *p = &c->p[c->np++];
	memset(p, 0, sizeof(*p));
	snprintf(p->host, sizeof(p->host), "%s", host);
	p->vpid = vpid;
	return p;
}

/* Open the process's file at its first event; @meta: its metadata event. */
static int proc_open(struct conv *c, struct proc *p, uint64_t ns, const char *procname, const char *meta,
		     size_t metalen)
{
	char head[512];
	int hn = snprintf(head, sizeof(head), "source=lttng\n%s%s%s", procname ? "procname=" : "",
			  procname ? procname : "", procname ? "\n" : "");
	if (!meta || !memmem(meta, metalen, "host=", 5))
		hn += snprintf(head + hn, sizeof(head) - (size_t)hn, "host=%s\npid=%lld\n", p->host, (long long)p->vpid);
	char *m = malloc((size_t)hn + metalen + 1);
	if (!m)
		return -ENOMEM;
	memcpy(m, head, (size_t)hn);
	if (meta)
		memcpy(m + hn, meta, metalen);
	nrr_writer_opts o = {
		.schema = nrr_builtin_schema,
		.schema_len = nrr_builtin_schema_len,
		.meta = m,
		.meta_len = (size_t)hn + metalen,
		.manual_clock = true,
		.mono_ns = ns,
		.wall_ns = ns,
		.pid = (uint32_t)p->vpid,
	};
	int rc = -EEXIST;
	for (int i = 0; i < 100 && rc == -EEXIST; i++) {
		if (i)
			snprintf(p->path, sizeof(p->path), "%s/%s-%lld-%d.nrt", c->out_dir, p->host, (long long)p->vpid, i);
		else
			snprintf(p->path, sizeof(p->path), "%s/%s-%lld.nrt", c->out_dir, p->host, (long long)p->vpid);
		rc = nrr_writer_open(&p->w, p->path, &o);
	}
	free(m);
	if (rc)
		conv_fail(c, rc, "Cannot write the converted trace: file=%s: %s", p->path, strerror(-rc));
	return rc;
}

static nrr_tls *thread_of(struct proc *p, int64_t vtid)
{
	for (size_t i = 0; i < p->nth; i++)
		if (p->th[i].vtid == vtid)
			return p->th[i].t;
	if (!nrr_grow(&p->th, p->nth, &p->cth, sizeof(*p->th)))
		return NULL;
	nrr_tls *t = nrr_writer_stream(p->w, (uint32_t)vtid);
	if (t)
		p->th[p->nth++] = (struct thread){ vtid, t };
	return t;
}

/* ------------------------------------------------------------ events */

static void put_args(struct conv *c, const nrr_fn_schema *fn, const bt_field *payload, bool leave, uint8_t **pp)
{
	uint8_t *p = *pp;
	for (uint32_t i = 0; i < fn->nargs; i++) {
		const nrr_arg_schema *a = &fn->args[i];
		bool rec = leave ? (a->dir & NRR_DIR_OUT) : (a->dir & NRR_DIR_IN);
		if (!rec)
			continue;
		const bt_field *f = member(payload, a->name);
		int64_t v = 0;
		if (a->wire == NRR_WIRE_B) {
			char lname[128];
			snprintf(lname, sizeof(lname), "%s_len", a->name);
			size_t n = bytes_value(f, p + 2 * NRR_VAR_MAX, NRR_BYTES_CAP_DEFAULT);
			int64_t total = (int64_t)n;
			int_value(member(payload, lname), &total);
			/* total, stored, bytes: the bytes were copied in place, past room for the two varints */
			uint8_t hdr[2 * NRR_VAR_MAX], *h = hdr;
			h = nrr_put_uvar(h, (uint64_t)total);
			h = nrr_put_uvar(h, n);
			memmove(p + (h - hdr), p + 2 * NRR_VAR_MAX, n);
			memcpy(p, hdr, (size_t)(h - hdr));
			p += (h - hdr) + n;
		} else {
			int_value(f, &v);
			p = a->wire == NRR_WIRE_S ? nrr_put_svar(p, v) : nrr_put_uvar(p, (uint64_t)v);
		}
	}
	*pp = p;
}

static size_t args_max(const nrr_fn_schema *fn)
{
	return (size_t)fn->nargs * NRR_BYTES_MAX(NRR_BYTES_CAP_DEFAULT + 2 * NRR_VAR_MAX);
}

static void event(struct conv *c, const bt_message *msg)
{
	const bt_event *ev = bt_message_event_borrow_event_const(msg);
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(ev));
	if (!name || strncmp(name, "ncclrr_", 7))
		return;
	const char *colon = strchr(name, ':');
	if (!colon)
		return;
	const bt_clock_snapshot *cs = bt_message_event_borrow_default_clock_snapshot_const(msg);
	int64_t ns = 0;
	if (bt_clock_snapshot_get_ns_from_origin(cs, &ns) != BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK || ns < 0) {
		conv_fail(c, NRR_ECORRUPT, "an event's time does not convert to ns (event=%s)", name);
		return;
	}
	const bt_field *ctx = bt_event_borrow_common_context_field_const(ev);
	const bt_field *payload = bt_event_borrow_payload_field_const(ev);
	int64_t vpid = -1, vtid = -1;
	if (!int_value(member(ctx, "vpid"), &vpid) || !int_value(member(ctx, "vtid"), &vtid)) {
		conv_fail(c, NRR_ECORRUPT, "event %s has no vpid/vtid context (record with `ncclrr record --backend lttng`, "
					   "which adds them)", name);
		return;
	}
	const bt_field *pn = member(ctx, "procname");
	const char *procname = pn && bt_field_get_class_type(pn) == BT_FIELD_CLASS_TYPE_STRING ? bt_field_string_get_value(pn) : NULL;
	const bt_value *hv = bt_trace_borrow_environment_entry_value_by_name_const(
		bt_stream_borrow_trace_const(bt_event_borrow_stream_const(ev)), "hostname");
	const char *host = hv && bt_value_is_string(hv) ? bt_value_string_get(hv) : "unknown";
	struct proc *p = proc_of(c, host, vpid);
	if (!p) {
		conv_fail(c, -ENOMEM, "out of memory");
		return;
	}
	bool is_meta = !strcmp(name, "ncclrr_log:meta");
	uint8_t text[65536];
	size_t tn = 0;
	if (is_meta || !strcmp(name, "ncclrr_log:line"))
		tn = bytes_value(member(payload, "text"), text, sizeof(text));
	if (!p->w && proc_open(c, p, (uint64_t)ns, procname, is_meta ? (const char *)text : NULL, tn))
		return;
	if (is_meta) {
		if (p->last_ns)   /* a later one: added */
			nrr_writer_add_meta(p->w, (const char *)text, tn);
		p->last_ns = (uint64_t)ns;
		return;
	}
	p->last_ns = (uint64_t)ns;
	nrr_tls *t = thread_of(p, vtid);
	if (!t) {
		conv_fail(c, -ENOMEM, "out of memory");
		return;
	}
	nrr_tls_set_time(t, (uint64_t)ns);
	if (!strcmp(name, "ncclrr_log:line")) {
		int64_t level = 3;
		int_value(member(payload, "level"), &level);
		nrr_log(t, (unsigned)level, (const char *)text, tn);
		return;
	}
	/* ncclrr_<domain>:<fn>_enter / _leave */
	const char *ev_name = colon + 1;
	size_t len = strlen(ev_name);
	bool leave = len > 6 && !strcmp(ev_name + len - 6, "_leave");
	if (!leave && !(len > 6 && !strcmp(ev_name + len - 6, "_enter")))
		return;
	char fname[256];
	snprintf(fname, sizeof(fname), "%.*s", (int)(len - 6), ev_name);
	const nrr_fn_schema *fn = nrr_schema_fn_by_name(c->schema, fname);
	if (!fn)
		return;   /* an event of a newer provider than this ncclrr knows */
	size_t max = args_max(fn);
	if (max > c->rec_cap) {
		uint8_t *x = realloc(c->rec, max);
		if (!x) {
			conv_fail(c, -ENOMEM, "out of memory");
			return;
		}
		c->rec = x;
		c->rec_cap = max;
	}
	uint8_t *q = c->rec;
	put_args(c, fn, payload, leave, &q);
	size_t n = (size_t)(q - c->rec);
	if (!leave) {
		uint8_t *w = nrr_enter_begin(t, fn->id, n);
		memcpy(w, c->rec, n);
		nrr_enter_end(t, w + n);
	} else {
		int64_t ret = 0, err = 0, notready = 0;
		int_value(member(payload, "ret"), &ret);
		int_value(member(payload, "err"), &err);
		int_value(member(payload, "notready"), &notready);
		uint8_t *w = nrr_leave_begin(t, ret, (uint32_t)err, n);
		memcpy(w, c->rec, n);
		nrr_leave_end(t, w + n, notready != 0);
	}
}

static bt_graph_simple_sink_component_consume_func_status consume(bt_message_iterator *it, void *data)
{
	struct conv *c = data;
	bt_message_array_const msgs;
	uint64_t count;
	switch (bt_message_iterator_next(it, &msgs, &count)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	default:
		conv_fail(c, NRR_ECORRUPT, "babeltrace2 could not read the trace");
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	for (uint64_t i = 0; i < count; i++) {
		if (bt_message_get_type(msgs[i]) == BT_MESSAGE_TYPE_EVENT && !c->err)
			event(c, msgs[i]);
		bt_message_put_ref(msgs[i]);
	}
	return c->err ? BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR
		      : BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

/* ------------------------------------------------------------ the graph */

static const bt_plugin *find_plugin(const char *name)
{
	const bt_plugin *p = NULL;
	if (bt_plugin_find(name, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &p) != BT_PLUGIN_FIND_STATUS_OK)
		return NULL;
	return p;
}

bool nrr_bt2_connect_muxed(bt_graph *g, const bt_component_source *src, const bt_component_filter *mux,
			   const bt_component_sink *sink)
{
	for (uint64_t i = 0; i < bt_component_source_get_output_port_count(src); i++) {
		const bt_port_output *o = bt_component_source_borrow_output_port_by_index_const(src, i);
		/* the muxer always offers one free input port, its last */
		uint64_t k = bt_component_filter_get_input_port_count(mux) - 1;
		if (bt_graph_connect_ports(g, o, bt_component_filter_borrow_input_port_by_index_const(mux, k), NULL) !=
		    BT_GRAPH_CONNECT_PORTS_STATUS_OK)
			return false;
	}
	return bt_graph_connect_ports(g, bt_component_filter_borrow_output_port_by_name_const(mux, "out"),
				      bt_component_sink_borrow_input_port_by_name_const(sink, "in"), NULL) ==
	       BT_GRAPH_CONNECT_PORTS_STATUS_OK;
}

int nrr_ctf_convert(const char *ctf_dir, const char *out_dir, char ***paths, size_t *npaths, nrr_diag *diag)
{
	struct conv c = { .out_dir = out_dir, .schema = nrr_builtin() };
	const bt_plugin *ctf = NULL, *utils = NULL;
	bt_graph *g = NULL;
	bt_value *params = NULL, *inputs = NULL;
	const bt_component_source *src = NULL;
	const bt_component_filter *mux = NULL;
	const bt_component_sink *sink = NULL;
	int rc = 0;

	*paths = NULL;
	*npaths = 0;
	memset(diag, 0, sizeof(*diag));
	snprintf(diag->path, sizeof(diag->path), "%s", ctf_dir);
	if (!nrr_ctf_looks_like(ctf_dir, 8)) {
		diag->code = NRR_EBADMAGIC;
		snprintf(diag->msg, sizeof(diag->msg), "no CTF trace (no `metadata` file) in this directory");
		return NRR_EBADMAGIC;
	}
	ctf = find_plugin("ctf");
	utils = find_plugin("utils");
	const bt_component_class_source *src_cls = ctf ? bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs") : NULL;
	const bt_component_class_filter *mux_cls =
		utils ? bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer") : NULL;
	if (!src_cls || !mux_cls) {
		rc = -ENOENT;
		snprintf(diag->msg, sizeof(diag->msg),
			 "Cannot find the babeltrace2 plugins ctf and utils (install the babeltrace2 package)");
		goto end;
	}
	g = bt_graph_create(0);
	params = bt_value_map_create();
	inputs = bt_value_array_create();
	if (!g || !params || !inputs || !find_traces(ctf_dir, 8, inputs) ||
	    bt_value_map_insert_entry(params, "inputs", inputs)) {
		rc = -ENOMEM;
		goto end;
	}
	if (bt_graph_add_source_component(g, src_cls, "src", params,
					  BT_LOGGING_LEVEL_NONE, &src) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_filter_component(g, mux_cls, "mux", NULL,
					  BT_LOGGING_LEVEL_NONE, &mux) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_simple_sink_component(g, "nrr", NULL, consume, NULL, &c, &sink) !=
		    BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		rc = NRR_ECORRUPT;
		snprintf(diag->msg, sizeof(diag->msg), "babeltrace2 cannot read this CTF trace (try `babeltrace2 %s`)", ctf_dir);
		goto end;
	}
	if (!nrr_bt2_connect_muxed(g, src, mux, sink)) {
		rc = NRR_ECORRUPT;
		goto end;
	}
	bt_graph_run_status st;
	while ((st = bt_graph_run(g)) == BT_GRAPH_RUN_STATUS_AGAIN)
		;
	if (c.err) {
		rc = c.err;
		snprintf(diag->msg, sizeof(diag->msg), "%s", c.errmsg);
	} else if (st != BT_GRAPH_RUN_STATUS_OK) {
		rc = NRR_ECORRUPT;
		snprintf(diag->msg, sizeof(diag->msg), "babeltrace2 failed to read the trace (try `babeltrace2 %s`)", ctf_dir);
	}
end:
	bt_graph_put_ref(g);   /* runs the sink's and the source's finalizers */
	bt_value_put_ref(inputs);
	bt_value_put_ref(params);
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
	char **list = c.np ? calloc(c.np, sizeof(char *)) : NULL;
	for (size_t i = 0; i < c.np; i++) {
		struct proc *p = &c.p[i];
		if (p->w) {
			int r = nrr_writer_close(p->w);
			if (r && !rc) {
				rc = r;
				snprintf(diag->msg, sizeof(diag->msg), "Cannot write the converted trace: file=%.*s: %s",
					 (int)sizeof(diag->msg) / 2, p->path, strerror(-r));
			}
			if (list)
				list[(*npaths)++] = strdup(p->path);
		}
		free(p->th);
	}
	free(c.p);
	free(c.rec);
	if (rc) {
		diag->code = rc;
		for (size_t i = 0; i < *npaths; i++)
			free(list[i]);
		free(list);
		*npaths = 0;
		return rc;
	}
	*paths = list;
	return 0;
}
