/* SPDX-License-Identifier: MIT */
/*
 * net_choose.c - resolve a net / profiler plugin as NCCL does and find the
 * highest API version it exports (see net_choose.h for the rules).
 */
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "net_choose.h"

struct kind {
	const char *env;     /* the NCCL variable, for messages */
	const char *prefix;  /* libnccl-net */
	const char *sym;     /* ncclNetPlugin_v: the table's name without its version */
	int vmin, vmax;
};

static const struct kind net_kind = { "NCCL_NET_PLUGIN", "libnccl-net", "ncclNetPlugin_v", 6, 11 };
static const struct kind prof_kind = { "NCCL_PROFILER_PLUGIN", "libnccl-profiler", "ncclProfiler_v", 1, 6 };

static void put(char *buf, size_t len, const char *s)
{
	if (buf && len)
		snprintf(buf, len, "%s", s);
}

static bool ends_with_so(const char *s)
{
	size_t n = strlen(s);
	return n >= 3 && strcmp(s + n - 3, ".so") == 0;
}

/* dlopen @cand; on success fill @resolved with the file actually loaded. */
static void *try_open(const char *cand, char *resolved, size_t len, char *why, size_t whylen)
{
	void *h = dlopen(cand, RTLD_LAZY | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(why, whylen, "%s", e ? e : "unknown dlopen error");
		return NULL;
	}
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
		put(resolved, len, lm->l_name);
	else
		put(resolved, len, cand);
	return h;
}

/* @return the highest version of @k that @h exports, or 0. */
static int highest(void *h, const struct kind *k)
{
	for (int v = k->vmax; v >= k->vmin; v--) {
		char sym[40];
		snprintf(sym, sizeof(sym), "%s%d", k->sym, v);
		dlerror();
		if (dlsym(h, sym))
			return v;
	}
	return 0;
}

static bool is_enoent(const char *why)
{
	return strstr(why, "No such file or directory") != NULL;
}

static int resolve(const struct kind *k, const char *name, const char *fallback, char *resolved, size_t len,
		   char *err, size_t errlen)
{
	char cands[2][512];
	int ncand = 0;
	char why[512] = "", tried[1100] = "";
	bool explicit_name = name && *name;

	put(resolved, len, "");
	put(err, errlen, "");
	if (explicit_name && strcasecmp(name, "none") == 0)
		return 0;
	if (explicit_name && strchr(name, ',')) {
		snprintf(err, errlen,
			 "ncclrr: Cannot trace a list of plugins: %s=%s (name the one plugin NCCL should use)",
			 k->env, name);
		return -1;
	}
	if (explicit_name && strncasecmp(name, "STATIC_PLUGIN", strlen(name)) == 0) {
		snprintf(err, errlen,
			 "ncclrr: Cannot wrap a plugin linked into the application: %s=%s "
			 "(build the plugin as a shared library to trace it)", k->env, name);
		return -1;
	}
	if (explicit_name) {
		if (strlen(name) >= sizeof(cands[0]) - 32) {
			snprintf(err, errlen, "ncclrr: Cannot use the plugin name: %s=%.64s... length=%zu (use a shorter path)",
				 k->env, name, strlen(name));
			return -1;
		}
		snprintf(cands[ncand++], sizeof(cands[0]), "%s", name);
		if (!strchr(name, '/') && !(strncmp(name, "lib", 3) == 0 && ends_with_so(name)))
			snprintf(cands[ncand++], sizeof(cands[0]), "%s-%s.so", k->prefix, name);
	} else {
		snprintf(cands[ncand++], sizeof(cands[0]), "%s.so", k->prefix);
	}

	void *h = NULL;
	bool all_enoent = true;
	for (int i = 0; i < ncand && !h; i++) {
		h = try_open(cands[i], resolved, len, why, sizeof(why));
		if (!h) {
			size_t t = strlen(tried);
			snprintf(tried + t, sizeof(tried) - t, "%s%s", t ? "," : "", cands[i]);
			if (!is_enoent(why))
				all_enoent = false;
		}
	}
	if (!h && fallback && *fallback) {
		/* NCCL 2.26+: no profiler library of its own; the net plugin's */
		h = try_open(fallback, resolved, len, why, sizeof(why));
		if (h && highest(h, k) == 0) {
			dlclose(h);
			put(resolved, len, "");
			return 0;
		}
	}
	if (!h) {
		if (!explicit_name) {
			if (!all_enoent)
				snprintf(err, errlen, "ncclrr: note: %s.so cannot be loaded and NCCL will not use it either: %s",
					 k->prefix, why);
			return 0;
		}
		snprintf(err, errlen, "ncclrr: Cannot find the plugin: %s=%s tried=%s error=%s "
			 "(give its path or put its directory in LD_LIBRARY_PATH)", k->env, name, tried, why);
		return -1;
	}
	int v = highest(h, k);
	dlclose(h);
	if (v == 0) {
		char sym_lo[40], sym_hi[40];
		snprintf(sym_lo, sizeof(sym_lo), "%s%d", k->sym, k->vmin);
		snprintf(sym_hi, sizeof(sym_hi), "%s%d", k->sym, k->vmax);
		snprintf(err, errlen, "ncclrr: Cannot trace the plugin: path=%s exports=none-of-%s..%s "
			 "(it is older or newer than the NCCL plugin API ncclrr knows; run without it)",
			 resolved ? resolved : "?", sym_lo, sym_hi);
		put(resolved, len, "");
		return -1;
	}
	return v;
}

int nrr_net_plugin_version(const char *name_or_path, char *resolved, size_t len, char *err, size_t errlen)
{
	return resolve(&net_kind, name_or_path, NULL, resolved, len, err, errlen);
}

int nrr_profiler_plugin_version(const char *name_or_path, const char *net_resolved, char *resolved, size_t len,
				char *err, size_t errlen)
{
	return resolve(&prof_kind, name_or_path, net_resolved, resolved, len, err, errlen);
}
