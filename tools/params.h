/* tools/params.h: a tool's parameter table, shared by the tool surfaces: the checker that
 * validates a call's arguments against it and the builder of its tools/list inputSchema, so the
 * two can never disagree. Each surface spells a refusal in its own seed's error shape. */
#ifndef CORRAL_TOOL_PARAMS_H
#define CORRAL_TOOL_PARAMS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#define TOOL_PARAMS_JSON_MAX 9007199254740991.0 /* 2^53 - 1: the largest exact JSON integer */

enum tool_param_type {
    TOOL_PARAM_STRING,      /* a string; one of `choices` when they are given */
    TOOL_PARAM_STRING_NULL, /* the same; its schema also admits null (which reads as absent) */
    TOOL_PARAM_BOOL,
    TOOL_PARAM_INT,         /* a whole JSON number within [min, max] */
    TOOL_PARAM_INT_TEXT,    /* the same, or a string holding one (zod's coerce.number) */
    TOOL_PARAM_NUMBER_TEXT, /* a finite number within [min, max], or a string holding one */
    TOOL_PARAM_STRINGS,     /* an array of min..max strings */
    TOOL_PARAM_STRMAP,      /* an object of at most max string values */
    TOOL_PARAM_ITEMS,       /* an array of min..max objects, each checked by the surface's hook */
    TOOL_PARAM_OBJECT_NULL, /* an object, or null, which here is a value and not an absence */
    /* The shapes of WACP method parameters (supervisor/wacp/methods.c): */
    TOOL_PARAM_NUMBER,      /* any JSON number but NaN, no bounds */
    TOOL_PARAM_ARRAY,       /* an array of anything */
    TOOL_PARAM_OBJECT,      /* an object of anything */
    TOOL_PARAM_ANY,         /* any JSON value, null included */
    TOOL_PARAM_NUMBER_OR_STRING, /* a JSON number or a string */
};

struct tool_param {
    const char *name;
    enum tool_param_type type;
    bool required;
    const char *desc;
    const char *const *choices; /* TOOL_PARAM_STRING: the allowed values, NULL-terminated */
    double min, max;            /* integers: bounds; arrays and maps: item counts */
};

/* Why arguments were refused: the first fault found, in the order keys were given, then the
 * first required parameter missing. */
enum tool_param_fault {
    TOOL_PARAM_OK,
    TOOL_PARAM_NOT_OBJECT, /* the arguments are neither an object nor null */
    TOOL_PARAM_UNKNOWN,    /* key names no parameter */
    TOOL_PARAM_TYPE,       /* param's value has the wrong JSON type */
    TOOL_PARAM_NOT_FINITE, /* a number parameter's value is infinite or not a number */
    TOOL_PARAM_NOT_WHOLE,  /* an integer parameter's number is fractional */
    TOOL_PARAM_RANGE,      /* an integer outside [min, max] */
    TOOL_PARAM_CHOICE,     /* a string not among the choices */
    TOOL_PARAM_COUNT,      /* an array or map with too few or too many items */
    TOOL_PARAM_ITEM,       /* item `item` (arrays) or entry `key` (maps) has the wrong type */
    TOOL_PARAM_HOOK,       /* the surface's item hook refused item `item` (it said why) */
    TOOL_PARAM_REQUIRED,   /* param is required and absent */
    TOOL_PARAM_REPEATED,   /* TOOL_PARAMS_STRICT: the key `key` appears twice */
    TOOL_PARAM_TOO_LONG,   /* TOOL_PARAMS_STRICT: a string longer than the param's max */
};

struct tool_param_bad {
    enum tool_param_fault fault;
    const struct tool_param *param; /* NULL for NOT_OBJECT and UNKNOWN */
    const cJSON *value;             /* the offending value, when there is one */
    const char *key;                /* UNKNOWN: the key as sent ("" if none); ITEM in a map */
    int item;                       /* ITEM / HOOK in an array: its index */
};

/* A surface's own check of one object item of a TOOL_PARAM_ITEMS parameter: 0, or negative
 * after recording its own error in `arg`. */
typedef int (*tool_params_item_fn)(const struct tool_param *p, int i, const cJSON *item, void *arg);

/* Checks ARGS (an object, or NULL / JSON null for none) against the N parameters P. On success
 * v[i] is parameter i's value (NULL when absent or JSON null; borrowed from ARGS) and, when NUM
 * is not NULL, num[i] is a number parameter's value. Returns 0, or -EINVAL with BAD filled. */
int tool_params_check(const struct tool_param *p, size_t n, const cJSON *args, const cJSON **v,
                      double *num, tool_params_item_fn item, void *arg, struct tool_param_bad *bad);

/* The stricter reading WACP methods use (tool_params_check_flags): a JSON null is a value, checked
 * against the type like any other (only _NULL types and ANY take it); a key given twice is refused;
 * a string longer than its param's max (when max > 0) is refused. */
#define TOOL_PARAMS_STRICT 1u
int tool_params_check_flags(const struct tool_param *p, size_t n, const cJSON *args, unsigned flags,
                            const cJSON **v, double *num, tool_params_item_fn item, void *arg,
                            struct tool_param_bad *bad);

enum {
    TOOL_PARAMS_ALL_BOUNDS = 1 << 0,      /* print maxima past 2^53-1 and every array count */
    TOOL_PARAMS_ALWAYS_REQUIRED = 1 << 1, /* print "required": [] when nothing is */
    TOOL_PARAMS_NO_BOUNDS = 1 << 2,       /* print no numeric bounds at all */
};

/* The schema of a TOOL_PARAM_ITEMS parameter (without its description), which only the surface
 * knows; returns a new object, or NULL when out of memory. */
typedef cJSON *(*tool_params_schema_fn)(const struct tool_param *p);

/* A new tools/list entry {name, description, inputSchema} for a tool taking the N parameters P;
 * FLAGS from the enum above. NULL when out of memory. */
cJSON *tool_params_entry(const char *name, const char *desc, const struct tool_param *p, size_t n,
                         unsigned flags, tool_params_schema_fn items);

/* One tool described by a parameter table: the first member of every surface's tool row (wap,
 * file, kward, voltagent's filesystem toolkit), so one loop lists them and one finds them. */
struct tool_spec {
    const char *name;
    const char *desc;
    const struct tool_param *params;
    size_t n_params;
};

/* The tools/list array of the N rows at TABLE, STRIDE bytes apart, each starting with a
 * struct tool_spec; SHOWN (NULL: every row) keeps a row when true; FLAGS and ITEMS as
 * tool_params_entry. A new array, NULL when out of memory. */
cJSON *tool_params_list(const void *table, size_t n, size_t stride, unsigned flags,
                        tool_params_schema_fn items, bool (*shown)(const void *row, const void *data),
                        const void *data);
/* The row of TABLE (as above) whose spec is named NAME, or NULL. */
const void *tool_params_find(const void *table, size_t n, size_t stride, const char *name);

#endif
