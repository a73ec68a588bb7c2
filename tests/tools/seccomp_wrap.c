/* seccomp_wrap.c - runs a program under a seccomp filter that refuses some
 * system calls, the way Android's app sandbox refuses io_uring (for
 * tests/cli/seccomp.sh).
 *
 *   seccomp_wrap ACTION SYSCALL[,SYSCALL...] PROGRAM [ARGS...]
 *
 * ACTION: trap  (SECCOMP_RET_TRAP: the caller gets SIGSYS, whose default
 *               action ends the process, as on Android),
 *         kill  (SECCOMP_RET_KILL_PROCESS: ended, no handler can help),
 *         errno (SECCOMP_RET_ERRNO with EPERM).
 * SYSCALL: io_uring_setup, io_uring_enter or io_uring_register.
 * Every other call, and every call of another architecture's ABI, is
 * allowed. Sets PR_SET_NO_NEW_PRIVS (an unprivileged process must), installs
 * the filter with prctl(PR_SET_SECCOMP) and execs PROGRAM, which inherits
 * it. Exits 2 on bad arguments, 3 when the filter cannot be installed
 * (qemu-user refuses a guest's filter: tests skip then). Linux only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#else
#error "seccomp_wrap: add this architecture's AUDIT_ARCH_ value"
#endif

#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif

/* The number of a system call this tool knows, or -1. */
static long syscall_number(const char *name)
{
    if (!strcmp(name, "io_uring_setup")) return SYS_io_uring_setup;
    if (!strcmp(name, "io_uring_enter")) return SYS_io_uring_enter;
    if (!strcmp(name, "io_uring_register")) return SYS_io_uring_register;
    return -1;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: seccomp_wrap trap|kill|errno SYSCALL[,SYSCALL] PROGRAM [ARGS]\n");
        return 2;
    }
    unsigned action;
    if (!strcmp(argv[1], "trap")) action = SECCOMP_RET_TRAP;
    else if (!strcmp(argv[1], "kill")) action = SECCOMP_RET_KILL_PROCESS;
    else if (!strcmp(argv[1], "errno")) action = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
    else {
        fprintf(stderr, "seccomp_wrap: unknown action '%s'\n", argv[1]);
        return 2;
    }
    long nrs[8];
    int n = 0;
    char *list = strdup(argv[2]);
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        long nr = syscall_number(t);
        if (nr < 0 || n == 8) {
            fprintf(stderr, "seccomp_wrap: unknown or too many system calls in '%s'\n", argv[2]);
            return 2;
        }
        nrs[n++] = nr;
    }
    free(list);

    /* arch check, load the number, one compare per refused call, allow */
    struct sock_filter prog[4 + 2 * 8];
    int k = 0;
    prog[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data, arch));
    prog[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 0,
                                             (unsigned char)(2 * n + 1));
    prog[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data, nr));
    for (int i = 0; i < n; i++) {
        prog[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nrs[i], 0, 1);
        prog[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action);
    }
    prog[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog fprog = {.len = (unsigned short)k, .filter = prog};

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) {
        fprintf(stderr, "seccomp_wrap: cannot install the filter: %s\n", strerror(errno));
        return 3;
    }
    execvp(argv[3], argv + 3);
    fprintf(stderr, "seccomp_wrap: cannot run '%s': %s\n", argv[3], strerror(errno));
    return 127;
}
