/* SPDX-License-Identifier: MIT */
/* cmd_nccl.c - `ncclrr nccl list`: the NCCL versions of the fake cluster,
 * where each came from and whether ncclrr's CUDA runtime has every runtime
 * function it calls. */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "color.h"
#include "json.h"
#include "nrr_launch.h"

const char cmd_nccl_usage[] =
"Usage: ncclrr nccl list [--json] [-v]\n"
"\n"
"List the NCCL versions the fake cluster has: each a real NCCL relinked\n"
"against ncclrr's CUDA runtime by scripts/nccl.sh (Debian's libnccl-dev, or\n"
"a libnccl_static.a of your own: 'scripts/nccl.sh relink ARCHIVE'), oldest\n"
"release first. For each: the library, where it came from (package or\n"
"archive, its sha256, when it was relinked), the CUDA it was built for, and\n"
"the CUDA runtime functions it calls, checked one by one against ncclrr's\n"
"libcudart.so.N: a function the runtime lacks is one NCCL cannot call on the\n"
"fake cluster. These are the versions 'ncclrr run --nccl', 'ncclrr replay\n"
"--rerun --nccl' and 'ncclrr bisect --nccl all' take.\n"
"\n"
"Looked for next to this program (../nccl/VERSION in the build tree,\n"
"../lib/ncclrr/nccl/VERSION installed) and beside $NCCLRR_NCCL_DIR.\n"
"\n"
"Options:\n"
"  --json        one JSON array, an object per version\n"
"  -v, --verbose also list every runtime function each version calls\n"
"  -h, --help    this text;  --version  the version\n"
"\n"
"Exit status: 0 at least one version found; 1 none (run scripts/nccl.sh\n"
"setup); 2 bad usage.\n";

/* BUILDINFO (scripts/nccl.sh): KEY=VALUE lines */
struct info {
	char *text;
	const char *version, *cuda, *source, *archive, *sha256, *relinked, *runtime;
};

