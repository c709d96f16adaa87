# Turns a text file into a C string constant: cmake -DIN=file -DOUT=file.c -DSYM=name -P embed.cmake
file(READ "${IN}" content)
string(REPLACE "\\" "\\\\" content "${content}")
string(REPLACE "\"" "\\\"" content "${content}")
string(REPLACE "\n" "\\n\"\n\"" content "${content}")
get_filename_component(name "${IN}" NAME)
file(WRITE "${OUT}" "/* Generated from ${name} by cmake/embed.cmake: do not edit. */\n#include <stddef.h>\nconst char ${SYM}[] = \"${content}\";\nconst size_t ${SYM}_len = sizeof(${SYM}) - 1;\n")
