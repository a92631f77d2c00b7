// rules_loader.cc: [rules] files -> RuleSet (see rules_loader.h).
#include "daemon/rules_loader.h"

#include <glob.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "daemon/config.h"

namespace bounced {

// rules/default.toml as compiled into the classifier (cmake/embed.cmake).
extern const std::string_view kDefaultRulesToml;

namespace {

Expected<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(path + ": cannot read rules file: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool HasWildcard(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

// glob(3) skips a directory it cannot read unless told otherwise, which would drop the rules in
// it without a word. Its error callback has no user data, hence the thread_local.
thread_local std::string glob_error;

int OnGlobError(const char* path, int error) {
  // A directory that does not exist holds no rules files: that is a match of nothing.
  if (error == ENOENT || error == ENOTDIR) return 0;
  glob_error = std::string(path) + ": " + std::strerror(error);
  return 1;
}

}  // namespace

Expected<LoadedRules> LoadRules(const std::vector<std::string>& patterns) {
  std::vector<RulesSource> files;
  LoadedRules out;
  for (const std::string& pattern : patterns) {
    if (!HasWildcard(pattern)) {
      if (pattern == kDefaultRulesFile && ::access(pattern.c_str(), F_OK) != 0) {
        files.push_back({"(embedded default rules)", std::string(kDefaultRulesToml)});
        out.sources.push_back(files.back().name);
        continue;
      }
      Expected<std::string> text = ReadFile(pattern);
      if (!text) return text.status();
      files.push_back({pattern, std::move(*text)});
      out.sources.push_back(pattern);
      continue;
    }
    glob_t g{};
    glob_error.clear();
    int rc = ::glob(pattern.c_str(), 0, OnGlobError, &g);
    if (rc != 0 && rc != GLOB_NOMATCH) {
      globfree(&g);
      return Status::Error(pattern + ": cannot list rules files" +
                           (glob_error.empty() ? std::string() : ": " + glob_error));
    }
    for (size_t i = 0; i < g.gl_pathc; ++i) {  // glob sorts by name
      std::string path = g.gl_pathv[i];
      Expected<std::string> text = ReadFile(path);
      if (!text) {
        globfree(&g);
        return text.status();
      }
      files.push_back({path, std::move(*text)});
      out.sources.push_back(path);
    }
    globfree(&g);
  }
  if (files.empty()) {
    return Status::Error("rules.files: no rules file found (patterns matched nothing)");
  }
  auto compiled = RuleSet::Compile(files);
  if (!compiled) return compiled.status();
  out.rules = std::move(*compiled);
  return out;
}

}  // namespace bounced
