/* SPDX-License-Identifier: MIT */
/* nrt_internal.h - fixed-size structures of the .nrt file (FORMAT.md). */
#ifndef NCCLRR_NRT_INTERNAL_H
#define NCCLRR_NRT_INTERNAL_H

#include <string.h>
#include "nrt.h"

#define NRR_STREAM_NONE 0xffffffffu
/* index entries of the schema chunks after the first (format 3.0) */
#define NRR_STREAM_SCHEMA 0xfffffffeu
/* The largest chunk, before and after compression: the writer makes none
 * larger (its chunk_size is at most this; metadata is refused beyond it)
 * and readers refuse one that claims more. */
#define NRR_CHUNK_RAW_MAX (64u << 20)
#define NRR_CHUNK_F_ZSTD 0x01u
#define NRR_FILE_F_TSC 0x01u

typedef struct nrr_file_header {
	uint16_t major, minor;
	uint32_t header_size;
	uint64_t wall_ns, mono_ns;
	uint32_t pid, flags;
} nrr_file_header;

typedef struct nrr_chunk_header {
	uint8_t type, flags;
	uint16_t header_size;
	uint32_t stream, tid;
	uint64_t first_seq, first_ts;
	uint32_t payload_size, raw_size, nrecords;
	uint32_t payload_crc;
} nrr_chunk_header;

/* Built-in call semantics (nrr_sem_gen.c, generated from formats/api/):
 * the sem= text of each described function (sorted by name) and of each
 * return convention, for a trace whose schema does not carry them. */
typedef struct nrr_sem_builtin {
	const char *name;
	const char *sem;
	const nrr_enum_schema *table;   /* the table its failed: item names, or NULL */
} nrr_sem_builtin;
extern const nrr_sem_builtin nrr_sem_builtin_fns[];
extern const size_t nrr_sem_builtin_nfns;
extern const nrr_sem_builtin nrr_sem_builtin_convs[];
extern const size_t nrr_sem_builtin_nconvs;
extern const char *const nrr_sem_roles[NRR_ROLE_N];      /* "connect", ... */
extern const char *const nrr_sem_argroles[NRR_ARGROLE_N]; /* "fd", ... */

static inline void nrr_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void nrr_le32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline void nrr_le64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline uint16_t nrr_rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t nrr_rd32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static inline uint64_t nrr_rd64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

static inline void nrr_file_header_pack(const nrr_file_header *h, uint8_t out[NRR_FILE_HEADER_SIZE])
{
	memset(out, 0, NRR_FILE_HEADER_SIZE);
	memcpy(out, NRR_FILE_MAGIC, 8);
	nrr_le16(out + 8, h->major);
	nrr_le16(out + 10, h->minor);
	nrr_le32(out + 12, NRR_FILE_HEADER_SIZE);
	nrr_le64(out + 16, h->wall_ns);
	nrr_le64(out + 24, h->mono_ns);
	nrr_le32(out + 32, h->pid);
	nrr_le32(out + 36, h->flags);
	nrr_le32(out + 60, nrr_crc32c(0, out, 60));
}

/* @return 0, NRR_EBADMAGIC or NRR_ECORRUPT. */
static inline int nrr_file_header_unpack(const uint8_t in[NRR_FILE_HEADER_SIZE], nrr_file_header *h)
{
	if (memcmp(in, NRR_FILE_MAGIC, 8) != 0)
		return NRR_EBADMAGIC;
	if (nrr_rd32(in + 60) != nrr_crc32c(0, in, 60))
		return NRR_ECORRUPT;
	h->major = nrr_rd16(in + 8);
	h->minor = nrr_rd16(in + 10);
	h->header_size = nrr_rd32(in + 12);
	h->wall_ns = nrr_rd64(in + 16);
	h->mono_ns = nrr_rd64(in + 24);
	h->pid = nrr_rd32(in + 32);
	h->flags = nrr_rd32(in + 36);
	return 0;
}

static inline void nrr_chunk_header_pack(const nrr_chunk_header *h, uint8_t out[NRR_CHUNK_HEADER_SIZE])
{
	memset(out, 0, NRR_CHUNK_HEADER_SIZE);
	nrr_le32(out, NRR_CHUNK_MAGIC);
	out[4] = h->type;
	out[5] = h->flags;
	nrr_le16(out + 6, NRR_CHUNK_HEADER_SIZE);
	nrr_le32(out + 8, h->stream);
	nrr_le32(out + 12, h->tid);
	nrr_le64(out + 16, h->first_seq);
	nrr_le64(out + 24, h->first_ts);
	nrr_le32(out + 32, h->payload_size);
	nrr_le32(out + 36, h->raw_size);
	nrr_le32(out + 40, h->nrecords);
	nrr_le32(out + 56, h->payload_crc);
	nrr_le32(out + 60, nrr_crc32c(0, out, 60));
}

/* @return 0 or NRR_ECORRUPT (bad magic, checksum or sizes). */
static inline int nrr_chunk_header_unpack(const uint8_t in[NRR_CHUNK_HEADER_SIZE], nrr_chunk_header *h)
{
	if (nrr_rd32(in) != NRR_CHUNK_MAGIC || nrr_rd32(in + 60) != nrr_crc32c(0, in, 60))
		return NRR_ECORRUPT;
	h->type = in[4];
	h->flags = in[5];
	h->header_size = nrr_rd16(in + 6);
	h->stream = nrr_rd32(in + 8);
	h->tid = nrr_rd32(in + 12);
	h->first_seq = nrr_rd64(in + 16);
	h->first_ts = nrr_rd64(in + 24);
	h->payload_size = nrr_rd32(in + 32);
	h->raw_size = nrr_rd32(in + 36);
	h->nrecords = nrr_rd32(in + 40);
	h->payload_crc = nrr_rd32(in + 56);
	if (h->header_size < NRR_CHUNK_HEADER_SIZE)
		return NRR_ECORRUPT;
	return 0;
}

static inline void nrr_trailer_pack(uint64_t index_off, uint32_t index_len, uint8_t out[NRR_TRAILER_SIZE])
{
	memcpy(out, NRR_TRAILER_MAGIC, 8);
	nrr_le64(out + 8, index_off);
	nrr_le32(out + 16, index_len);
	nrr_le32(out + 20, nrr_crc32c(0, out, 20));
}
/* How many enum names nrr_schema_parse compared while building @s: the
 * unit test's measure that parsing stays linear in the number of enums. */
uint64_t nrr_schema_enum_probes(const nrr_schema *s);

#endif
