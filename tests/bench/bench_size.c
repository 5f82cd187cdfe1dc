/* SPDX-License-Identifier: MIT */
/*
 * bench_size.c - compressed bytes per event on a realistic NCCL-init-like
 * mix, written through the generated encoders (the built-in schema, i.e.
 * the bytes the tracer writes), with real timestamps (busy-waited gaps of
 * realistic length between and inside calls) and several threads:
 *   main thread:      ncclCommInitRank nesting driver calls: a few hundred
 *                     cuDeviceGetAttribute with varied ids, cuMem
 *                     Create/AddressReserve/Map/SetAccess/Export per peer
 *                     buffer, cudaMalloc, cuStreamQuery NOT_READY runs,
 *                     kernel launches, log lines;
 *   bootstrap thread: socket/setsockopt/connect/send/recv with 8-64 byte
 *                     payloads and varied sockaddrs;
 *   proxy thread:     ibv_post_send and long ibv_poll_cq = 0 runs
 *                     (coalesced) ending in a completion.
 * For zstd levels -5/-3/-1/1/3/6/9/19 and chunk sizes 64K..1M prints bytes per
 * call, per event (enter and leave = 2 events per call, logs 1) and per
 * record written after coalescing, and the compression ratio.
 * Target: <= 6 bytes/event.  Exits 0 unless a file cannot be written/read.
 *
 * usage: bench_size [INITS]   (communicator inits per run, default 16)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "ncclrr_config.h"
#if NCCLRR_HAVE_VERBS
#include <infiniband/verbs.h>
#endif
#include "nrr_api_gen.h"
#include "nrt_internal.h"
#include "bench_common.h"

static char dir[256];
static int inits = 16;

/* Busy-wait @ns: real time passes between and inside calls, as in a real
 * init (sleeping would give gaps of scheduler granularity instead). */
static void spin_ns(uint64_t ns)
{
	double end = bench_now() + (double)ns / 1e9;
	while (bench_now() < end)
		;
}

/* a gap of typically 0.2-3 us, sometimes 20-200 us */
static void gap(uint64_t *rs)
{
	uint64_t r = bench_rand(rs);
	spin_ns((r & 63) == 0 ? 20000 + r % 180000 : 200 + r % 2800);
}

struct mix_count {
	uint64_t calls, logs;
};

struct thr {
	nrr_writer *w;
	int rank, role;
	struct mix_count c;
};

#define CALL(c, enter, leave) do { enter; spin_ns(100 + bench_rand(&rs) % 900); leave; (c)->calls++; gap(&rs); } while (0)

