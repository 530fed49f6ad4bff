/* tests/unit/test_broker_race.c: containment under a race. A thread keeps swapping a workspace
 * directory with a symlink to the outside (renameat2 RENAME_EXCHANGE, atomic) while the broker
 * reads, writes, lists and searches through that name. Whatever the interleaving, nothing from
 * outside may come back and nothing may be created outside: the kernel resolves each path
 * beneath the root fd in one step, so there is no check-then-use window to win. */
#include "wap_fixture.h"

#include <linux/fs.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

#define SECRET "top secret outside"

struct flipper {
    struct fx *f;
    atomic_bool stop;
    atomic_long flips;
};

static void *flip_main(void *arg)
{
    struct flipper *fl = arg;
    char a[256], b[256];
    snprintf(a, sizeof(a), "%s/flip", fl->f->ws);
    snprintf(b, sizeof(b), "%s/fliplink", fl->f->ws);
    while (!atomic_load(&fl->stop)) {
        if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0)
            atomic_fetch_add(&fl->flips, 1);
    }
    return NULL;
}

static void race_tree(struct fx *f)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/secret.txt", f->out);
    FILE *fp = fopen(p, "w");
    fputs(SECRET "\n", fp);
    fclose(fp);
    snprintf(p, sizeof(p), "%s/outside-only.txt", f->out);
    fp = fopen(p, "w");
    fclose(fp);
    fx_put(f, "flip/secret.txt", "inside\n");
    snprintf(p, sizeof(p), "%s/fliplink", f->ws);
    assert_int_equal(symlink("../outside", p), 0);
}

static void swapped_directory_never_leaks(void **state)
{
    struct fx *f = *state;
    race_tree(f);
    struct flipper fl = {.f = f};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, flip_main, &fl), 0);
    while (atomic_load(&fl.flips) < 10)
        sched_yield(); /* the race is live before the first call */
    int inside = 0, refused = 0;
    for (int i = 0; i < 3000; i++) {
        const char *name = i % 2 ? "flip/secret.txt" : "fliplink/secret.txt";
        char args[128];
        snprintf(args, sizeof(args), "{\"path\":\"%s\"}", name);
        bool err;
        cJSON *r = fx_call(f, "readFile", args, &err);
        char *t = cJSON_PrintUnformatted(r);
        assert_null(strstr(t, SECRET));
        free(t);
        if (err)
            refused++;
        else
            inside++;
        cJSON_Delete(r);
        snprintf(args, sizeof(args), "{\"path\":\"%s/new.txt\",\"content\":\"x\"}",
                 i % 2 ? "flip" : "fliplink");
        cJSON_Delete(fx_call(f, "writeFile", args, &err));
    }
    atomic_store(&fl.stop, true);
    pthread_join(th, NULL);
    char p[256];
    snprintf(p, sizeof(p), "%s/new.txt", f->out);
    assert_false(fx_exists_host(p));
    /* both outcomes happened, so the race was real */
    assert_true(inside > 0);
    assert_true(refused > 0);
}

static void swapped_directory_during_walks(void **state)
{
    struct fx *f = *state;
    race_tree(f);
    struct flipper fl = {.f = f};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, flip_main, &fl), 0);
    while (atomic_load(&fl.flips) < 10)
        sched_yield(); /* the race is live before the first call */
    for (int i = 0; i < 500; i++) {
        bool err;
        cJSON *r = fx_call(
            f, "searchFiles",
            "{\"paths\":[\".\"],\"query\":\"secret\",\"type\":\"literal\",\"recursive\":true}", &err);
        char *t = cJSON_PrintUnformatted(r);
        assert_null(strstr(t, SECRET));
        free(t);
        cJSON_Delete(r);
        r = fx_call(f, "exploreFiles", "{\"path\":\".\",\"recursive\":true}", &err);
        t = cJSON_PrintUnformatted(r);
        assert_null(strstr(t, "outside-only")); /* a listing never enters the link */
        free(t);
        cJSON_Delete(r);
    }
    atomic_store(&fl.stop, true);
    pthread_join(th, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FX_TEST(swapped_directory_never_leaks),
        FX_TEST(swapped_directory_during_walks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
