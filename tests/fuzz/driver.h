/* SPDX-License-Identifier: MIT */
/*
 * driver.h - a plain main() for the fuzz targets: runs every file (or
 * every file of every directory) named on the command line through
 * LLVMFuzzerTestOneInput, so the corpus is an ordinary test. Built with
 * -DNCCLRR_LIBFUZZER, libFuzzer supplies main() instead.
 */
#ifndef NCCLRR_FUZZ_DRIVER_H
#define NCCLRR_FUZZ_DRIVER_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef NCCLRR_LIBFUZZER
static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "fuzz driver: cannot open %s\n", path);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
	if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "fuzz driver: cannot read %s\n", path);
		fclose(f);
		free(b);
		return 1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(b, (size_t)n);
	free(b);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, bad = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *e;
			while (d && (e = readdir(d))) {
				if (e->d_name[0] == '.')
					continue;
				char p[4096];
				snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
				bad += run_file(p);
				files++;
			}
			if (d)
				closedir(d);
		} else {
			bad += run_file(argv[i]);
			files++;
		}
	}
	printf("%d passed, %d failed\n", files - bad, bad);
	return bad || !files;
}
#endif
#endif