static void main_thread(nrr_tls *t, int rank, struct mix_count *c)
{
	uint64_t rs = 0x9e3779b97f4a7c15ull ^ (uint64_t)rank;
	char log[160];
	int dev = rank % 8;
	for (int it = 0; it < inits; it++) {
		ncclUniqueId id;
		for (size_t i = 0; i < sizeof(id.internal); i++)
			id.internal[i] = (char)(i < 16 ? bench_rand(&rs) : 0);
		ncclComm_t comm = (ncclComm_t)(uintptr_t)(0x55d0a2f31000ull + (uint64_t)it * 0x41000);
		nrr_rec_ncclCommInitRank_enter(t, &comm, 16, id, rank);
		c->calls++;
		gap(&rs);
		int n = snprintf(log, sizeof(log), "host%d:%d:%d [%d] NCCL INFO cudaDriverVersion 12080", rank / 8, 4242 + rank, 4250 + rank, dev);
		nrr_log(t, 3, log, (size_t)n);
		c->logs++;
		/* device attributes: NCCL and cudart query a few hundred */
		for (int a = 0; a < 300; a++) {
			int attr = 1 + (int)((a * 37 + it) % 130);
			int v = attr == 16 ? 132 : attr == 75 ? 9 : attr == 76 ? 0 : (int)(bench_rand(&rs) % 2048);
			int d = a < 200 ? dev : a % 8;
			CALL(c, nrr_rec_cuDeviceGetAttribute_enter(t, &v, attr, d),
			     nrr_rec_cuDeviceGetAttribute_leave(t, 0, 0, &v, attr, d));
		}
		/* per peer: cuMem buffers, exported for the peer's import */
		uint64_t va = 0x7f3a40000000ull + ((uint64_t)it << 32);
		for (int peer = 0; peer < 16; peer++) {
			if (peer == rank % 16)
				continue;
			size_t gran = 2097152;
			CUmemAllocationProp propv;
			memset(&propv, 0, sizeof(propv));
			propv.type = 1;                  /* PINNED */
			propv.requestedHandleTypes = 1;  /* POSIX_FD */
			propv.location.type = 1;         /* DEVICE */
			propv.location.id = dev;
			propv.allocFlags.gpuDirectRDMACapable = 1;
			const CUmemAllocationProp *prop = &propv;
			CALL(c, nrr_rec_cuMemGetAllocationGranularity_enter(t, &gran, prop, 0),
			     nrr_rec_cuMemGetAllocationGranularity_leave(t, 0, 0, &gran, prop, 0));
			for (int k = 0; k < 2; k++) {
				size_t sz = k ? 4194304 : (size_t)(1 + bench_rand(&rs) % 4) * 2097152;
				CUmemGenericAllocationHandle h = 0x56000001f000ull + (bench_rand(&rs) & 0xfff0);
				CUdeviceptr ptr = va;
				va += sz;
				CALL(c, nrr_rec_cuMemCreate_enter(t, &h, sz, prop, 0),
				     nrr_rec_cuMemCreate_leave(t, 0, 0, &h, sz, prop, 0));
				CALL(c, nrr_rec_cuMemAddressReserve_enter(t, &ptr, sz, gran, 0, 0),
				     nrr_rec_cuMemAddressReserve_leave(t, 0, 0, &ptr, sz, gran, 0, 0));
				CALL(c, nrr_rec_cuMemMap_enter(t, ptr, sz, 0, h, 0),
				     nrr_rec_cuMemMap_leave(t, 0, 0, ptr, sz, 0, h, 0));
				CUmemAccessDesc descv;
				memset(&descv, 0, sizeof(descv));
				descv.location.type = 1;
				descv.location.id = dev;
				descv.flags = 3;   /* READWRITE */
				const CUmemAccessDesc *desc = &descv;
				CALL(c, nrr_rec_cuMemSetAccess_enter(t, ptr, sz, desc, 1),
				     nrr_rec_cuMemSetAccess_leave(t, 0, 0, ptr, sz, desc, 1));
				int fd = 40 + (int)(bench_rand(&rs) % 200);
				CALL(c, nrr_rec_cuMemExportToShareableHandle_enter(t, &fd, h, 1, 0),
				     nrr_rec_cuMemExportToShareableHandle_leave(t, 0, 0, &fd, h, 1, 0));
			}
			void *dp = (void *)(uintptr_t)(0x7f3a00000000ull + (bench_rand(&rs) & 0xffffff000ull));
			size_t msz = 4096u << (bench_rand(&rs) % 8);
			CALL(c, nrr_rec_cudaMalloc_enter(t, &dp, msz), nrr_rec_cudaMalloc_leave(t, 0, 0, &dp, msz));
			n = snprintf(log, sizeof(log), "host%d:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via P2P/CUMEM",
				     rank / 8, 4242 + rank, 4250 + rank, dev, peer % 4, rank, dev, peer, peer % 8);
			nrr_log(t, 3, log, (size_t)n);
			c->logs++;
		}
		/* kernel launches and stream synchronisation by polling */
		CUstream s = (CUstream)(uintptr_t)(0x5611aa000010ull + (uint64_t)it * 0x100);
		for (int k = 0; k < 8; k++) {
			CUfunction f = (CUfunction)(uintptr_t)(0x5611ab003000ull + (uint64_t)(k % 3) * 0x80);
			CALL(c, nrr_rec_cuLaunchKernel_enter(t, f, 16, 1, 1, 640, 1, 1, 0, s, NULL, NULL),
			     nrr_rec_cuLaunchKernel_leave(t, 0, 0, f, 16, 1, 1, 640, 1, 1, 0, s, NULL, NULL));
			int runs = 10 + (int)(bench_rand(&rs) % 200);
			for (int q = 0; q <= runs; q++) {
				CUresult r = q < runs ? 600 : 0;
				nrr_rec_cuStreamQuery_enter(t, s);
				spin_ns(50);
				nrr_rec_cuStreamQuery_leave(t, r, 0, s);
				c->calls++;
				spin_ns(100 + bench_rand(&rs) % 200);
			}
		}
		nrr_rec_ncclCommInitRank_leave(t, 0, 0, &comm, 16, id, rank);
		n = snprintf(log, sizeof(log), "host%d:%d:%d [%d] NCCL INFO comm %p rank %d nranks 16 cudaDev %d busId %d000 - Init COMPLETE",
			     rank / 8, 4242 + rank, 4250 + rank, dev, (void *)comm, rank, dev, 0x18 + dev * 0x10);
		nrr_log(t, 3, log, (size_t)n);
		c->logs++;
		gap(&rs);
	}
}

