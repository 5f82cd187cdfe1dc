/* SPDX-License-Identifier: MIT */
/* launch_env.c - rank placement and per-rank environments (no I/O). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrr_launch.h"

int nrr_launch_place_error(int nhosts, int gpus_per_host, int nranks,
			   char *buf, size_t size)
{
	if (nhosts <= 0 || gpus_per_host <= 0) {
		snprintf(buf, size, "the cluster has %d hosts with %d GPUs each; it needs at least one of each",
			 nhosts, gpus_per_host);
		return -EINVAL;
	}
	if (nranks <= 0 || nranks % nhosts != 0) {
		snprintf(buf, size, "-np %d is not a positive multiple of the %d hosts of the cluster",
			 nranks, nhosts);
		return -EINVAL;
	}
	if (nranks / nhosts > gpus_per_host) {
		snprintf(buf, size, "-np %d puts %d ranks on each of the %d hosts, which have %d GPUs each (at most %d ranks)",
			 nranks, nranks / nhosts, nhosts, gpus_per_host, nhosts * gpus_per_host);
		return -EINVAL;
	}
	if (size)
		buf[0] = '\0';
	return 0;
}

int nrr_launch_place(int nhosts, int gpus_per_host, int nranks, int rank,
		     struct nrr_placement *out)
{
	char msg[8];
	if (nrr_launch_place_error(nhosts, gpus_per_host, nranks, msg, sizeof(msg)) < 0)
		return -EINVAL;
	if (rank < 0 || rank >= nranks)
		return -EINVAL;
	out->rank = rank;
	out->nranks = nranks;
	out->local_size = nranks / nhosts;
	out->host = rank / out->local_size;
	out->local_rank = rank % out->local_size;
	return 0;
}

/* ---- environment ----------------------------------------------------- */

static int env_grow(struct nrr_env *e)
{
	if (e->n + 1 < e->cap)
		return 0;
	size_t cap = e->cap ? e->cap * 2 : 64;
	char **v = realloc(e->vars, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	e->vars = v;
	e->cap = cap;
	return 0;
}

int nrr_env_init(struct nrr_env *e, char *const *base)
{
	memset(e, 0, sizeof(*e));
	if (env_grow(e) < 0)
		return -ENOMEM;
	e->vars[0] = NULL;
	for (size_t i = 0; base && base[i]; i++) {
		if (!strchr(base[i], '='))
			continue;
		int rc = nrr_env_put(e, base[i]);
		if (rc < 0 && rc != -EINVAL) {
			nrr_env_free(e);
			return rc;
		}
	}
	return 0;
}

void nrr_env_free(struct nrr_env *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->vars[i]);
	free(e->vars);
	memset(e, 0, sizeof(*e));
}

static ssize_t env_find(const struct nrr_env *e, const char *key, size_t klen)
{
	for (size_t i = 0; i < e->n; i++)
		if (strncmp(e->vars[i], key, klen) == 0 && e->vars[i][klen] == '=')
			return (ssize_t)i;
	return -1;
}

const char *nrr_env_get(const struct nrr_env *e, const char *key)
{
	ssize_t i = env_find(e, key, strlen(key));
	return i < 0 ? NULL : e->vars[i] + strlen(key) + 1;
}

static int env_store(struct nrr_env *e, const char *key, size_t klen, char *kv)
{
	ssize_t i = env_find(e, key, klen);
	if (i >= 0) {
		free(e->vars[i]);
		e->vars[i] = kv;
		return 0;
	}
	if (env_grow(e) < 0) {
		free(kv);
		return -ENOMEM;
	}
	e->vars[e->n++] = kv;
	e->vars[e->n] = NULL;
	return 0;
}

int nrr_env_set(struct nrr_env *e, const char *key, const char *val)
{
	size_t klen = strlen(key);
	if (klen == 0 || strchr(key, '='))
		return -EINVAL;
	size_t vlen = strlen(val);
	char *kv = malloc(klen + vlen + 2);
	if (!kv)
		return -ENOMEM;
	memcpy(kv, key, klen);
	kv[klen] = '=';
	memcpy(kv + klen + 1, val, vlen + 1);
	return env_store(e, key, klen, kv);
}

