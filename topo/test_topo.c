/* SPDX-License-Identifier: MIT */
/* test_topo.c - the cluster topology parser: shipped files, per-host
 * output, malformed input (file:line errors, never a crash). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nrr_topo.h"

static const char *srcdir = ".";

static void test_file(const char *name, int nhosts, int ngpus, int nnics, int nvlink)
{
	char path[1024], err[512];
	snprintf(path, sizeof(path), "%s/%s", srcdir, name);
	nrr_topo *t = NULL;
	int rc = nrr_topo_load(path, &t, err, sizeof(err));
	CHECK(rc == 0, "%s: %d %s", name, rc, err);
	if (rc)
		return;
	CHECK(nrr_topo_nhosts(t) == nhosts, "%s: %d hosts", name, nrr_topo_nhosts(t));
	CHECK(nrr_topo_gpus_per_host(t) == ngpus, "%s: %d gpus", name, nrr_topo_gpus_per_host(t));
	for (int h = 0; h < t->nhosts; h++) {
		char hn[16];
		snprintf(hn, sizeof(hn), "node%d", h);
		CHECK(strcmp(nrr_topo_host_name(t, h), hn) == 0, "%s host %d name %s", name, h, t->hosts[h].name);
		CHECK(t->hosts[h].nnics == nnics, "%s host %d nics %d", name, h, t->hosts[h].nnics);
		/* the RoCE file sets link_layer and mtu; the others have the defaults */
		int roce = strstr(name, "roce") != NULL;
		for (int i = 0; i < t->hosts[h].nnics; i++)
			CHECK(t->hosts[h].nics[i].ethernet == roce && t->hosts[h].nics[i].mtu == (roce ? 1024 : 4096),
			      "%s host %d nic %d link layer and MTU", name, h, i);
		for (int g = 0; g < t->hosts[h].ngpus; g++) {
			nrr_topo_gpu *gp = &t->hosts[h].gpus[g];
			CHECK(gp->dev == g && gp->sm == 90, "%s: gpu %d dev %d sm %d", name, g, gp->dev, gp->sm);
			CHECK(gp->domain == h, "%s: host %d gpu %d busid %s", name, h, g, gp->busid);
			CHECK((gp->nvlink_total == 18) == !!nvlink, "%s: nvlinks %d", name, gp->nvlink_total);
			/* uuids unique across the cluster */
			for (int h2 = 0; h2 <= h; h2++)
				for (int g2 = 0; g2 < (h2 == h ? g : t->hosts[h2].ngpus); g2++)
					CHECK(memcmp(gp->uuid, t->hosts[h2].gpus[g2].uuid, 16) != 0,
					      "%s: duplicate uuid", name);
		}
		/* the per-host file reloads as a bare <system> with the same GPUs */
		char out[1024];
		snprintf(out, sizeof(out), "/tmp/test_topo.%d.xml", (int)getpid());
		rc = nrr_topo_write_host_xml(t, h, out, err, sizeof(err));
		CHECK(rc == 0, "write: %s", err);
		nrr_topo *s = NULL;
		rc = nrr_topo_load(out, &s, err, sizeof(err));
		CHECK(rc == 0, "reload: %s", err);
		if (rc == 0) {
			CHECK(s->nhosts == 1 && s->hosts[0].ngpus == ngpus, "reload counts");
			for (int g = 0; g < ngpus && g < s->hosts[0].ngpus; g++)
				CHECK(strcmp(s->hosts[0].gpus[g].busid, t->hosts[h].gpus[g].busid) == 0, "busid");
			nrr_topo_free(s);
		}
		FILE *f = fopen(out, "r");
		char first[64] = "";
		if (f) {
			CHECK(fgets(first, sizeof(first), f) != NULL, "read back");
			fclose(f);
		}
		CHECK(strncmp(first, "<system version=\"1\">", 20) == 0, "first line %s", first);
		unlink(out);
		/* host h alone: the same host, the others named only */
		nrr_topo *o = NULL;
		rc = nrr_topo_load_host(path, h, &o, err, sizeof(err));
		CHECK(rc == 0, "%s host %d alone: %s", name, h, err);
		if (rc)
			continue;
		CHECK(o->nhosts == nhosts && o->only_host == h && nrr_topo_gpus_per_host(o) == ngpus, "%s host %d alone: counts",
		      name, h);
		for (int k = 0; k < nhosts; k++)
			CHECK(strcmp(o->hosts[k].name, t->hosts[k].name) == 0 && (k == h) == (o->hosts[k].ngpus > 0),
			      "%s host %d alone: host %d", name, h, k);
		const nrr_topo_host *a = &o->hosts[h], *b = &t->hosts[h];
		CHECK(a->ngpus == b->ngpus && a->nnics == b->nnics && a->system, "%s host %d alone: content", name, h);
		for (int g = 0; g < a->ngpus && g < b->ngpus; g++)
			CHECK(!memcmp(a->gpus[g].uuid, b->gpus[g].uuid, 16) && !strcmp(a->gpus[g].busid, b->gpus[g].busid) &&
			      a->gpus[g].nvlink_total == b->gpus[g].nvlink_total, "%s host %d alone: gpu %d", name, h, g);
		nrr_topo_free(o);
	}
	nrr_topo_free(t);
}

