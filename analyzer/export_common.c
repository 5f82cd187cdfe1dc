/* SPDX-License-Identifier: MIT */
/* export_common.c - helpers shared by the Chrome and HTML exports. */
#include <stdlib.h>
#include <string.h>

#include "export.h"

struct nrr_export_proc *nrr_export_procs(const struct nrr_inputs *in)
{
	struct nrr_export_proc *p = calloc(in->n ? in->n : 1, sizeof(*p));
	if (!p)
		return NULL;
	long maxrank = -1;
	for (size_t i = 0; i < in->n; i++) {
		char *e;
		if (in->rank[i] && *in->rank[i]) {
			long r = strtol(in->rank[i], &e, 10);
			if (!*e && r >= 0) {
				p[i].ranked = true;
				p[i].rank = r;
				if (r > maxrank)
					maxrank = r;
			}
		}
	}
	long next = maxrank + 1;
	/* leave a visible gap above the ranks for the unranked processes */
	next = next < 1000 ? 1000 : next + 1000;
	for (size_t i = 0; i < in->n; i++) {
		bool dup = false;
		for (size_t j = 0; j < i && p[i].ranked; j++)
			if (p[j].ranked && p[j].pid == p[i].rank)
				dup = true;
		p[i].pid = p[i].ranked && !dup ? p[i].rank : next++;
		if (p[i].ranked) {
			snprintf(p[i].name, sizeof(p[i].name), "rank %ld (%s)", p[i].rank, in->who[i]);
		} else {
			const char *argv = nrr_reader_meta(in->r[i], "argv");
			const char *exe = argv ? argv : nrr_reader_meta(in->r[i], "exe");
			bool launcher = argv && strstr(argv, "ncclrr") && strstr(argv, " run ");
			snprintf(p[i].name, sizeof(p[i].name), "%s (%s)%s%.60s",
				 launcher ? "ncclrr run launcher" : "unranked process", in->who[i],
				 exe && !launcher ? " " : "", exe && !launcher ? exe : "");
		}
	}
	return p;
}

int nrr_sbuf_open(struct nrr_sbuf *s)
{
	s->f = fmemopen(s->buf, sizeof(s->buf) - 1, "w");
	return s->f ? 0 : -1;
}

void nrr_sbuf_close(struct nrr_sbuf *s)
{
	if (s->f)
		fclose(s->f);
	s->f = NULL;
}

void nrr_sbuf_reset(struct nrr_sbuf *s)
{
	clearerr(s->f);
	rewind(s->f);
}

const char *nrr_sbuf_str(struct nrr_sbuf *s, size_t *len)
{
	fflush(s->f);
	long n = ftell(s->f);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(s->buf) - 1)
		n = (long)sizeof(s->buf) - 1;
	s->buf[n] = 0;
	if (len)
		*len = (size_t)n;
	return s->buf;
}

/* Length of the valid UTF-8 sequence at p (0 if not valid). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t l;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		l = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		l = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		l = 4;
	else
		return 0;
	if (l > n)
		return 0;
	for (size_t i = 1; i < l; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return l;
}

void nrr_json_str(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = p[i];
		if (ch == '"' || ch == '\\') {
			fputc('\\', f);
			fputc(ch, f);
		} else if (ch == '\n') {
			fputs("\\n", f);
		} else if (ch < 0x20 || ch == 0x7f || ch == '<') {
			/* '<' too: the HTML report embeds JSON in a <script> */
			fprintf(f, "\\u%04x", ch);
		} else if (ch < 0x80) {
			fputc(ch, f);
		} else {
			size_t l = utf8_len(p + i, n - i);
			if (l) {
				fwrite(p + i, 1, l, f);
				i += l - 1;
			} else {
				fprintf(f, "\\u%04x", ch);
			}
		}
	}
	fputc('"', f);
}

void nrr_put_us(FILE *f, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	fprintf(f, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
}

bool nrr_sock_conn(const nrr_call *c, int64_t *fd, const nrr_value **local, const nrr_value **peer,
		   bool *isconnect)
{
	if (!c->fn || strcmp(c->fn->name, "sock_info"))
		return false;
	/* sock_role in formats/api/socket.api: connect = 2, accept = 3 */
	const nrr_value *role = nrr_call_arg(c, "role", NULL), *fdv = nrr_call_arg(c, "fd", NULL);
	*local = nrr_call_arg(c, "local", NULL);
	*peer = nrr_call_arg(c, "peer", NULL);
	if (!role || !fdv || !*local || !*peer || !(*local)->len || !(*peer)->len || (role->u != 2 && role->u != 3))
		return false;
	*fd = (int64_t)fdv->u;
	*isconnect = role->u == 2;
	return true;
}

const nrr_value *nrr_call_arg(const nrr_call *c, const char *name, int *index)
{
	if (!c->fn)
		return NULL;
	for (unsigned i = 0; i < c->fn->nargs && i < NRR_MAX_ARGS; i++)
		if (strcmp(c->fn->args[i].name, name) == 0) {
			if (index)
				*index = (int)i;
			return c->present >> i & 1 ? &c->args[i] : NULL;
		}
	return NULL;
}
