/* SPDX-License-Identifier: MIT */
/*
 * test_addr_key.c - the keys recorded internet addresses go by in the
 * replay's tables (nrr_addr_key, nrr_conn_key, nrr_listen_keys): an IPv4
 * address and its IPv6 form (::ffff:a.b.c.d, a dual-stack socket's view)
 * are one endpoint; a connect finds a wildcard listener ([::], 0.0.0.0) on
 * its port; different endpoints never share a key.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "check.h"
#include "engine.h"

static size_t v4(const char *ip, int port, uint8_t *sa)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, ip, &a.sin_addr);
	memcpy(sa, &a, sizeof(a));
	return sizeof(a);
}

static size_t v6(const char *ip, int port, uint8_t *sa)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	inet_pton(AF_INET6, ip, &a.sin6_addr);
	memcpy(sa, &a, sizeof(a));
	return sizeof(a);
}

static size_t key(const uint8_t *sa, size_t len, uint8_t *k)
{
	return nrr_addr_key(sa, len, k);
}

static int same(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	uint8_t ka[NRR_XMAP_MAX], kb[NRR_XMAP_MAX];
	size_t la = key(a, al, ka), lb = key(b, bl, kb);
	return la == lb && !memcmp(ka, kb, la);
}

/* Is the key of @want among the listen keys of @dst, and at which place? */
static int listen_rank(const uint8_t *dst, size_t dl, const uint8_t *want, size_t wl)
{
	uint8_t keys[3][NRR_XMAP_MAX], k[NRR_XMAP_MAX];
	size_t lens[3], n = nrr_listen_keys(dst, dl, keys, lens), kl = key(want, wl, k);
	for (size_t i = 0; i < n; i++)
		if (lens[i] == kl && !memcmp(keys[i], k, kl))
			return (int)i;
	return -1;
}

int main(void)
{
	uint8_t a[64], b[64], c[64];
	size_t al, bl, cl;

	/* v4-mapped and IPv4: one endpoint */
	al = v6("::ffff:127.0.0.1", 50600, a);
	bl = v4("127.0.0.1", 50600, b);
	CHECK(same(a, al, b, bl), "[::ffff:127.0.0.1]:50600 and 127.0.0.1:50600 have different keys");
	/* ... but not another port, address, or a real IPv6 address */
	bl = v4("127.0.0.1", 50601, b);
	CHECK(!same(a, al, b, bl), "[::ffff:127.0.0.1]:50600 has the key of 127.0.0.1:50601");
	bl = v4("192.0.2.2", 50600, b);
	CHECK(!same(a, al, b, bl), "[::ffff:127.0.0.1]:50600 has the key of 192.0.2.2:50600");
	bl = v6("::1", 50600, b);
	CHECK(!same(a, al, b, bl), "[::ffff:127.0.0.1]:50600 has the key of [::1]:50600");
	bl = v6("::7f00:1", 50600, b);   /* IPv4-compatible (deprecated): not mapped */
	CHECK(!same(a, al, b, bl), "[::127.0.0.1]:50600 has the key of [::ffff:127.0.0.1]:50600");

	/* a connection seen from both ends of a dual-stack pair */
	uint8_t k1[2 * NRR_XMAP_MAX], k2[2 * NRR_XMAP_MAX];
	al = v6("::ffff:127.0.0.1", 50600, a);
	bl = v6("::ffff:127.0.0.1", 29533, b);
	size_t l1 = nrr_conn_key(a, al, b, bl, k1);
	al = v4("127.0.0.1", 50600, a);
	bl = v4("127.0.0.1", 29533, b);
	size_t l2 = nrr_conn_key(a, al, b, bl, k2);
	CHECK(l1 && l1 == l2 && !memcmp(k1, k2, l1), "a v4-mapped connection and its IPv4 form have different keys");

	/* where a connect to the TCPStore looks: its own address, 0.0.0.0, [::] */
	cl = v6("::ffff:127.0.0.1", 29533, c);
	bl = v4("127.0.0.1", 29533, b);
	CHECK(listen_rank(c, cl, b, bl) == 0, "a v4-mapped destination does not look for its IPv4 listener first");
	bl = v4("0.0.0.0", 29533, b);
	CHECK(listen_rank(c, cl, b, bl) == 1, "a v4-mapped destination does not look for 0.0.0.0 second");
	bl = v6("::", 29533, b);
	CHECK(listen_rank(c, cl, b, bl) == 2, "a v4-mapped destination does not find the dual-stack listener [::]");
	bl = v6("::", 29534, b);
	CHECK(listen_rank(c, cl, b, bl) < 0, "a destination finds a wildcard listener on another port");
	/* an IPv6 destination finds [::], never 0.0.0.0 (an IPv4-only socket) */
	cl = v6("fd00::2", 29533, c);
	bl = v6("::", 29533, b);
	CHECK(listen_rank(c, cl, b, bl) == 1, "an IPv6 destination does not find [::]");
	bl = v4("0.0.0.0", 29533, b);
	CHECK(listen_rank(c, cl, b, bl) < 0, "an IPv6 destination finds 0.0.0.0");
	/* a wildcard destination has no second key of its own kind */
	uint8_t keys[3][NRR_XMAP_MAX];
	size_t lens[3];
	cl = v6("::", 29533, c);
	CHECK(nrr_listen_keys(c, cl, keys, lens) == 1, "[::] has wildcard keys besides its own");
	cl = v4("0.0.0.0", 29533, c);
	CHECK(nrr_listen_keys(c, cl, keys, lens) == 2, "0.0.0.0 does not look for [::] after itself");
	/* not an internet address: its bytes, no wildcard */
	const uint8_t un[] = { AF_UNIX, 0, '/', 't', 'm', 'p' };
	CHECK(nrr_listen_keys(un, sizeof(un), keys, lens) == 1 && lens[0] == sizeof(un), "a UNIX address gets wildcard keys");
	/* short buffers are not read past their length */
	CHECK(nrr_addr_key(a, 4, keys[0]) == 4, "a 4-byte IPv4 address read as a whole one");
	return check_done("addr_key");
}
