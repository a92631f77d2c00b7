# Turns a file (text or binary) into a C++ source defining `extern const std::string_view SYMBOL`.
# Usage: cmake -DIN=file -DOUT=file.cc -DSYMBOL=name -P embed.cmake
file(READ "${IN}" HEX HEX)
string(LENGTH "${HEX}" HEXLEN)
# Character literals ('\xNN'), not integers: a byte above 0x7f in an integer would be a
# narrowing conversion to char (the rules tree, rules_tree.h, is binary).
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," BYTES "${HEX}")
math(EXPR LEN "${HEXLEN} / 2")
file(WRITE "${OUT}" "// Generated from ${IN}; do not edit.\n#include <string_view>\nnamespace bounced {\nstatic const char ${SYMBOL}_bytes[] = {${BYTES} 0};\nextern const std::string_view ${SYMBOL}(${SYMBOL}_bytes, ${LEN});\n}  // namespace bounced\n")
