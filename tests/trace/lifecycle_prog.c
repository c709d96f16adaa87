/*
 * lifecycle_prog.c - for the file-handling test: traced across fork and
 * exec; and names that hold control bytes and backslashes, which the text
 * tools must escape.
 *
 * usage: lifecycle_prog fork | exec | after-exec | names
 */
#include <ember/trace.h>

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "fork";
    if (strcmp(mode, "fork") == 0) {
        EMBER_INSTANT("parent before fork");
        pid_t pid = fork();
        if (pid == 0) {
            EMBER_INSTANT("child", EMBER_I64("n", 1));
            EMBER_INSTANT("parent before fork"); /* a site the parent registered */
            return 0;
        }
        waitpid(pid, NULL, 0);
        EMBER_INSTANT("parent after fork", EMBER_I64("child", pid));
        printf("%d\n", (int)pid);
    } else if (strcmp(mode, "names") == 0) {
        ember_thread_name("main\tthread");
        EMBER_SPAN_BEGIN("two\nlines");
        EMBER_INSTANT("back\\slash", EMBER_STR("s\x01", "v\n"));
        EMBER_SPAN_END("two\nlines");
    } else if (strcmp(mode, "exec") == 0) {
        EMBER_INSTANT("before exec");
        execl("/proc/self/exe", argv[0], "after-exec", (char *)NULL);
        return 1;
    } else {
        EMBER_INSTANT("after exec");
    }
    return 0;
}
