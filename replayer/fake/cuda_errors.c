/* SPDX-License-Identifier: MIT */
/* cuda_errors.c - CUresult codes, names and messages (the driver's numeric
 * values, as documented for the CUDA driver API; generated from
 * formats/api/cuda_driver.api), and cuGetErrorName / cuGetErrorString. */
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"
#include "nrr_fake_cuda_entry.h"

/* codes, names and messages: enum CUresult of formats/api/cuda_driver.api,
 * the same table the traces decode CUresult with (ncclrr_gen.py --emit
 * fake-cuda) */
#include "nrr_fake_cuda_errors.h"

#define NERRS (sizeof(nrr_cuda_errors) / sizeof(nrr_cuda_errors[0]))

const char fake_lib_what[] = "the CUDA driver (CUDA_ERROR_...)";

/* cu*, but not the runtime's cuda* nor NVML */
int fake_lib_owns(const char *api)
{
	return strncmp(api, "cu", 2) == 0 && strncmp(api, "cuda", 4) != 0;
}

int fake_lib_error_code(const char *name)
{
	for (size_t i = 0; i < NERRS; i++)
		if (strcmp(nrr_cuda_errors[i].name, name) == 0)
			return nrr_cuda_errors[i].code;
	return -1;
}

/* @return the index of @code in nrr_cuda_errors, or -1 */
static int find_code(int code)
{
	for (size_t i = 0; i < NERRS; i++)
		if (nrr_cuda_errors[i].code == code)
			return (int)i;
	return -1;
}

const char *fake_cuda_error_name(int code)
{
	int i = find_code(code);
	return i < 0 ? NULL : nrr_cuda_errors[i].name;
}

CUresult fake_cuGetErrorName(CUresult error, const char **pStr)
{
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	int i = find_code((int)error);
	*pStr = i < 0 ? NULL : nrr_cuda_errors[i].name;
	return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult fake_cuGetErrorString(CUresult error, const char **pStr)
{
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	int i = find_code((int)error);
	*pStr = i < 0 ? NULL : nrr_cuda_errors[i].msg;
	return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
