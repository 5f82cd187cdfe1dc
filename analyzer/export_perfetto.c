/* SPDX-License-Identifier: MIT */
/*
 * export_perfetto.c - `ncclrr export --perfetto`: a native Perfetto trace
 * (protobuf TracePackets of TrackEvents; the schema subset is
 * analyzer/perfetto_trace.proto, encoded with protobuf-c), written packet by
 * packet while the merged calls are read.
 *
 * One packet sequence (trusted_packet_sequence_id 1).  Tracks: a
 * TrackDescriptor per process (its own pid, so that trace_processor ties
 * its threads' tids to it and finds the main thread; named "rank R
 * (host:pid)" as in the Chrome JSON, whose pid 0 for rank 0 would be the
 * idle process here) and per thread, the thread's descriptor written
 * before its first event.  A call is a
 * TYPE_SLICE_BEGIN / TYPE_SLICE_END pair on its thread's track (a call with
 * nested calls begins at its enter and ends at its leave; a call in flight
 * at the end of the traces ends at the end); failures, folded failing
 * runs and log lines add TYPE_INSTANT events.  Event names, categories,
 * annotation names and results are interned (InternedData in the packet
 * that first uses them; the tables are cleared, SEQ_INCREMENTAL_STATE_CLEARED,
 * when they reach INTERN_MAX entries).  Every slice carries the call's seq
 * and result; the arguments of failed calls, calls in flight and NCCL API
 * calls ride along as string annotations (the others: `ncclrr dump`).
 *
 * A Trace is `repeated TracePacket packet = 1`: the file is each packet
 * as field 1 (tag 0x0a, length, bytes), so packets are appended as they
 * are made.  As Perfetto's tracing service does, they go out in bundles:
 * up to BUNDLE bytes of framed packets deflated (zlib) into the
 * compressed_packets of one outer packet (trace_processor and the UI
 * inflate them; tests/analyzer/test_export.sh shows how to look inside
 * with protoc).  Memory: one bundle, the intern tables, one bit per open
 * call depth per thread, one entry per call in flight.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "ncclrr_config.h"

#if NCCLRR_HAVE_PROTOBUF_C
#include <zlib.h>

#include "perfetto_trace.pb-c.h"
#include "progress.h"

#define SEQ_ID 1
#define INTERN_MAX 65536
#define MAX_ANN (NRR_MAX_ARGS + 8)
#define MAX_NEW 64   /* interned entries one packet may add */
#define BUNDLE (256 * 1024)   /* packets deflated together (Perfetto: < 512 KiB each) */

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__TrackEvent TrackEvent;
typedef Perfetto__Protos__DebugAnnotation Ann;

struct pend {       /* a slice in flight at the end: ended at the end */
	uint64_t track;
};

struct pf {
	FILE *f;
	struct nrr_inputs *in;
	struct nrr_export_proc *procs;
	struct nrr_sbuf sb;
	struct nrr_emap intern;   /* tag + text -> iid (fd) */
	struct nrr_emap threads;  /* reader + tid -> open-depth bits (fd) */
	uint64_t next_iid;
	bool cleared;             /* the next packet says SEQ_INCREMENTAL_STATE_CLEARED */
	uint8_t *buf;            /* the packet being framed */
	size_t cap;
	uint8_t *bundle, *zbuf;  /* BUNDLE bytes of framed packets; their deflated form */
	size_t nbundle, zcap;
	int err;                  /* errno of a failed write, or ENOMEM */
	int64_t end;
	struct pend *infl;
	size_t ninfl, capinfl;
	uint64_t npackets, nslices, nerrors, raw_bytes;
	/* the interned entries the packet being built adds */
	Perfetto__Protos__InternedData idata;
	Perfetto__Protos__InternedName names[MAX_NEW], *pnames[MAX_NEW];
	Perfetto__Protos__InternedName cats[MAX_NEW], *pcats[MAX_NEW];
	Perfetto__Protos__InternedName anames[MAX_NEW], *panames[MAX_NEW];
	Perfetto__Protos__InternedString strs[MAX_NEW], *pstrs[MAX_NEW];
	char *owned[4 * MAX_NEW];  /* copies of their texts, freed after the packet */
	size_t nowned;
	/* the annotations of the event being built */
	Ann ann[MAX_ANN], *pann[MAX_ANN];
	size_t nann;
	char *ann_text[MAX_ANN];
};

