// report_advice.h: what to do about sender-side rejections, and how providers are named.
//
// Data, not code: reads an advice file (TOML; packaging/advice.toml, installed as
// /usr/share/bounced/advice.toml) with two kinds of tables:
//   [[provider]]  id = "yahoo", name = "Yahoo/AOL", members = ["yahoo", "aol"],
//                 domains = ["yahoo.com", "aol.com", ...]     # shown next to the name
//   [[advice]]    provider = "icloud", code = "CS01"          # or status = "5.7.26", or
//                 category = "auth_failure"                    # (any combination)
//                 title = "...", why = "...", steps = ["...", ...]
// Lookup for one rejection tries, in order: provider + provider code, provider + enhanced
// status, provider code alone, category alone (first entry in file order wins at each step).
// Provider ids are the classifier's (result.h); members fold several ids into one report row
// (iCloud is one id already: icloud.com, me.com and mac.com).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace bounced {

struct AdviceEntry {
  std::string provider;  // "" = any
  std::string code;      // provider code, "" = any
  std::string status;    // enhanced status, "" = any
  std::string category;  // "" = any
  std::string title;
  std::string why;
  std::vector<std::string> steps;
};

struct ProviderInfo {
  std::string id;                    // the report's group id
  std::string name;                  // "Yahoo/AOL"
  std::vector<std::string> members;  // classifier provider ids folded into this group
  std::vector<std::string> domains;  // shown with the name
};

class AdviceBook {
 public:
  AdviceBook() = default;  // empty: no advice, providers shown by id
  // Errors name the file, the table and the reason ("advice.toml: advice #3: missing title").
  static Expected<AdviceBook> Parse(std::string_view text, const std::string& name);
  static Expected<AdviceBook> Load(const std::string& path);

  // nullptr when nothing matches.
  const AdviceEntry* Find(std::string_view provider, std::string_view code, std::string_view status,
                          std::string_view category) const;
  // The group a classifier provider id belongs to ("aol" -> "yahoo"); "other" for "".
  std::string GroupOf(std::string_view provider) const;
  // Display name of a group ("Yahoo/AOL"); the id itself when unknown, "Other" for "other".
  std::string NameOf(std::string_view group) const;
  const ProviderInfo* Provider(std::string_view group) const;

  size_t advice_count() const { return advice_.size(); }

 private:
  std::vector<AdviceEntry> advice_;
  std::vector<ProviderInfo> providers_;
  std::map<std::string, std::string, std::less<>> group_of_;
};

}  // namespace bounced
