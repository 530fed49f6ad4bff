/* tests/hostile/budgets.c: holds a share of a budget for a while without exceeding it, so a
 * sampled budget_warning can be seen (tests/e2e/trail_denials.sh).
 *   budgets mem MIB SECS     touch MIB MiB, then sleep SECS
 *   budgets pids N SECS      keep N-1 children (N processes with itself) for SECS */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    long n = strtol(argv[2], NULL, 10);
    unsigned secs = (unsigned)strtoul(argv[3], NULL, 10);
    if (!strcmp(argv[1], "mem")) {
        size_t len = (size_t)n << 20;
        char *p = malloc(len);
        if (!p)
            return 1;
        memset(p, 1, len);
        printf("RESULT holding %ld MiB\n", n);
        fflush(stdout);
        sleep(secs);
        return p[len - 1] == 1 ? 0 : 1;
    }
    if (!strcmp(argv[1], "pids")) {
        pid_t kids[1024];
        long k = 0;
        for (; k < n - 1 && k < 1024; k++) {
            kids[k] = fork();
            if (kids[k] < 0)
                break;
            if (kids[k] == 0) {
                pause();
                _exit(0);
            }
        }
        printf("RESULT holding %ld processes\n", k + 1);
        fflush(stdout);
        sleep(secs);
        for (long i = 0; i < k; i++)
            kill(kids[i], SIGKILL);
        while (wait(NULL) > 0)
            ;
        return 0;
    }
    return 2;
}
