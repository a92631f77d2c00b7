// rules_fuzz.cc: libFuzzer target for the rules loader and engine (classifier/rules.h).
// Input: a rules file's text, optionally followed by a NUL byte and a reply to classify (or an
// encoded rules tree, rules_tree.h, which is loaded as such and classifies a fixed reply). The
// text is compiled alone and (when it starts with '#') on top of the embedded defaults; a refused
// file must give a "file:line: reason" error, a compiled one must classify replies without crashing
// and return bounded, sanitised fields. Seeds: fuzz/corpus/rules_fuzz/ (small rules files, one
// reply each). Run: build-fuzz-rules/fuzz/rules_fuzz -max_len=16384 fuzz/corpus/rules_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/result.h"
#include "classifier/rules.h"
#include "classifier/text.h"

namespace {

constexpr std::string_view kFileName = "fuzz.toml";

void CheckError(const std::string& error) {
  // "fuzz.toml:<line>: reason", or the one whole-set error.
  if (error.rfind("rules: ", 0) == 0) return;
  if (error.rfind(std::string(kFileName) + ":", 0) != 0) abort();
  size_t i = kFileName.size() + 1;
  size_t digits = 0;
  while (i < error.size() && error[i] >= '0' && error[i] <= '9') ++i, ++digits;
  if (digits == 0 || error.compare(i, 2, ": ") != 0) abort();
}

void CheckResult(const bounced::Result& r) {
  if (r.diagnostic.size() > bounced::kMaxDiagnosticBytes) abort();
  for (const std::string* s : {&r.diagnostic, &r.recipient, &r.provider, &r.provider_code,
                               &r.remote_mta, &r.rule, &r.dsn_action}) {
    if (bounced::Sanitize(*s, 1 << 20) != *s) abort();
  }
  if (!r.stage.empty() && bounced::NormalizeStage(r.stage) != r.stage) abort();
  if (bounced::ToString(r.category).empty()) abort();
}

void Exercise(const bounced::RuleSet& rules, std::string_view reply) {
  static const char* const kStages[] = {"", "rcpt", "eom", "mail"};
  static const char* const kStatuses[] = {"", "5.1.1", "4.7.0", "2.0.0"};
  static const char* const kActions[] = {"", "failed", "delayed", "expired"};
  for (int i = 0; i < 4; ++i) {
    bounced::ReplyInput in;
    in.diagnostic = reply;
    in.recipient = i % 2 ? "user@icloud.com" : "User@Example.ORG";
    in.remote_mta = i == 2 ? "mx01.mail.icloud.com" : "";
    in.stage = kStages[i];
    in.status = kStatuses[i];
    in.dsn_action = kActions[i];
    CheckResult(rules.Classify(in));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::shared_ptr<const bounced::RuleSet> defaults = bounced::RuleSet::Default();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  std::string_view text = input.substr(0, nul);
  std::string_view reply = nul == std::string_view::npos
                               ? std::string_view("550 5.1.1 <a@b.example>: user unknown")
                               : input.substr(nul + 1);

  // An input that starts like an encoded tree (classifier/rules_tree.h; the build makes one of
  // the built-in rules) is loaded as one: damaged trees must be refused, not read past.
  if (input.substr(0, 4) == "BRT1") {
    bounced::RulesSource tree{std::string(kFileName), std::string(), input};
    auto loaded = bounced::RuleSet::Compile({tree});
    if (loaded.ok()) {
      Exercise(**loaded, "550 5.1.1 <a@b.example>: user unknown");
    } else {
      CheckError(loaded.error());
    }
    return 0;
  }

  bounced::RulesSource src{std::string(kFileName), std::string(text)};
  auto alone = bounced::RuleSet::Compile({src});
  if (!alone.ok()) {
    CheckError(alone.error());
  } else {
    Exercise(**alone, reply);
  }
  // Merging with the ~300 default rules costs a full compile; only inputs that start with a
  // comment ask for it, so the fuzzer spends most of its time on the loader itself.
  if (text.empty() || text[0] != '#') {
    Exercise(*defaults, reply);
    return 0;
  }
  auto merged = bounced::RuleSet::Compile({src, bounced::RuleSet::DefaultSource()});
  if (merged.ok()) {
    Exercise(**merged, reply);
  } else if (alone.ok() && merged.error().rfind(std::string(kFileName), 0) != 0) {
    // Only a provider reference left unresolved alone could fail differently; the defaults
    // themselves must always load.
    abort();
  }
  Exercise(*defaults, reply);
  return 0;
}