int nrr_env_put(struct nrr_env *e, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		return -EINVAL;
	char *copy = strdup(kv);
	if (!copy)
		return -ENOMEM;
	return env_store(e, kv, (size_t)(eq - kv), copy);
}

void nrr_env_unset(struct nrr_env *e, const char *key)
{
	ssize_t i = env_find(e, key, strlen(key));
	if (i < 0)
		return;
	free(e->vars[i]);
	memmove(&e->vars[i], &e->vars[i + 1], (e->n - (size_t)i) * sizeof(char *));
	e->n--;
}

int nrr_env_prepend_path(struct nrr_env *e, const char *key, const char *dir)
{
	const char *old = nrr_env_get(e, key);
	if (!old || !*old)
		return nrr_env_set(e, key, dir);
	size_t n = strlen(dir) + strlen(old) + 2;
	char *v = malloc(n);
	if (!v)
		return -ENOMEM;
	snprintf(v, n, "%s:%s", dir, old);
	int rc = nrr_env_set(e, key, v);
	free(v);
	return rc;
}

int nrr_env_append_path(struct nrr_env *e, const char *key, const char *item)
{
	const char *old = nrr_env_get(e, key);
	if (!old || !*old)
		return nrr_env_set(e, key, item);
	size_t n = strlen(item) + strlen(old) + 2;
	char *v = malloc(n);
	if (!v)
		return -ENOMEM;
	snprintf(v, n, "%s:%s", old, item);
	int rc = nrr_env_set(e, key, v);
	free(v);
	return rc;
}

static int env_set_int(struct nrr_env *e, const char *key, int v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%d", v);
	return nrr_env_set(e, key, buf);
}

