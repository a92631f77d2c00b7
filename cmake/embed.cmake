# Turns a text file into a C++ source defining `extern const std::string_view SYMBOL`.
# Usage: cmake -DIN=file -DOUT=file.cc -DSYMBOL=name -P embed.cmake
file(READ "${IN}" HEX HEX)
string(LENGTH "${HEX}" HEXLEN)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," BYTES "${HEX}")
math(EXPR LEN "${HEXLEN} / 2")
file(WRITE "${OUT}" "// Generated from ${IN}; do not edit.\n#include <string_view>\nnamespace bounced {\nstatic const char ${SYMBOL}_bytes[] = {${BYTES} 0};\nextern const std::string_view ${SYMBOL}(${SYMBOL}_bytes, ${LEN});\n}  // namespace bounced\n")
