/* SPDX-License-Identifier: MIT */
/*
 * redact.h - what the tracer keeps out of a trace's metadata: secrets in
 * the recorded environment and command line, replaced by "<redacted>".
 *
 * A secret is:
 *   - the value of a variable or option whose name holds TOKEN, SECRET,
 *     PASSW, CREDENTIAL, APIKEY, API_KEY, PRIVATE, ACCESS_KEY or
 *     SESSION_KEY anywhere, or AUTH, AUTHORIZATION, PASS, PWD or COOKIE as
 *     a whole part (NCCL_AUTH is a secret's name, NCCL_AUTHX is not), unless
 *     it ends in FILE, PATH or DIR (TOKEN_FILE names where a secret is);
 *   - the password of USER:PASSWORD@HOST, with or without a scheme
 *     (postgres://u:p@db, admin:s3cret@db): user and host are kept;
 *   - a word that looks like a token: a known prefix (hf_, ghp_, glpat-,
 *     xoxb-, sk-, AKIA, npm_, eyJ, ...) and 8 or more token characters, or
 *     24 or more letters and digits mixed (a UUID, GPU-8b2c..., is none).
 * Command lines: --password=x, --password x, PASSWORD=x, and every word by
 * the value rules.
 */
#ifndef NRR_REDACT_H
#define NRR_REDACT_H

#include <stdbool.h>
#include <stddef.h>

/* Is a variable or option named @name (@len bytes) a secret's? */
bool nrr_secret_name(const char *name, size_t len);
/* The value of variable @name, redacted, into @out.  @return true when
 * something was redacted. */
bool nrr_redact_value(const char *name, size_t namelen, const char *value, char *out, size_t outlen);
/* A command line (arguments separated by single spaces), redacted, into
 * @out.  @return true when something was redacted. */
bool nrr_redact_cmdline(const char *cmd, char *out, size_t outlen);

#endif
