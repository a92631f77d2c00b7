// rules_tree_gen.cc: build tool. Parses a rules file (TOML) and writes its tree encoded by
// EncodeRulesTree (rules_tree.h); the build then embeds that file like the rules text
// (cmake/embed.cmake). Usage: rules_tree_gen RULES.toml OUT. A file that does not parse fails
// the build with its line and reason.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "classifier/rules_tree.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: rules_tree_gen RULES.toml OUT\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    std::fprintf(stderr, "rules_tree_gen: cannot read %s\n", argv[1]);
    return 1;
  }
  std::string encoded;
  std::string error;
  try {
    toml::table root = toml::parse(text.str(), std::string_view(argv[1]));
    if (!bounced::EncodeRulesTree(root, &encoded, &error)) {
      std::fprintf(stderr, "%s: %s\n", argv[1], error.c_str());
      return 1;
    }
  } catch (const toml::parse_error& e) {
    std::fprintf(stderr, "%s:%u: %s\n", argv[1], static_cast<unsigned>(e.source().begin.line),
                 std::string(e.description()).c_str());
    return 1;
  }
  std::ofstream file(argv[2], std::ios::binary | std::ios::trunc);
  file << encoded;
  if (!file.flush()) {
    std::fprintf(stderr, "rules_tree_gen: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
