/* SPDX-License-Identifier: MIT */
/*
 * test_redact.c - the tracer's redaction (tracer/redact.c) over a table of
 * secrets and of values that are not: each secret leaves no trace of
 * itself in the output, each non-secret comes out as it went in.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "redact.h"

struct row {
	const char *name, *value;
	const char *want;     /* expected output */
	const char *secret;   /* must not appear in the output (NULL: nothing redacted) */
};

static const struct row env[] = {
	/* by name */
	{ "HF_TOKEN", "abc", "<redacted>", "abc" },
	{ "NCCL_IB_PASSWORD", "hunter2", "<redacted>", "hunter2" },
	{ "MY_SECRET", "x", "<redacted>", "x" },
	{ "AWS_SECRET_ACCESS_KEY", "k", "<redacted>", "k" },
	{ "NCCL_AUTH", "yes", "<redacted>", "yes" },
	{ "BASIC_AUTH", "u:p", "<redacted>", "u:p" },
	{ "DB_PASS", "pw", "<redacted>", "pw" },
	/* credentials in the value, with and without a scheme */
	{ "NCCL_PROXY_DSN", "admin:s3cret@db", "admin:<redacted>@db", "s3cret" },
	{ "MASTER_ADDR", "user:pw@host", "user:<redacted>@host", ":pw" },
	{ "UCX_URL", "postgres://bob:Sup3r@db.example:5432/x", "postgres://bob:<redacted>@db.example:5432/x", "Sup3r" },
	/* tokens by their look */
	{ "NCCL_X", "hf_AbCdEfGh12345678", "<redacted>", "hf_AbCd" },
	{ "CUDA_X", "ghp_0123456789abcdef", "<redacted>", "ghp_0123" },
	{ "NCCL_Y", "a,xoxb-12345678-abcdefgh", "a,<redacted>", "xoxb" },
	{ "NCCL_Z", "AKIAIOSFODNN7EXAMPLE", "<redacted>", "AKIAIOSF" },
	{ "NCCL_K", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5", "<redacted>", "Zm9v" },
	/* not secrets */
	{ "NCCL_AUTHX", "1", "1", NULL },
	{ "NCCL_SOCKET_IFNAME", "eth0,ib0", "eth0,ib0", NULL },
	{ "NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1", "mlx5_0:1,mlx5_1:1", NULL },
	{ "NCCL_COMM_ID", "10.1.2.3:29500", "10.1.2.3:29500", NULL },
	{ "NCCL_DEBUG_FILE", "/tmp/nccl.%h.%p", "/tmp/nccl.%h.%p", NULL },
	{ "CUDA_VISIBLE_DEVICES", "GPU-8b2c1a3e-5f4d-4c2b-9a1e-0d3c2b1a0f9e",
	  "GPU-8b2c1a3e-5f4d-4c2b-9a1e-0d3c2b1a0f9e", NULL },
	{ "NCCL_ALGO", "Ring", "Ring", NULL },
	{ "NCCL_MAIL", "ops@example.com", "ops@example.com", NULL },
	{ "NCCL_IB_PKEY", "0x8001", "0x8001", NULL },
	{ "NCCL_TOPO_FILE", "/opt/topo/ndv5-topo.xml", "/opt/topo/ndv5-topo.xml", NULL },
	{ "NCCL_X", "sk-short", "sk-short", NULL },
};

static const struct row argv[] = {
	{ NULL, "train --password=hunter2 --lr 0.1", "train --password=<redacted> --lr 0.1", "hunter2" },
	{ NULL, "train --token abcdef --lr 0.1", "train --token <redacted> --lr 0.1", "abcdef" },
	{ NULL, "env API_KEY=k123 ./prog", "env API_KEY=<redacted> ./prog", "k123" },
	{ NULL, "prog --db postgres://u:pw1@h/x", "prog --db postgres://u:<redacted>@h/x", "pw1" },
	{ NULL, "prog --dsn=admin:s3cret@db", "prog --dsn=admin:<redacted>@db", "s3cret" },
	{ NULL, "prog hf_AbCdEfGh12345678", "prog <redacted>", "hf_AbCd" },
	{ NULL, "prog --auth basic", "prog --auth <redacted>", "basic" },
	/* not secrets */
	{ NULL, "mpirun -np 8 ./tp_dp --steps 10", "mpirun -np 8 ./tp_dp --steps 10", NULL },
	{ NULL, "ncclrr run --topo topo/2node_16gpu.xml -- ./tp_dp", "ncclrr run --topo topo/2node_16gpu.xml -- ./tp_dp",
	  NULL },
	{ NULL, "prog --token-file /run/t --authx 1", "prog --token-file /run/t --authx 1", NULL },
	{ NULL, "prog --password", "prog --password", NULL },
};

int main(void)
{
	char out[512];
	for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++) {
		const struct row *r = &env[i];
		bool red = nrr_redact_value(r->name, strlen(r->name), r->value, out, sizeof(out));
		CHECK(!strcmp(out, r->want), "%s=%s: got '%s', want '%s'", r->name, r->value, out, r->want);
		CHECK(red == (r->secret != NULL), "%s=%s: redacted %d", r->name, r->value, red);
		CHECK(!r->secret || !strstr(out, r->secret), "%s: '%s' left in '%s'", r->name, r->secret, out);
	}
	for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++) {
		const struct row *r = &argv[i];
		bool red = nrr_redact_cmdline(r->value, out, sizeof(out));
		CHECK(!strcmp(out, r->want), "argv '%s': got '%s', want '%s'", r->value, out, r->want);
		CHECK(red == (r->secret != NULL), "argv '%s': redacted %d", r->value, red);
		CHECK(!r->secret || !strstr(out, r->secret), "argv: '%s' left in '%s'", r->secret, out);
	}
	/* a value longer than the output is cut, never overrun */
	char small[8];
	nrr_redact_value("NCCL_X", 6, "abcdefghijklmnop", small, sizeof(small));
	CHECK(strlen(small) == 7, "cut to the buffer: '%s'", small);
	return check_done("redact");
}
