/* SPDX-License-Identifier: MIT */
/*
 * export_ctf.h - native traces as a Babeltrace2 source component
 * (`source.ncclrr.nrt`) and `ncclrr export --ctf DIR`, which runs that
 * source into Babeltrace2's `sink.ctf.fs` (CTF 1.8, for Trace Compass).
 *
 * The same code (export_ctf.c) is linked into the ncclrr executable and
 * into the Babeltrace2 plugin module (ctf_plugin.c holds only the plugin
 * declarations).  README "ncclrr export --ctf" describes the events.
 */
#ifndef NCCLRR_EXPORT_CTF_H
#define NCCLRR_EXPORT_CTF_H

#include <stddef.h>

#include "ncclrr_config.h"

struct nrr_reader;

/*
 * Write the @n traces @r (open readers, not closed here; `ncclrr export`
 * gives those of nrr_inputs_open()) as CTF into @outdir, one CTF trace per traced process, one CTF stream per
 * thread.  @outdir must not exist or be an empty directory.
 * @return 0 (NRR_EXIT_OK), or 2 (NRR_EXIT_USAGE) with a one-line message in
 * @err ("Cannot …: file=… offset=…: …"): bad output directory, unreadable
 * trace, Babeltrace2's ctf plugin not installed, or an ncclrr built without
 * libbabeltrace2.
 */
int nrr_export_ctf(struct nrr_reader *const *r, size_t n, const char *outdir, char *err, size_t errlen);

#if NCCLRR_HAVE_BT2
#include <babeltrace2/babeltrace.h>

/* The methods of source.ncclrr.nrt (export_ctf.c), for ctf_plugin.c.
 * Initialization data (in-process use): a struct nrr_ctf_init, whose readers
 * the component borrows; without it, the component opens the `inputs`
 * parameter itself. */
struct nrr_ctf_init {
	struct nrr_reader *const *r;
	size_t n;
};

bt_component_class_initialize_method_status nrr_ctf_src_init(bt_self_component_source *self,
	bt_self_component_source_configuration *config, const bt_value *params, void *init_data);
void nrr_ctf_src_finalize(bt_self_component_source *self);
/* babeltrace.support-info: lets `babeltrace2 DIR` find .nrt traces itself */
bt_component_class_query_method_status nrr_ctf_src_query(bt_self_component_class_source *cls,
	bt_private_query_executor *qe, const char *object, const bt_value *params, void *method_data,
	const bt_value **result);
bt_message_iterator_class_initialize_method_status nrr_ctf_it_init(bt_self_message_iterator *it,
	bt_self_message_iterator_configuration *config, bt_self_component_port_output *port);
void nrr_ctf_it_finalize(bt_self_message_iterator *it);
bt_message_iterator_class_next_method_status nrr_ctf_it_next(bt_self_message_iterator *it,
	bt_message_array_const msgs, uint64_t capacity, uint64_t *count);

extern const char nrr_ctf_src_description[];
extern const char nrr_ctf_src_help[];
#endif

#endif
