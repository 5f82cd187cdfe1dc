/* SPDX-License-Identifier: MIT */
/* cmds.h - the ncclrr subcommands.  Each lives in cli/cmd_NAME.c and is
 * listed once in the table in cli/main.c. */
#ifndef NCCLRR_CLI_CMDS_H
#define NCCLRR_CLI_CMDS_H

#include <stdio.h>

struct nrr_cmd {
	const char *name;
	const char *synopsis;  /* one line for `ncclrr --help` */
	const char *usage;     /* full text for `ncclrr NAME --help` */
	int (*fn)(int argc, char **argv);  /* argv[0] is NAME */
	unsigned flags;        /* NRR_CMD_* */
};

/* The command reads traces and takes --strict (without it, damaged
 * inputs are skipped: cli/inputs.h); the others that read traces (replay,
 * bisect) stop at the first damaged one. */
#define NRR_CMD_LENIENT 1u

/* Exit codes shared by every subcommand.  NRR_EXIT_SKIPPED takes the
 * place of 0 and 1 when a damaged input was skipped (main()). */
enum { NRR_EXIT_OK = 0, NRR_EXIT_DIFF = 1, NRR_EXIT_USAGE = 2, NRR_EXIT_SKIPPED = 3 };

/* The --help lines of the commands that skip damaged inputs: the option,
 * and the exit status it adds (one text, in every such command's help). */
#define NRR_USAGE_STRICT \
	"  --strict           stop at the first damaged input file or chunk (default:\n" \
	"                     name it, skip it, go on with the rest, exit status 3)\n"
#define NRR_USAGE_EXIT_SKIPPED \
	"3 a damaged input was named and skipped, the output covers the rest\n" \
	"(--strict stops there with 2 instead).\n"

int cmd_dump(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_bisect(int argc, char **argv);
int cmd_hang(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_nccl(int argc, char **argv);

extern const char cmd_dump_usage[];
extern const char cmd_stats_usage[];
extern const char cmd_run_usage[];
extern const char cmd_record_usage[];
extern const char cmd_diff_usage[];
extern const char cmd_bisect_usage[];
extern const char cmd_hang_usage[];
extern const char cmd_export_usage[];
extern const char cmd_replay_usage[];
extern const char cmd_nccl_usage[];

/* Handle --help / --version for @cmd if argv holds one; @return 1 if handled. */
int nrr_cli_common(const struct nrr_cmd *cmd, int argc, char **argv);
/* Print "ncclrr NAME: msg" and a hint to use --help; @return NRR_EXIT_USAGE. */
int nrr_cli_usage_error(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* An option getopt_long() refused (@c ':' for a missing value, else
 * unknown; the option string must start with ':', after any '+') or a
 * hand parser found without its value (@c ':'): "option '--rank' needs a
 * value" / "unknown option '--x'".  @return NRR_EXIT_USAGE. */
int nrr_cli_opt_error(const char *name, int c, const char *opt);
/* Find a subcommand by name, or NULL. */
const struct nrr_cmd *nrr_cli_find(const char *name);

#endif