struct bad {
	const char *xml;
	int line;
	const char *what;
};

static const char *GOOD_HOST =
	"<system version=\"1\">\n"
	"<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">\n"
	"<pci busid=\"0000:18:00.0\" class=\"0x030200\"><gpu dev=\"0\" sm=\"90\"/></pci>\n"
	"</cpu>\n"
	"</system>\n";

static void test_bad(void)
{
	static const struct bad cases[] = {
		{ "", 1, "no root element" },
		{ "<cluster name=\"x\">\n<host name=\"a\">\n", 2, "not closed" },
		{ "<cluster>\n</clusterx>\n", 2, "does not match" },
		{ "<cluster a=\"1\" a=\"2\"></cluster>", 1, "duplicate attribute" },
		{ "<cluster a=1></cluster>", 1, "quoted" },
		{ "<cluster>\nhello\n</cluster>", 2, "unexpected text" },
		{ "<cluster>\n<!-- a -- b -->\n</cluster>", 2, "'--'" },
		{ "<cluster>\n<!-- open\n", 2, "comment is not closed" },
		{ "<cluster></cluster>\n<cluster></cluster>", 2, "second root" },
		{ "<foo/>", 1, "expected <cluster>" },
		{ "<cluster>\n\n<node/></cluster>", 3, "only <host>" },
		{ "<cluster>\n<host/>\n</cluster>", 2, "name=" },
		{ "<cluster>\n<host name=\"a\"/>\n</cluster>", 2, "exactly one <system>" },
		{ "<cluster>\n<host name=\"a b\"><system version=\"1\"/></host>\n</cluster>", 2, "letters" },
		{ "<cluster><host name=\"a\">\n<system version=\"2\"/></host></cluster>", 2, "version 1" },
		{ "<cluster><host name=\"a\">\n<system version=\"1\"/></host></cluster>", 2, "no <cpu>" },
		{ "<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n"
		  "<pci busid=\"0000:18:00.0\">\n<gpu sm=\"90\"/></pci></cpu></system>", 4, "dev=" },
		{ "<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n"
		  "<pci busid=\"0000:18:00.0\">\n<gpu dev=\"zero\" sm=\"90\"/></pci></cpu></system>", 4, "not an integer" },
		{ "<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n"
		  "<pci busid=\"0000:18:00\">\n<gpu dev=\"0\" sm=\"90\"/></pci></cpu></system>", 3, "bad PCI bus id" },
		{ "<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n"
		  "<pci busid=\"0000:18:00.0\"><gpu dev=\"0\" sm=\"90\"/></pci>\n"
		  "<pci busid=\"0000:19:00.0\"><gpu dev=\"0\" sm=\"90\"/></pci></cpu></system>", 3, "each once" },
		{ "<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n"
		  "<pci busid=\"0000:18:00.0\"><gpu dev=\"0\" sm=\"90\">\n<nvlink target=\"0000:19:00.0\" count=\"2\"/>"
		  "</gpu></pci></cpu></system>", 4, "tclass" },
		{ "<system version=\"1\">\n<cpu numaid=\"0\">\n</cpu></system>", 2, "arch=" },
		{ "<?xml version=\"1.0\"?>\n<!DOCTYPE x>\n<cluster/>", 2, "DOCTYPE" },
		{ "<cluster>\n<host name=\"a&bogus;\"/></cluster>", 2, "entity" },
		{ "<cluster\n", 1, "not closed" },
		{ "<cluster>\n<![CDATA[x]]></cluster>", 2, "CDATA" },
		{ "<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n"
		  "<nic>\n<net name=\"mlx5_0\" dev=\"0\" link_layer=\"RoCE\"/></nic></cpu></system>", 4,
		  "link_layer is InfiniBand or Ethernet" },
		{ "<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n"
		  "<nic>\n<net name=\"mlx5_0\" dev=\"0\" mtu=\"1500\"/></nic></cpu></system>", 4,
		  "256, 512, 1024, 2048, 4096" },
		{ "<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n"
		  "<nic>\n<net name=\"mlx5_0\" dev=\"0\" mtu=\"8192\"/></nic></cpu></system>", 4, "not an integer in" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512];
		nrr_topo *t = (nrr_topo *)1;
		int rc = nrr_topo_load_buffer("bad.xml", cases[i].xml, strlen(cases[i].xml), &t, err, sizeof(err));
		char want[32];
		snprintf(want, sizeof(want), "bad.xml:%d: ", cases[i].line);
		CHECK(rc == -EINVAL && t == NULL, "case %zu: rc %d", i, rc);
		CHECK(strncmp(err, want, strlen(want)) == 0, "case %zu: want %s, got '%s'", i, want, err);
		CHECK(strstr(err, cases[i].what) != NULL, "case %zu: want '%s' in '%s'", i, cases[i].what, err);
	}

	/* a good host in a cluster, with comments, declaration and entities */
	char buf[4096];
	snprintf(buf, sizeof(buf), "<?xml version=\"1.0\"?>\n<!-- c -->\n<cluster name='a&amp;b&#x41;'>\n"
		 "<host name=\"h0\">%s</host></cluster>\n<!-- end -->\n", GOOD_HOST);
	nrr_topo *t = NULL;
	char err[512];
	int rc = nrr_topo_load_buffer("good.xml", buf, strlen(buf), &t, err, sizeof(err));
	CHECK(rc == 0, "good: %s", err);
	if (rc == 0) {
		CHECK(strcmp(t->name, "a&bA") == 0, "name %s", t->name);
		CHECK(t->hosts[0].gpus[0].numa == 0, "numa");
		/* the cluster name cannot go to NCCL's dialect, but the host can */
		char *s = NULL;
		CHECK(nrr_topo_host_xml_string(t, 0, &s, NULL) == 0, "host string");
		free(s);
		nrr_topo_free(t);
	}

	/* every truncation of a good file fails cleanly with file:line */
	size_t len = strlen(buf);
	for (size_t cut = 0; cut + 20 < len; cut++) {
		t = NULL;
		rc = nrr_topo_load_buffer("cut.xml", buf, cut, &t, err, sizeof(err));
		CHECK(rc < 0 && t == NULL && strncmp(err, "cut.xml:", 8) == 0, "cut %zu: rc %d '%s'", cut, rc, err);
	}

	rc = nrr_topo_load("/nonexistent/x.xml", &t, err, sizeof(err));
	CHECK(rc == -ENOENT && strstr(err, "/nonexistent/x.xml: cannot open"), "enoent: %s", err);
}

