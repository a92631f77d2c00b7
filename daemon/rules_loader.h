// rules_loader.h: turns [rules] files (paths and globs) into one compiled RuleSet.
//
// Reads the rules files named by the patterns, in order (a glob's matches sorted by name). A
// pattern without wildcards must name a readable file, except the shipped default
// (/usr/share/bounced/rules/default.toml): when it is absent the rules embedded in the binary
// take its place, so an unpackaged or build-tree bounced classifies the same. Errors name the
// file (and, from the compiler, the line) and nothing partial is returned: on reload the caller
// keeps its previous rules.
//
// A rules file edited in place (not written anew and renamed over the old one) may be caught
// half-written by a SIGHUP, and its first half can be valid TOML with rules missing. So each
// regular file is read whole between two fstat(2)s, and read again (at most kRulesReadAttempts
// times, a short pause between) until device, inode, size, mtime and ctime (nanoseconds) are
// the same before and after and the bytes read are the size: else the load is refused,
// "FILE: changed while being read; try again". What this cannot see: a writer that pauses
// between its writes for longer than a read takes (that half is stable while read), and a
// same-size rewrite within one tick of the file system's timestamp clock. Writing a new file
// and renaming it over the old one is the one safe way.
#pragma once

#include <functional>
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

inline constexpr int kRulesReadAttempts = 5;

Expected<LoadedRules> LoadRules(const std::vector<std::string>& patterns);

// One rules file's text, read as described above (a FIFO or other non-regular file is read once,
// as it comes). Errors name the file. `after_read` (tests) runs after each whole read of a
// regular file, before its second fstat; `attempt` counts from 1.
Expected<std::string> ReadRulesFile(const std::string& path,
                                    const std::function<void(int attempt)>& after_read = {});

}  // namespace bounced
