/* tests/agents/fill_reader.c: a test agent for the trail's write-ahead guarantees when the
 * trail's disk fills up. It alternates a readFile of big.txt (whose content holds a marker) and a
 * writeFile of w<N>.txt, and says on stderr what it saw of each call:
 *   RACK N   the read's answer carried the file's content
 *   RERR N   the read was answered with an error
 *   WACK N / WERR N   the same for the write
 * A test then checks the trail: every RACK has its answer's entry, every w<N>.txt that exists
 * has its call's entry (tests/e2e/trail_full_disk.sh). Stops after N rounds or 4 errors. */
#include "corral_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    struct corral_agent *a = corral_agent_new(0, 1);
    if (!a || corral_agent_initialize(a, "fill_reader", "1", NULL) < 0)
        return 1;
    setvbuf(stderr, NULL, _IONBF, 0);
    int errors = 0;
    for (long i = 0; i < n && errors < 4; i++) {
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "path", "big.txt");
        bool is_error = false;
        cJSON *r = corral_agent_call(a, "readFile", args, &is_error);
        char *text = r ? cJSON_PrintUnformatted(r) : NULL;
        bool got = text && !is_error && strstr(text, "FILL-READER-MARKER");
        fprintf(stderr, "%s %ld\n", got ? "RACK" : "RERR", i);
        errors += !got;
        free(text);
        cJSON_Delete(r);

        char path[32], content[64];
        snprintf(path, sizeof(path), "w%ld.txt", i);
        snprintf(content, sizeof(content), "write %ld\n", i);
        args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "path", path);
        cJSON_AddStringToObject(args, "content", content);
        is_error = false;
        r = corral_agent_call(a, "writeFile", args, &is_error);
        fprintf(stderr, "%s %ld\n", r && !is_error ? "WACK" : "WERR", i);
        errors += !r || is_error;
        cJSON_Delete(r);
    }
    corral_agent_free(a);
    return 0;
}
