/* tests/hostile/denials.c: calls syscalls the sandbox always denies, and says what it got back,
 * so tests/e2e/trail_denials.sh can compare with the trail's denial entries.
 *   denials few        mount, unshare, bpf, keyctl three times each; one line per call
 *   denials loop N     keyctl N times in a tight loop; "loop keyctl N eperm=K other=J", then
 *                      "loop-steady-ns X": the mean cost of one call past the first 100 (bench/)
 *   denials spread N R  syscall numbers 1000 .. 1000+N-1 (none exists), R times each;
 *                      "spread N R eperm=K": numbers with no syscall, refused by the filter
 *   denials child      a forked child calls mount once; "child pid=P mount=ERRNO"
 *   denials fds        every open fd and what it is; "fd N -> TARGET"
 *   denials x86        mount through the i386 entry (int 0x80); "x86 mount ERRNO"
 * Every mode starts with "pid P" (its pid inside the sandbox). */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *ename(int e)
{
    switch (e) {
    case 0: return "OK";
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case EACCES: return "EACCES";
    case EINVAL: return "EINVAL";
    default: return "OTHER";
    }
}

static int call(const char *what)
{
    long r;
    if (!strcmp(what, "mount"))
        r = mount("none", "/tmp", "tmpfs", 0, NULL);
    else if (!strcmp(what, "unshare"))
        r = unshare(CLONE_NEWUSER);
    else if (!strcmp(what, "bpf"))
        r = syscall(SYS_bpf, 0, NULL, 0);
    else
        r = syscall(SYS_keyctl, 0, 0, 0, 0, 0); /* KEYCTL_GET_KEYRING_ID */
    return r < 0 ? errno : 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2)
        return 2;
    printf("pid %ld\n", (long)getpid());
    if (!strcmp(argv[1], "few")) {
        static const char *const calls[] = {"mount", "unshare", "bpf", "keyctl"};
        for (int round = 0; round < 3; round++)
            for (size_t i = 0; i < 4; i++)
                printf("call %s %s\n", calls[i], ename(call(calls[i])));
    } else if (!strcmp(argv[1], "loop") && argc > 2) {
        long n = strtol(argv[2], NULL, 10), eperm = 0, other = 0;
        struct timespec t0 = {0}, t1;
        for (long i = 0; i < n; i++) {
            if (i == 100)
                clock_gettime(CLOCK_MONOTONIC, &t0);
            if (call("keyctl") == EPERM)
                eperm++;
            else
                other++;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("loop keyctl %ld eperm=%ld other=%ld\n", n, eperm, other);
        if (n > 100)
            printf("loop-steady-ns %.0f\n",
                   ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
                       (double)(n - 100));
    } else if (!strcmp(argv[1], "spread") && argc > 3) {
        long n = strtol(argv[2], NULL, 10), rounds = strtol(argv[3], NULL, 10), eperm = 0;
        for (long r = 0; r < rounds; r++)
            for (long i = 0; i < n; i++)
                if (syscall(1000 + i) < 0 && errno == EPERM)
                    eperm++;
        printf("spread %ld %ld eperm=%ld\n", n, rounds, eperm);
    } else if (!strcmp(argv[1], "child")) {
        pid_t p = fork();
        if (p == 0) {
            printf("child pid=%ld mount=%s\n", (long)getpid(), ename(call("mount")));
            _exit(0);
        }
        waitpid(p, NULL, 0);
    } else if (!strcmp(argv[1], "x86")) {
        long r = 21; /* mount on i386 */
        __asm__ volatile("int $0x80" : "+a"(r) : "b"(0), "c"(0), "d"(0) : "memory");
        printf("x86 mount %s\n", r < 0 ? ename((int)-r) : "OK");
    } else if (!strcmp(argv[1], "fds")) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[300], target[256];
            snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
            ssize_t n = readlink(path, target, sizeof(target) - 1);
            target[n > 0 ? n : 0] = '\0';
            printf("fd %s -> %s\n", e->d_name, target);
        }
        if (d)
            closedir(d);
    } else {
        return 2;
    }
    return 0;
}
