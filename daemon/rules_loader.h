// rules_loader.h: turns [rules] files (paths and globs) into one compiled RuleSet.
//
// Reads the rules files named by the patterns, in order (a glob's matches sorted by name). A
// pattern without wildcards must name a readable file, except the shipped default
// (/usr/share/bounced/rules/default.toml): when it is absent the rules embedded in the binary
// take its place, so an unpackaged or build-tree bounced classifies the same. Errors name the
// file (and, from the compiler, the line) and nothing partial is returned: on reload the caller
// keeps its previous rules.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "classifier/rules.h"
#include "common/status.h"

namespace bounced {

struct LoadedRules {
  std::shared_ptr<const RuleSet> rules;
  std::vector<std::string> sources;  // the files compiled, "(embedded default rules)" included
};

Expected<LoadedRules> LoadRules(const std::vector<std::string>& patterns);

}  // namespace bounced
