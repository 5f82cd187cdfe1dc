/* SPDX-License-Identifier: MIT */
/*
 * reader.c - the native trace reader: open (index or rebuilt by scan),
 * per-stream cursors that decode one chunk at a time, and a k-way merge of
 * streams and files in time order.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "nrt.h"
#include "nrt_internal.h"
#include "nrr_hash.h"


struct chunk {
	uint64_t offset;     /* of the chunk header */
	uint32_t stream, tid;
	uint64_t first_seq, first_ts;
	uint32_t nrec;
};

struct stream {
	nrr_stream_info info;
	uint32_t *chunks;    /* indices into r->chunks, in file order */
	uint32_t n, cap;
};

struct nrr_reader {
	char path[512];
	int fd;
	const uint8_t *mem;
	uint64_t size;
	nrr_file_info info;
	nrr_schema *schema;
	char *meta;
	size_t meta_len;
	uint64_t *late_meta;    /* offsets of metadata chunks after the first */
	size_t nlate_meta, clate_meta;
	uint64_t *late_schema;  /* ... and of schema chunks (format 3.0) */
	size_t nlate_schema, clate_schema;
	size_t meta_cap;
	struct chunk *chunks;
	size_t nchunks, cchunks;
	struct stream *streams;
	uint32_t nstreams;
	/* decompression contexts of closed cursors, for the next ones (a
	 * tool that reads a million streams one after the other creates a
	 * few, not a million) */
	pthread_mutex_t dc_lock;
	ZSTD_DCtx *init_dc;   /* the loads at open share it (open_dc()); freed when open ends */
	ZSTD_DCtx *dc_pool[8];
	unsigned ndc_pool;
	/* the metadata's distinct keys (first appearance order, last value)
	 * and a hash table of them: lookups and walks are linear in the
	 * metadata, however many lines it has */
	nrr_meta_kv *kv;
	size_t nkv;
	uint32_t *kv_slot;   /* index + 1 into kv, 0 empty; a power of 2 */
	size_t nkv_slot;
	nrr_damage_fn on_damage;   /* nrr_reader_on_damage() */
	void *damage_arg;
};

/* Readers of files with the same schema text (every trace of a job) share
 * one parsed schema: a thousand ranks' traces open at once cost one. */
struct schema_ent {
	struct schema_ent *next;
	char *text;
	size_t len;
	nrr_schema *s;
	unsigned refs;
};
static struct schema_ent *schemas;
static pthread_mutex_t schemas_lock = PTHREAD_MUTEX_INITIALIZER;

static int schema_get(nrr_schema **out, const char *text, size_t len, nrr_diag *sd)
{
	pthread_mutex_lock(&schemas_lock);
	for (struct schema_ent *e = schemas; e; e = e->next)
		if (e->len == len && !memcmp(e->text, text, len)) {
			e->refs++;
			*out = e->s;
			pthread_mutex_unlock(&schemas_lock);
			return 0;
		}
	int rc = nrr_schema_parse(out, text, len, sd);
	struct schema_ent *e = rc ? NULL : calloc(1, sizeof(*e));
	if (e && (e->text = malloc(len + 1))) {
		memcpy(e->text, text, len);
		e->len = len;
		e->s = *out;
		e->refs = 1;
		e->next = schemas;
		schemas = e;
	} else {
		free(e);   /* not shared: this reader frees it (schema_put finds no entry) */
	}
	pthread_mutex_unlock(&schemas_lock);
	return rc;
}

static void schema_put(nrr_schema *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&schemas_lock);
	for (struct schema_ent **pe = &schemas; *pe; pe = &(*pe)->next) {
		struct schema_ent *e = *pe;
		if (e->s != s)
			continue;
		if (--e->refs == 0) {
			*pe = e->next;
			free(e->text);
			free(e);
			nrr_schema_free(s);
		}
		pthread_mutex_unlock(&schemas_lock);
		return;
	}
	pthread_mutex_unlock(&schemas_lock);
	nrr_schema_free(s);
}

