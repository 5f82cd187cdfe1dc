/* SPDX-License-Identifier: MIT */
/* fuzz_msghdr.c - the recorded sendmsg/recvmsg field (custom:msghdr),
 * sendmmsg/recvmmsg field (custom:mmsghdr) and verbs posts' work requests
 * (custom:send_wr / recv_wr) that `dump`, the Chrome export, diff and the
 * replayer decode: any bytes either decode to pieces that lie inside the
 * input and the bounds, or are refused. */
#include <stdlib.h>

#include "callfmt.h"
#include "driver.h"

static int inside(const uint8_t *p, size_t n, const uint8_t *lo, size_t size)
{
	return !n || (p && p >= lo && p + n <= lo + size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nrr_value v = { .p = data, .len = (uint32_t)size, .total = (uint32_t)size };
	nrr_mmsg_rec mm[NRR_MMSG_MAX];
	int n = nrr_mmsg_decode(&v, mm, NRR_MMSG_MAX);
	if (n < 0 && n != NRR_ETRUNC && n != NRR_ECORRUPT)
		abort();
	for (int i = 0; i < n; i++)
		if (mm[i].head_len > 32 || !inside(mm[i].head, mm[i].head_len, data, size) ||
		    !inside(mm[i].name, mm[i].name_len, data, size))
			abort();
	for (int send = 0; send < 2; send++) {
		nrr_wr_rec w[NRR_ENTRIES_MAX];
		enum nrr_sges sges;
		int nw = nrr_wr_decode(&v, send, w, &sges);
		if (nw < 0 ? nw != NRR_ETRUNC && nw != NRR_ECORRUPT :
			     nw > NRR_ENTRIES_MAX || (sges == NRR_SGES_KEPT && !nw) || sges > NRR_SGES_CUT ||
				     !*nrr_sges_why(sges) != (sges == NRR_SGES_KEPT))
			abort();
		for (int i = 0; i < nw; i++)
			if (w[i].nsge > NRR_SGE_MAX || (sges != NRR_SGES_KEPT && w[i].nsge))
				abort();
	}
	nrr_msghdr_rec m;
	int rc = nrr_msghdr_decode(&v, &m);
	if (rc != 0 && rc != NRR_ETRUNC && rc != NRR_ECORRUPT)
		abort();
	if (rc)
		return 0;
	if (m.nfd > 16 || m.head_len > 64 || !inside(m.head, m.head_len, data, size) ||
	    !inside(m.name, m.name_len, data, size) || (m.name_len && !m.has_name))
		abort();
	return 0;
}
