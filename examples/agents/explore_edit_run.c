/* examples/agents/explore_edit_run.c: an agent that explores its workspace, reads a file, edits
 * it and runs a command through corral's tool protocol, with the C SDK (sdk/corral_agent.h).
 *   make build/examples/agents/explore_edit_run
 *   corral exec --workspace DIR -- build/examples/agents/explore_edit_run */
#include "corral_agent.h"

#include <stdio.h>
#include <string.h>

static cJSON *call(struct corral_agent *a, const char *tool, const char *args, bool *is_error)
{
    cJSON *r = corral_agent_call(a, tool, cJSON_Parse(args), is_error);
    if (!r)
        fprintf(stderr, "agent: %s failed: %d %s\n", tool, corral_agent_error_code(a),
                corral_agent_error(a));
    return r;
}

int main(void)
{
    struct corral_agent *a = corral_agent_new(0, 1);
    cJSON *init = NULL;
    if (!a || corral_agent_initialize(a, "explore-edit-run", "1.0", &init) < 0) {
        fprintf(stderr, "agent: initialize: %s\n", a ? corral_agent_error(a) : "out of memory");
        return 1;
    }
    fprintf(stderr, "agent: server %s\n",
            cJSON_GetObjectItem(cJSON_GetObjectItem(init, "serverInfo"), "name")->valuestring);
    cJSON_Delete(init);

    bool err;
    int status = 1;
    cJSON *tree = call(a, "exploreFiles", "{\"path\":\".\",\"recursive\":true}", &err);
    if (!tree || err)
        goto out;
    fprintf(stderr, "agent: %d entries\n", cJSON_GetObjectItem(tree, "totalFound")->valueint);
    const cJSON *f;
    cJSON_ArrayForEach (f, cJSON_GetObjectItem(tree, "files"))
        fprintf(stderr, "agent:   %s%s\n", cJSON_GetObjectItem(f, "path")->valuestring,
                cJSON_IsTrue(cJSON_GetObjectItem(f, "isDirectory")) ? "/" : "");
    cJSON_Delete(tree);

    cJSON *r = call(
        a, "writeFile",
        "{\"path\":\"notes/hello.txt\",\"content\":\"hello\\nworld\\n\",\"createDirectories\":true}",
        &err);
    cJSON_Delete(r);
    r = call(a, "modifyFile",
             "{\"path\":\"notes/"
             "hello.txt\",\"operations\":[{\"type\":\"insert\",\"afterLine\":1,\"newContent\":\"edited "
             "by C\"}]}",
             &err);
    cJSON_Delete(r);
    cJSON *text = call(a, "readFile", "{\"path\":\"notes/hello.txt\"}", &err);
    if (!text || err)
        goto out;
    fprintf(stderr, "agent: after edit: %s", cJSON_GetObjectItem(text, "content")->valuestring);
    bool edited = strstr(cJSON_GetObjectItem(text, "content")->valuestring, "edited by C") != NULL;
    cJSON_Delete(text);

    r = call(a, "readFile", "{\"path\":\"../../etc/passwd\"}", &err);
    if (r && err)
        fprintf(stderr, "agent: escape refused: %s\n", cJSON_GetObjectItem(r, "code")->valuestring);
    cJSON_Delete(r);

    cJSON *run = call(a, "executeCommand", "{\"command\":\"wc -l notes/hello.txt\"}", &err);
    if (!run || err)
        goto out;
    fprintf(stderr, "agent: command exit %d: %s", cJSON_GetObjectItem(run, "exitCode")->valueint,
            cJSON_GetObjectItem(run, "stdout")->valuestring);
    status = cJSON_GetObjectItem(run, "exitCode")->valueint == 0 && edited ? 0 : 1;
    cJSON_Delete(run);
out:
    corral_agent_free(a);
    return status;
}
