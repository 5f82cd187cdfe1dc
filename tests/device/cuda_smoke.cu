// SPDX-License-Identifier: MIT
// cuda_smoke - a real CUDA program for the device check (tests/device/run.sh):
// the runtime and driver calls NCCL makes at init, on a real GPU, printing
// only results that do not depend on timing, so that its output traced and
// untraced can be compared byte for byte.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#define RT(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorName(e_)); return 1; } } while (0)
#define DRV(x) do { CUresult e_ = (x); if (e_ != CUDA_SUCCESS) { const char *n_ = "?"; cuGetErrorName(e_, &n_); printf("%s: %s\n", #x, n_); return 1; } } while (0)

__global__ void fill(int *p, int n, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = v + i;
}

int main(void)
{
	int ndev = 0, drv = 0, rtv = 0;
	RT(cudaGetDeviceCount(&ndev));
	RT(cudaDriverGetVersion(&drv));
	RT(cudaRuntimeGetVersion(&rtv));
	printf("devices %d (driver >= runtime: %d)\n", ndev, drv >= rtv);
	RT(cudaSetDevice(0));
	cudaDeviceProp prop;
	RT(cudaGetDeviceProperties(&prop, 0));
	printf("sm %d.%d\n", prop.major, prop.minor);
	// the path of a statically linked runtime: entry points from cuGetProcAddress
	CUresult (*attr)(int *, CUdevice_attribute, CUdevice) = NULL;
	CUdriverProcAddressQueryResult q;
	DRV(cuGetProcAddress("cuDeviceGetAttribute", (void **)&attr, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &q));
	int sms = 0;
	DRV(attr(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
	printf("multiprocessors match: %d\n", sms == prop.multiProcessorCount);
	// memory, a kernel, a copy back
	const int n = 1 << 20;
	int *d = NULL;
	RT(cudaMalloc(&d, n * sizeof(int)));
	cudaStream_t s;
	RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	fill<<<(n + 255) / 256, 256, 0, s>>>(d, n, 7);
	RT(cudaGetLastError());
	static int h[1 << 20];
	RT(cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost, s));
	cudaEvent_t ev;
	RT(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	RT(cudaEventRecord(ev, s));
	RT(cudaEventSynchronize(ev));
	long long sum = 0;
	for (int i = 0; i < n; i++)
		sum += h[i];
	printf("kernel sum %lld\n", sum);
	// legacy IPC: a handle for the buffer (NCCL's P2P/IPC path)
	cudaIpcMemHandle_t ih;
	cudaError_t ie = cudaIpcGetMemHandle(&ih, d);
	printf("cudaIpcGetMemHandle: %s\n", cudaGetErrorName(ie));
	// cuMem: a physical allocation exported as a POSIX fd (NCCL's cuMem path)
	CUmemAllocationProp mp;
	memset(&mp, 0, sizeof(mp));
	mp.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	mp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	mp.location.id = 0;
	mp.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	size_t gran = 0;
	DRV(cuMemGetAllocationGranularity(&gran, &mp, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CUmemGenericAllocationHandle mh;
	DRV(cuMemCreate(&mh, gran, &mp, 0));
	CUdeviceptr va;
	DRV(cuMemAddressReserve(&va, gran, gran, 0, 0));
	DRV(cuMemMap(va, gran, 0, mh, 0));
	CUmemAccessDesc ad;
	memset(&ad, 0, sizeof(ad));
	ad.location = mp.location;
	ad.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	DRV(cuMemSetAccess(va, gran, &ad, 1));
	int fd = -1;
	CUresult xe = cuMemExportToShareableHandle(&fd, mh, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
	const char *xn = "?";
	cuGetErrorName(xe, &xn);
	printf("cuMemExportToShareableHandle: %s%s\n", xn, xe == CUDA_SUCCESS && fd >= 0 ? " (fd)" : "");
	DRV(cuMemUnmap(va, gran));
	DRV(cuMemAddressFree(va, gran));
	DRV(cuMemRelease(mh));
	// an error the program expects: a bad device
	cudaError_t be = cudaSetDevice(ndev + 5);
	printf("cudaSetDevice(bad): %s\n", cudaGetErrorName(be));
	RT(cudaEventDestroy(ev));
	RT(cudaStreamDestroy(s));
	RT(cudaFree(d));
	printf("ok\n");
	return 0;
}
