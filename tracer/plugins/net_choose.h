/* SPDX-License-Identifier: MIT */
/*
 * net_choose.h - which user plugin NCCL would load, and which ncclrr
 * wrapper variant stands in for it.
 *
 * NCCL_NET_PLUGIN is resolved the way NCCL 2.21-2.28 does (2.18-2.20 only
 * try the second form):
 *   unset or empty     -> "libnccl-net.so" (absence is not an error)
 *   "none" (2.28)      -> no external plugin
 *   NAME               -> dlopen(NAME) as given (a path, or a soname found
 *                         on the library path), then, when NAME has no '/'
 *                         and is not "lib*.so" (2.28; 2.21-2.27 always),
 *                         "libnccl-net-NAME.so"
 *   "a,b" (2.28 list)  -> not supported by the wrapper: an error
 * NCCL_PROFILER_PLUGIN likewise with "libnccl-profiler"; NCCL 2.26+ falls
 * back to the net plugin's library when no profiler library is found.
 */
#ifndef NCCLRR_NET_CHOOSE_H
#define NCCLRR_NET_CHOOSE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Resolve @name_or_path (the NCCL_NET_PLUGIN value; NULL = unset),
 * dlopen it (RTLD_LAZY | RTLD_LOCAL) and find its highest
 * ncclNetPlugin_vN, N in 6..11.
 *
 * @return N (6..11) with @resolved the plugin's file path (for
 * NCCLRR_NET_PLUGIN; record then uses libncclrr-net-vN.so);
 * 0 when there is no external plugin (unset and no libnccl-net.so, or
 * "none"): @resolved is "", @err may hold a note;
 * -1 on an error: @err holds one line "ncclrr: Cannot …" saying what to do.
 */
int nrr_net_plugin_version(const char *name_or_path, char *resolved, size_t len, char *err, size_t errlen);

/*
 * The same for a profiler plugin (@name_or_path: NCCL_PROFILER_PLUGIN):
 * highest ncclProfiler_vN, N in 1..6.  When the profiler library is not
 * found, @net_resolved (the net plugin path found by
 * nrr_net_plugin_version, or NULL) is searched as NCCL 2.26+ does.
 * @return N, 0 (none) or -1 as above.
 */
int nrr_profiler_plugin_version(const char *name_or_path, const char *net_resolved, char *resolved, size_t len,
				char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
