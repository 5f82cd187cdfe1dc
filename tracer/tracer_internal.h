/* SPDX-License-Identifier: MIT */
/* tracer_internal.h - what the parts of libncclrr-trace.so share. */
#ifndef NCCLRR_TRACER_INTERNAL_H
#define NCCLRR_TRACER_INTERNAL_H

#include <poll.h>
#include <sys/select.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "ncclrr_config.h"
#include "nrr_api_gen.h"
#include "trace.h"

/* a hand-written hook that replaces a libc function for the program */
#define NRR_HOOK __attribute__((visibility("default")))

struct ibv_context;
typedef struct nrr_wrap_ent nrr_wrap_ent;

/* core.c */
bool nrr_trace_busy(void);
void nrr_trace_finish(void);
void nrr_trace_reopen(void);
int nrr_trace_dump(int timeout_ms, bool last);
/* How the trace ends (metadata `end`): async-signal-safe; @keep: not over
 * a note already given. */
void nrr_trace_end_note(const char *text, bool keep);
/* "exit STATUS" (not async-signal-safe) */
void nrr_trace_end_exit(int status);
int nrr_launcher_rank(const char **src);
/* The tracer's own descriptors (the trace file's, at a high number: see
 * the writer) are not the program's.  nrr_trace_own_fd: this process's
 * trace file descriptor, or -1.  nrr_trace_fd_guard: EBADF when the
 * program names it (close, dup*: untraced it would not be open), else 0.
 * nrr_trace_protect_fd: the program copies a descriptor over @fd (dup2,
 * dup3): when it is the trace file's, the writer moves to another number
 * first. */
int nrr_trace_own_fd(void);
int nrr_trace_fd_guard(int fd);
void nrr_trace_protect_fd(int fd);

/* hooks_dl.c */
void nrr_hooks_init(void);
void *nrr_real_dlsym(void *handle, const char *name);
/* The next definition of function @name after this library (what
 * dlsym(RTLD_NEXT) would answer us), found without any dl* call, so the
 * program's dlerror() state is left as it was; NULL if none. */
void *nrr_real_next(const char *name);
const nrr_wrap_ent *nrr_wrap_find(const char *name);
void nrr_cuda_procaddr(const char *symbol, void **pfn, int ret);
bool nrr_caller_is_nccl(const void *addr);

/* signals.c */
void nrr_signals_init(bool ring_mode);

/* sock.c: roles of sock_info are enum nrr_sock_role (nrt.h) */
void nrr_trace_child_forked(void);
bool nrr_sock_is(int fd);
bool nrr_sock_any(const struct pollfd *fds, unsigned long nfds);
bool nrr_sock_take(int fd);
void nrr_sock_new(int fd);
/* kinds of traced descriptors (values of the table) */
enum { NRR_FD_SOCKET = 1, NRR_FD_EPOLL = 2 };
void nrr_sock_mark(int fd, int kind);
bool nrr_sock_fdset(int nfds, const fd_set *r, const fd_set *w, const fd_set *x);
void nrr_sock_watch(int epfd, int ret);
bool nrr_sock_watched(int epfd);
bool nrr_sock_dup_any(int oldfd, int newfd);
void nrr_sock_dup(int oldfd, int ret);
void nrr_sock_fcntl(int fd, int cmd, int ret);
void nrr_sock_pair(int ret, const int *sv);
void nrr_sock_note(int fd, int ret, int role);
void nrr_sock_connect_done(int fd, int ret, int err);
void nrr_sock_data(int fd, const void *buf, long n, int sent);

/* hooks_nccl.c */
void nrr_nccl_init_begin(int rank, int nranks, const void *uid);
void nrr_nccl_comm(ncclComm_t *comm, const void *uid, int ret);
int nrr_nccl_version(void);   /* 22809 for 2.28.9; 0 while unknown */
/* Does the tracer decode the proxy RPCs of NCCL version @v (sock.c)?
 * @why (if not NULL) gets "decoded: NCCL 2.22.3; decoded: NCCL 2.19-2.28"
 * or "not decoded: NCCL 2.18.6; decoded: ...", the metadata proxy_rpc. */
bool nrr_proxy_decodes(int v, char *why, size_t len);

/* hooks_verbs.c */
void nrr_verbs_listed(void);
void nrr_verbs_opened(struct ibv_context *c);
void nrr_verbs_closed(struct ibv_context *c, int ret);

/* The LTTng backend (libncclrr-trace-lttng.so, preloaded with this one by
 * `ncclrr record --backend lttng`) is reached through its table, nrr_lt
 * (nrr_wrap_gen.h), which configure() (core.c) sets only when
 * NCCLRR_BACKEND=lttng: the tracer has no reference to the provider's
 * symbols, so the dynamic linker looks none up when loading it. */

#endif
