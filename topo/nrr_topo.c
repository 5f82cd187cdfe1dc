/* SPDX-License-Identifier: MIT */
/*
 * nrr_topo.c - cluster topology files: a small strict XML reader, the
 * extraction of GPUs / NICs per host, and the per-host NCCL topology writer.
 *
 * The XML subset: an optional <?xml ...?> declaration, comments, elements
 * with attributes ("..." or '...', the five predefined entities and numeric
 * character references), whitespace between elements. Anything else (text
 * content, CDATA, DOCTYPE, processing instructions after the start, two
 * roots, mismatched tags) is an error naming file:line.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nrr_hash.h"
#include "nrr_topo.h"

#define XML_MAX_DEPTH 64
#define XML_MAX_FILE (64u << 20)

/* ---- errors ------------------------------------------------------------ */
struct perr {
	const char *file;
	char *err;
	size_t errlen;
	int set;
};

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(struct perr *pe, int line, const char *fmt, ...)
{
	if (pe->set || !pe->err || pe->errlen == 0)
		return -EINVAL;
	pe->set = 1;
	int n = line > 0 ? snprintf(pe->err, pe->errlen, "%s:%d: ", pe->file, line)
			 : snprintf(pe->err, pe->errlen, "%s: ", pe->file);
	if (n < 0 || (size_t)n >= pe->errlen)
		return -EINVAL;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pe->err + n, pe->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* ---- element tree ------------------------------------------------------ */
static void node_free(struct nrr_xml_node *n)
{
	if (!n)
		return;
	for (int i = 0; i < n->nchildren; i++)
		node_free(n->children[i]);
	for (int i = 0; i < n->nattrs; i++) {
		free(n->attrs[i].name);
		free(n->attrs[i].value);
	}
	free(n->attrs);
	free(n->children);
	free(n->name);
	free(n);
}

const char *nrr_xml_attr(const struct nrr_xml_node *n, const char *name)
{
	if (!n)
		return NULL;
	for (int i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0)
			return n->attrs[i].value;
	return NULL;
}

static int add_child(struct nrr_xml_node *p, struct nrr_xml_node *c)
{
	if ((p->nchildren & (p->nchildren - 1)) == 0) { /* 0, 1, 2, 4, ... */
		size_t cap = p->nchildren ? (size_t)p->nchildren * 2 : 4;
		void *nc = realloc(p->children, cap * sizeof(*p->children));
		if (!nc)
			return -ENOMEM;
		p->children = nc;
	}
	p->children[p->nchildren++] = c;
	c->parent = p;
	return 0;
}

static int add_attr(struct nrr_xml_node *n, char *name, char *value)
{
	if ((n->nattrs & (n->nattrs - 1)) == 0) {
		size_t cap = n->nattrs ? (size_t)n->nattrs * 2 : 4;
		void *na = realloc(n->attrs, cap * sizeof(*n->attrs));
		if (!na)
			return -ENOMEM;
		n->attrs = na;
	}
	n->attrs[n->nattrs].name = name;
	n->attrs[n->nattrs].value = value;
	n->nattrs++;
	return 0;
}

/* ---- the reader -------------------------------------------------------- */
struct xr {
	const char *p, *end;
	int line;
	struct perr *pe;
	int keep;    /* nrr_topo_load_host: the one child of a <cluster> read in full (-1: all) */
	int child;   /* children of the root met so far */
};

static int at(struct xr *x, const char *s)
{
	size_t n = strlen(s);
	return (size_t)(x->end - x->p) >= n && memcmp(x->p, s, n) == 0;
}

static void adv(struct xr *x, size_t n)
{
	for (size_t i = 0; i < n && x->p < x->end; i++, x->p++)
		if (*x->p == '\n')
			x->line++;
}

static void skip_ws(struct xr *x)
{
	while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r'))
		adv(x, 1);
}

static int is_name_start(int c)
{
	return isalpha(c) || c == '_' || c == ':';
}

static int is_name_char(int c)
{
	return isalnum(c) || c == '_' || c == ':' || c == '-' || c == '.';
}

static int read_name(struct xr *x, char **out)
{
	const char *s = x->p;
	if (x->p >= x->end || !is_name_start((unsigned char)*x->p))
		return fail(x->pe, x->line, x->p >= x->end ? "unexpected end of file, expected a name"
							: "expected a name, got '%c'", x->p < x->end ? *x->p : ' ');
	while (x->p < x->end && is_name_char((unsigned char)*x->p))
		x->p++;
	*out = strndup(s, (size_t)(x->p - s));
	return *out ? 0 : -ENOMEM;
}

/* comment: x->p at "<!--" */
static int skip_comment(struct xr *x)
{
	int line = x->line;
	adv(x, 4);
	while (x->p < x->end) {
		if (at(x, "--")) {
			if (at(x, "-->")) {
				adv(x, 3);
				return 0;
			}
			return fail(x->pe, x->line, "'--' inside a comment");
		}
		adv(x, 1);
	}
	return fail(x->pe, line, "comment is not closed (missing '-->')");
}

/* The content of @n up to its end tag, passed over (another host's, for
 * nrr_topo_load_host): tags balanced, its own end tag named, comments
 * closed, nothing else checked (a full load checks it).  One pass over
 * the bytes: a 512-host file is passed in a few ms where parsing it takes
 * 200 and 29 MB. */
static int skim_content(struct xr *x, const struct nrr_xml_node *n)
{
	const char *p = x->p, *e = x->end;
	int line = x->line, depth = 1;
	while (depth > 0) {
		for (; p < e && *p != '<'; p++)
			line += *p == '\n';
		if (p >= e)
			return fail(x->pe, n->line, "element <%s> is not closed (missing </%s>)", n->name, n->name);
		int start = line;
		if (e - p >= 4 && !memcmp(p, "<!--", 4)) {
			const char *c = memmem(p + 4, (size_t)(e - p - 4), "-->", 3);
			if (!c)
				return fail(x->pe, start, "comment is not closed (missing '-->')");
			for (; p < c + 3; p++)
				line += *p == '\n';
			continue;
		}
		int end = p + 1 < e && p[1] == '/';
		if (end && depth == 1) {   /* its own end tag? (the buffer has no NUL) */
			const char *en = p + 2, *ee = en;
			while (ee < e && ee - en < 64 && !strchr(" \t\r\n>", *ee))
				ee++;
			if ((size_t)(ee - en) != strlen(n->name) || memcmp(en, n->name, (size_t)(ee - en)))
				return fail(x->pe, start, "end tag </%.*s> does not match <%s> opened at line %d",
					    (int)(ee - en), en, n->name, n->line);
		}
		char q = 0;   /* inside a quoted value, which may hold '>' */
		for (p++; p < e && (q || *p != '>'); p++) {
			line += *p == '\n';
			if (q ? *p == q : *p == '"' || *p == '\'')
				q = q ? 0 : *p;
		}
		if (p >= e)
			return fail(x->pe, start, "tag is not closed with '>'");
		depth += end ? -1 : p[-1] == '/' ? 0 : 1;
		p++;
	}
	x->p = p;
	x->line = line;
	return 0;
}

static int put_utf8(char *o, unsigned long cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static int read_value(struct xr *x, char **out)
{
	if (x->p >= x->end || (*x->p != '"' && *x->p != '\''))
		return fail(x->pe, x->line, "attribute value must be quoted");
	char q = *x->p;
	int line = x->line;
	adv(x, 1);
	const char *s = x->p;
	while (x->p < x->end && *x->p != q) {
		if (*x->p == '<')
			return fail(x->pe, x->line, "'<' inside an attribute value");
		adv(x, 1);
	}
	if (x->p >= x->end)
		return fail(x->pe, line, "attribute value is not closed (missing %c)", q);
	size_t n = (size_t)(x->p - s);
	char *v = malloc(n + 1);
	if (!v)
		return -ENOMEM;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		if (s[i] != '&') {
			v[o++] = s[i++];
			continue;
		}
		const char *semi = memchr(s + i, ';', n - i);
		if (!semi || semi - (s + i) > 12) {
			free(v);
			return fail(x->pe, line, "bad entity reference in attribute value");
		}
		size_t el = (size_t)(semi - (s + i)) + 1;
		static const struct { const char *e; char c; } ents[] = {
			{ "&lt;", '<' }, { "&gt;", '>' }, { "&amp;", '&' }, { "&quot;", '"' }, { "&apos;", '\'' },
		};
		int done = 0;
		for (size_t k = 0; k < sizeof(ents) / sizeof(ents[0]); k++)
			if (strlen(ents[k].e) == el && memcmp(ents[k].e, s + i, el) == 0) {
				v[o++] = ents[k].c;
				done = 1;
			}
		if (!done && el > 3 && s[i + 1] == '#') {
			char buf[16];
			memcpy(buf, s + i + 2, el - 3);
			buf[el - 3] = 0;
			char *e;
			unsigned long cp = (buf[0] == 'x') ? strtoul(buf + 1, &e, 16) : strtoul(buf, &e, 10);
			if (*e == 0 && cp > 0 && cp <= 0x10ffff && (buf[0] != 'x' || buf[1])) {
				o += (size_t)put_utf8(v + o, cp); /* a reference is >= 4 bytes: fits */
				done = 1;
			}
		}
		if (!done) {
			free(v);
			return fail(x->pe, line, "unknown entity reference '%.*s'", (int)el, s + i);
		}
		i += el;
	}
	v[o] = 0;
	adv(x, 1); /* closing quote */
	*out = v;
	return 0;
}

/* element: x->p at '<' followed by a name start */
static int read_element(struct xr *x, int depth, struct nrr_xml_node **out)
{
	if (depth > XML_MAX_DEPTH)
		return fail(x->pe, x->line, "elements nested deeper than %d", XML_MAX_DEPTH);
	struct nrr_xml_node *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->line = x->line;
	int child = depth == 1 ? x->child++ : -1;
	adv(x, 1);
	int rc = read_name(x, &n->name);
	if (rc < 0)
		goto error;
	if (depth == 0 && strcmp(n->name, "cluster"))
		x->keep = -1;   /* a bare <system> is one host: read it all */
	for (;;) {
		int had_ws = x->p < x->end && isspace((unsigned char)*x->p);
		skip_ws(x);
		if (x->p >= x->end) {
			rc = fail(x->pe, n->line, "start tag <%s> is not closed", n->name);
			goto error;
		}
		if (at(x, "/>")) {
			adv(x, 2);
			*out = n;
			return 0;
		}
		if (*x->p == '>') {
			adv(x, 1);
			if (child >= 0 && x->keep >= 0 && child != x->keep) {
				rc = skim_content(x, n);
				if (rc < 0)
					goto error;
				*out = n;
				return 0;
			}
			break;
		}
		if (!had_ws) {
			rc = fail(x->pe, x->line, "expected whitespace, '>' or '/>' in <%s>, got '%c'",
				  n->name, *x->p);
			goto error;
		}
		char *an = NULL, *av = NULL;
		int aline = x->line;
		rc = read_name(x, &an);
		if (rc < 0)
			goto error;
		skip_ws(x);
		if (x->p >= x->end || *x->p != '=') {
			rc = fail(x->pe, x->line, "attribute '%s' of <%s> has no '=value'", an, n->name);
			free(an);
			goto error;
		}
		adv(x, 1);
		skip_ws(x);
		rc = read_value(x, &av);
		if (rc < 0) {
			free(an);
			goto error;
		}
		if (nrr_xml_attr(n, an)) {
			rc = fail(x->pe, aline, "duplicate attribute '%s' in <%s>", an, n->name);
			free(an);
			free(av);
			goto error;
		}
		rc = add_attr(n, an, av);
		if (rc < 0) {
			free(an);
			free(av);
			goto error;
		}
	}
	/* content */
	for (;;) {
		skip_ws(x);
		if (x->p >= x->end) {
			rc = fail(x->pe, n->line, "element <%s> is not closed (missing </%s>)", n->name, n->name);
			goto error;
		}
		if (at(x, "<!--")) {
			rc = skip_comment(x);
			if (rc < 0)
				goto error;
			continue;
		}
		if (at(x, "</")) {
			int eline = x->line;
			adv(x, 2);
			char *en = NULL;
			rc = read_name(x, &en);
			if (rc < 0)
				goto error;
			skip_ws(x);
			if (x->p >= x->end || *x->p != '>') {
				rc = fail(x->pe, eline, "end tag </%s> is not closed with '>'", en);
				free(en);
				goto error;
			}
			adv(x, 1);
			if (strcmp(en, n->name) != 0) {
				rc = fail(x->pe, eline, "end tag </%s> does not match <%s> opened at line %d",
					  en, n->name, n->line);
				free(en);
				goto error;
			}
			free(en);
			*out = n;
			return 0;
		}
		if (at(x, "<![CDATA[")) {
			rc = fail(x->pe, x->line, "CDATA sections are not supported");
			goto error;
		}
		if (at(x, "<?") || at(x, "<!")) {
			rc = fail(x->pe, x->line, "unexpected markup '%.2s' inside <%s>", x->p, n->name);
			goto error;
		}
		if (*x->p == '<') {
			struct nrr_xml_node *c = NULL;
			rc = read_element(x, depth + 1, &c);
			if (rc < 0)
				goto error;
			rc = add_child(n, c);
			if (rc < 0) {
				node_free(c);
				goto error;
			}
			continue;
		}
		rc = fail(x->pe, x->line, "unexpected text inside <%s> (only elements are allowed)", n->name);
		goto error;
	}
error:
	node_free(n);
	return rc;
}

static int parse_document(struct xr *x, struct nrr_xml_node **root)
{
	*root = NULL;
	if (at(x, "\xef\xbb\xbf"))
		x->p += 3;
	if (at(x, "<?xml")) {
		int line = x->line;
		while (x->p < x->end && !at(x, "?>"))
			adv(x, 1);
		if (x->p >= x->end)
			return fail(x->pe, line, "XML declaration is not closed (missing '?>')");
		adv(x, 2);
	}
	for (;;) {
		skip_ws(x);
		if (x->p >= x->end)
			break;
		if (at(x, "<!--")) {
			int rc = skip_comment(x);
			if (rc < 0)
				return rc;
			continue;
		}
		if (at(x, "<?"))
			return fail(x->pe, x->line, "'<?' is only allowed as the XML declaration at the start");
		if (at(x, "<!"))
			return fail(x->pe, x->line, "DOCTYPE and other '<!' markup are not supported");
		if (*x->p != '<')
			return fail(x->pe, x->line, "unexpected text outside the root element");
		if (*root)
			return fail(x->pe, x->line, "a second root element (only one is allowed)");
		int rc = read_element(x, 0, root);
		if (rc < 0)
			return rc;
	}
	if (!*root)
		return fail(x->pe, x->line, "no root element (empty file?)");
	return 0;
}

/* ---- numbers ----------------------------------------------------------- */
static int parse_int(const char *s, long lo, long hi, long *out)
{
	if (!s || !*s)
		return -1;
	char *e;
	errno = 0;
	long v = strtol(s, &e, 0);
	if (errno || *e || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int need_int(struct perr *pe, const struct nrr_xml_node *n, const char *attr, long lo, long hi,
		    int required, long def, long *out)
{
	const char *v = nrr_xml_attr(n, attr);
	if (!v) {
		if (required)
			return fail(pe, n->line, "<%s> needs attribute %s=", n->name, attr);
		*out = def;
		return 0;
	}
	if (parse_int(v, lo, hi, out) < 0)
		return fail(pe, n->line, "<%s %s=\"%s\">: not an integer in [%ld, %ld]", n->name, attr, v,
			    lo, hi);
	return 0;
}

int nrr_topo_norm_busid(const char *in, char *out, size_t outlen)
{
	unsigned long dom = 0, bus, dev, fn;
	char tail;
	if (!in || outlen < 13)
		return -EINVAL;
	int colons = 0;
	for (const char *c = in; *c; c++)
		colons += *c == ':';
	if (colons == 2) {
		if (sscanf(in, "%lx:%lx:%lx.%lx%c", &dom, &bus, &dev, &fn, &tail) != 4)
			return -EINVAL;
	} else if (colons == 1) {
		if (sscanf(in, "%lx:%lx.%lx%c", &bus, &dev, &fn, &tail) != 3)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
		return -EINVAL;
	snprintf(out, outlen, "%04lx:%02lx:%02lx.%lx", dom, bus, dev, fn);
	return 0;
}

/* ---- extraction -------------------------------------------------------- */
static void make_uuid(const nrr_topo *t, int host, const nrr_topo_gpu *g, uint8_t uuid[16])
{
	char key[256];
	int n = snprintf(key, sizeof(key), "ncclrr/%s/%d/%s/%d/%s", t->name, host, t->hosts[host].name,
			 g->dev, g->busid);
	/* (the first seed is not FNV's offset basis: it is kept, as the UUIDs
	 * a topology gives its GPUs must stay what earlier traces recorded) */
	uint64_t a = nrr_hash(key, (size_t)n, 1469598103934665603ull);
	uint64_t b = nrr_hash(key, (size_t)n, a ^ 0x9e3779b97f4a7c15ull);
	for (int i = 0; i < 8; i++) {
		uuid[i] = (uint8_t)(a >> (8 * i));
		uuid[8 + i] = (uint8_t)(b >> (8 * i));
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40); /* version 4 style */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}

struct walk {
	struct perr *pe;
	nrr_topo_host *h;
	int gcap, ncap;
};

static int grow(void **arr, int *cap, int n, size_t sz)
{
	if (n < *cap)
		return 0;
	int nc = *cap ? *cap * 2 : 8;
	void *p = realloc(*arr, (size_t)nc * sz);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = nc;
	return 0;
}

static const struct nrr_xml_node *ancestor(const struct nrr_xml_node *n, const char *name)
{
	for (n = n->parent; n; n = n->parent)
		if (strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

static int add_gpu(struct walk *w, const struct nrr_xml_node *n)
{
	struct perr *pe = w->pe;
	const struct nrr_xml_node *pci = n->parent;
	if (!pci || strcmp(pci->name, "pci") != 0)
		return fail(pe, n->line, "<gpu> must be the child of a <pci busid=...> element");
	const char *busid = nrr_xml_attr(pci, "busid");
	if (!busid)
		return fail(pe, pci->line, "<pci> holding a <gpu> needs attribute busid=");
	int rc = grow((void **)&w->h->gpus, &w->gcap, w->h->ngpus, sizeof(nrr_topo_gpu));
	if (rc < 0)
		return rc;
	nrr_topo_gpu *g = &w->h->gpus[w->h->ngpus];
	memset(g, 0, sizeof(*g));
	if (nrr_topo_norm_busid(busid, g->busid, sizeof(g->busid)) < 0)
		return fail(pe, pci->line, "bad PCI bus id \"%s\" (expected DDDD:BB:DD.F)", busid);
	sscanf(g->busid, "%x:%x:%x.%x", (unsigned *)&g->domain, (unsigned *)&g->bus,
	       (unsigned *)&g->device, (unsigned *)&g->function);
	long v;
	if ((rc = need_int(pe, n, "dev", 0, 1023, 1, 0, &v)) < 0)
		return rc;
	g->dev = (int)v;
	if ((rc = need_int(pe, n, "sm", 10, 1000, 1, 0, &v)) < 0)
		return rc;
	g->sm = (int)v;
	if ((rc = need_int(pe, n, "rank", -1, INT_MAX, 0, -1, &v)) < 0)
		return rc;
	g->rank = (int)v;
	if ((rc = need_int(pe, n, "gdr", 0, 1, 0, 0, &v)) < 0)
		return rc;
	g->gdr = (int)v;
	const char *dv = nrr_xml_attr(pci, "device");
	snprintf(g->pci_device_id, sizeof(g->pci_device_id), "%s", dv ? dv : "0x2330");
	g->numa = -1;
	const struct nrr_xml_node *cpu = ancestor(n, "cpu");
	if (cpu) {
		if ((rc = need_int(pe, cpu, "numaid", -1, 4096, 0, -1, &v)) < 0)
			return rc;
		g->numa = (int)v;
		const char *aff = nrr_xml_attr(cpu, "affinity");
		if (aff)
			snprintf(g->cpu_affinity, sizeof(g->cpu_affinity), "%s", aff);
	}
	for (int i = 0; i < n->nchildren; i++) {
		const struct nrr_xml_node *c = n->children[i];
		if (strcmp(c->name, "nvlink") != 0)
			continue;
		if (g->nnvlinks >= NRR_TOPO_MAX_NVLINKS)
			return fail(pe, c->line, "more than %d <nvlink> elements in one <gpu>",
				    NRR_TOPO_MAX_NVLINKS);
		nrr_topo_nvlink *l = &g->nvlinks[g->nnvlinks];
		const char *tgt = nrr_xml_attr(c, "target");
		if (!tgt)
			return fail(pe, c->line, "<nvlink> needs attribute target=");
		if (nrr_topo_norm_busid(tgt, l->target, sizeof(l->target)) < 0)
			return fail(pe, c->line, "bad <nvlink target=\"%s\"> (expected a PCI bus id)", tgt);
		if ((rc = need_int(pe, c, "count", 1, 64, 1, 0, &v)) < 0)
			return rc;
		l->count = (int)v;
		const char *tc = nrr_xml_attr(c, "tclass");
		if (!tc)
			return fail(pe, c->line, "<nvlink> needs attribute tclass= (0x030200 GPU, 0x068000 NVSwitch, 0x068001 CPU)");
		char *e;
		unsigned long tcv = strtoul(tc, &e, 16);
		if (*e || tcv > 0xffffff)
			return fail(pe, c->line, "bad <nvlink tclass=\"%s\">", tc);
		l->tclass = (unsigned)tcv;
		l->peer_gpu = -1;
		g->nvlink_total += l->count;
		g->nnvlinks++;
	}
	w->h->ngpus++;
	return 0;
}

/* "pci0000:15/0000:15:00.0/0000:16:00.0": the <pci> elements enclosing
 * @n, outermost first, under a root named after the outermost's domain
 * and bus, as Linux names its PCI host bridges under /sys/devices */
static int nic_pci_path(struct perr *pe, const struct nrr_xml_node *n, char *out, size_t size)
{
	const struct nrr_xml_node *chain[32];
	int depth = 0;
	for (const struct nrr_xml_node *p = ancestor(n, "pci"); p; p = ancestor(p, "pci")) {
		if (depth == (int)(sizeof(chain) / sizeof(chain[0])))
			return fail(pe, n->line, "<net> nested in more than %d <pci> elements", depth);
		chain[depth++] = p;
	}
	out[0] = 0;
	size_t len = 0;
	for (int i = depth - 1; i >= 0; i--) {
		char b[32];
		/* walk_system checked every busid before reaching a <net> */
		nrr_topo_norm_busid(nrr_xml_attr(chain[i], "busid"), b, sizeof(b));
		int n1 = i == depth - 1 ? snprintf(out + len, size - len, "pci%.7s/%s", b, b)
					: snprintf(out + len, size - len, "/%s", b);
		if (n1 < 0 || (size_t)n1 >= size - len)
			return fail(pe, n->line, "<net>: PCI path longer than %zu bytes", size - 1);
		len += (size_t)n1;
	}
	return 0;
}

static int add_net(struct walk *w, const struct nrr_xml_node *n)
{
	struct perr *pe = w->pe;
	int rc = grow((void **)&w->h->nics, &w->ncap, w->h->nnics, sizeof(nrr_topo_nic));
	if (rc < 0)
		return rc;
	nrr_topo_nic *nic = &w->h->nics[w->h->nnics];
	memset(nic, 0, sizeof(*nic));
	const char *name = nrr_xml_attr(n, "name");
	if (!name || !*name)
		return fail(pe, n->line, "<net> needs attribute name=");
	if (strlen(name) >= sizeof(nic->name))
		return fail(pe, n->line, "<net name=\"%s\">: name too long", name);
	snprintf(nic->name, sizeof(nic->name), "%s", name);
	long v;
	if ((rc = need_int(pe, n, "dev", 0, 1023, 1, 0, &v)) < 0)
		return rc;
	nic->dev = (int)v;
	if ((rc = need_int(pe, n, "speed", 0, INT_MAX, 0, 0, &v)) < 0)
		return rc;
	nic->speed = (int)v;
	if ((rc = need_int(pe, n, "port", 0, 255, 0, 1, &v)) < 0)
		return rc;
	nic->port = (int)v;
	if ((rc = need_int(pe, n, "gdr", 0, 1, 0, 0, &v)) < 0)
		return rc;
	nic->gdr = (int)v;
	if ((rc = need_int(pe, n, "mtu", 256, 4096, 0, 4096, &v)) < 0)
		return rc;
	if (v & (v - 1))
		return fail(pe, n->line, "<net mtu=\"%ld\">: the MTU is one of 256, 512, 1024, 2048, 4096", v);
	nic->mtu = (int)v;
	const char *ll = nrr_xml_attr(n, "link_layer");
	if (ll && strcmp(ll, "InfiniBand") != 0 && strcmp(ll, "Ethernet") != 0)
		return fail(pe, n->line, "<net link_layer=\"%s\">: link_layer is InfiniBand or Ethernet", ll);
	nic->ethernet = ll && strcmp(ll, "Ethernet") == 0;
	const char *guid = nrr_xml_attr(n, "guid");
	snprintf(nic->guid, sizeof(nic->guid), "%s", guid ? guid : "");
	const struct nrr_xml_node *pci = ancestor(n, "pci");
	const char *b = pci ? nrr_xml_attr(pci, "busid") : NULL;
	if (b && nrr_topo_norm_busid(b, nic->busid, sizeof(nic->busid)) < 0)
		return fail(pe, pci->line, "bad PCI bus id \"%s\"", b);
	if ((rc = nic_pci_path(pe, n, nic->pci_path, sizeof(nic->pci_path))) < 0)
		return rc;
	w->h->nnics++;
	return 0;
}

static int walk_system(struct walk *w, const struct nrr_xml_node *n)
{
	int rc;
	if (strcmp(n->name, "pci") == 0) {
		const char *b = nrr_xml_attr(n, "busid");
		char tmp[32];
		if (!b)
			return fail(w->pe, n->line, "<pci> needs attribute busid=");
		if (nrr_topo_norm_busid(b, tmp, sizeof(tmp)) < 0)
			return fail(w->pe, n->line, "bad PCI bus id \"%s\" (expected DDDD:BB:DD.F)", b);
	} else if (strcmp(n->name, "gpu") == 0) {
		if ((rc = add_gpu(w, n)) < 0)
			return rc;
	} else if (strcmp(n->name, "net") == 0) {
		if ((rc = add_net(w, n)) < 0)
			return rc;
	}
	for (int i = 0; i < n->nchildren; i++)
		if ((rc = walk_system(w, n->children[i])) < 0)
			return rc;
	return 0;
}

static int cmp_gpu(const void *a, const void *b)
{
	return ((const nrr_topo_gpu *)a)->dev - ((const nrr_topo_gpu *)b)->dev;
}

static int gpu_line(const struct nrr_xml_node *n, int dev)
{
	if (strcmp(n->name, "gpu") == 0) {
		long v;
		const char *d = nrr_xml_attr(n, "dev");
		if (d && parse_int(d, 0, 1023, &v) == 0 && v == dev)
			return n->line;
	}
	for (int i = 0; i < n->nchildren; i++) {
		int l = gpu_line(n->children[i], dev);
		if (l > 0)
			return l;
	}
	return 0;
}

/* <host memlock=>: "unlimited" (the default, as production clusters run)
 * or bytes, with an optional k, m or g (KiB, MiB, GiB) */
static int parse_memlock(struct perr *pe, const struct nrr_xml_node *hn, long long *out)
{
	const char *v = nrr_xml_attr(hn, "memlock");
	*out = -1;
	if (!v || strcmp(v, "unlimited") == 0)
		return 0;
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (errno || end == v || *end || n < 0 || n > (LLONG_MAX >> shift))
		return fail(pe, hn->line, "<host memlock=\"%s\">: give \"unlimited\" or a size in bytes, "
			    "with k, m or g for KiB, MiB, GiB (e.g. 64m)", v);
	*out = n << shift;
	return 0;
}

static int load_host(nrr_topo *t, int hi, struct nrr_xml_node *sys, struct perr *pe)
{
	nrr_topo_host *h = &t->hosts[hi];
	h->system = sys;
	const char *ver = nrr_xml_attr(sys, "version");
	if (!ver)
		return fail(pe, sys->line, "<system> needs attribute version=\"1\" (NCCL refuses the file otherwise)");
	if (strcmp(ver, "1") != 0)
		return fail(pe, sys->line, "<system version=\"%s\">: NCCL topology files have version 1", ver);
	int ncpu = 0;
	for (int i = 0; i < sys->nchildren; i++) {
		const struct nrr_xml_node *c = sys->children[i];
		if (strcmp(c->name, "cpu") != 0)
			return fail(pe, c->line, "<%s> inside <system>: only <cpu> elements are allowed there", c->name);
		long v;
		int rc = need_int(pe, c, "numaid", -1, 4096, 1, 0, &v);
		if (rc < 0)
			return rc;
		const char *arch = nrr_xml_attr(c, "arch");
		if (!arch)
			return fail(pe, c->line, "<cpu> needs attribute arch= (x86_64, arm64 or ppc64)");
		if (strcmp(arch, "x86_64") == 0) {
			const char *vendor = nrr_xml_attr(c, "vendor");
			if (!vendor)
				return fail(pe, c->line, "<cpu arch=\"x86_64\"> needs attribute vendor= (e.g. GenuineIntel)");
			if (strcmp(vendor, "GenuineIntel") == 0 &&
			    (!nrr_xml_attr(c, "familyid") || !nrr_xml_attr(c, "modelid")))
				return fail(pe, c->line, "<cpu vendor=\"GenuineIntel\"> needs familyid= and modelid=");
		}
		ncpu++;
	}
	if (ncpu == 0)
		return fail(pe, sys->line, "<system> has no <cpu> element");
	struct walk w = { .pe = pe, .h = h };
	int rc = walk_system(&w, sys);
	if (rc < 0)
		return rc;
	if (h->ngpus == 0)
		return fail(pe, sys->line, "host \"%s\" has no <gpu>", h->name);
	qsort(h->gpus, (size_t)h->ngpus, sizeof(*h->gpus), cmp_gpu);
	for (int i = 0; i < h->ngpus; i++) {
		if (h->gpus[i].dev != i)
			return fail(pe, gpu_line(sys, h->gpus[i].dev),
				    "host \"%s\": <gpu dev=> values must be 0..%d, each once (dev=%d %s)",
				    h->name, h->ngpus - 1, h->gpus[i].dev,
				    i > 0 && h->gpus[i - 1].dev == h->gpus[i].dev ? "appears twice" : "is out of order");
		for (int j = 0; j < i; j++)
			if (strcmp(h->gpus[i].busid, h->gpus[j].busid) == 0)
				return fail(pe, gpu_line(sys, i), "host \"%s\": GPUs %d and %d have the same bus id %s",
					    h->name, j, i, h->gpus[i].busid);
	}
	for (int i = 0; i < h->ngpus; i++) {
		nrr_topo_gpu *g = &h->gpus[i];
		make_uuid(t, hi, g, g->uuid);
		for (int l = 0; l < g->nnvlinks; l++) {
			for (int j = 0; j < h->ngpus; j++)
				if (strcmp(g->nvlinks[l].target, h->gpus[j].busid) == 0)
					g->nvlinks[l].peer_gpu = j;
			if ((g->nvlinks[l].tclass >> 16) == 0x03 && g->nvlinks[l].peer_gpu < 0)
				return fail(pe, gpu_line(sys, i), "GPU %d: <nvlink target=\"%s\"> names no GPU of host \"%s\"",
					    i, g->nvlinks[l].target, h->name);
		}
	}
	return 0;
}

static int build(nrr_topo *t, struct nrr_xml_node *root, struct perr *pe)
{
	t->root = root;
	if (strcmp(root->name, "system") == 0) {
		/* a bare NCCL topology: one host */
		snprintf(t->name, sizeof(t->name), "system");
		t->hosts = calloc(1, sizeof(*t->hosts));
		if (!t->hosts)
			return -ENOMEM;
		t->nhosts = 1;
		snprintf(t->hosts[0].name, sizeof(t->hosts[0].name), "node0");
		t->hosts[0].line = root->line;
		t->hosts[0].memlock = -1;
		return load_host(t, 0, root, pe);
	}
	if (strcmp(root->name, "cluster") != 0)
		return fail(pe, root->line, "root element is <%s>, expected <cluster> (or a bare <system>)", root->name);
	const char *cn = nrr_xml_attr(root, "name");
	if (cn && strlen(cn) >= sizeof(t->name))
		return fail(pe, root->line, "<cluster name=\"%s\">: name longer than %zu characters", cn,
			    sizeof(t->name) - 1);
	snprintf(t->name, sizeof(t->name), "%s", cn ? cn : "cluster");
	for (int i = 0; i < root->nchildren; i++)
		if (strcmp(root->children[i]->name, "host") != 0)
			return fail(pe, root->children[i]->line, "<%s> inside <cluster>: only <host> elements are allowed there",
				    root->children[i]->name);
	if (root->nchildren == 0)
		return fail(pe, root->line, "<cluster> has no <host>");
	t->hosts = calloc((size_t)root->nchildren, sizeof(*t->hosts));
	if (!t->hosts)
		return -ENOMEM;
	for (int i = 0; i < root->nchildren; i++) {
		struct nrr_xml_node *hn = root->children[i];
		nrr_topo_host *h = &t->hosts[i];
		t->nhosts = i + 1;
		h->line = hn->line;
		const char *name = nrr_xml_attr(hn, "name");
		if (!name || !*name)
			return fail(pe, hn->line, "<host> needs attribute name=");
		if (strlen(name) >= sizeof(h->name))
			return fail(pe, hn->line, "<host name=\"%s\">: name longer than %zu characters", name,
				    sizeof(h->name) - 1);
		for (const char *c = name; *c; c++)
			if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.')
				return fail(pe, hn->line, "<host name=\"%s\">: use letters, digits, '-', '_' and '.' only "
					    "(the name becomes NCCL_HOSTID)", name);
		snprintf(h->name, sizeof(h->name), "%s", name);
		int rc = parse_memlock(pe, hn, &h->memlock);
		if (rc < 0)
			return rc;
		for (int j = 0; j < i; j++)
			if (strcmp(t->hosts[j].name, name) == 0)
				return fail(pe, hn->line, "host name \"%s\" already used at line %d", name,
					    t->hosts[j].line);
		if (t->only_host >= 0 && i != t->only_host)
			continue;   /* not read (nrr_topo_load_host) */
		if (hn->nchildren != 1 || strcmp(hn->children[0]->name, "system") != 0)
			return fail(pe, hn->nchildren ? hn->children[hn->nchildren > 1 ? 1 : 0]->line : hn->line,
				    "<host name=\"%s\"> must hold exactly one <system> element", name);
		rc = load_host(t, i, hn->children[0], pe);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int load_buffer(const char *name, const char *buf, size_t len, int keep, nrr_topo **out, char *err,
		       size_t errlen)
{
	struct perr pe = { .file = name ? name : "(buffer)", .err = err, .errlen = errlen };
	if (err && errlen)
		err[0] = 0;
	*out = NULL;
	if (memchr(buf, 0, len))
		return fail(&pe, 0, "contains a NUL byte (not a text file)");
	struct xr x = { .p = buf, .end = buf + len, .line = 1, .pe = &pe, .keep = keep };
	struct nrr_xml_node *root = NULL;
	int rc = parse_document(&x, &root);
	if (rc < 0) {
		node_free(root);
		if (!pe.set)
			fail(&pe, x.line, "%s", strerror(-rc));
		return rc;
	}
	nrr_topo *t = calloc(1, sizeof(*t));
	if (!t) {
		node_free(root);
		return fail(&pe, 0, "out of memory"), -ENOMEM;
	}
	snprintf(t->path, sizeof(t->path), "%s", pe.file);
	t->only_host = x.keep;   /* (-1 for a bare <system>: read_element) */
	rc = build(t, root, &pe);
	if (rc < 0) {
		if (!pe.set)
			fail(&pe, 0, "%s", strerror(-rc));
		nrr_topo_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int nrr_topo_load_buffer(const char *name, const char *buf, size_t len, nrr_topo **out, char *err,
			 size_t errlen)
{
	return load_buffer(name, buf, len, -1, out, err, errlen);
}

/* The child of <cluster> that nrr_topo_load_host reads in full: none for
 * a host before the first (-1 would mean all) */
static int keep_host(int host)
{
	return host < 0 ? INT_MAX : host;
}

int nrr_topo_load_host_buffer(const char *name, const char *buf, size_t len, int host, nrr_topo **out,
			      char *err, size_t errlen)
{
	return load_buffer(name, buf, len, keep_host(host), out, err, errlen);
}

static int load_file(const char *path, int keep, nrr_topo **out, char *err, size_t errlen)
{
	struct perr pe = { .file = path ? path : "(null)", .err = err, .errlen = errlen };
	*out = NULL;
	if (err && errlen)
		err[0] = 0;
	if (!path)
		return fail(&pe, 0, "no file name"), -EINVAL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		fail(&pe, 0, "cannot open: %s", strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)XML_MAX_FILE) {
		int e = errno ? errno : EINVAL;
		close(fd);
		fail(&pe, 0, "not a regular file of at most %u MiB", XML_MAX_FILE >> 20);
		return -e;
	}
	/* mapped, not read: the pages are the page cache's, shared by every
	 * process of a virtual cluster loading the same file */
	size_t len = (size_t)st.st_size;
	char *buf = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : "";
	int e = errno;
	close(fd);
	if (buf == MAP_FAILED) {
		fail(&pe, 0, "cannot read: %s", strerror(e));
		return -e;
	}
	int rc = load_buffer(path, buf, len, keep, out, err, errlen);
	if (len)
		munmap(buf, len);
	return rc;
}

int nrr_topo_load(const char *path, nrr_topo **out, char *err, size_t errlen)
{
	return load_file(path, -1, out, err, errlen);
}

int nrr_topo_load_host(const char *path, int host, nrr_topo **out, char *err, size_t errlen)
{
	return load_file(path, keep_host(host), out, err, errlen);
}

void nrr_topo_free(nrr_topo *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->nhosts; i++) {
		free(t->hosts[i].gpus);
		free(t->hosts[i].nics);
	}
	free(t->hosts);
	node_free(t->root);
	free(t);
}

int nrr_topo_nhosts(const nrr_topo *t)
{
	return t ? t->nhosts : 0;
}

int nrr_topo_gpus_per_host(const nrr_topo *t)
{
	if (!t || t->nhosts == 0)
		return 0;
	int m = INT_MAX;
	for (int i = 0; i < t->nhosts; i++)
		if ((t->only_host < 0 || i == t->only_host) && t->hosts[i].ngpus < m)
			m = t->hosts[i].ngpus;
	return m == INT_MAX ? 0 : m;
}

const char *nrr_topo_host_name(const nrr_topo *t, int host)
{
	if (!t || host < 0 || host >= t->nhosts)
		return NULL;
	return t->hosts[host].name;
}

/* ---- writer ------------------------------------------------------------ */
struct sbuf {
	char *p;
	size_t n, cap;
	int oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap : 4096;
		while (b->n + n + 1 > nc)
			nc *= 2;
		char *np = realloc(b->p, nc);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

/* NCCL's own reader (src/graph/xml.cc) is simpler than XML: it knows no
 * entities, no tabs, no declaration, and at most 16 attributes of 255
 * characters. The writer emits exactly that dialect, and refuses what NCCL
 * would misread. */
static int write_node(struct sbuf *b, const struct nrr_xml_node *n, int indent, const char **bad)
{
	for (int i = 0; i < indent; i++)
		sb_add(b, "  ", 2);
	sb_add(b, "<", 1);
	sb_str(b, n->name);
	if (n->nattrs > 16) {
		*bad = n->name;
		return -E2BIG;
	}
	for (int i = 0; i < n->nattrs; i++) {
		const char *v = n->attrs[i].value;
		if (strpbrk(v, "\"<>&\n\r\t") || strlen(v) > 255 || strlen(n->attrs[i].name) > 255) {
			*bad = n->attrs[i].name;
			return -EINVAL;
		}
		/* a NIC's GPUDirect RDMA is NCCL's own finding, as on a real
		 * host (peer memory, or dma-buf with NCCL_DMABUF_ENABLE): NCCL
		 * keeps a gdr="1" of NCCL_TOPO_FILE over it, so it is left out;
		 * gdr="0" (the topology denies it) stays */
		if (strcmp(n->name, "net") == 0 && strcmp(n->attrs[i].name, "gdr") == 0 && strcmp(v, "0") != 0)
			continue;
		sb_add(b, " ", 1);
		sb_str(b, n->attrs[i].name);
		sb_add(b, "=\"", 2);
		sb_str(b, v);
		sb_add(b, "\"", 1);
	}
	if (n->nchildren == 0) {
		sb_add(b, "/>\n", 3);
		return 0;
	}
	sb_add(b, ">\n", 2);
	for (int i = 0; i < n->nchildren; i++) {
		int rc = write_node(b, n->children[i], indent + 1, bad);
		if (rc < 0)
			return rc;
	}
	for (int i = 0; i < indent; i++)
		sb_add(b, "  ", 2);
	sb_add(b, "</", 2);
	sb_str(b, n->name);
	sb_add(b, ">\n", 2);
	return 0;
}

static int host_string(const nrr_topo *t, int host, char **out, size_t *len, const char **bad)
{
	struct sbuf b = { 0 };
	int rc = write_node(&b, t->hosts[host].system, 0, bad);
	if (rc == 0 && b.oom)
		rc = -ENOMEM;
	if (rc < 0) {
		free(b.p);
		return rc;
	}
	*out = b.p;
	if (len)
		*len = b.n;
	return 0;
}

int nrr_topo_host_xml_string(const nrr_topo *t, int host, char **out, size_t *len)
{
	const char *bad = NULL;
	if (!t || host < 0 || host >= t->nhosts)
		return -EINVAL;
	return host_string(t, host, out, len, &bad);
}

int nrr_topo_write_host_xml(const nrr_topo *t, int host, const char *path, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!t || !path || host < 0 || host >= t->nhosts) {
		if (err)
			snprintf(err, errlen, "%s: no host %d in the cluster (it has %d)", path ? path : "(null)",
				 host, t ? t->nhosts : 0);
		return -EINVAL;
	}
	char *s = NULL;
	size_t n = 0;
	const char *bad = "";
	int rc = host_string(t, host, &s, &n, &bad);
	if (rc < 0) {
		if (err)
			snprintf(err, errlen, "%s: host \"%s\": cannot be written in NCCL's topology dialect "
				 "(attribute or element '%s': %s)", t->path, t->hosts[host].name, bad,
				 rc == -ENOMEM ? "out of memory" : "NCCL accepts at most 16 attributes of 255 "
				 "characters, without quotes, '<', '>', '&', tabs or newlines");
		return rc;
	}
	char tmp[PATH_MAX];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp)) {
		free(s);
		if (err)
			snprintf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		if (err)
			snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(-rc));
		free(s);
		return rc;
	}
	size_t off = 0;
	while (off < n) {
		ssize_t w = write(fd, s + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			if (err)
				snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(-rc));
			close(fd);
			unlink(tmp);
			free(s);
			return rc;
		}
		off += (size_t)w;
	}
	free(s);
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		rc = -errno;
		if (err)
			snprintf(err, errlen, "cannot write %s: %s", path, strerror(-rc));
		unlink(tmp);
		return rc;
	}
	return 0;
}

/* ---- the built-in default ---------------------------------------------- */
int nrr_topo_default(nrr_topo **out, char *err, size_t errlen)
{
	static const int buses[8] = { 0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb };
	struct sbuf b = { 0 };
	char line[512];
	sb_str(&b, "<cluster name=\"default_1node_8gpu\"><host name=\"node0\"><system version=\"1\">\n");
	for (int s = 0; s < 2; s++) {
		snprintf(line, sizeof(line),
			 "<cpu numaid=\"%d\" affinity=\"%s\" arch=\"x86_64\" vendor=\"GenuineIntel\" "
			 "familyid=\"6\" modelid=\"143\">\n", s,
			 s == 0 ? "00000000,0000ffff,ffffffff" : "ffffffff,ffff0000,00000000");
		sb_str(&b, line);
		for (int g = 4 * s; g < 4 * s + 4; g++) {
			snprintf(line, sizeof(line),
				 "<pci busid=\"0000:%02x:00.0\" class=\"0x060400\" vendor=\"0x10b5\" device=\"0xc030\" "
				 "subsystem_vendor=\"0x10b5\" subsystem_device=\"0x0000\" link_speed=\"32.0 GT/s PCIe\" "
				 "link_width=\"16\">\n", buses[g] - 3);
			sb_str(&b, line);
			snprintf(line, sizeof(line),
				 "<pci busid=\"0000:%02x:00.0\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x2330\" "
				 "subsystem_vendor=\"0x10de\" subsystem_device=\"0x16c1\" link_speed=\"32.0 GT/s PCIe\" "
				 "link_width=\"16\"><gpu dev=\"%d\" sm=\"90\" rank=\"%d\" gdr=\"1\">"
				 "<nvlink target=\"0000:ff:00.0\" count=\"18\" tclass=\"0x068000\"/></gpu></pci>\n",
				 buses[g], g, g);
			sb_str(&b, line);
			snprintf(line, sizeof(line),
				 "<pci busid=\"0000:%02x:00.0\" class=\"0x020700\" vendor=\"0x15b3\" device=\"0x1021\" "
				 "subsystem_vendor=\"0x15b3\" subsystem_device=\"0x0023\" link_speed=\"32.0 GT/s PCIe\" "
				 "link_width=\"16\"><nic><net name=\"mlx5_%d\" dev=\"%d\" speed=\"400000\" port=\"1\" "
				 "latency=\"0.000000\" guid=\"0x%016llx\" maxconn=\"131072\" gdr=\"1\"/></nic></pci>\n",
				 buses[g] - 2, g, g, 0xb83f0000ec0e5d00ull | (unsigned)g);
			sb_str(&b, line);
			sb_str(&b, "</pci>\n");
		}
		sb_str(&b, "</cpu>\n");
	}
	sb_str(&b, "</system></host></cluster>\n");
	if (b.oom) {
		free(b.p);
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = nrr_topo_load_buffer("(built-in default topology)", b.p, b.n, out, err, errlen);
	free(b.p);
	return rc;
}