static void bootstrap_thread(nrr_tls *t, int rank, struct mix_count *c)
{
	uint64_t rs = 0x1234567ull ^ (uint64_t)rank << 8;
	uint8_t msg[64];
	for (int it = 0; it < inits; it++) {
		for (int peer = 0; peer < 16; peer++) {
			int fd = 60 + peer + it * 17;
			struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)(40000 + bench_rand(&rs) % 20000)) };
			sa.sin6_addr.s6_addr[0] = 0xfd;
			sa.sin6_addr.s6_addr[15] = (uint8_t)(peer / 8 + 1);
			CALL(c, nrr_rec_socket_enter(t, AF_INET6, 1, 0), nrr_rec_socket_leave(t, fd, 0, AF_INET6, 1, 0));
			int one = 1;
			CALL(c, nrr_rec_setsockopt_enter(t, fd, 6, 1, &one, sizeof(one)),
			     nrr_rec_setsockopt_leave(t, 0, 0, fd, 6, 1, &one, sizeof(one)));
			CALL(c, nrr_rec_connect_enter(t, fd, (struct sockaddr *)&sa, sizeof(sa)),
			     nrr_rec_connect_leave(t, 0, 0, fd, (struct sockaddr *)&sa, sizeof(sa)));
			for (int m = 0; m < 4; m++) {
				size_t len = 8 + bench_rand(&rs) % 57;
				for (size_t i = 0; i < len; i++)   /* magic, ranks, sizes, addresses */
					msg[i] = i < 8 ? (uint8_t)(0xa5 ^ i) : i < 16 ? (uint8_t)(rank + i) : (uint8_t)bench_rand(&rs);
				CALL(c, nrr_rec_send_enter(t, fd, msg, len, 0),
				     nrr_rec_send_leave(t, (ssize_t)len, 0, fd, msg, len, 0));
				size_t rl = 8 + bench_rand(&rs) % 57;
				for (size_t i = 0; i < rl; i++)
					msg[i] = i < 8 ? (uint8_t)(0xa5 ^ i) : (uint8_t)bench_rand(&rs);
				nrr_rec_recv_enter(t, fd, msg, 64, 0);
				spin_ns(2000 + bench_rand(&rs) % 30000);   /* waiting for the peer */
				nrr_rec_recv_leave(t, (ssize_t)rl, 0, fd, msg, 64, 0);
				c->calls++;
				gap(&rs);
			}
		}
	}
}

