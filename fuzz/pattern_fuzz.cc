// pattern_fuzz.cc: differential libFuzzer target for the rules engine's pattern matching
// (classifier/rules.cc). The engine does not hand every pattern to RE2: it lower-cases patterns
// and replies itself (ASCII, and Latin, Greek and Cyrillic capitals), finds required literals
// to skip patterns a reply cannot match, and runs most patterns on ASCII replies as its own
// small backtracking programs. Each of those must answer exactly as RE2 does on the reply as it
// is, case-insensitively. This target builds a pattern and a reply from the input, over an
// alphabet where the two must agree (ASCII letters and punctuation, three letters outside ASCII
// in both cases, classes, groups, assertions, quantifiers), compiles a one-rule set and aborts
// when the rule's verdict and RE2's differ, or when one refuses a pattern the other takes.
//
// Input: bytes before the first 0xFF make the pattern (each byte an atom and a quantifier),
// bytes after it the reply (each byte a letter). Seeds: fuzz/corpus/pattern_fuzz/.
// Run: build-fuzz/fuzz/pattern_fuzz -max_len=512 fuzz/corpus/pattern_fuzz
#include <re2/re2.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "classifier/result.h"
#include "classifier/rules.h"

namespace {

// Atoms of the pattern (UTF-8): literals (ó é ж and their capitals are two bytes each), classes,
// groups and assertions. "(?:" and ")" are separate atoms, so some patterns are unbalanced:
// both sides must refuse those.
constexpr std::string_view kAtoms[] = {
    "a", "b",   "x",    "-",     " ",     "ó",           "Ó",       "é",        "É",   "ж",
    "Ж", ".",   "[aó]", "[^é ]", "[ab-]", "[^a]",        "(?:a|ó)", "(?:жb|x)", "(?:", ")",
    "|", "\\b", "\\B",  "\\w",   "\\W",   "\\s",         "\\S",     "\\d",      "^",   "$",
    "(", "5",   "0",    "\\.",   "a{2}",  "(?:ab){1,3}", "ó{0,2}",  "\\x{e9}"};
constexpr std::string_view kQuantifiers[] = {"", "", "", "", "?", "+", "*", "{1,2}", "??", "*?"};
// Letters of the reply: no space or control (the engine folds whitespace runs in a reply) and
// no 5, so that the text never holds the reply code again ("550-...": the engine reads a code
// repeated behind the first as a continuation line's, and leaves it out).
constexpr std::string_view kLetters[] = {"a", "A", "b", "B", "x", "-", ".", "1",
                                         "0", "_", "ó", "Ó", "é", "É", "ж", "Ж"};
constexpr size_t kMaxAtoms = 24;
constexpr size_t kMaxLetters = 120;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string pattern;
  std::string reply = "550 ";
  size_t i = 0;
  for (size_t atoms = 0; i < size && data[i] != 0xFF && atoms < kMaxAtoms; ++i, ++atoms) {
    const uint8_t b = data[i];
    std::string_view atom = kAtoms[b % std::size(kAtoms)];
    pattern += atom;
    // No quantifier after a counted atom, an assertion or a group's opening (RE2 refuses some
    // of those, as it should, but they say nothing about matching).
    const bool takes_one = atom != "(?:" && atom != "(" && atom != "|" && atom != "^" &&
                           atom != "$" && atom != "\\b" && atom != "\\B" && atom.back() != '}';
    if (takes_one) {
      pattern += kQuantifiers[(b / std::size(kAtoms)) % std::size(kQuantifiers)];
    }
  }
  while (i < size && data[i] != 0xFF) ++i;
  if (pattern.empty()) return 0;
  for (size_t letters = 0, j = i + 1; j < size && letters < kMaxLetters; ++j, ++letters) {
    reply += kLetters[data[j] % std::size(kLetters)];
  }

  RE2::Options options;
  options.set_case_sensitive(false);
  options.set_log_errors(false);
  RE2 re(pattern, options);
  const std::string toml =
      "[[rule]]\nid = \"t\"\ncategory = \"spam_content\"\npattern = '" + pattern + "'\n";
  auto rules = bounced::RuleSet::Compile({bounced::RulesSource{"fuzz.toml", toml}});
  if (rules.ok() != re.ok()) {
    std::fprintf(stderr, "pattern '%s': RE2 %s, the rules loader %s\n", pattern.c_str(),
                 re.ok() ? "takes it" : re.error().c_str(),
                 rules.ok() ? "takes it" : rules.error().c_str());
    abort();
  }
  if (!re.ok()) return 0;
  bounced::ReplyInput in;
  in.diagnostic = reply;
  // Twice: the second answer comes from the memo, and must be the same. RE2 is given the reply
  // as the engine matched it: sanitised (a reply of only "550 " loses its space).
  for (int round = 0; round < 2; ++round) {
    const bounced::Result result = (*rules)->Classify(in);
    const bool engine = result.category == bounced::Category::kSpamContent;
    const bool expected = RE2::PartialMatch(result.diagnostic, re);
    if (engine != expected) {
      std::fprintf(stderr, "pattern '%s' on '%s': the engine says %d, RE2 %d\n", pattern.c_str(),
                   result.diagnostic.c_str(), engine, expected);
      abort();
    }
  }
  return 0;
}
