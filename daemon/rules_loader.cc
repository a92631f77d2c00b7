// rules_loader.cc: [rules] files -> RuleSet (see rules_loader.h).
#include "daemon/rules_loader.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "daemon/config.h"

namespace bounced {

// rules/default.toml as compiled into the classifier (cmake/embed.cmake).
extern const std::string_view kDefaultRulesToml;

namespace {

bool SameVersion(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

// Reads all of `fd` from its current offset.
Status ReadAll(int fd, std::string* out) {
  out->clear();
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return Status::Ok();
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Error(std::strerror(errno));
    }
    out->append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

Expected<std::string> ReadRulesFile(const std::string& path,
                                    const std::function<void(int attempt)>& after_read) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error(path + ": cannot read rules file: " + std::strerror(errno));
  std::string text;
  Status status;
  for (int attempt = 1;; ++attempt) {
    struct stat before {};
    struct stat after {};
    if (::fstat(fd, &before) != 0 || ::lseek(fd, 0, SEEK_SET) < 0) {
      // Not seekable (a pipe): read once, as it comes.
      status = ReadAll(fd, &text);
      break;
    }
    status = ReadAll(fd, &text);
    if (!status.ok() || !S_ISREG(before.st_mode)) break;
    if (after_read) after_read(attempt);
    if (::fstat(fd, &after) != 0) {
      status = Status::Error(std::strerror(errno));
      break;
    }
    if (SameVersion(before, after) && text.size() == static_cast<size_t>(after.st_size)) break;
    if (attempt == kRulesReadAttempts) {
      ::close(fd);
      return Status::Error(path + ": changed while being read; try again (it changed during " +
                           std::to_string(attempt) +
                           " reads in a row; write a new file and rename it over the old one)");
    }
    // Give the writer a moment to finish: 10, 20, 40, 80 ms.
    std::this_thread::sleep_for(std::chrono::milliseconds(10 << (attempt - 1)));
  }
  ::close(fd);
  if (!status.ok()) return Status::Error(path + ": cannot read rules file: " + status.message());
  return text;
}

namespace {

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
      Expected<std::string> text = ReadRulesFile(pattern);
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
      Expected<std::string> text = ReadRulesFile(path);
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