static uint64_t track_of(size_t ri, uint32_t tid)
{
	return ((uint64_t)(ri + 1) << 32) | tid;
}

/* Frame @n bytes of packed packet at @b + 10 as a Trace.packet field:
 * @return where the framed bytes start (the tag and length written
 * before the packet, in the 10 bytes left free). */
static uint8_t *frame(uint8_t *b, size_t n, size_t *total)
{
	uint8_t hdr[11];
	size_t h = 0;
	hdr[h++] = 0x0a;   /* Trace.packet: field 1, length-delimited */
	for (size_t v = n;; v >>= 7) {
		hdr[h++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		if (v <= 0x7f)
			break;
	}
	memcpy(b + 11 - h, hdr, h);
	*total = h + n;
	return b + 11 - h;
}

/* Deflate the bundle into one compressed_packets packet and write it. */
static void flush_bundle(struct pf *x)
{
	if (!x->nbundle || x->err)
		return;
	uLongf zn = compressBound(x->nbundle);
	if (zn + 32 > x->zcap) {
		uint8_t *z = realloc(x->zbuf, zn + 32);
		if (!z) {
			x->err = ENOMEM;
			return;
		}
		x->zbuf = z;
		x->zcap = zn + 32;
	}
	if (compress2(x->zbuf + 16, &zn, x->bundle, x->nbundle, 6) != Z_OK) {
		x->err = ENOMEM;
		return;
	}
	/* TracePacket { compressed_packets (50, bytes) } framed as Trace.packet */
	Packet outer = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	outer.has_compressed_packets = true;
	outer.compressed_packets.data = x->zbuf + 16;
	outer.compressed_packets.len = zn;
	size_t n = perfetto__protos__trace_packet__get_packed_size(&outer), total;
	uint8_t *b = malloc(n + 11);
	if (!b) {
		x->err = ENOMEM;
		return;
	}
	perfetto__protos__trace_packet__pack(&outer, b + 11);
	uint8_t *f = frame(b, n, &total);
	if (fwrite(f, 1, total, x->f) != total)
		x->err = errno ? errno : EIO;
	free(b);
	x->nbundle = 0;
}

/* Append @p as one `packet` field of the Trace (into the bundle). */
static void put_packet(struct pf *x, Packet *p)
{
	if (x->err)
		return;
	p->has_trusted_packet_sequence_id = true;
	p->trusted_packet_sequence_id = SEQ_ID;
	p->has_sequence_flags = true;
	p->sequence_flags = x->cleared ? PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED
				       : PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
	x->cleared = false;
	if (x->idata.n_event_names || x->idata.n_event_categories || x->idata.n_debug_annotation_names ||
	    x->idata.n_debug_annotation_string_values)
		p->interned_data = &x->idata;
	size_t n = perfetto__protos__trace_packet__get_packed_size(p), total;
	if (n + 11 > x->cap) {
		size_t cap = (n + 11) * 2;
		uint8_t *b = realloc(x->buf, cap);
		if (!b) {
			x->err = ENOMEM;
			goto spent;
		}
		x->buf = b;
		x->cap = cap;
	}
	perfetto__protos__trace_packet__pack(p, x->buf + 11);
	uint8_t *f = frame(x->buf, n, &total);
	if (x->nbundle + total > BUNDLE)
		flush_bundle(x);
	if (total > BUNDLE) {   /* (a packet never is: names and annotations are bounded) */
		if (fwrite(f, 1, total, x->f) != total)
			x->err = errno ? errno : EIO;
	} else {
		memcpy(x->bundle + x->nbundle, f, total);
		x->nbundle += total;
	}
	x->npackets++;
	x->raw_bytes += total;
spent:
	/* the packet's interned entries and annotations are spent */
	x->idata.n_event_names = x->idata.n_event_categories = 0;
	x->idata.n_debug_annotation_names = x->idata.n_debug_annotation_string_values = 0;
	for (size_t i = 0; i < x->nowned; i++)
		free(x->owned[i]);
	x->nowned = 0;
	for (size_t i = 0; i < x->nann; i++)
		free(x->ann_text[i]);
	x->nann = 0;
}

/* The iid of @text in table @tag ('n' event names, 'c' categories, 'a'
 * annotation names, 's' annotation string values), adding it to the
 * packet being built when new. */
static uint64_t intern(struct pf *x, char tag, const char *text, size_t len)
{
	struct nrr_ekey k;
	size_t nnew = x->idata.n_event_names + x->idata.n_event_categories + x->idata.n_debug_annotation_names +
		      x->idata.n_debug_annotation_string_values;
	if (len > sizeof(k.b) - 1 - sizeof(size_t) || nnew >= MAX_NEW || x->nowned >= 4 * MAX_NEW)
		return 0;   /* too long for a key, or this packet adds enough: not interned */
	nrr_ekey_init(&k, tag, 0);
	nrr_ekey_add(&k, text, len);
	struct nrr_emap_ent *e = nrr_emap_get(&x->intern, k.b, k.n, false);
	if (e)
		return (uint64_t)e->fd;
	if (x->intern.n >= INTERN_MAX)
		return 0;   /* full until the next event clears it (clear_full()) */
	char *copy = strndup(text, len);
	if (!copy || !(e = nrr_emap_get(&x->intern, k.b, k.n, true))) {
		free(copy);
		return 0;
	}
	e->fd = (int64_t)++x->next_iid;
	x->owned[x->nowned++] = copy;
	uint64_t iid = (uint64_t)e->fd;
	Perfetto__Protos__InternedName *nm = NULL;
	size_t i;
	switch (tag) {
	case 'n':
		nm = &x->names[x->idata.n_event_names++];
		break;
	case 'c':
		nm = &x->cats[x->idata.n_event_categories++];
		break;
	case 'a':
		nm = &x->anames[x->idata.n_debug_annotation_names++];
		break;
	default:
		i = x->idata.n_debug_annotation_string_values++;
		perfetto__protos__interned_string__init(&x->strs[i]);
		x->strs[i].has_iid = true, x->strs[i].iid = iid;
		x->strs[i].has_str = true, x->strs[i].str.data = (uint8_t *)copy, x->strs[i].str.len = len;
		break;
	}
	if (nm) {
		perfetto__protos__interned_name__init(nm);
		nm->has_iid = true, nm->iid = iid, nm->name = copy;
	}
	return iid;
}

/* Add an annotation: a uint (@text NULL) or a string, interned when
 * @intern_value (values that repeat: results). */
static void ann_add(struct pf *x, const char *name, const char *text, size_t len, uint64_t u, bool intern_value)
{
	if (x->nann >= MAX_ANN)
		return;
	Ann *a = &x->ann[x->nann];
	perfetto__protos__debug_annotation__init(a);
	x->ann_text[x->nann] = NULL;
	uint64_t nid = intern(x, 'a', name, strlen(name));
	char *copy = NULL;
	if (nid)
		a->has_name_iid = true, a->name_iid = nid;
	else if (!(a->name = copy = strdup(name)))
		return;
	if (!text) {
		a->has_uint_value = true;
		a->uint_value = u;
	} else {
		uint64_t sid = intern_value ? intern(x, 's', text, len) : 0;
		if (sid) {
			a->has_string_value_iid = true;
			a->string_value_iid = sid;
		} else {
			/* one allocation holds the name copy (if any) and the value */
			size_t nl = copy ? strlen(copy) + 1 : 0;
			char *t = malloc(nl + len + 1);
			if (!t) {
				free(copy);
				return;
			}
			if (copy) {
				memcpy(t, copy, nl);
				free(copy);
				a->name = t;
			}
			memcpy(t + nl, text, len);
			t[nl + len] = 0;
			a->string_value = t + nl;
			copy = t;
		}
	}
	x->ann_text[x->nann] = copy;
	x->pann[x->nann] = a;
	x->nann++;
}

/* The formatted result of @c as an interned annotation. */
static void ann_result(struct pf *x, const char *name, const nrr_call *c)
{
	size_t len;
	nrr_sbuf_reset(&x->sb);
	nrr_format_result(x->sb.f, c);
	const char *s = nrr_sbuf_str(&x->sb, &len);
	ann_add(x, name, s, len, 0, true);
}

static void ann_args(struct pf *x, const nrr_call *c)
{
	for (unsigned i = 0; i < c->fn->nargs && i < NRR_MAX_ARGS; i++) {
		if (!(c->present >> i & 1))
			continue;
		size_t len;
		nrr_sbuf_reset(&x->sb);
		nrr_format_value(x->sb.f, &c->fn->args[i], &c->args[i]);
		const char *s = nrr_sbuf_str(&x->sb, &len);
		ann_add(x, c->fn->args[i].name, s, len, 0, false);
	}
}

/* Write one TrackEvent (with the annotations built so far). */
static void put_event(struct pf *x, int64_t ts, uint64_t track, Perfetto__Protos__TrackEvent__Type type, const char *name,
		      const char *cat)
{
	Packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	TrackEvent e = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	uint64_t catid = 0;
	p.has_timestamp = true;
	p.timestamp = ts < 0 ? 0 : (uint64_t)ts;
	p.track_event = &e;
	e.has_type = true;
	e.type = type;
	e.has_track_uuid = true;
	e.track_uuid = track;
	if (name) {
		uint64_t nid = type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT ? 0 : intern(x, 'n', name, strlen(name));
		if (nid)
			e.has_name_iid = true, e.name_iid = nid;
		else
			e.name = (char *)name;
	}
	if (cat && (catid = intern(x, 'c', cat, strlen(cat)))) {
		e.n_category_iids = 1;
		e.category_iids = &catid;
	}
	e.n_debug_annotations = x->nann;
	e.debug_annotations = x->pann;
	put_packet(x, &p);
}

/* Between events (nothing interned for a packet yet): start the intern
 * tables again when full, so that they stay bounded. */
static void clear_full(struct pf *x)
{
	if (x->intern.n < INTERN_MAX)
		return;
	nrr_emap_free(&x->intern);
	x->cleared = true;
}

static void thread_track(struct pf *x, size_t ri, uint32_t tid, struct nrr_emap_ent **state)
{
	struct nrr_ekey k;
	nrr_ekey_init(&k, 'T', ri);
	nrr_ekey_add(&k, &tid, sizeof(tid));
	struct nrr_emap_ent *e = nrr_emap_get(&x->threads, k.b, k.n, false);
	if (!e) {
		e = nrr_emap_get(&x->threads, k.b, k.n, true);
		const nrr_file_info *fi = nrr_reader_info(x->in->r[ri]);
		char name[64];
		snprintf(name, sizeof(name), "%s %u", tid == fi->pid ? "main" : "thread", tid);
		Packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
		Perfetto__Protos__TrackDescriptor d = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
		Perfetto__Protos__ThreadDescriptor t = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
		d.has_uuid = true, d.uuid = track_of(ri, tid);
		d.has_parent_uuid = true, d.parent_uuid = track_of(ri, 0);
		d.thread = &t;
		t.has_pid = true, t.pid = (int32_t)fi->pid;
		t.has_tid = true, t.tid = tid;
		t.thread_name = name;
		p.track_descriptor = &d;
		put_packet(x, &p);
	}
	*state = e;
}

static int64_t rel(struct pf *x, size_t ri, uint64_t ts)
{
	return nrr_inputs_time(x->in, ri, ts);
}

static void on_call(void *ctx, size_t ri, const nrr_call *c)
{
	struct pf *x = ctx;
	struct nrr_emap_ent *th;
	uint64_t track = track_of(ri, c->tid);
	int64_t key = rel(x, ri, nrr_call_key(c));
	if (key > x->end)
		x->end = key;
	clear_full(x);
	thread_track(x, ri, c->tid, &th);
	if (!th)
		return;
	if (c->kind == NRR_CALL_LOG) {
		uint32_t n = c->log_len;
		while (n && (c->log[n - 1] == '\n' || c->log[n - 1] == '\r'))
			n--;
		char name[96];
		snprintf(name, sizeof(name), "%.*s", (int)(n > 80 ? 80 : n), c->log);
		ann_add(x, "level", NULL, 0, c->log_level, false);
		ann_add(x, "text", c->log, n, 0, false);
		put_event(x, key, track, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, name, "log");
		return;
	}
	if (!c->fn)
		return;
	const char *cat = c->fn->domain ? c->fn->domain : "other";
	uint64_t bit = c->depth < 64 ? 1ull << c->depth : 0;
	int64_t ts = rel(x, ri, c->ts);
	if (c->phase == NRR_PHASE_ENTER) {
		put_event(x, ts, track, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN, c->fn->name, cat);
		th->fd |= (int64_t)bit;
		return;
	}
	const char *benign = nrr_call_failed(c) ? nrr_call_benign(c) : NULL;
	bool failed = nrr_call_failed(c) && !benign, inflight = c->phase == NRR_PHASE_INFLIGHT;
	bool begun = (uint64_t)th->fd & bit;   /* its enter was written (nested calls) */
	th->fd &= (int64_t)~bit;
	if (!begun && !inflight)
		put_event(x, ts, track, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN, c->fn->name, cat);
	/* the call's details ride on its end (in flight: on its begin) */
	ann_add(x, "seq", NULL, 0, c->seq, false);
	if (c->done && c->fn->ret != NRR_RET_VOID)
		ann_result(x, failed ? "error" : "result", c);
	if (benign)
		ann_add(x, "benign", benign, strlen(benign), 0, true);
	if (c->repeat) {
		ann_add(x, "repeat", NULL, 0, c->repeat, false);
		ann_add(x, "repeat_ns", NULL, 0, c->repeat_ns, false);
	}
	if (failed || inflight || (c->fn->domain && !strcmp(c->fn->domain, "nccl")))
		ann_args(x, c);
	if (inflight) {
		/* ended at the end of everything, when that is known */
		ann_add(x, "inflight", NULL, 0, 1, false);
		if (begun)
			put_event(x, key, track, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, "in flight at the end", cat);
		else
			put_event(x, ts, track, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN, c->fn->name, cat);
		if (x->ninfl == x->capinfl) {
			size_t cap = x->capinfl ? x->capinfl * 2 : 64;
			struct pend *pp = realloc(x->infl, cap * sizeof(*pp));
			if (!pp) {
				x->err = ENOMEM;
				return;
			}
			x->infl = pp;
			x->capinfl = cap;
		}
		x->infl[x->ninfl++].track = track;
		x->nslices++;
		return;
	}
	int64_t end = ts + (int64_t)(c->dur + c->repeat_ns);
	if (end > x->end)
		x->end = end;
	put_event(x, end, track, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END, NULL, NULL);
	x->nslices++;
	if (failed) {
		char name[300];
		size_t len;
		nrr_sbuf_reset(&x->sb);
		nrr_format_result(x->sb.f, c);
		const char *s = nrr_sbuf_str(&x->sb, &len);
		snprintf(name, sizeof(name), "error: %s = %.*s", c->fn->name, (int)len, s);
		ann_add(x, "seq", NULL, 0, c->seq, false);
		put_event(x, end, track, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, name, "error");
		x->nerrors++;
	}
}

static void on_run(void *ctx, const struct nrr_fold_run *r)
{
	struct pf *x = ctx;
	struct nrr_emap_ent *th;
	uint64_t track = track_of(r->ri, r->tid);
	const char *cat = r->fn->domain ? r->fn->domain : "other";
	clear_full(x);
	thread_track(x, r->ri, r->tid, &th);
	if (r->end > x->end)
		x->end = r->end;
	put_event(x, r->ts, track, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN, r->name, cat);
	ann_add(x, "folded", NULL, 0, r->calls, false);
	ann_add(x, "failed", NULL, 0, r->failed, false);
	ann_add(x, "first_seq", NULL, 0, r->first_seq, false);
	ann_add(x, "last_seq", NULL, 0, r->last_seq, false);
	ann_add(x, r->real ? "error" : "result", r->result, strlen(r->result), 0, true);
	ann_add(x, "benign", r->rule->why, strlen(r->rule->why), 0, true);
	put_event(x, r->end, track, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END, NULL, NULL);
	x->nslices++;
	if (r->real) {
		char name[400];
		snprintf(name, sizeof(name), "error: %s = %s (%llu times)", r->fn->name, r->result,
			 (unsigned long long)r->failed);
		ann_add(x, "seq", NULL, 0, r->last_seq, false);
		put_event(x, r->end, track, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, name, "error");
		x->nerrors++;
	}
}

/* Calls whose enter was selected and whose leave was not (past --to):
 * ended at the end, so that every slice has an end. */
static void end_open(struct pf *x)
{
	for (size_t b = 0; b < x->threads.nb; b++)
		for (struct nrr_emap_ent *e = x->threads.b[b]; e; e = e->next) {
			size_t ri;
			uint32_t tid;
			memcpy(&ri, e->key + 1, sizeof(ri));
			memcpy(&tid, e->key + 1 + sizeof(ri), sizeof(tid));
			for (int n = __builtin_popcountll((uint64_t)e->fd); n > 0; n--)
				put_event(x, x->end, track_of(ri, tid), PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END, NULL,
					  NULL);
		}
}

static void process_tracks(struct pf *x)
{
	for (size_t i = 0; i < x->in->n; i++) {
		Packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
		Perfetto__Protos__TrackDescriptor d = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
		Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
		d.has_uuid = true, d.uuid = track_of(i, 0);
		d.process = &pd;
		pd.has_pid = true, pd.pid = (int32_t)nrr_reader_info(x->in->r[i])->pid;
		pd.process_name = x->procs[i].name;
		p.track_descriptor = &d;
		put_packet(x, &p);
	}
}

int nrr_export_perfetto(struct nrr_inputs *in, const struct nrr_export_opts *o, const char *path, char *err,
			size_t errlen)
{
	struct pf x = { .in = in, .cleared = true };
	struct nrr_folder *fold = NULL;
	int ret = 0;
	if (!(x.f = nrr_export_open(path, err, errlen)))
		return -1;
	perfetto__protos__interned_data__init(&x.idata);
	for (size_t i = 0; i < MAX_NEW; i++) {
		x.pnames[i] = &x.names[i];
		x.pcats[i] = &x.cats[i];
		x.panames[i] = &x.anames[i];
		x.pstrs[i] = &x.strs[i];
	}
	x.idata.event_names = x.pnames;
	x.idata.event_categories = x.pcats;
	x.idata.debug_annotation_names = x.panames;
	x.idata.debug_annotation_string_values = x.pstrs;
	x.procs = nrr_export_procs(in);
	x.bundle = malloc(BUNDLE);
	const struct nrr_fold_ops ops = { on_call, on_run, &x };
	if (!x.procs || !x.bundle || nrr_sbuf_open(&x.sb) || !(fold = nrr_folder_new(in, o->all, &ops))) {
		snprintf(err, errlen, "out of memory");
		ret = -1;
		goto out;
	}
	process_tracks(&x);
	ret = nrr_export_read(in, fold, err, errlen);
	fold = NULL;
	for (size_t i = 0; i < x.ninfl; i++)
		put_event(&x, x.end, x.infl[i].track, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END, NULL, NULL);
	end_open(&x);
	flush_bundle(&x);
out:
	nrr_folder_finish(fold);
	nrr_sbuf_close(&x.sb);
	nrr_emap_free(&x.intern);
	nrr_emap_free(&x.threads);
	for (size_t i = 0; i < x.nowned; i++)
		free(x.owned[i]);
	for (size_t i = 0; i < x.nann; i++)
		free(x.ann_text[i]);
	free(x.buf);
	free(x.bundle);
	free(x.zbuf);
	free(x.infl);
	free(x.procs);
	if (ret == 0 && x.err) {
		snprintf(err, errlen, "cannot write file=%s: %s", path, strerror(x.err));
		ret = -1;
	}
	return nrr_export_close(x.f, path, ret, err, errlen);
}

#else /* !NCCLRR_HAVE_PROTOBUF_C */

int nrr_export_perfetto(struct nrr_inputs *in, const struct nrr_export_opts *o, const char *path, char *err,
			size_t errlen)
{
	(void)in;
	(void)o;
	(void)path;
	snprintf(err, errlen, "this ncclrr was built without protobuf-c: install libprotobuf-c-dev and "
			      "protobuf-c-compiler (scripts/setup.sh does) and rebuild, or use --chrome");
	return -1;
}

#endif
