// rules_option.cc: the --rules option shared by the offline commands (see commands.h).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "daemon/ctl/commands.h"

namespace bounced::ctl {

Expected<std::shared_ptr<const RuleSet>> LoadCommandRules(const std::vector<std::string>& paths) {
  if (paths.empty()) return RuleSet::Default();
  std::vector<RulesSource> sources;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return Status::Error("cannot open rules file " + path + ": " + std::strerror(errno));
    }
    std::ostringstream text;
    text << in.rdbuf();
    sources.push_back(RulesSource{path, text.str()});
  }
  sources.push_back(RuleSet::DefaultSource());
  return RuleSet::Compile(sources);
}

}  // namespace bounced::ctl
