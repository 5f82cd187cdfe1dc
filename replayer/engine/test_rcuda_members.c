/* SPDX-License-Identifier: MIT */
/*
 * test_rcuda_members - an out struct compared member by member, by the
 * layout the API description declares (struct:TYPE and its `c` line), as
 * the replay compares ibv_query_port's answer (rcuda.c, SP_CMPHEAD): the
 * members up to `flags` are the callee's; what follows them (the caller's
 * port_cap_flags2 and padding) and a trace whose struct is longer do not
 * matter; a differing member is named with both values; a recording too
 * short for the layout, or a member the layout lacks, is said as such.
 * NVML's legacy nvmlPciInfo_v1_t recorded as 68 bytes compares by its 52.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "nrr_api_gen.h"
#include "replay_internal.h"

static bool cmp(const char *last, const void *rec, size_t reclen, const void *live, size_t livelen, nrr_rres *res)
{
	memset(res, 0, sizeof(*res));
	return nrr_rcuda_cmp_members("ibv_query_port", "port_attr", last, rec, reclen, live, livelen, res);
}

int main(void)
{
	nrr_ibv_port_attr rec, live;
	uint8_t longer[64];
	nrr_rres res;
	memset(&rec, 0, sizeof(rec));
	rec.state = 4;           /* IBV_PORT_ACTIVE */
	rec.max_mtu = rec.active_mtu = 5;
	rec.gid_tbl_len = 128;
	rec.lid = 1;
	rec.link_layer = 1;
	rec.flags = 0;
	live = rec;
	rec.port_cap_flags2 = 0x1234;  /* the caller's memory: the compat entry leaves it */
	live.port_cap_flags2 = 0xbeef;
	CHECK(cmp("flags", &rec, sizeof(rec), &live, sizeof(live), &res), "same head, other tail: equal (%s)", res.why);
	CHECK(!cmp(NULL, &rec, sizeof(rec), &live, sizeof(live), &res) &&
		      !strcmp(res.why, "out port_attr.port_cap_flags2: recorded 4660, replayed 48879"),
	      "every member: the tail differs (%s)", res.why);

	/* a recording with more bytes after the members (a longer struct) */
	memset(longer, 0xee, sizeof(longer));
	memcpy(longer, &rec, sizeof(rec));
	CHECK(cmp("flags", longer, sizeof(longer), &live, sizeof(live), &res), "longer recording: equal (%s)", res.why);

	live.lid = 2;
	CHECK(!cmp("flags", &rec, sizeof(rec), &live, sizeof(live), &res) &&
		      !strcmp(res.why, "out port_attr.lid: recorded 1, replayed 2"),
	      "lid differs: named with both values (%s)", res.why);
	live.lid = 1;
	live.flags = 1;
	CHECK(!cmp("flags", &rec, sizeof(rec), &live, sizeof(live), &res) &&
		      !strcmp(res.why, "out port_attr.flags: recorded 0, replayed 1"),
	      "the last member compared is flags (%s)", res.why);
	live.flags = 0;

	CHECK(!cmp("flags", &rec, 20, &live, sizeof(live), &res) &&
		      strstr(res.why, "out port_attr.max_msg_sz: bytes 20..23, but the recording holds 20"),
	      "short recording (%s)", res.why);
	live.port_cap_flags2 = rec.port_cap_flags2;  /* all members equal: the name is missed at the end */
	CHECK(!cmp("nosuch", &rec, sizeof(rec), &live, sizeof(live), &res) && strstr(res.why, "no member nosuch"),
	      "unknown last member (%s)", res.why);
	CHECK(!nrr_rcuda_cmp_members("ibv_query_port", "context", NULL, (const uint8_t *)&rec, sizeof(rec),
				     (const uint8_t *)&live, sizeof(live), &res) &&
		      strstr(res.why, "no member layout"),
	      "a parameter without a layout (%s)", res.why);

	/* NVML's legacy nvmlPciInfo_v1_t (52 bytes) of the un-suffixed
	 * nvmlDeviceGetNvLinkRemotePciInfo, recorded as 68 by a tracer that
	 * took it for nvmlPciInfo_t: the 16 bytes after it are the caller's
	 * memory and not compared (rcuda.c check_out), a member is */
	uint8_t rec68[68], live68[68];
	nvmlPciInfo_v1_t pci;
	memset(&pci, 0, sizeof(pci));
	snprintf(pci.busId, sizeof(pci.busId), "0000:ff:00.0");
	memset(rec68, 0xa5, sizeof(rec68));
	memcpy(rec68, &pci, sizeof(pci));
	memset(live68, 0, sizeof(live68));
	memcpy(live68, &pci, sizeof(pci));
	memset(&res, 0, sizeof(res));
	CHECK(nrr_rcuda_cmp_members("nvmlDeviceGetNvLinkRemotePciInfo", "pci", NULL, rec68, sizeof(rec68), live68,
				    sizeof(pci), &res),
	      "legacy nvmlPciInfo recorded as 68 bytes (%s)", res.why);
	live68[offsetof(nvmlPciInfo_v1_t, domain)] = 1;
	CHECK(!nrr_rcuda_cmp_members("nvmlDeviceGetNvLinkRemotePciInfo", "pci", NULL, rec68, sizeof(rec68), live68,
				     sizeof(pci), &res) &&
		      strstr(res.why, "out pci.domain: recorded 0, replayed 1"),
	      "legacy nvmlPciInfo: a differing member (%s)", res.why);
	return check_done("rcuda_members");
}