/* nrr_topo_load_host passes over the other hosts without checking their
 * content, but not over an element left open; a bare <system> is read
 * in full; a host past the last leaves nhosts to say so. */
static void test_host_only(void)
{
	char path[64], err[512];
	snprintf(path, sizeof(path), "/tmp/test_topo_host.%d.xml", (int)getpid());
	const char *other[] = {
		/* bad content (version 2, an unknown element, '>' and a
		 * '</host>' where they do not end anything), balanced */
		"<system version=\"2\"><bogus a='>' b=\"</host>\"/><!-- </host> --></system>",
		/* an element left open */
		"<system version=\"1\"><cpu>\n</system>",
	};
	for (int c = 0; c < 2; c++) {
		FILE *f = fopen(path, "w");
		CHECK_FATAL(f, "create %s", path);
		fprintf(f, "<cluster name=\"c\">\n<host name=\"h0\">%s</host>\n<host name=\"h1\">%s</host>\n"
			   "<host name=\"h2\">%s</host>\n</cluster>\n", GOOD_HOST, other[c], GOOD_HOST);
		fclose(f);
		nrr_topo *t = NULL;
		CHECK(nrr_topo_load(path, &t, err, sizeof(err)) == -EINVAL && !t, "case %d: the full load fails", c);
		for (int h = 0; h <= 3; h += 2) {
			int rc = nrr_topo_load_host(path, h, &t, err, sizeof(err));
			if (c == 0) {
				CHECK(rc == 0 && t->nhosts == 3 && (h > 2 || t->hosts[h].ngpus == 1), "case 0 host %d: %d %s", h,
				      rc, err);
				nrr_topo_free(t);
			} else {
				CHECK(rc == -EINVAL && !t && strstr(err, ":16: end tag </cluster> does not match <host> opened at line 8"), "case 1 host %d: %s",
				      h, err);
			}
		}
	}
	unlink(path);
	snprintf(path, sizeof(path), "%s/1node_8gpu.xml", srcdir);
	nrr_topo *t = NULL;
	CHECK(nrr_topo_load_host(path, 0, &t, err, sizeof(err)) == 0 && t->hosts[0].ngpus == 8, "one host: %s", err);
	nrr_topo_free(t);
}

static void test_default(void)
{
	nrr_topo *t = NULL;
	char err[512];
	int rc = nrr_topo_default(&t, err, sizeof(err));
	CHECK(rc == 0, "default: %s", err);
	if (rc)
		return;
	CHECK(t->nhosts == 1 && t->hosts[0].ngpus == 8 && t->hosts[0].nnics == 8, "default counts");
	CHECK(strcmp(t->hosts[0].gpus[3].busid, "0000:5d:00.0") == 0, "default busid %s", t->hosts[0].gpus[3].busid);
	nrr_topo_free(t);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		srcdir = argv[1];
	test_file("1node_8gpu.xml", 1, 8, 8, 1);
	test_file("2node_16gpu.xml", 2, 8, 8, 1);
	test_file("4node_32gpu.xml", 4, 8, 8, 1);
	test_file("8node_64gpu.xml", 8, 8, 8, 1);
	test_file("2node_8gpu_pcie.xml", 2, 4, 2, 0);
	test_file("2node_8gpu_roce.xml", 2, 4, 2, 0);
	test_bad();
	test_host_only();
	test_default();
	return check_done("topo");
}
