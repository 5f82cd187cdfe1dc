/* SPDX-License-Identifier: MIT */
/*
 * redact.c - what the tracer keeps out of a trace's metadata (redact.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "redact.h"

#define MARK "<redacted>"

static bool alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool nrr_secret_name(const char *name, size_t len)
{
	/* where a secret is, not the secret: TOKEN_FILE, --token-path */
	static const char *const where[] = { "FILE", "PATH", "DIR" };
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		size_t k = strlen(where[i]);
		if (len > k && !strncasecmp(name + len - k, where[i], k) &&
		    (name[len - k - 1] == '_' || name[len - k - 1] == '-'))
			return false;
	}
	/* anywhere in the name */
	static const char *const words[] = { "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "APIKEY", "API_KEY",
					     "PRIVATE", "ACCESS_KEY", "SESSION_KEY" };
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t k = strlen(words[i]);
		for (size_t j = 0; j + k <= len; j++)
			if (!strncasecmp(name + j, words[i], k))
				return true;
	}
	/* a whole part of it (NCCL_AUTH is one, NCCL_AUTHX is not) */
	static const char *const parts[] = { "AUTH", "AUTHORIZATION", "PASS", "PWD", "COOKIE" };
	for (size_t j = 0; j < len;) {
		size_t e = j;
		while (e < len && name[e] != '_' && name[e] != '-' && name[e] != '.')
			e++;
		for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
			if (e - j == strlen(parts[i]) && !strncasecmp(name + j, parts[i], e - j))
				return true;
		j = e + 1;
	}
	return false;
}

/* A word that is a token by its look: a known token prefix followed by 8
 * or more token characters, or 24 and more letters and digits mixed with
 * no path or address punctuation (a key). */
static bool token_word(const char *w, size_t n)
{
	static const char *const prefix[] = { "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
					      "glpat-", "xoxb-", "xoxp-", "xoxa-", "xapp-", "sk-", "AKIA", "ASIA",
					      "npm_", "pypi-", "ya29.", "eyJ" };
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++) {
		size_t k = strlen(prefix[i]);
		if (n >= k + 8 && !strncmp(w, prefix[i], k)) {
			size_t j = k;
			while (j < n && (alnum(w[j]) || w[j] == '_' || w[j] == '-' || w[j] == '.'))
				j++;
			if (j == n)
				return true;
		}
	}
	size_t alpha = 0, digit = 0, dash = 0, hex = 0;
	if (n < 24)
		return false;
	/* a UUID (GPU-8b2c1a3e-...) names a device, it opens nothing */
	for (size_t j = 0; j < n; j++) {
		char c = w[j];
		dash += c == '-';
		hex += (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
	}
	if (dash >= 4 && (hex + dash == n || (n > 4 && (!strncmp(w, "GPU-", 4) || !strncmp(w, "MIG-", 4)) &&
					       hex + dash + 3 >= n)))
		return false;
	for (size_t j = 0; j < n; j++) {
		char c = w[j];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
			alpha++;
		else if (c >= '0' && c <= '9')
			digit++;
		else if (c != '+' && c != '=' && c != '-' && c != '_')
			return false;
	}
	return alpha && digit;
}

/* Append @n bytes of @s to @out (at *@o, NUL kept). */
static void put(char *out, size_t outlen, size_t *o, const char *s, size_t n)
{
	if (!outlen)
		return;
	size_t room = outlen - 1 - (*o < outlen ? *o : outlen - 1);
	if (n > room)
		n = room;
	memcpy(out + *o, s, n);
	*o += n;
	out[*o] = 0;
}

/* One word of a value: a token is replaced whole; USER:PASSWORD@HOST (with
 * or without a scheme) keeps its user and host.  @return true when
 * something was redacted. */
static bool redact_word(const char *w, size_t n, char *out, size_t outlen, size_t *o)
{
	if (token_word(w, n)) {
		put(out, outlen, o, MARK, strlen(MARK));
		return true;
	}
	const char *at = memchr(w, '@', n);
	if (at) {
		const char *user = w, *s = NULL;
		for (const char *p = w; p + 3 <= at; p++)
			if (!memcmp(p, "://", 3)) {
				s = p;
				break;
			}
		if (s)
			user = s + 3;
		const char *colon = memchr(user, ':', (size_t)(at - user));
		if (colon && colon + 1 < at) {
			put(out, outlen, o, w, (size_t)(colon + 1 - w));
			put(out, outlen, o, MARK, strlen(MARK));
			put(out, outlen, o, at, (size_t)(w + n - at));
			return true;
		}
	}
	put(out, outlen, o, w, n);
	return false;
}

/* Words of @v separated by @seps, each through redact_word. */
static bool redact_words(const char *v, const char *seps, char *out, size_t outlen, size_t *o)
{
	bool any = false;
	for (const char *p = v; *p;) {
		size_t n = strcspn(p, seps);
		any |= redact_word(p, n, out, outlen, o);
		p += n;
		if (*p)
			put(out, outlen, o, p++, 1);
	}
	return any;
}

bool nrr_redact_value(const char *name, size_t namelen, const char *value, char *out, size_t outlen)
{
	size_t o = 0;
	if (outlen)
		out[0] = 0;
	if (nrr_secret_name(name, namelen) && *value) {
		put(out, outlen, &o, MARK, strlen(MARK));
		return true;
	}
	return redact_words(value, " ,;", out, outlen, &o);
}

bool nrr_redact_cmdline(const char *cmd, char *out, size_t outlen)
{
	size_t o = 0;
	bool any = false, next = false;   /* next: the word after --password */
	if (outlen)
		out[0] = 0;
	for (const char *p = cmd; *p;) {
		size_t n = strcspn(p, " ");
		const char *eq = memchr(p, '=', n);
		const char *name = p;
		while (name < p + n && *name == '-')
			name++;
		if (next && *p != '-') {
			put(out, outlen, &o, MARK, strlen(MARK));
			any = true;
			next = false;
		} else if (eq && nrr_secret_name(name, (size_t)(eq - name))) {
			/* --password=x, PASSWORD=x */
			put(out, outlen, &o, p, (size_t)(eq + 1 - p));
			put(out, outlen, &o, MARK, strlen(MARK));
			any = true;
			next = false;
		} else {
			next = *p == '-' && !eq && nrr_secret_name(name, n - (size_t)(name - p));
			if (eq) {
				put(out, outlen, &o, p, (size_t)(eq + 1 - p));
				char w[1024];
				size_t wl = n - (size_t)(eq + 1 - p) < sizeof(w) - 1 ? n - (size_t)(eq + 1 - p) : sizeof(w) - 1;
				memcpy(w, eq + 1, wl);
				w[wl] = 0;
				any |= redact_words(w, ",;", out, outlen, &o);
			} else {
				any |= redact_word(p, n, out, outlen, &o);
			}
		}
		p += n;
		if (*p)
			put(out, outlen, &o, p++, 1);
	}
	return any;
}