static void proxy_thread(nrr_tls *t, int rank, struct mix_count *c)
{
	uint64_t rs = 0xfeedbeefull ^ (uint64_t)rank;
	for (int it = 0; it < inits; it++) {
		for (int peer = 0; peer < 16; peer++) {
			struct ibv_qp *qp = (struct ibv_qp *)(uintptr_t)(0x5612c0a01000ull + (uint64_t)peer * 0x200);
			struct ibv_cq *cq = (struct ibv_cq *)(uintptr_t)(0x5612c0900000ull + (uint64_t)it * 0x100);
#if NCCLRR_HAVE_VERBS
			for (int op = 0; op < 4; op++) {
				struct ibv_sge sge = { .addr = 0x7f3a40000000ull + (bench_rand(&rs) & 0xfffff000), .length = 4096u << (op & 3), .lkey = 0x1234 + peer };
				struct ibv_send_wr wr = { .wr_id = (uint64_t)(it * 1000 + peer * 10 + op), .sg_list = &sge, .num_sge = 1,
							  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED };
				wr.imm_data = htonl((uint32_t)op);
				wr.wr.rdma.remote_addr = 0x7f1b80000000ull + (bench_rand(&rs) & 0xfffff000);
				wr.wr.rdma.rkey = 0x5678 + peer;
				struct ibv_send_wr *bad = NULL;
				CALL(c, nrr_rec_ibv_post_send_enter(t, qp, &wr, &bad), nrr_rec_ibv_post_send_leave(t, 0, 0, qp, &wr, &bad));
				struct ibv_wc wc[4];
				memset(wc, 0, sizeof(wc));
				int runs = 50 + (int)(bench_rand(&rs) % 1000);
				for (int q = 0; q <= runs; q++) {
					int got = q < runs ? 0 : 1;
					if (got) {
						wc[0].wr_id = wr.wr_id;
						wc[0].status = IBV_WC_SUCCESS;
						wc[0].opcode = IBV_WC_RDMA_WRITE;
						wc[0].byte_len = sge.length;
						wc[0].qp_num = 0x1a3 + (uint32_t)peer;
					}
					nrr_rec_ibv_poll_cq_enter(t, cq, 4, wc);
					nrr_rec_ibv_poll_cq_leave(t, got, 0, cq, 4, wc);
					c->calls++;
					spin_ns(30 + bench_rand(&rs) % 60);
				}
			}
#else
			(void)qp;
			for (int op = 0; op < 4; op++) {   /* no verbs headers: wr/wc not encoded */
				int runs = 50 + (int)(bench_rand(&rs) % 1000);
				for (int q = 0; q <= runs; q++) {
					int got = q < runs ? 0 : 1;
					nrr_rec_ibv_poll_cq_enter(t, cq, 4, NULL);
					nrr_rec_ibv_poll_cq_leave(t, got, 0, cq, 4, NULL);
					c->calls++;
					spin_ns(30 + bench_rand(&rs) % 60);
				}
			}
#endif
		}
	}
}

static void *thr_main(void *arg)
{
	struct thr *a = arg;
	nrr_tls *t = nrr_writer_thread(a->w);
	if (!t) {
		fprintf(stderr, "Cannot register a writer thread\n");
		exit(1);
	}
	switch (a->role) {
	case 0: main_thread(t, a->rank, &a->c); break;
	case 1: bootstrap_thread(t, a->rank, &a->c); break;
	default: proxy_thread(t, a->rank, &a->c); break;
	}
	nrr_tls_flush(t);
	return NULL;
}

struct size_result {
	uint64_t file, data_z, data_raw, calls, logs, records;
};

/* Sum the DATA chunks of @path (header + payload) by walking the chunk
 * headers (FORMAT.md). */
static void scan_chunks(const char *path, struct size_result *r)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "Cannot open the trace: file=%s\n", path);
		exit(1);
	}
	uint8_t h[NRR_CHUNK_HEADER_SIZE];
	long off = NRR_FILE_HEADER_SIZE;
	while (fseek(f, off, SEEK_SET) == 0 && fread(h, 1, sizeof(h), f) == sizeof(h)) {
		nrr_chunk_header ch;
		if (nrr_chunk_header_unpack(h, &ch))
			break;   /* the trailer */
		if (ch.type == NRR_CHUNK_DATA) {
			r->data_z += NRR_CHUNK_HEADER_SIZE + ch.payload_size;
			r->data_raw += ch.raw_size;
		}
		off += NRR_CHUNK_HEADER_SIZE + (long)ch.payload_size;
	}
	fclose(f);
}

