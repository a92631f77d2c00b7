// log_rotation.cc: see log_rotation.h.
#include "daemon/log_rotation.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace bounced {
namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

Rotation RotationOf(std::string_view name) {
  Rotation r;
  for (std::string_view z : {".gz", ".bz2", ".xz", ".zst"}) {
    if (name.size() > z.size() && name.ends_with(z)) {
      name.remove_suffix(z.size());
      r.compressed = true;
      break;
    }
  }
  r.log = std::string(name);
  // The suffix after the file name's last '.' or '-' (not a folder's).
  const size_t slash = name.rfind('/');
  const size_t start = slash == std::string_view::npos ? 0 : slash + 1;
  auto suffix_after = [&](char sep) -> std::string_view {
    const size_t at = name.rfind(sep);
    if (at == std::string_view::npos || at <= start) return {};
    return name.substr(at + 1);
  };
  if (std::string_view n = suffix_after('.'); AllDigits(n) && n.size() <= 9) {
    r.log = std::string(name.substr(0, name.size() - n.size() - 1));
    r.kind = 0;
    r.number = std::stoull(std::string(n));
  } else if (std::string_view d = suffix_after('-');
             AllDigits(d) && (d.size() == 8 || d.size() == 10)) {
    r.log = std::string(name.substr(0, name.size() - d.size() - 1));
    r.kind = 1;
    r.date = std::string(d);
  }
  return r;
}

bool RotatedBefore(const Rotation& a, const Rotation& b) {
  if (a.kind != b.kind) return a.kind < b.kind;
  if (a.kind == 0) return a.number > b.number;  // .2 before .1
  return a.date < b.date;
}

std::vector<RotatedFile> RotatedFiles(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<RotatedFile> out;
  const fs::path log(path);
  const fs::path dir = log.has_parent_path() ? log.parent_path() : fs::path(".");
  const std::string base = log.filename().string();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // Only names that extend the log's own (a cheap filter before parsing each).
    if (name.size() <= base.size() || !name.starts_with(base)) continue;
    const std::string full = (dir / name).string();
    Rotation r = RotationOf(full);
    if (r.kind == 2 || r.log != (dir / base).string()) continue;
    out.push_back(RotatedFile{full, std::move(r)});
  }
  std::sort(out.begin(), out.end(), [](const RotatedFile& a, const RotatedFile& b) {
    return RotatedBefore(a.rotation, b.rotation);
  });
  return out;
}

}  // namespace bounced
