/*
 * string_tail.c - for the CTF export test: every event ends in a string
 * field of a length that changes, so every packet's last event does too.
 * Its record is padded to 8 bytes after the string's NUL; a CTF reader
 * sees the event end at the NUL, and reads another event wherever the
 * packet's content goes on: the content must end there.
 *
 * usage: string_tail EVENTS
 */
#include <ember/trace.h>

#include <stdlib.h>

int main(int argc, char **argv)
{
    static const char *const words[] = {"a",     "bc",     "def",     "ghij",
                                        "klmno", "pqrstu", "vwxyz01", "23456789"};
    long n = argc > 1 ? atol(argv[1]) : 1000;
    for (long i = 0; i < n; i++)
        EMBER_INSTANT("tail", EMBER_I64("i", i), EMBER_STR("word", words[i % 8]));
    return 0;
}
