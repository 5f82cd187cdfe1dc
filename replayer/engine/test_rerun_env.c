/* SPDX-License-Identifier: MIT */
/*
 * test_rerun_env.c - which recorded variables `replay --rerun` gives back
 * (nrr_rerun_env_refused): a trace is data, never code.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "rerun.h"

int main(void)
{
	static const char *const given[] = {
		"NCCL_SOCKET_IFNAME=eth0", "NCCL_IB_HCA=mlx5_0:1,mlx5_1:1", "NCCL_ALGO=Ring", "NCCL_PROTO=^LL128",
		"NCCL_CUMEM_ENABLE=0", "NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,NET", "CUDA_VISIBLE_DEVICES=0,1",
		"CUDA_DEVICE_MAX_CONNECTIONS=1", "NVIDIA_VISIBLE_DEVICES=all", "UCX_TLS=rc,sm",
		"TORCH_NCCL_BLOCKING_WAIT=1", "NCCL_COMM_ID=10.0.0.1:29500", "NCCL_NET=Socket", "NCCL_EMPTY=", "CUDA_MODULE_LOADING=LAZY",
	};
	static const char *const refused[] = {
		/* loader and shell variables: not NCCL's, CUDA's, ... */
		"LD_AUDIT=/tmp/evil.so", "LD_PRELOAD=/tmp/evil.so", "LD_LIBRARY_PATH=/tmp", "PATH=/tmp:/usr/bin",
		"PYTHONPATH=/tmp", "BASH_ENV=/tmp/x.sh", "GCONV_PATH=/tmp", "HOME=/root",
		/* code to load */
		"NCCL_NET_PLUGIN=evil", "NCCL_TUNER_PLUGIN=libevil.so", "NCCL_PROFILER_PLUGIN=x",
		"NCCL_ENV_PLUGIN=none", "CUDA_INJECTION64_PATH=/tmp/evil.so", "UCX_MODULE_DIR=/tmp",
		"NCCL_DEBUG_FILE_PATH=x", "UCX_PROTO_DIR=x",
		/* files NCCL would read or write, libraries by value */
		"NCCL_DEBUG_FILE=/etc/passwd", "NCCL_GRAPH_DUMP_FILE=/root/.bashrc", "NCCL_GRAPH_FILE=../../g.xml",
		"NCCL_SOMETHING=libevil.so", "CUDA_X=a/b",
	};
	for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++) {
		const char *why = nrr_rerun_env_refused(given[i]);
		CHECK(!why, "%s refused: %s", given[i], why);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		CHECK(nrr_rerun_env_refused(refused[i]) != NULL, "%s given back", refused[i]);
	/* a name longer than any real one */
	char big[300];
	memset(big, 'A', sizeof(big) - 3);
	memcpy(big, "NCCL_", 5);
	memcpy(big + sizeof(big) - 3, "=1", 3);
	CHECK(nrr_rerun_env_refused(big) != NULL, "a 297-character name given back");
	return check_done("rerun_env");
}
