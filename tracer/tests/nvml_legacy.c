/* SPDX-License-Identifier: MIT */
/*
 * nvml_legacy.c - NVML's un-suffixed nvmlDeviceGetNvLinkRemotePciInfo
 * fills the legacy 52-byte nvmlPciInfo (busId[16] first), its _v2 the
 * current 68-byte one. A caller of the legacy entry may own exactly 52
 * bytes: here they end a page whose next page is PROT_NONE, so a tracer
 * that reads or writes past them kills the program (SIGSEGV), and a
 * canary after a second copy shows a write past them. Traced and untraced
 * runs must print the same lines (tests/integration/test_record.sh, case
 * nvmllegacy).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LEGACY 52
#define CURRENT 68

typedef int (*init_fn)(void);
typedef int (*by_index_fn)(unsigned, void **);
typedef int (*remote_fn)(void *, unsigned, void *);

int main(void)
{
	void *nv = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	if (!nv) {
		fprintf(stderr, "nvml_legacy: cannot open libnvidia-ml.so.1: %s\n", dlerror());
		return 2;
	}
	init_fn init = (init_fn)dlsym(nv, "nvmlInit_v2");
	by_index_fn by_index = (by_index_fn)dlsym(nv, "nvmlDeviceGetHandleByIndex_v2");
	remote_fn legacy = (remote_fn)dlsym(nv, "nvmlDeviceGetNvLinkRemotePciInfo");
	remote_fn v2 = (remote_fn)dlsym(nv, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
	void *dev = NULL;
	if (!init || !by_index || !legacy || !v2 || init() != 0 || by_index(0, &dev) != 0) {
		fprintf(stderr, "nvml_legacy: NVML init or device 0 failed\n");
		return 2;
	}
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char *map = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || mprotect(map + pg, (size_t)pg, PROT_NONE) != 0) {
		perror("nvml_legacy: guard page");
		return 2;
	}

	/* the legacy struct's 52 bytes end where the guard page begins */
	unsigned char *p = map + pg - LEGACY;
	memset(p, 0, LEGACY);
	int rc = legacy(dev, 0, p);
	printf("legacy at the guard page: rc %d busId %.16s\n", rc, (const char *)p);

	/* the same call with a canary after the 52 bytes: nobody writes there */
	unsigned char buf[CURRENT + 16];
	memset(buf, 0xa5, sizeof(buf));
	rc = legacy(dev, 1, buf);
	size_t bad = 0;
	for (size_t i = LEGACY; i < sizeof(buf); i++)
		bad += buf[i] != 0xa5;
	printf("legacy with a canary: rc %d busId %.16s, %zu bytes past 52 changed\n", rc, (const char *)buf, bad);

	/* _v2 owns 68 bytes: they end at the guard page too */
	p = map + pg - CURRENT;
	memset(p, 0, CURRENT);
	rc = v2(dev, 0, p);
	printf("v2 at the guard page: rc %d busId %.32s\n", rc, (const char *)p + 36);
	return bad ? 1 : 0;
}
