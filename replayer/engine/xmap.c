/* SPDX-License-Identifier: MIT */
/*
 * xmap.c - the replay coordinator's cross-process table.
 *
 * One shared anonymous mapping made by the coordinator before it forks the
 * workers: an open-addressing hash table of (kind, recorded bytes) ->
 * live bytes under a process-shared, robust mutex, with a condition
 * variable that wakes readers waiting for a value another worker has not
 * published yet (a connect waiting for its listener).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "nrr_hash.h"
#include "replay_internal.h"

#define KIND_MAX 8

struct slot {
	uint8_t used;
	uint8_t klen, vlen;
	char kind[KIND_MAX];
	uint8_t key[NRR_XMAP_MAX];
	uint8_t val[NRR_XMAP_MAX];
};

struct xmap {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t nslots, used;
	struct slot slots[];
};

static struct xmap *g_xmap;

int nrr_xmap_init(size_t nslots)
{
	size_t sz = sizeof(struct xmap) + nslots * sizeof(struct slot);
	struct xmap *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&m->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cv, &ca);
	pthread_condattr_destroy(&ca);
	m->nslots = nslots;
	g_xmap = m;
	return 0;
}

static void lock(struct xmap *m)
{
	/* A worker that died holding the lock left the table consistent:
	 * slots are filled before `used` is set. */
	if (pthread_mutex_lock(&m->mu) == EOWNERDEAD)
		pthread_mutex_consistent(&m->mu);
}

void nrr_xmap_reset(void)
{
	if (!g_xmap)
		return;
	lock(g_xmap);
	memset(g_xmap->slots, 0, g_xmap->nslots * sizeof(struct slot));
	g_xmap->used = 0;
	pthread_mutex_unlock(&g_xmap->mu);
}

static size_t hash(const char *kind, const void *key, size_t klen)
{
	return (size_t)nrr_hash(key, klen, nrr_hash_str(kind, NRR_HASH_INIT));
}

/* The slot holding (kind, key), or the empty slot where it would go. */
static struct slot *find(struct xmap *m, const char *kind, const void *key, size_t klen)
{
	size_t i = hash(kind, key, klen) % m->nslots;
	for (size_t n = 0; n < m->nslots; n++, i = (i + 1) % m->nslots) {
		struct slot *s = &m->slots[i];
		if (!s->used)
			return s;
		if (s->klen == klen && !strncmp(s->kind, kind, KIND_MAX) && !memcmp(s->key, key, klen))
			return s;
	}
	return NULL;
}

int nrr_xmap_put(const char *kind, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct xmap *m = g_xmap;
	if (!m)
		return -ENODEV;
	if (klen > NRR_XMAP_MAX || vlen > NRR_XMAP_MAX || strlen(kind) > KIND_MAX)
		return -E2BIG;
	lock(m);
	int ret = 0;
	struct slot *s = m->used + 1 < m->nslots ? find(m, kind, key, klen) : NULL;
	if (!s) {
		ret = -ENOSPC;
	} else {
		if (!s->used) {
			strncpy(s->kind, kind, KIND_MAX);
			s->klen = (uint8_t)klen;
			memcpy(s->key, key, klen);
			m->used++;
		}
		s->vlen = (uint8_t)vlen;
		memcpy(s->val, val, vlen);
		s->used = 1;
		pthread_cond_broadcast(&m->cv);
	}
	pthread_mutex_unlock(&m->mu);
	return ret;
}

int nrr_xmap_get(const char *kind, const void *key, size_t klen, void *val, size_t *vlen, int timeout_ms)
{
	struct xmap *m = g_xmap;
	if (!m)
		return -ENODEV;
	if (klen > NRR_XMAP_MAX || strlen(kind) > KIND_MAX)
		return -E2BIG;
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	lock(m);
	int ret = 0;
	for (;;) {
		struct slot *s = find(m, kind, key, klen);
		if (s && s->used) {
			size_t n = s->vlen < *vlen ? s->vlen : *vlen;
			memcpy(val, s->val, n);
			*vlen = s->vlen;
			break;
		}
		int w = pthread_cond_timedwait(&m->cv, &m->mu, &dl);
		if (w == EOWNERDEAD) {
			pthread_mutex_consistent(&m->mu);
		} else if (w == ETIMEDOUT) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&m->mu);
	return ret;
}
