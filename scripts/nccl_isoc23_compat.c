/* SPDX-License-Identifier: MIT */
/*
 * nccl_isoc23_compat.c - linked into NCCL relinked from Debian's
 * libnccl_static.a (scripts/nccl.sh). Debian's newer toolchain compiled
 * NCCL against a glibc whose headers send strtol, sscanf and friends to
 * their C23 versions (__isoc23_*); Debian 12's glibc 2.36 has none of
 * them. For the formats NCCL parses, the C23 and classic versions agree
 * (they differ on "0b" prefixes and %b), so each forwards to the classic
 * function.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

long __isoc23_strtol(const char *s, char **end, int base);
long long __isoc23_strtoll(const char *s, char **end, int base);
unsigned long __isoc23_strtoul(const char *s, char **end, int base);
unsigned long long __isoc23_strtoull(const char *s, char **end, int base);
int __isoc23_sscanf(const char *s, const char *fmt, ...);
int __isoc23_fscanf(FILE *f, const char *fmt, ...);

long __isoc23_strtol(const char *s, char **end, int base)
{
	return strtol(s, end, base);
}

long long __isoc23_strtoll(const char *s, char **end, int base)
{
	return strtoll(s, end, base);
}

unsigned long __isoc23_strtoul(const char *s, char **end, int base)
{
	return strtoul(s, end, base);
}

unsigned long long __isoc23_strtoull(const char *s, char **end, int base)
{
	return strtoull(s, end, base);
}

int __isoc23_sscanf(const char *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsscanf(s, fmt, ap);
	va_end(ap);
	return n;
}

int __isoc23_fscanf(FILE *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vfscanf(f, fmt, ap);
	va_end(ap);
	return n;
}
