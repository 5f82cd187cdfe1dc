/* SPDX-License-Identifier: MIT */
/*
 * nrt_ctf.h - read an LTTng-UST (CTF) trace of the ncclrr_* providers into
 * the native event model.  Built only with libbabeltrace2 (ctf_dep).
 */
#ifndef NCCLRR_NRT_CTF_H
#define NCCLRR_NRT_CTF_H

#include <stddef.h>
#include <babeltrace2/babeltrace.h>
#include "nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Convert the CTF trace(s) below @ctf_dir (every directory holding a
 * `metadata` file, e.g. what `lttng create --output=DIR` wrote) into .nrt
 * files in the existing directory @out_dir: one file per (host, vpid),
 * one stream per vtid, every ncclrr_<domain>:<fn>_enter/_leave event as
 * an ENTER/LEAVE record of the built-in schema's function <fn>, stamped
 * with the event's clock (monotonic ns; the file header maps it to the
 * wall clock).  Events of other providers are ignored.
 *
 * On success *paths (malloc'ed array of malloc'ed paths, free both) and
 * *npaths name the files written, and *npaths may be 0 when the trace
 * holds no ncclrr event.  On error fills @diag (path = @ctf_dir) and
 * returns a negative code (NRR_EBADMAGIC: no CTF trace there,
 * NRR_ECORRUPT: babeltrace2 could not read it, -errno: I/O).
 */
int nrr_ctf_convert(const char *ctf_dir, const char *out_dir, char ***paths, size_t *npaths,
		    nrr_diag *diag);

/* Connect every output port of @src to a new input port of the muxer
 * @mux (filter.utils.muxer) and the muxer's output to @sink's "in" port,
 * the graph both CTF reading and CTF writing run.  @return true on success. */
bool nrr_bt2_connect_muxed(bt_graph *g, const bt_component_source *src, const bt_component_filter *mux,
			   const bt_component_sink *sink);

/* @return true if @dir holds a `metadata` file at most @depth levels below. */
bool nrr_ctf_looks_like(const char *dir, int depth);

#ifdef __cplusplus
}
#endif
#endif