static void info_load(struct info *in, const char *dir)
{
	memset(in, 0, sizeof(*in));
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/BUILDINFO", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t cap = 0;
	ssize_t n = getdelim(&in->text, &cap, '\0', f);
	fclose(f);
	if (n <= 0)
		return;
	static const char *const keys[] = { "version", "cuda", "source", "archive", "sha256", "relinked", "runtime" };
	const char **slots[] = { &in->version, &in->cuda, &in->source, &in->archive, &in->sha256, &in->relinked,
				 &in->runtime };
	for (char *save = NULL, *line = strtok_r(in->text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (!strcmp(line, keys[k]))
				*slots[k] = eq + 1;
	}
}

/* The runtime functions of @in missing from ncclrr's libcudart.so.MAJOR:
 * appended to @missing (space separated); @return how many it calls, or
 * -1 when the runtime cannot be opened (@why). */
static int check_runtime(const struct info *in, const char *libdir, char *missing, size_t mlen, char *why,
			 size_t wlen)
{
	missing[0] = '\0';
	int major = in->cuda ? atoi(in->cuda) : 0;
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/libcudart.so.%d", libdir, major);
	void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
	if (!h) {
		snprintf(why, wlen, "%s", dlerror());
		return -1;
	}
	int n = 0;
	size_t used = 0;
	char *copy = strdup(in->runtime ? in->runtime : "");
	for (char *save = NULL, *fn = copy ? strtok_r(copy, " ", &save) : NULL; fn; fn = strtok_r(NULL, " ", &save)) {
		n++;
		if (!dlsym(h, fn) && used + strlen(fn) + 2 < mlen)
			used += (size_t)snprintf(missing + used, mlen - used, "%s%s", used ? " " : "", fn);
	}
	free(copy);
	dlclose(h);
	return n;
}


int cmd_nccl(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, verbose = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":v", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'v': verbose = true; break;
		default:
			return nrr_cli_opt_error("nccl", c, argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return nrr_cli_usage_error("nccl", "say what to do: ncclrr nccl list");
	if (strcmp(argv[optind], "list") != 0)
		return nrr_cli_usage_error("nccl", "unknown action '%s' (ncclrr nccl list)", argv[optind]);
	if (optind + 1 < argc)
		return nrr_cli_usage_error("nccl", "list takes no argument, got '%s'", argv[optind + 1]);

	struct nrr_nccl_build *v = NULL;
	int n = nrr_launch_nccl_list(&v);
	if (n < 0) {
		nrr_cli_error("nccl", "%s", strerror(-n));
		return NRR_EXIT_USAGE;
	}
	char libdir[PATH_MAX], err[1024], dflt[PATH_MAX] = "";
	bool have_rt = nrr_launch_find_fake_libdir(libdir, sizeof(libdir), err, sizeof(err)) == 0;
	char e2[1024];
	if (nrr_launch_find_nccl_dir(NULL, dflt, sizeof(dflt), e2, sizeof(e2)) < 0)
		dflt[0] = '\0';
	struct nrr_jw jw, *w = &jw;
	nrr_jw_init(w, stdout, NRR_JW_COMPACT | NRR_JW_HTML);
	if (json)
		nrr_jw_arr(w, false);
	for (int i = 0; i < n; i++) {
		struct info in;
		info_load(&in, v[i].dir);
		char missing[4096], why[1024] = "";
		int ncalls = have_rt ? check_runtime(&in, libdir, missing, sizeof(missing), why, sizeof(why)) : -1;
		if (!have_rt)
			snprintf(why, sizeof(why), "%s", err);
		bool is_default = !strcmp(dflt, v[i].dir);
		char lib[PATH_MAX + 16];
		snprintf(lib, sizeof(lib), "%s/libnccl.so.2", v[i].dir);
		if (json) {
			nrr_jw_obj(w, false);
			nrr_jw_kstr(w, "version", v[i].version);
			nrr_jw_kstr(w, "library", lib);
			nrr_jw_kbool(w, "default", is_default);
			nrr_jw_kstr(w, "cuda", in.cuda);
			nrr_jw_kstr(w, "source", in.source);
			nrr_jw_kstr(w, "archive", in.archive);
			nrr_jw_kstr(w, "sha256", in.sha256);
			nrr_jw_kstr(w, "relinked", in.relinked);
			nrr_jw_kstr(w, "runtime_calls", in.runtime);
			nrr_jw_kstr(w, "runtime_missing", ncalls >= 0 ? missing : NULL);
			nrr_jw_end(w);
		} else {
			printf("%s%s\n", v[i].version, is_default ? " (default)" : "");
			printf("  library   %s\n", lib);
			if (!in.text) {
				printf("  (no BUILDINFO: relinked by an older scripts/nccl.sh; run it again for the build facts)\n");
				free(in.text);
				continue;
			}
			printf("  source    %s, relinked %s\n", in.source ? in.source : "?", in.relinked ? in.relinked : "?");
			if (in.archive)
				printf("  archive   %s (sha256 %s)\n", in.archive, in.sha256 ? in.sha256 : "?");
			printf("  CUDA      %s (runs on ncclrr's libcudart.so.%d)\n", in.cuda ? in.cuda : "?",
			       in.cuda ? atoi(in.cuda) : 0);
			if (ncalls < 0) {
				printf("  runtime   not checked: %s\n", why);
			} else if (!missing[0]) {
				printf("  runtime   %d functions called, all in ncclrr's runtime\n", ncalls);
			} else {
				int nm = 1;
				for (const char *p = missing; (p = strchr(p, ' ')); p++)
					nm++;
				printf("  runtime   %d functions called, %d NOT in ncclrr's runtime (NCCL fails where it "
				       "calls them): %s\n", ncalls, nm, missing);
			}
			if (verbose && in.runtime)
				printf("  calls     %s\n", in.runtime);
		}
		free(in.text);
	}
	if (json) {
		nrr_jw_end(w);
		fputc('\n', stdout);
	}
	free(v);
	if (n == 0) {
		nrr_cli_error("nccl", "the fake cluster has no NCCL: run scripts/nccl.sh setup (Debian's 2.22.3 "
			"and sid's), or scripts/nccl.sh relink YOUR/libnccl_static.a");
		return 1;
	}
	return 0;
}
