// rules_option.cc: the --rules option shared by the offline commands (see commands.h).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/ctl/commands.h"

namespace bounced::ctl {
namespace {

// The whole of `path` (a file, or a pipe such as <(...)); an error names the file and why.
// Read with read(2) rather than an ifstream, which opens a directory and then reads nothing
// without saying so: `--rules /etc/bounced/rules.d` ran with no extra rules at all.
Expected<std::string> ReadRulesFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error("cannot open rules file " + path + ": " + std::strerror(errno));
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      return Status::Error("cannot read rules file " + path + ": " + std::strerror(saved));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace

Expected<std::shared_ptr<const RuleSet>> LoadCommandRules(const std::vector<std::string>& paths) {
  if (paths.empty()) return RuleSet::Default();
  std::vector<RulesSource> sources;
  for (const std::string& path : paths) {
    Expected<std::string> text = ReadRulesFile(path);
    if (!text) return text.status();
    sources.push_back(RulesSource{path, std::move(*text)});
  }
  sources.push_back(RuleSet::DefaultSource());
  return RuleSet::Compile(sources);
}

}  // namespace bounced::ctl
