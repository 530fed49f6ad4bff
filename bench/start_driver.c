/* bench/start_driver.c: times whole runs of several commands, interleaved round-robin so each
 * sees the same machine state: posix_spawn + waitpid, N rounds, then median and p90 per command.
 * usage: start_driver N :: CMD1 ARGS ... :: CMD2 ARGS ... */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4 || strcmp(argv[2], "::")) {
        fprintf(stderr, "usage: start_driver N :: CMD [ARGS] [:: CMD [ARGS]]...\n");
        return 2;
    }
    int n = atoi(argv[1]);
    char **cmds[16];
    int nc = 0;
    for (int i = 2; i < argc && nc < 16; i++)
        if (!strcmp(argv[i], "::")) {
            argv[i] = NULL;
            cmds[nc++] = &argv[i + 1];
        }
    double *t = calloc((size_t)(n * nc), sizeof(double));
    int devnull = open("/dev/null", 1);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, devnull, 1);
    for (int r = 0; r < n; r++)
        for (int c = 0; c < nc; c++) {
            pid_t pid;
            double t0 = now();
            if (posix_spawnp(&pid, cmds[c][0], &fa, NULL, cmds[c], environ) != 0) {
                perror(cmds[c][0]);
                return 1;
            }
            int st;
            waitpid(pid, &st, 0);
            t[c * n + r] = now() - t0;
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr, "%s failed (status %d)\n", cmds[c][0], st);
                return 1;
            }
        }
    for (int c = 0; c < nc; c++) {
        qsort(t + c * n, (size_t)n, sizeof(double), cmp);
        printf("%d %.3f %.3f\n", c, t[c * n + n / 2], t[c * n + (n * 9) / 10]);
    }
    return 0;
}
