/* tests/agents/busy_writer.c: a test agent for crash tests: writes f<N>.txt in a loop through
 * writeFile and prints "ACK N" on stderr once corral has answered, so a test that kills corral
 * knows which effects the agent saw acknowledged. */
#include "corral_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    struct corral_agent *a = corral_agent_new(0, 1);
    if (!a || corral_agent_initialize(a, "busy_writer", "1", NULL) < 0)
        return 1;
    setvbuf(stderr, NULL, _IONBF, 0);
    for (long i = 0; i < n; i++) {
        char path[32], content[32];
        snprintf(path, sizeof(path), "f%ld.txt", i);
        snprintf(content, sizeof(content), "%ld\n", i);
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "path", path);
        cJSON_AddStringToObject(args, "content", content);
        bool is_error = false;
        cJSON *r = corral_agent_call(a, "writeFile", args, &is_error);
        if (!r || is_error)
            return 1;
        cJSON_Delete(r);
        fprintf(stderr, "ACK %ld\n", i);
    }
    corral_agent_free(a);
    return 0;
}
