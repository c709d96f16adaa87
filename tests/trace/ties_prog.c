/*
 * ties_prog.c - nested spans for trace/ties.py, which gives four events
 * one timestamp: z, y and x end, and a second y begins, at one time. The
 * end of the second y carries a field.
 */
#include <ember/trace.h>

int main(void)
{
    EMBER_SPAN_BEGIN("x");
    EMBER_SPAN_BEGIN("y");
    EMBER_SPAN_BEGIN("z");
    EMBER_SPAN_END("z");
    EMBER_SPAN_END("y");
    EMBER_SPAN_END("x");
    EMBER_SPAN_BEGIN("y");
    EMBER_SPAN_END("y", EMBER_I64("n", 7));
    return 0;
}