int nrr_launch_rank_env(struct nrr_env *e, const struct nrr_rank_env *r)
{
	const struct nrr_placement *p = &r->pl;
	int rc = 0;
	if (r->topo_path)
		rc |= nrr_env_set(e, "NCCLRR_TOPO", r->topo_path);
	rc |= env_set_int(e, "NCCLRR_HOST", p->host);
	rc |= env_set_int(e, "NCCLRR_RANK", p->rank);
	rc |= env_set_int(e, "NCCLRR_NRANKS", p->nranks);
	rc |= env_set_int(e, "NCCLRR_LOCAL_RANK", p->local_rank);
	rc |= env_set_int(e, "NCCLRR_LOCAL_SIZE", p->local_size);
	rc |= env_set_int(e, "RANK", p->rank);
	rc |= env_set_int(e, "WORLD_SIZE", p->nranks);
	rc |= env_set_int(e, "LOCAL_RANK", p->local_rank);
	rc |= env_set_int(e, "LOCAL_WORLD_SIZE", p->local_size);
	if (r->host_name)
		rc |= nrr_env_set(e, "NCCL_HOSTID", r->host_name);
	if (r->comm_id)
		rc |= nrr_env_set(e, "NCCL_COMM_ID", r->comm_id);
	if (r->id_dir)
		rc |= nrr_env_set(e, "NCCLRR_ID_DIR", r->id_dir);
	rc |= nrr_env_set(e, "NCCL_SOCKET_IFNAME", r->socket_ifname ? r->socket_ifname : "lo");
	if (r->host_xml)
		rc |= nrr_env_set(e, "NCCL_TOPO_FILE", r->host_xml);
	if (r->fake_libdir)
		rc |= nrr_env_prepend_path(e, "LD_LIBRARY_PATH", r->fake_libdir);
	/* the NICs' /sys files, which the relinked NCCL reads from there
	 * (scripts/nccl_sysfs.c; replayer/fake/README.md, Fake verbs) */
	if (r->host_sysfs)
		rc |= nrr_env_set(e, "NCCLRR_SYSFS", r->host_sysfs);
	if (r->memlock && r->memlock_given) {
		rc |= nrr_env_set(e, "NCCLRR_MEMLOCK", r->memlock);
		rc |= nrr_env_set(e, "NCCLRR_MEMLOCK_GIVEN", r->memlock_given);
	} else {
		nrr_env_unset(e, "NCCLRR_MEMLOCK");
		nrr_env_unset(e, "NCCLRR_MEMLOCK_GIVEN");
	}
	if (rc)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_user_env; i++) {
		int urc = nrr_env_put(e, r->user_env[i]);
		if (urc < 0)
			return urc;
	}
	for (size_t i = 0; i < r->n_unset_env; i++) {
		const char *k = r->unset_env[i];
		if (!*k || strchr(k, '='))
			return -EINVAL;
		nrr_env_unset(e, k);
	}
	for (size_t i = 0; i < r->n_rank_env; i++) {
		const char *kv;
		int rk = nrr_launch_rank_env_parse(r->rank_env[i], &kv);
		if (rk < 0)
			return rk;
		if (rk != p->rank)
			continue;
		int urc = nrr_env_put(e, kv);
		if (urc < 0)
			return urc;
	}
	/* the fault switch's socket calls live in a library of their own,
	 * preloaded behind whatever is there (a tracer stays in front) */
	const char *fault = nrr_env_get(e, "NCCLRR_FAULT");
	if (r->fake_libdir && fault && *fault) {
		char lib[4096];
		int dirlen = (int)strcspn(r->fake_libdir, ":");
		snprintf(lib, sizeof(lib), "%.*s/%s", dirlen, r->fake_libdir, NRR_FAKE_SOCKET_LIB);
		if (nrr_env_append_path(e, "LD_PRELOAD", lib) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void limit_text(rlim_t v, char *out)
{
	if (v == RLIM_INFINITY)
		snprintf(out, 64, "unlimited");
	else
		snprintf(out, 64, "%llu", (unsigned long long)v);
}

int nrr_launch_memlock(long long want, struct rlimit *rl, char *virt, char *given)
{
	rlim_t w = want < 0 ? RLIM_INFINITY : (rlim_t)want;
	struct rlimit cur;
	if (getrlimit(RLIMIT_MEMLOCK, &cur) < 0)
		cur.rlim_cur = cur.rlim_max = RLIM_INFINITY;
	rl->rlim_cur = rl->rlim_max = w;
	if (w <= cur.rlim_max)
		return 0;  /* at or below the hard limit: always permitted */
	/* above it: permitted if this process may raise its own hard limit */
	struct rlimit probe = { cur.rlim_cur, w };
	if (setrlimit(RLIMIT_MEMLOCK, &probe) == 0)
		return 0;
	rl->rlim_cur = rl->rlim_max = cur.rlim_max;
	limit_text(w, virt);
	limit_text(cur.rlim_max, given);
	return 1;
}

int nrr_launch_rank_env_parse(const char *s, const char **kv)
{
	char *end;
	errno = 0;
	long r = strtol(s, &end, 10);
	if (end == s || *s == '-' || *s == '+' || *end != ':' || errno || r > INT_MAX)
		return -EINVAL;
	const char *k = end + 1, *eq = strchr(k, '=');
	if (!eq || eq == k)
		return -EINVAL;
	if (kv)
		*kv = k;
	return (int)r;
}

static const char *env_lookup(char *const *env, const char *key)
{
	size_t klen = strlen(key);
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], key, klen) == 0 && env[i][klen] == '=')
			return env[i] + klen + 1;
	return NULL;
}

static int parse_nonneg(const char *s, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 1 << 24)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

int nrr_launch_wrap_rank(char *const *env, int *rank, int *nranks, const char **source)
{
	static const char *const pairs[][2] = {
		{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE" },
		{ "SLURM_PROCID", "SLURM_NTASKS" },
		{ "RANK", "WORLD_SIZE" },
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const char *r = env_lookup(env, pairs[i][0]);
		if (!r)
			continue;
		*source = pairs[i][0];
		const char *w = env_lookup(env, pairs[i][1]);
		if (parse_nonneg(r, rank) < 0 || !w || parse_nonneg(w, nranks) < 0 ||
		    *nranks == 0 || *rank >= *nranks)
			return -EINVAL;
		return 0;
	}
	*source = NULL;
	return -ENOENT;
}
