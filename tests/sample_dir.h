// sample_dir.h: a folder of sample messages with an expectations table, for tests (the unseen
// mail systems' bounces, the auto-replies and feedback reports): the messages it holds, the
// rows of its tab-separated table, and a message's bytes with either line-end style.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace bounced::testing {

// The names of the .eml files in `dir`, sorted.
inline std::vector<std::string> EmlFiles(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".eml") out.push_back(entry.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The rows of a tab-separated table after its header line, each cut into its cells (an empty
// cell counts: "a\t\t" is three). Blank lines and lines starting with '#' are skipped; a CR
// before the line end is dropped. A missing file has no rows.
inline std::vector<std::vector<std::string>> TsvRows(const std::filesystem::path& file) {
  std::vector<std::vector<std::string>> out;
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string>& cells = out.emplace_back(1);
    for (char c : line) {
      if (c == '\t') {
        cells.emplace_back();
      } else {
        cells.back() += c;
      }
    }
  }
  return out;
}

// `bytes` with every CRLF made LF.
inline std::string LfLineEnds(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] == '\r' && i + 1 < bytes.size() && bytes[i + 1] == '\n') continue;
    out += bytes[i];
  }
  return out;
}

// `bytes` with every line end CRLF (from LF or CRLF).
inline std::string CrlfLineEnds(std::string_view bytes) {
  std::string out;
  for (char c : LfLineEnds(bytes)) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

}  // namespace bounced::testing
