/* SPDX-License-Identifier: MIT */
/* rundir.c - the files of a run directory besides its traces (rundir.h). */
#include "rundir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int nrr_run_cluster(const char *run, const char *recorded, char *out, size_t size, char *why, size_t whysize)
{
	char dir[PATH_MAX], kept[PATH_MAX + 32];
	struct stat st;
	snprintf(dir, sizeof(dir), "%s", run);
	if (stat(run, &st) == 0 && !S_ISDIR(st.st_mode)) {
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(dir, sizeof(dir), ".");
	}
	snprintf(kept, sizeof(kept), "%s/%s", dir, NRR_RUN_CLUSTER_FILE);
	/* a regular file of the run directory itself, not a link out of it */
	if (lstat(kept, &st) == 0 && S_ISREG(st.st_mode)) {
		snprintf(out, size, "%s", kept);
		return 0;
	}
	if (recorded && *recorded)
		snprintf(why, whysize, "%s holds no copy of its cluster file (%s: `ncclrr run` keeps one when it runs "
			 "recorded), and the path the recording names, %s (env NCCLRR_TOPO), is the recording "
			 "machine's: ncclrr opens no file a trace names", dir, NRR_RUN_CLUSTER_FILE, recorded);
	else
		snprintf(why, whysize, "the recording in %s names no cluster file: it was not made under `ncclrr run` "
			 "(NCCL's own topology dump, nccl-topo.xml, holds only the GPUs of the ranks NCCL saw on one "
			 "host, not a cluster)", dir);
	return -ENOENT;
}

int nrr_copy_file(const char *src, const char *dst, char *err, size_t errsize)
{
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", dst, (int)getpid());
	int in = open(src, O_RDONLY | O_CLOEXEC | O_NONBLOCK), out = -1, rc = 0;
	const char *what = src;
	if (in < 0)
		rc = -errno;
	else if ((out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		rc = -errno, what = tmp;
	char buf[65536];
	ssize_t n = 0;
	while (!rc && (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = -errno;
		else if (write(out, buf, (size_t)n) != n)
			rc = errno ? -errno : -EIO, what = tmp;
	}
	if (out >= 0 && close(out) != 0 && !rc)
		rc = -errno, what = tmp;
	if (!rc && rename(tmp, dst) != 0)
		rc = -errno, what = dst;
	if (in >= 0)
		close(in);
	if (rc) {
		snprintf(err, errsize, "cannot copy %s to %s: %s: %s", src, dst, what, strerror(-rc));
		if (out >= 0)
			unlink(tmp);
	}
	return rc;
}