static struct size_result run_mix(int level, size_t chunk, int nranks)
{
	static int serial;
	char path[512];
	snprintf(path, sizeof(path), "%s/mix%d.nrt", dir, serial++);
	nrr_writer *w;
	nrr_writer_opts o = { .schema = nrr_builtin_schema, .schema_len = nrr_builtin_schema_len,
			      .zstd_level = level, .chunk_size = chunk };
	int rc = nrr_writer_open(&w, path, &o);
	if (rc) {
		fprintf(stderr, "Cannot open the trace: file=%s: %s\n", path, nrr_strerror(rc));
		exit(1);
	}
	struct size_result r = { 0 };
	/* ranks one after another (a process per rank in reality; here the
	 * ranks' streams share one file), three threads each */
	for (int rank = 0; rank < nranks; rank++) {
		struct thr a[3];
		pthread_t th[3];
		for (int i = 0; i < 3; i++) {
			a[i] = (struct thr){ .w = w, .rank = rank, .role = i };
			pthread_create(&th[i], NULL, thr_main, &a[i]);
		}
		for (int i = 0; i < 3; i++) {
			pthread_join(th[i], NULL);
			r.calls += a[i].c.calls;
			r.logs += a[i].c.logs;
		}
	}
	rc = nrr_writer_close(w);
	if (rc) {
		fprintf(stderr, "Cannot write the trace: file=%s: %s\n", path, nrr_strerror(rc));
		exit(1);
	}
	nrr_reader *rd;
	nrr_diag d;
	if ((rc = nrr_reader_open(&rd, path, &d))) {
		char buf[1200];
		nrr_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "%s\n", buf);
		exit(1);
	}
	for (uint32_t s = 0; s < nrr_reader_info(rd)->nstreams; s++)
		r.records += nrr_reader_stream(rd, s)->records;
	nrr_reader_close(rd);
	struct stat sb;
	stat(path, &sb);
	r.file = (uint64_t)sb.st_size;
	scan_chunks(path, &r);
	unlink(path);
	return r;
}

int main(int argc, char **argv)
{
	int nranks = 1;
	if (argc > 1)
		inits = atoi(argv[1]) > 0 ? atoi(argv[1]) : 16;
	bench_tmpdir(dir, sizeof(dir), "bench-size");
	printf("== bench_size: compressed bytes per event, NCCL-init-like mix\n");
	printf("   %d ranks x 3 threads (main: InitRank nesting attributes/cuMem/cudaMalloc/launch/StreamQuery runs/logs;\n"
	       "   bootstrap: socket/connect/send/recv; proxy: post_send + poll_cq runs), %d inits each, real time gaps\n",
	       nranks, inits);
	printf("   event = an enter or a leave of a recorded call (2 per call, polling included) or a log line;\n"
	       "   record = what is written after coalescing; bytes = DATA chunks (header + zstd payload),\n"
	       "   file = the whole file (schema of 322 functions, meta, index: fixed per file)\n\n");
	static const int levels[] = { -5, -3, -1, 1, 3, 6, 9, 19 };
	static const size_t chunks[] = { 65536, 131072, 262144, 1048576 };
	printf("  %5s %6s %10s %10s %9s %9s | %9s %9s %9s %7s | %10s\n", "zstd", "chunk", "calls", "records", "raw B",
	       "data B", "B/call", "B/event", "B/record", "ratio", "file B/ev");
	double def_bev = 0;
	for (size_t li = 0; li < sizeof(levels) / sizeof(levels[0]); li++) {
		for (size_t ci = 0; ci < sizeof(chunks) / sizeof(chunks[0]); ci++) {
			struct size_result r = run_mix(levels[li], chunks[ci], nranks);
			double events = 2.0 * (double)r.calls + (double)r.logs;
			double bev = (double)r.data_z / events;
			bool def = levels[li] == 1 && chunks[ci] == 131072;
			if (def)
				def_bev = bev;
			printf("  %5d %5zuK %10llu %10llu %9llu %9llu | %9.3f %9.3f %9.3f %7.1f | %10.3f%s\n",
			       levels[li], chunks[ci] / 1024, (unsigned long long)r.calls, (unsigned long long)r.records,
			       (unsigned long long)r.data_raw, (unsigned long long)r.data_z,
			       (double)r.data_z / (double)r.calls, bev, (double)r.data_z / (double)r.records,
			       (double)r.data_raw / (double)r.data_z, (double)r.file / events, def ? "  <- default" : "");
			fflush(stdout);
		}
	}
	printf("\nbytes/event (default: zstd 1, 128K chunks) = %.3f (target <= 6)\n", def_bev);
	bench_rmdir(dir);
	return 0;
}
