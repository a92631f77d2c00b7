// rules.h: the rules engine. Pure code: takes rules text, returns a compiled RuleSet; takes one
// reply (text, status, code, stage, recipient, remote host) and returns a classified Result.
//
// Rules are data (rules/default.toml and files merged on top of it). Every pattern of a
// RuleSet is checked at Compile; a reply's candidate patterns come from one literal scan, and
// rules are tried in file order, each pattern run only when its rule's other conditions hold
// (see rules.cc): the first rule that matches wins (files in the order given). When no rule
// matches, the RFC 3463 status classes decide. A RuleSet is immutable after Compile (patterns
// are prepared on first use, thread-safely) and safe to share between threads; reloading means
// compiling a new one and swapping a pointer. Each thread remembers its recent classifications
// per RuleSet.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/result.h"
#include "common/status.h"

namespace bounced {

// One rules file's text and the name used in error messages (usually its path).
struct RulesSource {
  std::string name;
  std::string text;
  // Optional: a parsed tree as rules_tree.h encodes it, read instead of `text` (the fuzzer sets
  // it). Compile finds the built-in rules' tree itself when `text` is the built-in file.
  std::string_view tree = {};
};

// What is known about one failed (or delivered) recipient before classification.
struct ReplyInput {
  std::string_view diagnostic;  // remote reply or the MTA's own explanation
  std::string_view status;      // enhanced status if known ("5.1.1"), else ""
  std::string_view reply_code;  // "550" if known, else ""
  std::string_view stage;       // connect, helo, mail, rcpt, data, eom, or ""
  std::string_view recipient;   // for the provider (by domain)
  std::string_view remote_mta;  // for the provider (by host)
  std::string_view dsn_action;  // failed, delayed, delivered, relayed, expanded, or "";
                                // "expired" when the MTA gave up (Postfix status=expired)
};

// A result's reply again as Classify's input (its views are into `r`), to classify it anew with
// something changed: the recipient, the Action.
inline ReplyInput ReplyInputOf(const Result& r) {
  return ReplyInput{r.diagnostic, r.status,     r.reply_code, r.stage,
                    r.recipient,  r.remote_mta, r.dsn_action};
}

class RuleSet;

// Classifies `in` (made with ReplyInputOf from *r or from another result, then changed) and puts
// what the classification decides into *r: category, provider, provider_code and rule, and
// status, reply_code and stage where it gives them. The rest of *r (its addresses, reply, host
// and Action) is kept. `in` may view *r's strings.
void ClassifyAgain(const RuleSet& rules, const ReplyInput& in, Result* r);

class RuleSet {
 public:
  // Compiles the given files in order. On error returns a Status naming the file, line and
  // reason ("rules/x.toml:12: unknown category 'foo'"); nothing partial is ever returned.
  static Expected<std::shared_ptr<const RuleSet>> Compile(const std::vector<RulesSource>& files);
  // The rules shipped in rules/default.toml, embedded at build time.
  static std::shared_ptr<const RuleSet> Default();
  // The embedded rules/default.toml as a source, to compile after local files: files given
  // earlier take precedence, so Compile({local..., DefaultSource()}) puts local rules on top
  // (a local rule with the id of a default rule replaces it; `enabled = false` removes it).
  // The built-in rules' parsed tree (RulesSource::tree) when `text` is byte for byte the
  // built-in rules file (an installed copy left as shipped), else empty.
  static std::string_view BuiltinTreeFor(std::string_view text);
  static RulesSource DefaultSource();

  // Provider for a recipient domain (or address) or else a remote host; "" when unknown.
  std::string_view ProviderFor(std::string_view recipient_domain,
                               std::string_view remote_mta) const;

  ~RuleSet();
  RuleSet(const RuleSet&) = delete;
  RuleSet& operator=(const RuleSet&) = delete;

  // Classifies one reply. Fills every field of Result it can derive: status (from the text when
  // the input has none; from a basic reply code as "5.0.0"/"4.0.0"), reply_code, stage,
  // provider and provider_code, category and rule. Never fails: unknown input is undetermined.
  Result Classify(const ReplyInput& in) const;

  size_t rule_count() const;

  // A memo for results derived from this set's classifications: Classify keeps its own
  // entries in it, and callers that do more around Classify (the DSN parser) may keep theirs,
  // under keys that hold everything their result depends on, prefixed with a tag of their own.
  // Bounded, shared by all threads, dropped with the set (so a reload starts afresh). The
  // recipient and original_recipient are not kept: Recall leaves them empty for the caller.
  bool Recall(const std::string& key, Result* out) const;
  void Remember(const std::string& key, const Result& r) const;
  // The recipient domain Classify derives from ReplyInput::recipient (and keys its memo by).
  static std::string RecipientDomain(std::string_view recipient);

  struct Impl;

 private:
  explicit RuleSet(std::unique_ptr<Impl> impl);
  // Classify without the per-thread memo; `recipient` is normalised, `domain` is its domain.
  Result ClassifyUncached(const ReplyInput& in, std::string recipient,
                          std::string_view domain) const;
  std::unique_ptr<Impl> impl_;
};

// Provider for a recipient domain or a remote host ("icloud" for me.com or
// mx01.mail.icloud.com); "" when unknown. Uses the RuleSet's [[provider]] tables.
std::string_view ProviderFor(const RuleSet& rules, std::string_view recipient_domain,
                             std::string_view remote_mta);

}  // namespace bounced
