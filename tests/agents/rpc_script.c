/* tests/agents/rpc_script.c: a scripted agent for end-to-end protocol tests, hostile on request.
 * Each argument is one step; every line received is printed on stderr (see print_answer), so a
 * test reads the conversation from corral's stderr.
 *   LINE            send LINE + "\n", then read one answer
 *   @nowait:LINE    send LINE + "\n" without reading (notifications, pipelining)
 *   @read           read one answer
 *   @long:N         send a line of N bytes ('a'), read one answer
 *   @deep:N         send N '[' then N ']', read one answer
 *   @repeat:N:LINE  send LINE N times, then read N answers (stopping at end of input)
 *   @raw            from here on, print every answer whole as "< RAW LINE" (byte-for-byte
 *                   comparisons, tests/surfaces_replay.sh)
 *   @flood:N        N pings written by a second process while this one reads the N answers;
 *                   prints "flood: N answers in order" when every id came back, in order
 * Exit: 0 after the last step, 3 when the supervisor closed the channel first. */
#include "corral_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct corral_agent *A;
static bool raw;

static void send_line(const char *s, size_t n)
{
    if (corral_agent_send_raw(A, s, n) < 0 || corral_agent_send_raw(A, "\n", 1) < 0) {
        fprintf(stderr, "rpc_script: send: %s\n", corral_agent_error(A));
        exit(3);
    }
}

/* Tool results are printed as "< id=ID isError=B sc=STRUCTURED" and errors as
 * "< id=ID error=CODE MESSAGE", so tests can match them whatever comes first on the wire. */
/* Long strings (file contents, command output) are cut to 200 bytes so the fields after them show. */
static void shorten(cJSON *j)
{
    for (cJSON *c = j ? j->child : NULL; c; c = c->next) {
        if (cJSON_IsString(c) && strlen(c->valuestring) > 200) {
            char cut[220];
            snprintf(cut, sizeof(cut), "%.200s[...]", c->valuestring);
            cJSON_SetValuestring(c, cut);
        } else
            shorten(c);
    }
}

static void print_answer(const char *line, size_t n)
{
    if (raw) {
        fprintf(stderr, "< RAW %.*s\n", (int)n, line);
        return;
    }
    cJSON *j = cJSON_ParseWithLength(line, n);
    const cJSON *res = cJSON_GetObjectItem(j, "result");
    const cJSON *sc = cJSON_GetObjectItem(res, "structuredContent");
    const cJSON *err = cJSON_GetObjectItem(j, "error");
    char *id = j ? cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "id")) : NULL;
    if (sc) {
        shorten((cJSON *)sc);
        char *t = cJSON_PrintUnformatted(sc);
        fprintf(stderr, "< id=%s isError=%s sc=%.16000s\n", id,
                cJSON_IsTrue(cJSON_GetObjectItem(res, "isError")) ? "true" : "false", t);
        free(t);
    } else if (err) {
        fprintf(stderr, "< id=%s error=%d %s\n", id, cJSON_GetObjectItem(err, "code")->valueint,
                cJSON_GetObjectItem(err, "message")->valuestring);
    } else
        fprintf(stderr, "< %.3000s%s\n", line, n > 3000 ? " [...]" : "");
    /* A tools/list answer outgrows the cut above: its tool names on a line of their own. */
    const cJSON *tools = cJSON_GetObjectItem(res, "tools");
    if (cJSON_IsArray(tools)) {
        fprintf(stderr, "< id=%s tools=", id);
        for (const cJSON *t = tools->child; t; t = t->next) {
            const cJSON *nm = cJSON_GetObjectItem(t, "name");
            fprintf(stderr, "%s%s", t == tools->child ? "" : ",",
                    cJSON_IsString(nm) ? nm->valuestring : "?");
        }
        fprintf(stderr, "\n");
    }
    free(id);
    cJSON_Delete(j);
}

static char *read_one(bool print)
{
    size_t n;
    char *line = corral_agent_read_line(A, &n);
    if (!line) {
        fprintf(stderr, "< EOF\n");
        exit(3);
    }
    if (print)
        print_answer(line, n);
    return line;
}

static void read_print(void)
{
    free(read_one(true));
}

static void flood(long n)
{
    pid_t w = fork();
    if (w == 0) {
        char req[96];
        for (long i = 0; i < n; i++) {
            int k = snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"ping\"}\n",
                             i);
            if (corral_agent_send_raw(A, req, (size_t)k) < 0)
                _exit(1);
        }
        _exit(0);
    }
    long next = 0;
    for (; next < n; next++) {
        char *line = read_one(false);
        char want[48];
        snprintf(want, sizeof(want), "\"id\":%ld,", next);
        bool ok = strstr(line, want) && strstr(line, "\"result\"");
        if (!ok) {
            fprintf(stderr, "flood: answer %ld out of order or failed: %.200s\n", next, line);
            free(line);
            break;
        }
        free(line);
    }
    int st;
    waitpid(w, &st, 0);
    if (next == n)
        fprintf(stderr, "flood: %ld answers in order\n", n);
}

int main(int argc, char **argv)
{
    A = corral_agent_new(0, 1);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strncmp(s, "@nowait:", 8)) {
            send_line(s + 8, strlen(s + 8));
        } else if (!strcmp(s, "@raw")) {
            raw = true;
        } else if (!strcmp(s, "@read")) {
            read_print();
        } else if (!strncmp(s, "@long:", 6) || !strncmp(s, "@deep:", 6)) {
            size_t n = strtoul(s + 6, NULL, 10);
            bool deep = s[1] == 'd';
            char *buf = malloc(deep ? 2 * n : n);
            if (!buf)
                return 2;
            if (deep) {
                memset(buf, '[', n);
                memset(buf + n, ']', n);
                n *= 2;
            } else
                memset(buf, 'a', n);
            send_line(buf, n);
            free(buf);
            read_print();
        } else if (!strncmp(s, "@repeat:", 8)) {
            char *end;
            long n = strtol(s + 8, &end, 10);
            const char *line = end + 1;
            for (long k = 0; k < n; k++)
                send_line(line, strlen(line));
            for (long k = 0; k < n; k++)
                read_print();
        } else if (!strncmp(s, "@flood:", 7)) {
            flood(strtol(s + 7, NULL, 10));
        } else {
            send_line(s, strlen(s));
            read_print();
        }
    }
    corral_agent_free(A);
    return 0;
}
