/* SPDX-License-Identifier: MIT */
/*
 * fake_nvml.h - the NVML types the fake NVML (nvml.c) and its generated
 * entry points (nrr_fake_nvml_entry.c, from formats/api/nvml.api) share,
 * written from the public NVML documentation (layouts are its ABI). Not
 * NVML's header: the fake builds without it.
 */
#ifndef NRR_FAKE_NVML_H
#define NRR_FAKE_NVML_H

#include "fake_common.h"

typedef int nvmlReturn_t;
/* handles point at the fake's own table of devices (nvml.c) */
typedef struct nvml_dev *nvmlDevice_t;
typedef int nvmlEnableState_t;
typedef int nvmlNvLinkCapability_t;
typedef int nvmlGpuP2PCapsIndex_t;
typedef int nvmlGpuP2PStatus_t;

/* legacy nvmlPciInfo_t (busId[16] first), what nvmlDeviceGetPciInfo and the
 * un-suffixed NvLink remote query fill */
typedef struct {
	char busId[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	unsigned reserved[4];
} nvmlPciInfo_v1_t;

/* current nvmlPciInfo_t (_v2, _v3): busIdLegacy[16], ..., busId[32] */
typedef struct {
	char busIdLegacy[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef union {
	double dVal;
	unsigned uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	long long sllVal;
} nvmlValue_t;

typedef struct {
	unsigned fieldId;
	unsigned scopeId;
	long long timestamp;
	long long latencyUsec;
	int valueType;
	nvmlReturn_t nvmlReturn;
	nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

#endif
