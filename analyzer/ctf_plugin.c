/* SPDX-License-Identifier: MIT */
/*
 * ctf_plugin.c - the Babeltrace2 plugin `ncclrr`: declarations only; the
 * component class `source.ncclrr.nrt` lives in export_ctf.c.
 *   babeltrace2 --plugin-path=DIR -c source.ncclrr.nrt -p 'inputs=["run/"]'
 */
#include <babeltrace2/babeltrace.h>

#include "export_ctf.h"

BT_PLUGIN_MODULE();

BT_PLUGIN(ncclrr);
BT_PLUGIN_DESCRIPTION("ncclrr native traces (.nrt) as Babeltrace2 messages");
BT_PLUGIN_AUTHOR("ncclrr");
BT_PLUGIN_LICENSE("MIT");

BT_PLUGIN_SOURCE_COMPONENT_CLASS(nrt, nrr_ctf_it_next);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_DESCRIPTION(nrt, nrr_ctf_src_description);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_HELP(nrt, nrr_ctf_src_help);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_INITIALIZE_METHOD(nrt, nrr_ctf_src_init);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_FINALIZE_METHOD(nrt, nrr_ctf_src_finalize);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_QUERY_METHOD(nrt, nrr_ctf_src_query);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD(nrt, nrr_ctf_it_init);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_FINALIZE_METHOD(nrt, nrr_ctf_it_finalize);
