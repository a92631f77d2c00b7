// read_file.h: the whole of a file as bytes, for tests (a missing file reads as "").
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace bounced::testing {

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace bounced::testing