static int diag_set(nrr_diag *d, const nrr_reader *r, uint64_t off, int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int diag_set(nrr_diag *d, const nrr_reader *r, uint64_t off, int code, const char *fmt, ...)
{
	if (d) {
		va_list ap;
		snprintf(d->path, sizeof(d->path), "%s", r ? r->path : "");
		d->offset = off;
		d->code = code;
		va_start(ap, fmt);
		vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

static int read_at(const nrr_reader *r, uint64_t off, void *buf, size_t len)
{
	if (off > r->size || len > r->size - off)
		return NRR_ETRUNC;
	if (r->mem) {
		memcpy(buf, r->mem + off, len);
		return 0;
	}
	uint8_t *p = buf;
	while (len) {
		ssize_t n = pread(r->fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return NRR_ETRUNC;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read, verify and decompress the payload of the chunk with header @h at
 * @off into *raw (grown as needed).  @return 0 or an error with @d set. */
static int load_payload(const nrr_reader *r, uint64_t off, const nrr_chunk_header *h,
			uint8_t **zbuf, size_t *zcap, uint8_t **raw, size_t *rawcap,
			ZSTD_DCtx *dc, nrr_diag *d)
{
	uint64_t poff = off + h->header_size;
	if (h->raw_size > NRR_CHUNK_RAW_MAX || h->payload_size > NRR_CHUNK_RAW_MAX)
		return diag_set(d, r, off, NRR_ECORRUPT, "chunk claims %u/%u bytes, over the %u limit; the chunk header is damaged",
				h->payload_size, h->raw_size, NRR_CHUNK_RAW_MAX);
	if (poff > r->size || h->payload_size > r->size - poff)
		return diag_set(d, r, off, NRR_ETRUNC, "chunk payload of %u bytes runs past the end of the file (%llu bytes); the file was truncated",
				h->payload_size, (unsigned long long)r->size);
	if (*zcap < h->payload_size + 1) {
		uint8_t *z = realloc(*zbuf, h->payload_size + 1);
		if (!z)
			return diag_set(d, r, off, -ENOMEM, "out of memory");
		*zbuf = z;
		*zcap = h->payload_size + 1;
	}
	if (*rawcap < (size_t)h->raw_size + 1) {
		uint8_t *x = realloc(*raw, h->raw_size + 1);
		if (!x)
			return diag_set(d, r, off, -ENOMEM, "out of memory");
		*raw = x;
		*rawcap = h->raw_size + 1;
	}
	int rc = read_at(r, poff, *zbuf, h->payload_size);
	if (rc)
		return diag_set(d, r, poff, rc, "cannot read chunk payload: %s", nrr_strerror(rc));
	if (nrr_crc32c(0, *zbuf, h->payload_size) != h->payload_crc)
		return h->type == NRR_CHUNK_DATA
			       ? diag_set(d, r, poff, NRR_ECORRUPT,
					  "chunk payload checksum mismatch (stream %u); bytes in this chunk were changed", h->stream)
			       : diag_set(d, r, poff, NRR_ECORRUPT, "%s chunk payload checksum mismatch; bytes in this chunk were changed",
					  h->type == NRR_CHUNK_SCHEMA ? "schema" : h->type == NRR_CHUNK_META ? "metadata" : "index");
	if (!(h->flags & NRR_CHUNK_F_ZSTD)) {
		if (h->payload_size != h->raw_size)
			return diag_set(d, r, off, NRR_ECORRUPT, "uncompressed chunk size mismatch");
		memcpy(*raw, *zbuf, h->raw_size);
		return 0;
	}
	size_t n = ZSTD_decompressDCtx(dc, *raw, h->raw_size, *zbuf, h->payload_size);
	if (ZSTD_isError(n))
		return diag_set(d, r, poff, NRR_EZSTD, "zstd: %s", ZSTD_getErrorName(n));
	if (n != h->raw_size)
		return diag_set(d, r, poff, NRR_ECORRUPT, "chunk decompressed to %zu bytes, header says %u", n, h->raw_size);
	return 0;
}

static int read_header(const nrr_reader *r, uint64_t off, nrr_chunk_header *h)
{
	uint8_t b[NRR_CHUNK_HEADER_SIZE];
	int rc = read_at(r, off, b, sizeof(b));
	if (rc)
		return rc;
	return nrr_chunk_header_unpack(b, h);
}

static int add_chunk(nrr_reader *r, uint64_t off, const nrr_chunk_header *h)
{
	if (r->nchunks == r->cchunks) {
		size_t n = r->cchunks ? r->cchunks * 2 : 64;
		struct chunk *c = realloc(r->chunks, n * sizeof(*c));
		if (!c)
			return -ENOMEM;
		r->chunks = c;
		r->cchunks = n;
	}
	r->chunks[r->nchunks++] = (struct chunk){ off, h->stream, h->tid, h->first_seq, h->first_ts, h->nrecords };
	return 0;
}

static int add_late_meta(nrr_reader *r, uint64_t off)
{
	if (!nrr_grow(&r->late_meta, r->nlate_meta, &r->clate_meta, sizeof(*r->late_meta)))
		return -ENOMEM;
	r->late_meta[r->nlate_meta++] = off;
	return 0;
}

static int add_late_schema(nrr_reader *r, uint64_t off)
{
	if (!nrr_grow(&r->late_schema, r->nlate_schema, &r->clate_schema, sizeof(*r->late_schema)))
		return -ENOMEM;
	r->late_schema[r->nlate_schema++] = off;
	return 0;
}

/* Find the next offset >= @from where a valid chunk header starts. */
static uint64_t resync(const nrr_reader *r, uint64_t from)
{
	uint8_t buf[65536 + NRR_CHUNK_HEADER_SIZE];
	for (uint64_t base = from; base + NRR_CHUNK_HEADER_SIZE <= r->size; base += 65536) {
		size_t len = (size_t)(r->size - base < sizeof(buf) ? r->size - base : sizeof(buf));
		if (read_at(r, base, buf, len))
			break;
		for (size_t i = 0; i + NRR_CHUNK_HEADER_SIZE <= len; i++) {
			nrr_chunk_header h;
			if (buf[i] == 'N' && buf[i + 1] == 'R' && buf[i + 2] == 'C' && buf[i + 3] == '1' &&
			    nrr_chunk_header_unpack(buf + i, &h) == 0)
				return base + i;
		}
	}
	return r->size;
}

static bool is_trailer_at(const nrr_reader *r, uint64_t off)
{
	uint8_t t[NRR_TRAILER_SIZE];
	if (off + NRR_TRAILER_SIZE != r->size || read_at(r, off, t, sizeof(t)))
		return false;
	return memcmp(t, NRR_TRAILER_MAGIC, 8) == 0 && nrr_rd32(t + 20) == nrr_crc32c(0, t, 20);
}

/* Walk every chunk header from @off; skip damaged regions. */
static int scan(nrr_reader *r, uint64_t off)
{
	while (off < r->size) {
		nrr_chunk_header h;
		int rc = read_header(r, off, &h);
		uint64_t next = 0;
		if (rc == 0) {
			next = off + h.header_size + (uint64_t)h.payload_size;
			if (next > r->size)
				rc = NRR_ETRUNC;
		}
		if (rc) {
			if (is_trailer_at(r, off))
				return 0;
			uint64_t good = rc == NRR_ETRUNC && off + NRR_CHUNK_HEADER_SIZE >= r->size ? r->size : resync(r, off + 1);
			if (!r->info.dropped_bytes)
				r->info.dropped_offset = off;
			r->info.dropped_bytes += good - off;
			off = good;
			continue;
		}
		if (h.type == NRR_CHUNK_DATA && (rc = add_chunk(r, off, &h)))
			return rc;
		if (h.type == NRR_CHUNK_META && (rc = add_late_meta(r, off)))
			return rc;
		if (h.type == NRR_CHUNK_SCHEMA && (rc = add_late_schema(r, off)))
			return rc;
		off = next;
	}
	return 0;
}

/* The decompression context of the loads at open (index, schema,
 * metadata: one per thread's name in a long run), made at first need: a
 * context per load made dump of 68 files spend 4 % of its time creating
 * them (a 100 KB workspace whose pages the kernel zeroes). */
static ZSTD_DCtx *open_dc(nrr_reader *r)
{
	return r->init_dc ? r->init_dc : (r->init_dc = ZSTD_createDCtx());
}

/* The trailer's index, taken only if it can describe this file: its
 * entries point at chunks in file order, at least a chunk header apart,
 * between the first metadata (@data, where chunks start) and the index.
 * So a file claims at most one stream per 64 bytes it has; any other
 * index is rebuilt by scan.  (One that named the same chunk under a
 * million streams made every reader take 46 GB.) */
static int read_index(nrr_reader *r, uint64_t data, nrr_diag *d)
{
	uint8_t t[NRR_TRAILER_SIZE];
	if (r->size < NRR_FILE_HEADER_SIZE + NRR_TRAILER_SIZE ||
	    read_at(r, r->size - NRR_TRAILER_SIZE, t, sizeof(t)) ||
	    memcmp(t, NRR_TRAILER_MAGIC, 8) != 0 || nrr_rd32(t + 20) != nrr_crc32c(0, t, 20))
		return NRR_ENOTFOUND;
	uint64_t ioff = nrr_rd64(t + 8);
	nrr_chunk_header h;
	if (ioff < data || ioff + NRR_CHUNK_HEADER_SIZE > r->size || read_header(r, ioff, &h) || h.type != NRR_CHUNK_INDEX) {
		r->info.index_bad_offset = ioff;
		return NRR_ECORRUPT;
	}
	uint8_t *z = NULL, *raw = NULL;
	size_t zc = 0, rc_ = 0;
	ZSTD_DCtx *dc = open_dc(r);
	int rc = dc ? load_payload(r, ioff, &h, &z, &zc, &raw, &rc_, dc, NULL) : -ENOMEM;
	if (rc == 0) {
		const uint8_t *p = raw, *end = raw + h.raw_size;
		uint64_t n, next = data;
		rc = nrr_get_uvar(&p, end, &n);
		if (rc == 0 && n > (ioff - data) / NRR_CHUNK_HEADER_SIZE)
			rc = NRR_ECORRUPT;
		for (uint64_t i = 0; rc == 0 && i < n; i++) {
			uint64_t v[6];
			for (int k = 0; k < 6 && rc == 0; k++)
				rc = nrr_get_uvar(&p, end, &v[k]);
			if (rc)
				break;
			nrr_chunk_header ch = { .type = NRR_CHUNK_DATA, .stream = (uint32_t)v[1], .tid = (uint32_t)v[2],
						.first_seq = v[3], .first_ts = v[4], .nrecords = (uint32_t)v[5] };
			if (v[0] < next || v[0] + NRR_CHUNK_HEADER_SIZE > ioff || v[1] > NRR_STREAM_NONE) {
				rc = NRR_ECORRUPT;
				break;
			}
			next = v[0] + NRR_CHUNK_HEADER_SIZE;
			/* format 1.1: metadata added while running is indexed as stream
			 * NONE; 3.0: schema added while running as stream SCHEMA */
			rc = v[1] == NRR_STREAM_NONE     ? add_late_meta(r, v[0])
			     : v[1] == NRR_STREAM_SCHEMA ? add_late_schema(r, v[0])
							 : add_chunk(r, v[0], &ch);
		}
	}
	free(z);
	free(raw);
	if (rc) {
		r->nchunks = 0;
		r->nlate_meta = 0;
		r->nlate_schema = 0;
		r->info.index_bad_offset = ioff;
	}
	(void)d;
	return rc;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int build_streams(nrr_reader *r)
{
	/* stream ids are small and dense in practice; map through a sorted list */
	uint32_t *ids = malloc((r->nchunks + 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < r->nchunks; i++)
		ids[i] = r->chunks[i].stream;
	qsort(ids, r->nchunks, sizeof(*ids), cmp_u32);
	uint32_t n = 0;
	for (size_t i = 0; i < r->nchunks; i++)
		if (i == 0 || ids[i] != ids[i - 1])
			ids[n++] = ids[i];
	r->streams = calloc(n + 1, sizeof(*r->streams));
	if (!r->streams) {
		free(ids);
		return -ENOMEM;
	}
	r->nstreams = n;
	for (uint32_t i = 0; i < n; i++)
		r->streams[i].info.stream = ids[i];
	for (size_t i = 0; i < r->nchunks; i++) {
		uint32_t *hit = bsearch(&r->chunks[i].stream, ids, n, sizeof(*ids), cmp_u32);
		struct stream *s = &r->streams[hit - ids];
		if (s->n == s->cap) {
			uint32_t c = s->cap ? s->cap * 2 : 8;
			uint32_t *x = realloc(s->chunks, c * sizeof(*x));
			if (!x) {
				free(ids);
				return -ENOMEM;
			}
			s->chunks = x;
			s->cap = c;
		}
		const struct chunk *c = &r->chunks[i];
		if (s->n == 0) {
			s->info.tid = c->tid;
			s->info.first_seq = c->first_seq;
			s->info.first_ts = c->first_ts;
		}
		s->chunks[s->n++] = (uint32_t)i;
		s->info.nchunks = s->n;
		s->info.records += c->nrec;
		s->info.last_seq = c->first_seq;
	}
	free(ids);
	r->info.nstreams = n;
	return 0;
}

static int load_small_chunk(nrr_reader *r, uint64_t off, uint8_t type, char **out, size_t *len, nrr_diag *d)
{
	nrr_chunk_header h;
	int rc = read_header(r, off, &h);
	if (rc || h.type != type)
		return diag_set(d, r, off, rc ? rc : NRR_ECORRUPT,
				"expected the %s chunk here; the file start is damaged and cannot be read",
				type == NRR_CHUNK_SCHEMA ? "schema" : "metadata");
	uint8_t *z = NULL, *raw = NULL;
	size_t zc = 0, rcap = 0;
	ZSTD_DCtx *dc = open_dc(r);
	rc = dc ? load_payload(r, off, &h, &z, &zc, &raw, &rcap, dc, d) : -ENOMEM;
	free(z);
	if (rc) {
		free(raw);
		return rc;
	}
	if (!raw) {
		raw = malloc(1);
		if (!raw)
			return -ENOMEM;
	}
	raw[h.raw_size] = 0;
	*out = (char *)raw;
	*len = h.raw_size;
	return (int)(h.header_size + h.payload_size);
}

static int index_meta(nrr_reader *r);

/* Number of "fn" lines in @t (@n bytes), and the id of the first in @first. */
static uint32_t count_fns(const char *t, size_t n, int64_t *first)
{
	uint32_t k = 0;
	*first = -1;
	for (const char *p = t, *e = t + n; p < e;) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		if (e - p > 3 && !memcmp(p, "fn ", 3)) {
			if (!k++)
				*first = strtoll(p + 3, NULL, 10);
		}
		p = nl ? nl + 1 : e;
	}
	return k;
}

/* The first schema text (@text, @len, "... end\n") with the schema
 * chunks written while running appended: each holds the functions next in
 * number, after the tables they name.  A chunk that repeats functions
 * already had (a provisional tail's, written again for good) is skipped.
 * A chunk that cannot be read fails the open (@d names it); at one that
 * does not continue the numbering the text stops (info.schema_lost_offset)
 * and the calls of the later functions are reported as unknown. */
static int join_late_schema(nrr_reader *r, char **text, size_t *len, nrr_diag *d)
{
	static const char head[] = "ncclrr-schema 1\n", tail[] = "end\n";
	const size_t hl = sizeof(head) - 1, tl = sizeof(tail) - 1;
	int64_t first;
	uint32_t have = count_fns(*text, *len, &first);
	for (size_t i = 0; i < r->nlate_schema; i++) {
		char *t;
		size_t n;
		int rc = load_small_chunk(r, r->late_schema[i], NRR_CHUNK_SCHEMA, &t, &n, d);
		if (rc < 0) {
			r->info.schema_lost_offset = r->late_schema[i];
			return rc;   /* (d names the chunk and what is wrong) */
		}
		uint32_t k = n >= hl + tl && !memcmp(t, head, hl) && !memcmp(t + n - tl, tail, tl) ? count_fns(t, n, &first) : 0;
		if (k && first <= (int64_t)have) {
			free(t);
			continue;
		}
		if (!k || first != (int64_t)have + 1 || *len < tl) {
			free(t);
			r->info.schema_lost_offset = r->late_schema[i];
			break;
		}
		char *j = realloc(*text, *len + n + 1);
		if (!j) {
			free(t);
			return -ENOMEM;
		}
		/* drop the "end" line before, and the header of, what is appended */
		memcpy(j + *len - tl, t + hl, n - hl);
		*len = *len - tl + n - hl;
		j[*len] = 0;
		*text = j;
		have += k;
		free(t);
	}
	return 0;
}

static int reader_load(nrr_reader *r, nrr_diag *d)
{
	uint8_t hb[NRR_FILE_HEADER_SIZE];
	nrr_file_header fh;
	int rc;
	if (r->size < NRR_FILE_HEADER_SIZE || read_at(r, 0, hb, sizeof(hb)))
		return diag_set(d, r, 0, NRR_ETRUNC, "file is %llu bytes, shorter than the %d-byte header; not a complete ncclrr trace",
				(unsigned long long)r->size, NRR_FILE_HEADER_SIZE);
	rc = nrr_file_header_unpack(hb, &fh);
	if (rc == NRR_EBADMAGIC)
		return diag_set(d, r, 0, rc, "not an ncclrr trace (.nrt) file: bad magic; pass a file written by 'ncclrr record'");
	if (rc)
		return diag_set(d, r, 0, rc, "file header checksum mismatch; the first 64 bytes are damaged");
	if (fh.major > NRR_FORMAT_MAJOR)
		return diag_set(d, r, 8, NRR_EVERSION, "format version %u.%u is newer than this ncclrr (%d.%d); upgrade ncclrr",
				fh.major, fh.minor, NRR_FORMAT_MAJOR, NRR_FORMAT_MINOR);
	if (fh.header_size < NRR_FILE_HEADER_SIZE || fh.header_size > r->size)
		return diag_set(d, r, 12, NRR_ECORRUPT, "bad file header size %u", fh.header_size);
	r->info.major = fh.major;
	r->info.minor = fh.minor;
	r->info.pid = fh.pid;
	r->info.wall_ns = fh.wall_ns;
	r->info.mono_ns = fh.mono_ns;
	r->info.file_size = r->size;

	uint64_t off = fh.header_size;
	char *schema_text;
	size_t schema_len;
	rc = load_small_chunk(r, off, NRR_CHUNK_SCHEMA, &schema_text, &schema_len, d);
	if (rc < 0)
		return rc;
	off += (uint64_t)rc;
	rc = load_small_chunk(r, off, NRR_CHUNK_META, &r->meta, &r->meta_len, d);
	if (rc < 0) {
		free(schema_text);
		return rc;
	}
	off += (uint64_t)rc;

	rc = read_index(r, off, d);
	if (rc) {
		r->info.index_rebuilt = true;
		rc = scan(r, off);
		if (rc) {
			free(schema_text);
			return diag_set(d, r, off, rc, "cannot scan chunks: %s", nrr_strerror(rc));
		}
	}
	/* the functions written on first use (format 3.0) follow the first */
	rc = r->nlate_schema ? join_late_schema(r, &schema_text, &schema_len, d) : 0;
	nrr_diag sd;
	memset(&sd, 0, sizeof(sd));
	if (!rc)
		rc = schema_get(&r->schema, schema_text, schema_len, &sd);
	free(schema_text);
	if (rc == -ENOMEM)
		return diag_set(d, r, 0, rc, "out of memory");
	if (rc < 0 && r->info.schema_lost_offset)
		return rc;   /* a damaged schema chunk, named by join_late_schema */
	if (rc)
		return diag_set(d, r, fh.header_size, rc, "%s", sd.msg);
	/* metadata learnt while running follows the first; a damaged one is
	 * skipped (its data chunks are not affected) */
	for (size_t i = 0; i < r->nlate_meta; i++) {
		char *text;
		size_t len;
		nrr_diag md;
		if (load_small_chunk(r, r->late_meta[i], NRR_CHUNK_META, &text, &len, &md) < 0) {
			if (!r->info.meta_lost_offset)
				r->info.meta_lost_offset = r->late_meta[i];
			continue;
		}
		if (r->meta_cap < r->meta_len + len + 2) {   /* doubling: many small chunks stay linear */
			size_t cap = r->meta_cap * 2 > r->meta_len + len + 2 ? r->meta_cap * 2 : r->meta_len + len + 2;
			char *m = realloc(r->meta, cap);
			if (!m) {
				free(text);
				return diag_set(d, r, r->late_meta[i], -ENOMEM, "out of memory");
			}
			r->meta = m;
			r->meta_cap = cap;
		}
		char *m = r->meta;
		if (r->meta_len && m[r->meta_len - 1] != '\n')
			m[r->meta_len++] = '\n';
		memcpy(m + r->meta_len, text, len);
		r->meta_len += len;
		m[r->meta_len] = 0;
		free(text);
	}
	if (index_meta(r))
		return diag_set(d, r, 0, -ENOMEM, "out of memory");
	/* where the trace ends (a dump's or close's end_ts): in-flight calls
	 * ran at least until then; one before the file began (the header's
	 * clock) is none (it made times before the job's start) */
	const char *end = nrr_reader_meta(r, "end_ts");
	if (end) {
		char *e;
		unsigned long long v = strtoull(end, &e, 10);
		if (e != end && !*e && v >= r->info.mono_ns)
			r->info.end_ts = v;
	}
	rc = build_streams(r);
	if (rc)
		return diag_set(d, r, 0, rc, "out of memory");
	return 0;
}

static int reader_init(nrr_reader *r, nrr_diag *d)
{
	int rc = reader_load(r, d);
	ZSTD_freeDCtx(r->init_dc);
	r->init_dc = NULL;
	return rc;
}

static int reader_new(nrr_reader **out, const char *name, nrr_diag *d)
{
	nrr_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	snprintf(r->path, sizeof(r->path), "%s", name);
	r->fd = -1;
	pthread_mutex_init(&r->dc_lock, NULL);
	*out = r;
	if (d)
		memset(d, 0, sizeof(*d));
	return 0;
}

int nrr_reader_open(nrr_reader **out, const char *path, nrr_diag *d)
{
	nrr_reader *r;
	int rc = reader_new(&r, path, d);
	if (rc)
		return rc;
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (r->fd < 0 || fstat(r->fd, &st)) {
		rc = diag_set(d, r, 0, -errno, "cannot open: %s", strerror(errno));
		nrr_reader_close(r);
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = diag_set(d, r, 0, -EINVAL, "not a regular file");
		nrr_reader_close(r);
		return rc;
	}
	r->size = (uint64_t)st.st_size;
	rc = reader_init(r, d);
	if (rc) {
		nrr_reader_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

int nrr_reader_open_mem(nrr_reader **out, const void *buf, size_t len, const char *name, nrr_diag *d)
{
	nrr_reader *r;
	int rc = reader_new(&r, name, d);
	if (rc)
		return rc;
	r->mem = buf;
	r->size = len;
	rc = reader_init(r, d);
	if (rc) {
		nrr_reader_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

void nrr_reader_close(nrr_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	schema_put(r->schema);
	free(r->kv);
	free(r->kv_slot);
	for (unsigned i = 0; i < r->ndc_pool; i++)
		ZSTD_freeDCtx(r->dc_pool[i]);
	pthread_mutex_destroy(&r->dc_lock);
	free(r->meta);
	free(r->late_meta);
	free(r->late_schema);
	free(r->chunks);
	for (uint32_t i = 0; i < r->nstreams; i++)
		free(r->streams[i].chunks);
	free(r->streams);
	free(r);
}

const nrr_file_info *nrr_reader_info(const nrr_reader *r) { return &r->info; }
const nrr_schema *nrr_reader_schema(const nrr_reader *r) { return r->schema; }
const char *nrr_reader_path(const nrr_reader *r) { return r->path; }

const nrr_stream_info *nrr_reader_stream(const nrr_reader *r, uint32_t i)
{
	return i < r->nstreams ? &r->streams[i].info : NULL;
}

const char *nrr_reader_meta_text(const nrr_reader *r, size_t *len)
{
	if (len)
		*len = r->meta_len;
	return r->meta;
}

/* The slot of @key in the hash table: its entry's, or the empty one
 * where it would go. */
static uint32_t *meta_slot(const nrr_reader *r, const char *key, size_t kl)
{
	size_t mask = r->nkv_slot - 1;
	for (size_t i = nrr_hash(key, kl, NRR_HASH_INIT) & mask;; i = (i + 1) & mask) {
		uint32_t *s = &r->kv_slot[i];
		if (!*s)
			return s;
		const nrr_meta_kv *e = &r->kv[*s - 1];
		if (e->key_len == kl && !memcmp(e->key, key, kl))
			return s;
	}
}

/* Index the metadata's "key=value" lines (lines without '=' are not
 * metadata and are skipped). */
static int index_meta(nrr_reader *r)
{
	size_t lines = 1;
	for (const char *p = r->meta; p && (p = memchr(p, '\n', r->meta_len - (size_t)(p - r->meta))); p++)
		lines++;
	r->nkv_slot = 16;
	while (r->nkv_slot < 2 * lines)
		r->nkv_slot *= 2;
	r->kv_slot = calloc(r->nkv_slot, sizeof(*r->kv_slot));
	r->kv = calloc(lines, sizeof(*r->kv));
	if (!r->kv_slot || !r->kv)
		return -ENOMEM;
	const char *p = r->meta, *end = r->meta + r->meta_len;
	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		const char *eq = memchr(p, '=', (size_t)(nl - p));
		if (eq && eq > p) {
			uint32_t *s = meta_slot(r, p, (size_t)(eq - p));
			if (!*s) {
				r->kv[r->nkv] = (nrr_meta_kv){ .key = p, .key_len = (size_t)(eq - p) };
				*s = (uint32_t)++r->nkv;
			}
			nrr_meta_kv *e = &r->kv[*s - 1];   /* the last value wins */
			e->value = eq + 1;
			e->value_len = (size_t)(nl - eq - 1);
		}
		p = nl + 1;
	}
	return 0;
}

size_t nrr_reader_meta_keys(const nrr_reader *r, const nrr_meta_kv **kv)
{
	*kv = r->kv;
	return r->nkv;
}

const char *nrr_reader_meta(const nrr_reader *r, const char *key)
{
	if (!r->nkv_slot)
		return NULL;
	uint32_t s = *meta_slot(r, key, strlen(key));
	if (!s)
		return NULL;
	/* values are returned from a private, NUL-split copy */
	static __thread char val[4096];
	const nrr_meta_kv *e = &r->kv[s - 1];
	size_t vl = e->value_len < sizeof(val) ? e->value_len : sizeof(val) - 1;
	memcpy(val, e->value, vl);
	val[vl] = 0;
	return val;
}

uint64_t nrr_reader_wall(const nrr_reader *r, uint64_t ts)
{
	return r->info.wall_ns + (ts - r->info.mono_ns);
}

/* ---------------------------------------------------------------- cursor */

struct rframe {
	nrr_call call;
	bool emitted;
	const uint8_t *start;   /* its ENTER record (in chunk next_chunk - 1), and the clock before it */
	uint32_t chunk;
	uint64_t clock_before;
	uint8_t *store;      /* private copies of byte args once the chunk is gone */
	size_t store_cap;
};

#define FRAME_BLOCK 4

struct nrr_cursor {
	nrr_reader *r;
	const struct stream *s;
	uint32_t next_chunk;    /* index into s->chunks */
	uint32_t tid;           /* the thread of chunk next_chunk - 1 (read once per chunk, not per call) */
	ZSTD_DCtx *dc;
	bool own_dc;            /* else a merge's, shared by its cursors */
	uint8_t *zbuf, *raw;
	size_t zcap, rawcap;
	const uint8_t *p, *end;
	uint64_t chunk_off;
	uint64_t clock, seq;
	unsigned depth;
	/* open calls, in blocks allocated as calls nest (a merge of many
	 * streams then holds little per stream); a frame never moves, as
	 * callers may keep an open call's event (see frame()) */
	struct rframe *blk[(NRR_MAX_DEPTH + FRAME_BLOCK - 1) / FRAME_BLOCK];
	unsigned stack_cap;
	/* CYCLE records: the last leaf calls of this chunk that follow one
	 * another directly at the same depth (their records and the clock
	 * before each) ... */
	struct { const uint8_t *start, *end; uint64_t clock; unsigned depth; } leaf[NRR_CYCLE_MAX];
	unsigned nleaf;
	/* ... and a CYCLE being delivered: its template's records, decoded
	 * again xleft more times, with times scaled by xnum / xden */
	const uint8_t *xstart, *xend, *xresume;
	uint64_t xleft, xbase, xelapsed;
	uint8_t xperiod;
	unsigned __int128 xnum, xden;
	nrr_call out;           /* the event handed out for logs */
	const nrr_call *held;   /* found by seek, handed out next */
	bool at_eof;
	nrr_diag diag;
};

/* @dc: a decompression context to share (one thread), or NULL for its own */
static int cursor_open(nrr_cursor **out, nrr_reader *r, uint32_t stream, ZSTD_DCtx *dc)
{
	if (stream >= r->nstreams)
		return -EINVAL;
	nrr_cursor *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->r = r;
	c->s = &r->streams[stream];
	c->own_dc = !dc;
	if (!dc) {
		pthread_mutex_lock(&r->dc_lock);
		if (r->ndc_pool)
			dc = r->dc_pool[--r->ndc_pool];
		pthread_mutex_unlock(&r->dc_lock);
	}
	c->dc = dc ? dc : ZSTD_createDCtx();
	if (!c->dc) {
		free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

int nrr_cursor_open(nrr_cursor **out, nrr_reader *r, uint32_t stream)
{
	return cursor_open(out, r, stream, NULL);
}

void nrr_cursor_close(nrr_cursor *c)
{
	if (!c)
		return;
	if (c->own_dc) {
		nrr_reader *r = c->r;
		pthread_mutex_lock(&r->dc_lock);
		if (r->ndc_pool < sizeof(r->dc_pool) / sizeof(r->dc_pool[0])) {
			r->dc_pool[r->ndc_pool++] = c->dc;
			c->dc = NULL;
		}
		pthread_mutex_unlock(&r->dc_lock);
		ZSTD_freeDCtx(c->dc);
	}
	free(c->zbuf);
	free(c->raw);
	for (unsigned i = 0; i < c->stack_cap; i++)
		free(c->blk[i / FRAME_BLOCK][i % FRAME_BLOCK].store);
	for (unsigned b = 0; b * FRAME_BLOCK < c->stack_cap; b++)
		free(c->blk[b]);
	free(c);
}

/* The frame of the open call at depth @i (< stack_cap). */
static inline struct rframe *frame(const nrr_cursor *c, unsigned i)
{
	return &c->blk[i / FRAME_BLOCK][i % FRAME_BLOCK];
}

/* Frames for open calls up to depth @n (at most NRR_MAX_DEPTH). */
static int stack_room(nrr_cursor *c, unsigned n)
{
	while (c->stack_cap < n) {
		struct rframe *b = calloc(FRAME_BLOCK, sizeof(*b));
		if (!b)
			return -ENOMEM;
		c->blk[c->stack_cap / FRAME_BLOCK] = b;
		c->stack_cap += FRAME_BLOCK;
	}
	return 0;
}

const nrr_diag *nrr_cursor_diag(const nrr_cursor *c) { return &c->diag; }

static int corrupt(nrr_cursor *c, const char *what)
{
	return diag_set(&c->diag, c->r, c->chunk_off, NRR_ECORRUPT,
			"malformed record in chunk (stream %u, byte %zu of the decompressed chunk): %s",
			c->s->info.stream, (size_t)(c->p - c->raw), what);
}

/* Copy the byte args of open frames out of the chunk buffer about to be reused. */
static int preserve_frames(nrr_cursor *c)
{
	for (unsigned i = 0; i < c->depth; i++) {
		struct rframe *f = frame(c, i);
		const nrr_fn_schema *fn = f->call.fn;
		size_t need = 0;
		if (!fn)
			continue;
		for (unsigned a = 0; a < fn->nargs; a++)
			if (fn->args[a].wire == NRR_WIRE_B && (f->call.present >> a & 1))
				need += f->call.args[a].len;
		if (!need)
			continue;
		uint8_t *tmp = malloc(need);
		if (!tmp)
			return -ENOMEM;
		size_t at = 0;
		for (unsigned a = 0; a < fn->nargs; a++) {
			nrr_value *v = &f->call.args[a];
			if (fn->args[a].wire == NRR_WIRE_B && (f->call.present >> a & 1) && v->len) {
				memcpy(tmp + at, v->p, v->len);
				v->p = tmp + at;
				at += v->len;
			}
		}
		free(f->store);
		f->store = tmp;
		f->store_cap = need;
	}
	return 0;
}

static int load_chunk(nrr_cursor *c, uint32_t k)
{
	const struct chunk *ch = &c->r->chunks[c->s->chunks[k]];
	nrr_chunk_header h;
	int rc = read_header(c->r, ch->offset, &h);
	if (rc || h.type != NRR_CHUNK_DATA || h.stream != ch->stream)
		return diag_set(&c->diag, c->r, ch->offset, rc ? rc : NRR_ECORRUPT,
				"chunk header of stream %u is damaged or missing (the index points here)", ch->stream);
	if ((rc = preserve_frames(c)))
		return diag_set(&c->diag, c->r, ch->offset, rc, "out of memory");
	rc = load_payload(c->r, ch->offset, &h, &c->zbuf, &c->zcap, &c->raw, &c->rawcap, c->dc, &c->diag);
	if (rc)
		return rc;
	c->chunk_off = ch->offset;
	c->p = c->raw;
	c->end = c->raw + h.raw_size;
	c->next_chunk = k + 1;
	c->tid = ch->tid;
	/* prologue: calls open at chunk start */
	uint64_t open;
	if (nrr_get_uvar(&c->p, c->end, &open) || open > NRR_MAX_DEPTH)
		return corrupt(c, "bad open-call prologue");
	bool continues = open == c->depth && c->seq + 1 == h.first_seq;
	struct { uint64_t fn, seq, ts; } fr[NRR_MAX_DEPTH];
	for (uint64_t i = 0; i < open; i++) {
		if (nrr_get_uvar(&c->p, c->end, &fr[i].fn) || nrr_get_uvar(&c->p, c->end, &fr[i].seq) ||
		    nrr_get_uvar(&c->p, c->end, &fr[i].ts))
			return corrupt(c, "truncated open-call prologue");
		if (continues && (frame(c, i)->call.seq != fr[i].seq || !frame(c, i)->call.fn ||
				  frame(c, i)->call.fn->id != fr[i].fn))
			continues = false;
	}
	if (!continues) {
		/* we did not read the previous chunk (seek, or it was lost):
		 * take the open calls from the prologue, their args unknown */
		if (stack_room(c, (unsigned)open))
			return diag_set(&c->diag, c->r, ch->offset, -ENOMEM, "out of memory");
		c->depth = 0;
		for (uint64_t i = 0; i < open; i++) {
			struct rframe *f = frame(c, i);
			const nrr_fn_schema *fn = nrr_schema_fn(c->r->schema, (uint32_t)fr[i].fn);
			if (!fn)
				return corrupt(c, "unknown function id in prologue");
			memset(&f->call, 0, sizeof(f->call));
			f->call.fn = fn;
			f->call.seq = fr[i].seq;
			f->call.ts = fr[i].ts;
			f->call.stream = c->s->info.stream;
			f->call.tid = ch->tid;
			f->call.depth = (uint8_t)i;
			f->call.args_lost = true;
			f->emitted = true;  /* nothing to announce: its ENTER is not here */
			c->depth++;
		}
	}
	c->clock = h.first_ts;
	c->seq = h.first_seq - 1;
	c->nleaf = 0;
	c->xend = NULL;
	return 0;
}

/* A time of a CYCLE's template as one of its repetitions takes it. */
static uint64_t cycle_scale(const nrr_cursor *c, uint64_t t)
{
	return c->xden ? (uint64_t)((unsigned __int128)t * c->xnum / c->xden) : 0;
}

/* A CYCLE record (tag read): deliver its template's calls again. */
static int cycle_begin(nrr_cursor *c)
{
	uint64_t period, count, elapsed;
	const uint8_t *tag = c->p - 1;
	if (nrr_get_uvar(&c->p, c->end, &period) || nrr_get_uvar(&c->p, c->end, &count) ||
	    nrr_get_uvar(&c->p, c->end, &elapsed))
		return corrupt(c, "truncated CYCLE");
	if (c->xend || period < 1 || period > NRR_CYCLE_MAX || period > c->nleaf || count < 1 ||
	    count > NRR_CYCLE_COUNT_MAX || c->leaf[c->nleaf - 1].end != tag ||
	    c->leaf[c->nleaf - 1].depth != c->depth)
		return corrupt(c, "CYCLE not after as many calls as it repeats");
	unsigned first = c->nleaf - (unsigned)period;
	uint64_t span = c->clock - c->leaf[first].clock;
	c->xperiod = (uint8_t)period;
	c->xstart = c->leaf[first].start;
	c->xend = tag;
	c->xresume = c->p;
	c->xleft = count;
	c->xbase = c->clock;
	c->xelapsed = elapsed;
	c->xnum = elapsed;
	c->xden = (unsigned __int128)span * count;
	c->p = c->xstart;
	c->nleaf = 0;
	return 0;
}

/* The args of @call encoded in this record: @mask, its schema's in_mask or
 * out_mask (by their bits: a test of each parameter's direction was a
 * third of this function, mispredicted as directions alternate). */
static int decode_args(nrr_cursor *c, nrr_call *call, uint32_t mask)
{
	/* the read position in a local, not c->p: a stored value (v->p is of
	 * c->p's type) may alias c->p, which then went through memory between
	 * every two varints */
	const nrr_fn_schema *fn = call->fn;
	const uint8_t *p = c->p, *end = c->end;
	for (; mask; mask &= mask - 1) {
		unsigned a = (unsigned)__builtin_ctz(mask);
		const nrr_arg_schema *as = &fn->args[a];
		nrr_value *v = &call->args[a];
		uint64_t u;
		if (nrr_get_uvar(&p, end, &u)) {
			c->p = p;
			return corrupt(c, "truncated argument");
		}
		if (as->wire == NRR_WIRE_S) {
			v->u = (u >> 1) ^ -(u & 1);
		} else if (as->wire == NRR_WIRE_B) {
			uint64_t stored;
			if (nrr_get_uvar(&p, end, &stored) || stored > u || stored > (uint64_t)(end - p)) {
				c->p = p;
				return corrupt(c, "byte argument longer than its chunk");
			}
			v->total = u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
			v->len = (uint32_t)stored;
			v->p = p;
			p += stored;
		} else {
			v->u = u;
		}
		call->present |= 1u << a;
	}
	c->p = p;
	return 0;
}

static void eof_event(nrr_cursor *c, const nrr_call **out)
{
	struct rframe *f = frame(c, --c->depth);
	f->call.phase = NRR_PHASE_INFLIGHT;
	f->call.done = false;
	/* so far: until the end of the trace (end_ts) when the file says it,
	 * else until the stream's last record */
	uint64_t until = c->clock > c->r->info.end_ts ? c->clock : c->r->info.end_ts;
	f->call.dur = until > f->call.ts ? until - f->call.ts : 0;
	*out = &f->call;
}

void nrr_reader_on_damage(nrr_reader *r, nrr_damage_fn fn, void *arg)
{
	r->on_damage = fn;
	r->damage_arg = arg;
}

static int cursor_next(nrr_cursor *c, const nrr_call **out);

int nrr_cursor_next(nrr_cursor *c, const nrr_call **out)
{
	int rc = cursor_next(c, out);
	if (__builtin_expect(rc == 0 || rc == NRR_EEOF, 1) || !c->r->on_damage ||
	    c->r->on_damage(c->r->damage_arg, c->r, &c->diag))
		return rc;
	/* the stream ends at the damage, for good */
	c->held = NULL;
	c->xend = NULL;
	c->depth = 0;
	c->p = c->end = NULL;
	c->next_chunk = c->s->n;
	return NRR_EEOF;
}

static int cursor_next(nrr_cursor *c, const nrr_call **out)
{
	if (c->held) {
		*out = c->held;
		c->held = NULL;
		return 0;
	}
	for (;;) {
		if (c->xend && c->p >= c->xend) {   /* a repetition of a CYCLE delivered */
			if (--c->xleft) {
				c->p = c->xstart;
			} else {
				c->p = c->xresume;
				c->xend = NULL;
				c->clock = c->xbase + c->xelapsed;
			}
			continue;
		}
		if (c->p >= c->end) {
			if (c->next_chunk < c->s->n) {
				int rc = load_chunk(c, c->next_chunk);
				if (rc)
					return rc;
				continue;
			}
			if (c->depth) {
				eof_event(c, out);
				return 0;
			}
			return NRR_EEOF;
		}
		uint8_t tag = *c->p;
		/* a nested event: announce the enclosing call first */
		if ((tag == NRR_REC_ENTER || tag == NRR_REC_LOG) && c->depth && !frame(c, c->depth - 1)->emitted) {
			struct rframe *f = frame(c, c->depth - 1);
			f->emitted = true;
			f->call.phase = NRR_PHASE_ENTER;
			*out = &f->call;
			return 0;
		}
		c->p++;
		switch (tag) {
		case NRR_REC_ENTER: {
			uint64_t fnid, dts;
			if (c->depth >= NRR_MAX_DEPTH)
				return corrupt(c, "calls nested deeper than the format allows");
			const uint8_t *start = c->p - 1;
			uint64_t clock_before = c->clock;
			if (nrr_get_uvar(&c->p, c->end, &fnid) || nrr_get_uvar(&c->p, c->end, &dts))
				return corrupt(c, "truncated ENTER");
			if (c->xend)
				dts = cycle_scale(c, dts);
			const nrr_fn_schema *fn = nrr_schema_fn(c->r->schema, fnid > UINT32_MAX ? 0 : (uint32_t)fnid);
			if (!fn)
				return corrupt(c, "unknown function id");
			if (stack_room(c, c->depth + 1))
				return diag_set(&c->diag, c->r, c->chunk_off, -ENOMEM, "out of memory");
			struct rframe *f = frame(c, c->depth);
			nrr_call *call = &f->call;
			call->kind = NRR_CALL;
			call->phase = NRR_PHASE_CALL;
			call->depth = (uint8_t)c->depth;
			call->done = false;
			call->args_lost = false;
			call->stream = c->s->info.stream;
			call->tid = c->tid;
			call->seq = ++c->seq;
			c->clock += dts;
			call->ts = c->clock;
			call->dur = 0;
			call->repeat = call->repeat_ns = 0;
			call->cycled = c->xend ? c->xperiod : 0;
			call->result = 0;
			call->err = 0;
			call->fn = fn;
			call->present = 0;
			call->chunk_offset = c->chunk_off;
			f->emitted = false;
			f->start = start;
			f->chunk = c->next_chunk;
			f->clock_before = clock_before;
			c->depth++;
			int rc = decode_args(c, call, fn->in_mask);
			if (rc)
				return rc;
			break;
		}
		case NRR_REC_LEAVE: {
			uint64_t dur, err;
			int64_t result;
			if (!c->depth)
				return corrupt(c, "LEAVE without a call in progress");
			struct rframe *f = frame(c, --c->depth);
			nrr_call *call = &f->call;
			if (nrr_get_uvar(&c->p, c->end, &dur) || nrr_get_svar(&c->p, c->end, &result) ||
			    nrr_get_uvar(&c->p, c->end, &err))
				return corrupt(c, "truncated LEAVE");
			if (c->xend)
				dur = cycle_scale(c, dur);
			call->dur = dur;
			call->result = result;
			call->err = (uint32_t)err;
			call->done = true;
			call->chunk_offset = c->chunk_off;
			c->clock = call->ts + dur;
			int rc = decode_args(c, call, call->fn->out_mask);
			if (rc)
				return rc;
			while (c->p < c->end && *c->p == NRR_REC_REPEAT) {
				uint64_t cnt, ns;
				c->p++;
				if (nrr_get_uvar(&c->p, c->end, &cnt) || nrr_get_uvar(&c->p, c->end, &ns))
					return corrupt(c, "truncated REPEAT");
				call->repeat += cnt;
				call->repeat_ns += ns;
				c->seq += cnt;
				c->clock += ns;
			}
			call->phase = f->emitted ? NRR_PHASE_RESUME : NRR_PHASE_CALL;
			/* a CYCLE may repeat it with the calls it directly follows */
			if (c->xend) {
			} else if (f->emitted || call->repeat || f->chunk != c->next_chunk) {
				c->nleaf = 0;
			} else {
				if (c->nleaf && (c->leaf[c->nleaf - 1].end != f->start || c->leaf[c->nleaf - 1].depth != c->depth))
					c->nleaf = 0;
				if (c->nleaf == NRR_CYCLE_MAX) {
					memmove(c->leaf, c->leaf + 1, (NRR_CYCLE_MAX - 1) * sizeof(c->leaf[0]));
					c->nleaf--;
				}
				c->leaf[c->nleaf].start = f->start;
				c->leaf[c->nleaf].end = c->p;
				c->leaf[c->nleaf].clock = f->clock_before;
				c->leaf[c->nleaf].depth = c->depth;
				c->nleaf++;
			}
			*out = call;
			return 0;
		}
		case NRR_REC_REPEAT:
			return corrupt(c, "REPEAT not after a completed call");
		case NRR_REC_CYCLE: {
			int rc = cycle_begin(c);
			if (rc)
				return rc;
			break;
		}
		case NRR_REC_LOG: {
			uint64_t dts, level, total, stored;
			if (nrr_get_uvar(&c->p, c->end, &dts) || nrr_get_uvar(&c->p, c->end, &level) ||
			    nrr_get_uvar(&c->p, c->end, &total) || nrr_get_uvar(&c->p, c->end, &stored) ||
			    stored > (uint64_t)(c->end - c->p))
				return corrupt(c, "truncated LOG");
			nrr_call *call = &c->out;
			memset(call, 0, offsetof(nrr_call, args));
			c->nleaf = 0;
			call->kind = NRR_CALL_LOG;
			call->stream = c->s->info.stream;
			call->tid = c->tid;
			call->depth = (uint8_t)c->depth;
			call->done = true;
			c->clock += dts;
			call->ts = c->clock;
			call->seq = c->seq;
			call->log_level = (unsigned)level;
			call->log = (const char *)c->p;
			call->log_len = (uint32_t)stored;
			call->chunk_offset = c->chunk_off;
			c->p += stored;
			*out = call;
			return 0;
		}
		default:
			c->p--;
			return corrupt(c, "unknown record tag");
		}
	}
}

int nrr_cursor_seek(nrr_cursor *c, uint64_t seq)
{
	const struct stream *s = c->s;
	if (!s->n)
		return NRR_ENOTFOUND;
	uint32_t lo = 0, hi = s->n;   /* last chunk with first_seq <= seq */
	while (hi - lo > 1) {
		uint32_t mid = (lo + hi) / 2;
		if (c->r->chunks[s->chunks[mid]].first_seq <= seq)
			lo = mid;
		else
			hi = mid;
	}
	c->depth = 0;
	c->seq = 0;
	c->held = NULL;
	c->p = c->end = NULL;
	int rc = load_chunk(c, lo);
	if (rc)
		return rc;
	for (;;) {   /* skip what comes before @seq; hold the first event at or after it */
		const nrr_call *call;
		rc = nrr_cursor_next(c, &call);
		if (rc == NRR_EEOF)
			return NRR_ENOTFOUND;
		if (rc)
			return rc;
		if (call->kind == NRR_CALL && call->seq >= seq &&
		    (call->phase == NRR_PHASE_CALL || call->phase == NRR_PHASE_ENTER)) {
			c->held = call;
			return 0;
		}
	}
}

/* ----------------------------------------------------------------- merge */

/* A stream of the merge.  Its cursor is opened when the stream's first
 * chunk is due (key is then that chunk's start, no later than its first
 * call) and closed at its end: a merge holds cursors for the streams that
 * overlap in time, not for all of them (a file may claim a stream per
 * 64 bytes). */
struct msrc {
	nrr_cursor *c;
	size_t reader;
	uint32_t stream;
	const nrr_call *cur;
	uint64_t key;   /* wall ns */
	uint64_t wall;  /* key - nrr_call_key(cur): nrr_reader_wall()'s offset, fixed per reader */
};

struct hent {
	uint64_t key;   /* its source's key, here so that sifting reads one array */
	size_t i;       /* index into src */
};

struct nrr_merge {
	nrr_reader *const *readers;
	ZSTD_DCtx *dc;  /* shared by its cursors */
	struct msrc *src;
	size_t n;
	struct hent *heap;   /* sources by their next event's time */
	size_t nheap;
	ssize_t last;   /* source whose event was handed out, to advance next */
	int pending_rc;
	nrr_diag diag;
};

/* Without branches (| and &, not || and &&): streams that interleave
 * call by call make every comparison a coin toss, and mispredicted
 * branches were most of the merge's cost (issue 19 item 4). */
static inline bool heap_less(const struct hent *a, const struct hent *b)
{
	return (a->key < b->key) | ((a->key == b->key) & (a->i < b->i));
}

/* Sift @x down from slot @i.  @x comes in registers, not loaded back from
 * h[i]: advance_top has just stored its key there, and a 16-byte load of
 * an 8-byte store stalls on store forwarding (a quarter of advance_top's
 * samples in the profile of dump). */
static void heap_down(nrr_merge *m, size_t i, struct hent x)
{
	struct hent *h = m->heap;
	size_t n = m->nheap;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1;
		if (l >= n)
			break;
		size_t s = r < n ? l + heap_less(&h[r], &h[l]) : l;
		if (!heap_less(&h[s], &x))
			break;
		h[i] = h[s];
		i = s;
	}
	h[i] = x;
}

static void heap_up(nrr_merge *m, size_t i)
{
	struct hent *h = m->heap, x = h[i];
	while (i) {
		size_t p = (i - 1) / 2;
		if (!heap_less(&x, &h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = x;
}

static void push(nrr_merge *m, size_t i)
{
	m->heap[m->nheap++] = (struct hent){ m->src[i].key, i };
	heap_up(m, m->nheap - 1);
}

/* Advance source @i (opening its cursor first), which is at the top of the
 * heap: sift it down to its new key, or drop it (closing its cursor) when
 * it has no more events.  One sift per call instead of a pop and a push. */
static int advance_top(nrr_merge *m, size_t i)
{
	struct msrc *s = &m->src[i];
	int rc = s->c ? 0 : cursor_open(&s->c, m->readers[s->reader], s->stream, m->dc);
	if (rc)
		return rc;
	rc = nrr_cursor_next(s->c, &s->cur);
	struct hent x;
	if (rc == NRR_EEOF) {
		nrr_cursor_close(s->c);
		s->c = NULL;
		x = m->heap[--m->nheap];
	} else if (rc) {
		m->diag = *nrr_cursor_diag(s->c);
		return rc;
	} else {
		s->key = nrr_call_key(s->cur) + s->wall;   /* nrr_reader_wall(), without its loads */
		x = (struct hent){ s->key, i };
	}
	heap_down(m, 0, x);
	return 0;
}

int nrr_merge_open(nrr_merge **out, nrr_reader *const *readers, size_t n)
{
	nrr_merge *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += readers[i]->nstreams;
	m->readers = readers;
	m->dc = ZSTD_createDCtx();
	m->src = calloc(total + 1, sizeof(*m->src));
	m->heap = calloc(total + 1, sizeof(*m->heap));
	if (!m->dc || !m->src || !m->heap) {
		nrr_merge_close(m);
		return -ENOMEM;
	}
	m->last = -1;
	for (size_t i = 0; i < n; i++)
		for (uint32_t s = 0; s < readers[i]->nstreams; s++) {
			struct msrc *x = &m->src[m->n];
			x->reader = i;
			x->stream = s;
			x->key = nrr_reader_wall(readers[i], readers[i]->streams[s].info.first_ts);
			x->wall = nrr_reader_wall(readers[i], 0);
			push(m, m->n++);
		}
	*out = m;
	return 0;
}

int nrr_merge_next(nrr_merge *m, const nrr_call **call, size_t *reader)
{
	if (m->pending_rc)
		return m->pending_rc;
	if (m->last >= 0) {
		size_t i = (size_t)m->last;   /* still at the top of the heap */
		m->last = -1;
		int rc = advance_top(m, i);
		if (rc)
			return m->pending_rc = rc;
	}
	for (;;) {
		if (!m->nheap)
			return NRR_EEOF;
		size_t i = m->heap[0].i;
		if (m->src[i].c) {
			m->last = (ssize_t)i;
			*call = m->src[i].cur;
			if (reader)
				*reader = m->src[i].reader;
			return 0;
		}
		/* a stream whose first chunk is due: its first call, in its place */
		int rc = advance_top(m, i);
		if (rc)
			return m->pending_rc = rc;
	}
}

const nrr_diag *nrr_merge_diag(const nrr_merge *m) { return &m->diag; }

void nrr_merge_close(nrr_merge *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		nrr_cursor_close(m->src[i].c);
	ZSTD_freeDCtx(m->dc);
	free(m->src);
	free(m->heap);
	free(m);
}
