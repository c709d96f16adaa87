/*
 * cmd_record.c - `ember record`: the old name of `ember trace record -- CMD`
 * (run CMD with tracing on and keep what it traced), kept as an alias until
 * `ember record` becomes the sampler's (issue 10).
 */
#include "cli.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>

int cmd_record(int argc, char **argv)
{
    /* ember record ARGS... is ember trace record ARGS... */
    char **args = calloc((size_t)argc + 2, sizeof(*args));
    if (!args) {
        cli_error("out of memory");
        return 1;
    }
    args[0] = argv[0];
    args[1] = "record";
    memcpy(args + 2, argv + 1, (size_t)(argc - 1) * sizeof(*args));
    int ret = cmd_trace(argc + 1, args);
    free(args);
    return ret;
}
