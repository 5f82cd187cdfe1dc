/* SPDX-License-Identifier: MIT */
/* cudart_errors.c - cudaError_t names (from the API description, generated)
 * and messages, cudaGetErrorName / cudaGetErrorString, and the fault
 * switch's view of the runtime (which rules are ours, error names). */
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"
#include "cudart_types.h"
#include "nrr_cudart_errors_gen.h"

CUresult cuGetErrorString(CUresult e, const char **s);

/* The codes the runtime has and the driver does not (below 100) with the
 * runtime's message; every other code reads as the driver's message. */
static const struct {
	int code;
	const char *msg;
} own_msgs[] = {
	{ 0, "no error" },
	{ 1, "invalid argument" },
	{ 2, "out of memory" },
	{ 3, "initialization error" },
	{ 4, "driver shutting down" },
	{ 9, "invalid configuration argument" },
	{ 12, "invalid pitch argument" },
	{ 13, "invalid device symbol" },
	{ 16, "invalid host pointer" },
	{ 17, "invalid device pointer" },
	{ 18, "invalid texture reference" },
	{ 21, "invalid copy direction for memcpy" },
	{ 25, "incorrect use of __syncthreads()" },
	{ 34, "CUDA driver is a stub library" },
	{ 35, "CUDA driver version is insufficient for CUDA runtime version" },
	{ 36, "API call requires a newer driver" },
	{ 46, "CUDA-capable device(s) is/are busy or unavailable" },
	{ 52, "__global__ function call is not configured" },
	{ 98, "invalid device function" },
	{ 201, "invalid device context" },
};

const char *cudart_error_name(int code)
{
	for (size_t i = 0; i < sizeof(nrr_cudart_errors) / sizeof(nrr_cudart_errors[0]); i++)
		if (nrr_cudart_errors[i].code == code)
			return nrr_cudart_errors[i].name;
	return NULL;
}

const char *cudart_error_string(int code)
{
	for (size_t i = 0; i < sizeof(own_msgs) / sizeof(own_msgs[0]); i++)
		if (own_msgs[i].code == code)
			return own_msgs[i].msg;
	const char *s = NULL;
	if (cudart_error_name(code) && cuGetErrorString(code, &s) == CUDA_SUCCESS && s)
		return s;
	return NULL;
}

FAKE_EXPORT const char *cudaGetErrorName(cudaError_t e)
{
	const char *n = cudart_error_name(e);
	return n ? n : "cudaErrorUnknown";
}

FAKE_EXPORT const char *cudaGetErrorString(cudaError_t e)
{
	const char *s = cudart_error_string(e);
	return s ? s : "unrecognized error code";
}

/* ---- the fault switch ------------------------------------------------ */
const char fake_lib_what[] = "the CUDA runtime (cudaError...)";

int fake_lib_owns(const char *api)
{
	return strncmp(api, "cuda", 4) == 0 || strncmp(api, "__cuda", 6) == 0;
}

int fake_lib_error_code(const char *name)
{
	for (size_t i = 0; i < sizeof(nrr_cudart_errors) / sizeof(nrr_cudart_errors[0]); i++)
		if (strcmp(nrr_cudart_errors[i].name, name) == 0)
			return nrr_cudart_errors[i].code;
	return -1;
}
