// rules.cc: the rules engine (see rules.h). Reads rules text (TOML, format in rules/README.md),
// and classifies replies: a literal scan picks the patterns that can match, rules are tried in
// file order (conditions first, then their candidate patterns), and the first that matches
// wins; otherwise the RFC 3463 status classes (Rfc3463Category) decide. Most patterns run as a
// small program of their own (SimplePattern) and need no RE2 until they are in steady use; the
// others are compiled with RE2 on first use, and the few of those without a literal share one
// RE2::Set. Start-up and the first sight of each reply are what this is built for, as most
// bouncectl runs are short.
#include "classifier/rules.h"

#include <re2/re2.h>
#include <re2/set.h>

#include <endian.h>
#include <toml++/toml.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "classifier/rules_tree.h"
#include "classifier/text.h"

namespace bounced {

extern const std::string_view kDefaultRulesToml;
extern const std::string_view kDefaultRulesTree;  // its parsed tree (rules_tree.h)

namespace {

// Limits on what a rules file may ask for, so a hostile or broken file cannot make the
// daemon compile something enormous.
constexpr size_t kMaxRulesFileBytes = 4 * 1024 * 1024;
constexpr size_t kMaxPatternBytes = 4096;
constexpr size_t kMaxPatterns = 20000;
constexpr int64_t kRe2MaxMem = 256 << 20;  // per RE2 (and the Set's DFA), a generous cap
// Caps on the short fields of a Result (bytes).
constexpr size_t kMaxAddressBytes = 512;
constexpr size_t kMaxHostBytes = 256;
constexpr size_t kMaxWordBytes = 64;

// Case-insensitive glob with '*' (any run) and '?' (one character); patterns are lower-case.
bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == AsciiLower(text[t]))) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool AnyGlob(const std::vector<std::string>& globs, std::string_view text) {
  for (const auto& g : globs) {
    if (GlobMatch(g, text)) return true;
  }
  return false;
}

bool AnyEqual(const std::vector<std::string>& names, std::string_view text) {
  for (const auto& n : names) {
    if (n == text) return true;
  }
  return false;
}

// "5.1.1" from a caller's status field ("5.1.1", " 5.1.1 (user unknown)"); "" when it is not
// one. Unlike ExtractEnhancedStatus, any 1-3 digit subject is accepted: the field says it is a
// status, so there is no risk of taking an IP address for one.
std::string NormalizeStatusField(std::string_view s) {
  s = TrimSpace(s);
  size_t i = 0;
  if (s.empty() || (s[0] != '2' && s[0] != '4' && s[0] != '5')) return {};
  i = 1;
  for (int part = 0; part < 2; ++part) {
    if (i >= s.size() || s[i] != '.') return {};
    ++i;
    size_t d = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && d < 4) ++i, ++d;
    if (d == 0 || d > 3) return {};
  }
  if (i < s.size() && s[i] >= '0' && s[i] <= '9') return {};
  return std::string(s.substr(0, i));
}

std::string NormalizeReplyCodeField(std::string_view s) {
  s = TrimSpace(s);
  if (s.size() < 3) return {};
  if ((s[0] != '2' && s[0] != '4' && s[0] != '5') || s[1] < '0' || s[1] > '9' || s[2] < '0' ||
      s[2] > '9') {
    return {};
  }
  if (s.size() > 3 && s[3] >= '0' && s[3] <= '9') return {};
  return std::string(s.substr(0, 3));
}

// An RE2 compiled on first use: compiling costs 25-70k instructions for a plain wording and
// over a million for a ".{0,80}" window, so only what a reply needs is compiled. Callers check
// the pattern when loading (SimplePattern::IsSimple or RE2 itself).
class LazyRe2 {
 public:
  LazyRe2(std::string text, const RE2::Options& options, std::unique_ptr<RE2> compiled = nullptr)
      : text_(std::move(text)), options_(options), re_(std::move(compiled)) {}
  // The compiled pattern; check ok(): one that RE2 cannot compile (over its memory budget)
  // never matches.
  const std::string& text() const { return text_; }
  const RE2& Get() {
    std::call_once(once_, [&] {
      if (!re_) re_ = std::make_unique<RE2>(text_, options_);
    });
    return *re_;
  }

 private:
  std::string text_;
  RE2::Options options_;
  std::once_flag once_;
  std::unique_ptr<RE2> re_;
};

struct Rule {
  std::string id;
  Category category = Category::kUndetermined;
  bool has_patterns = false;
  bool keep_on_expiry = false;           // category stands even when the MTA gave up (see Classify)
  std::vector<std::string> providers;    // exact names; empty = any
  std::vector<std::string> statuses;     // globs; empty = any
  std::vector<std::string> reply_codes;  // globs; empty = any
  std::vector<std::string> stages;       // exact names; empty = any
  std::vector<std::string> unless_statuses;  // globs that rule the rule out
  std::vector<std::string> unless_stages;    // stages that rule the rule out
  std::vector<std::string> dsn_actions;      // exact names; empty = any
  std::string provider_code;                 // fixed code, or
  std::unique_ptr<LazyRe2> code_pattern;     // a pattern whose first group is the code
  // Its patterns in RuleSet::Impl::patterns: [first_pattern, +match_patterns) are `patterns`,
  // the next exclude_patterns are `exclude`.
  uint32_t first_pattern = 0;
  uint32_t match_patterns = 0;
  uint32_t exclude_patterns = 0;
};

struct CodeExtractor {
  std::vector<std::string> providers;  // empty = any
  std::unique_ptr<LazyRe2> pattern;    // with the code as its first group
};

struct ProviderDef {
  std::string name;
};

// ---- Simple patterns --------------------------------------------------------------------
// Most patterns are wordings with optional words, alternatives, word boundaries, small
// character classes and bounded gaps ("doesn.t", "(?:user|mailbox) (?:is )?unknown",
// "\bcs01\b.{0,80}local policy", "from \S+ deferred"). Compiling one as an RE2 costs 25-70k
// instructions (over a million for a ".{0,80}" window), far more than matching a reply. So such
// a pattern becomes a small program of one-byte sets, assertions and gaps (a byte set repeated
// m..n times), run by a backtracking search that visits each (instruction, position) once.
// It is used only on text that is all ASCII without a newline, where RE2's meaning of every
// construct accepted here is exactly such a byte set ('.' and negated classes are one code
// point, \d \s \w \b are ASCII, ^ and $ are the ends of the text). A character outside ASCII
// (a whole UTF-8 sequence) can never match such text: as an atom it is the empty byte set, and
// as a class member it adds nothing; so a rule in another language ("buz[oó]n lleno") stays
// simple. Anything else (\x, \p, flags, ranges with a non-ASCII end, unbounded repeats of a
// group, repeats inside repeats ...) is not simple and is left to RE2. The parser accepts only
// syntax that RE2 accepts with the same meaning, so a simple pattern needs no RE2 check when it
// is loaded (a non-ASCII character must be well-formed UTF-8; RE2 refuses anything else).

using ByteSet = std::array<uint64_t, 2>;  // ASCII bytes

constexpr ByteSet kNoBytes{0, 0};
constexpr uint32_t kUnbounded = ~0u;
constexpr uint32_t kMaxSimpleRepeat = 16;     // a group's x{n,m}: m at most this
constexpr uint32_t kMaxSimpleCount = 1000;    // RE2's own limit on a repeat count
constexpr size_t kMaxSimpleProgram = 2000;    // instructions
constexpr size_t kMaxSimpleVisits = 1 << 20;  // (instruction, position) bits per match
constexpr int kMaxSimpleDepth = 64;           // nested groups
constexpr size_t kMaxSimpleText = 1024;       // longer replies are left to RE2

inline bool InSet(const ByteSet& s, unsigned char c) { return (s[c >> 6] >> (c & 63)) & 1; }
inline void AddByte(ByteSet& s, unsigned char c) { s[c >> 6] |= uint64_t{1} << (c & 63); }
inline void AddRange(ByteSet& s, unsigned char lo, unsigned char hi) {
  for (unsigned c = lo; c <= hi; ++c) AddByte(s, static_cast<unsigned char>(c));
}
inline ByteSet Complement(const ByteSet& s) { return {~s[0], ~s[1]}; }
inline void AddSet(ByteSet& s, const ByteSet& t) {
  s[0] |= t[0];
  s[1] |= t[1];
}
inline bool IsWordByte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool AtWordBoundary(std::string_view t, size_t at) {
  bool before = at > 0 && IsWordByte(static_cast<unsigned char>(t[at - 1]));
  bool after = at < t.size() && IsWordByte(static_cast<unsigned char>(t[at]));
  return before != after;
}

// One instruction. Jumps are relative, so a piece of program can be copied anywhere.
struct SimpleInst {
  enum Op : uint8_t { kByte, kSplit, kJmp, kWordBoundary, kNotWordBoundary, kBegin, kEnd, kGap };
  Op op = kByte;
  bool any = false;           // kGap: of any byte but '\n'
  int32_t x = 1, y = 1;       // kSplit: try pc+x, then pc+y; kJmp: pc+x; kGap: y is its slot
  uint32_t min = 0, max = 0;  // kGap: min..max bytes of `set`
  ByteSet set = kNoBytes;     // kByte, kGap
};
using SimpleCode = std::vector<SimpleInst>;

class SimplePattern {
 public:
  // Whether `p` is written in the simple syntax (and so is valid RE2); `captures` gets its
  // number of capture groups. Allocates nothing: this is how every pattern is checked at load.
  static bool IsSimple(std::string_view p, int* captures) {
    Parser parser{p};
    if (!parser.ParseAlternation(nullptr) || parser.i != p.size()) return false;
    if (captures != nullptr) *captures = parser.captures;
    return true;
  }

  // The matcher for a simple pattern, or nullptr when it is not one or its program would be
  // too long (then RE2 must match it).
  static std::unique_ptr<SimplePattern> Build(std::string_view p) {
    Parser parser{p};
    auto out = std::make_unique<SimplePattern>();
    if (!parser.ParseAlternation(&out->code_) || parser.i != p.size()) return nullptr;
    if (out->code_.size() > kMaxSimpleProgram) return nullptr;
    out->FindFirstBytes();
    return out;
  }

  // Whether the pattern matches somewhere in `t`, which must be ASCII without '\n'.
  // `fallback` is set (and false returned) when the text is long (the search takes time in
  // proportion to its length times the program's, more with gaps: RE2's DFA is linear).
  bool Match(std::string_view t, bool* fallback) const {
    const size_t cells = rows_ * (t.size() + 1);
    if (t.size() > kMaxSimpleText || cells > kMaxSimpleVisits) {
      *fallback = true;
      return false;
    }
    thread_local std::vector<uint64_t> visited;
    // Places still to try: pc at each position lo..hi (a range only after a gap).
    struct Todo {
      uint32_t pc, lo, hi;
    };
    thread_local std::vector<Todo> stack;
    // Per gap: the last run of its bytes found, [first, second): a gap tried again inside it
    // needs no new scan.
    thread_local std::vector<std::pair<size_t, size_t>> runs;
    visited.assign((cells + 63) / 64, 0);
    runs.assign(gaps_, {1, 0});
    const size_t stride = t.size() + 1;
    // The first position in lo..hi not yet tried at pc (which has a row), or SIZE_MAX.
    auto untried = [&](uint32_t pc, size_t lo, size_t hi) -> size_t {
      size_t base = static_cast<size_t>(row_[pc]) * stride;
      for (size_t c = base + lo; c <= base + hi; c = (c | 63) + 1) {
        uint64_t free = ~visited[c >> 6] >> (c & 63);
        if (free != 0) {
          size_t q = c + static_cast<size_t>(__builtin_ctzll(free));
          return q <= base + hi ? q - base : SIZE_MAX;
        }
      }
      return SIZE_MAX;
    };
    for (size_t start = 0; start <= t.size(); ++start) {
      if (first_byte_ >= 0) {  // one possible first byte: jump to it
        const void* at = start < t.size()
                             ? std::memchr(t.data() + start, first_byte_, t.size() - start)
                             : nullptr;
        if (at == nullptr) break;
        start = static_cast<size_t>(static_cast<const char*>(at) - t.data());
      } else if (!Viable(0, t, start)) {
        continue;
      }
      stack.clear();
      stack.push_back({0, static_cast<uint32_t>(start), static_cast<uint32_t>(start)});
      while (!stack.empty()) {
        Todo todo = stack.back();
        stack.pop_back();
        uint32_t pc = todo.pc;
        size_t pos = todo.lo;
        if (todo.lo < todo.hi) {
          if (pc == code_.size()) return true;  // a gap ends the pattern
          pos = untried(pc, todo.lo, todo.hi);
          if (pos == SIZE_MAX) continue;
          if (pos < todo.hi) stack.push_back({pc, static_cast<uint32_t>(pos + 1), todo.hi});
        }
        for (;;) {
          if (pc == code_.size()) return true;
          if (int32_t row = row_[pc]; row >= 0) {  // where paths meet: try each position once
            size_t cell = static_cast<size_t>(row) * stride + pos;
            uint64_t bit = uint64_t{1} << (cell & 63);
            if (visited[cell >> 6] & bit) break;  // tried from here before: it failed
            visited[cell >> 6] |= bit;
          }
          const SimpleInst& in = code_[pc];
          bool go = true;
          switch (in.op) {
            case SimpleInst::kByte:
              go = pos < t.size() && InSet(in.set, static_cast<unsigned char>(t[pos]));
              ++pos;
              ++pc;
              break;
            case SimpleInst::kSplit:
              if (Viable(pc + in.y, t, pos)) {
                stack.push_back(
                    {pc + in.y, static_cast<uint32_t>(pos), static_cast<uint32_t>(pos)});
              }
              pc += in.x;
              go = Viable(pc, t, pos);
              break;
            case SimpleInst::kJmp:
              pc += in.x;
              break;
            case SimpleInst::kWordBoundary:
              go = AtWordBoundary(t, pos);
              ++pc;
              break;
            case SimpleInst::kNotWordBoundary:
              go = !AtWordBoundary(t, pos);
              ++pc;
              break;
            case SimpleInst::kBegin:
              go = pos == 0;
              ++pc;
              break;
            case SimpleInst::kEnd:
              go = pos == t.size();
              ++pc;
              break;
            case SimpleInst::kGap: {
              size_t end = t.size();  // where the run of the gap's bytes from pos ends
              if (!in.any) {
                auto& last = runs[static_cast<size_t>(in.y)];
                if (pos >= last.first && pos <= last.second) {
                  end = last.second;
                } else {
                  end = pos;
                  while (end < t.size() && InSet(in.set, static_cast<unsigned char>(t[end]))) ++end;
                  last = {pos, end};
                }
              }
              size_t run = std::min<size_t>(in.max, end - pos);
              go = run >= in.min;
              if (go) {
                if (run > in.min) {  // the longer gaps, as one range
                  stack.push_back({pc + 1, static_cast<uint32_t>(pos + in.min + 1),
                                   static_cast<uint32_t>(pos + run)});
                }
                pos += in.min;
                ++pc;
              }
              break;
            }
          }
          if (!go) break;
        }
      }
    }
    return false;
  }

 private:
  // For each pc, the bytes a match can go on with from there (first_[pc]), or any byte
  // (any_[pc]: it may match empty or begin with a gap that can be empty). Every jump goes
  // forward, so one backward pass computes them all.
  void FindFirstBytes() {
    size_t n = code_.size();
    first_.assign(n + 1, kNoBytes);
    any_.assign(n + 1, 0);
    any_[n] = 1;  // matched
    // Only where paths meet can a search come back to the same place: those get visit rows.
    row_.assign(n + 1, -1);
    auto meet = [&](size_t pc) {
      if (pc < n && row_[pc] < 0) row_[pc] = static_cast<int32_t>(rows_++);
    };
    for (size_t pc = 0; pc < n; ++pc) {
      const SimpleInst& in = code_[pc];
      if (in.op == SimpleInst::kSplit) {
        meet(pc + in.x);
        meet(pc + in.y);
      } else if (in.op == SimpleInst::kJmp) {
        meet(pc + in.x);
      } else if (in.op == SimpleInst::kGap) {
        meet(pc);  // so that each start of a gap is expanded once
        meet(pc + 1);
        ByteSet dot = Complement(kNoBytes);
        dot[0] &= ~(uint64_t{1} << '\n');
        code_[pc].any = in.set == dot;
        code_[pc].y = static_cast<int32_t>(gaps_++);
      }
    }
    for (size_t pc = n; pc-- > 0;) {
      const SimpleInst& in = code_[pc];
      switch (in.op) {
        case SimpleInst::kByte:
          first_[pc] = in.set;
          break;
        case SimpleInst::kSplit:
          first_[pc] = first_[pc + in.x];
          AddSet(first_[pc], first_[pc + in.y]);
          any_[pc] = any_[pc + in.x] || any_[pc + in.y];
          break;
        case SimpleInst::kJmp:
          first_[pc] = first_[pc + in.x];
          any_[pc] = any_[pc + in.x];
          break;
        case SimpleInst::kGap:
          first_[pc] = in.set;
          if (in.min == 0) {
            AddSet(first_[pc], first_[pc + 1]);
            any_[pc] = any_[pc + 1];
          }
          break;
        default:  // assertions consume nothing
          first_[pc] = first_[pc + 1];
          any_[pc] = any_[pc + 1];
          break;
      }
    }
    if (!any_[0] && __builtin_popcountll(first_[0][0]) + __builtin_popcountll(first_[0][1]) == 1) {
      first_byte_ =
          first_[0][0] ? __builtin_ctzll(first_[0][0]) : 64 + __builtin_ctzll(first_[0][1]);
    }
  }

  // Whether a match can go on from pc at pos (a quick look at the next byte).
  bool Viable(size_t pc, std::string_view t, size_t pos) const {
    return any_[pc] || (pos < t.size() && InSet(first_[pc], static_cast<unsigned char>(t[pos])));
  }

  struct Parser {
    std::string_view p;
    size_t i = 0;
    int captures = 0;
    int big_quantifiers = 0;      // read so far: those that allow or need 2 or more
    int depth = 0;                // groups open; deep nesting is left to RE2 (and its limits)
    std::vector<size_t> jmps_{};  // where the Jmps of the alternations being read are

    // Each Parse* checks the syntax and, when `out` is not null, appends the program for
    // what it read.
    bool ParseAlternation(SimpleCode* out) {
      // Each branch is written straight into `out`; one followed by another gets a Split
      // before it (to the next branch) and a Jmp after it (to the end, set once known):
      // Split(next branch) branch Jmp(end) ... last branch.
      const size_t first_jmp = jmps_.size();
      for (;;) {
        size_t start = out != nullptr ? out->size() : 0;
        if (!ParseConcat(out)) return false;
        if (i < p.size() && p[i] == '|') {
          ++i;
          if (out != nullptr) {
            SimpleInst split;
            split.op = SimpleInst::kSplit;
            split.x = 1;
            split.y = static_cast<int32_t>(out->size() - start + 2);
            out->insert(out->begin() + static_cast<ptrdiff_t>(start), split);
            SimpleInst jmp;
            jmp.op = SimpleInst::kJmp;
            jmps_.push_back(out->size());
            out->push_back(jmp);
            if (out->size() > kMaxSimpleProgram) return false;
          }
          continue;
        }
        break;
      }
      if (out == nullptr) return true;
      for (size_t k = first_jmp; k < jmps_.size(); ++k) {
        (*out)[jmps_[k]].x = static_cast<int32_t>(out->size() - jmps_[k]);
      }
      jmps_.resize(first_jmp);
      return out->size() <= kMaxSimpleProgram;
    }

    // Plain ASCII text, no metacharacter: it stands for itself.
    static bool IsPlain(unsigned char c) {
      switch (c) {
        case '\\':
        case '.':
        case '^':
        case '$':
        case '|':
        case '(':
        case ')':
        case '[':
        case ']':
        case '{':
        case '}':
        case '*':
        case '+':
        case '?':
          return false;
        default:
          return c < 0x80;
      }
    }

    bool ParseConcat(SimpleCode* out) {
      while (i < p.size() && p[i] != '|' && p[i] != ')') {
        if (out == nullptr) {
          // Checking only: skip plain text up to the last character before a metacharacter
          // (which may be a quantifier for that character).
          while (i + 1 < p.size() && IsPlain(static_cast<unsigned char>(p[i])) &&
                 IsPlain(static_cast<unsigned char>(p[i + 1]))) {
            ++i;
          }
        }
        size_t atom_start = out != nullptr ? out->size() : 0;  // the atom is written there
        bool is_group = false, zero_width = false;
        int big_before = big_quantifiers;
        if (!ParseAtom(out, &is_group, &zero_width)) return false;
        bool quantified =
            i < p.size() && (p[i] == '?' || p[i] == '*' || p[i] == '+' || p[i] == '{');
        if (!quantified) continue;
        uint32_t min = 0, max = 0;
        if (!ParseRepeat(&min, &max) || zero_width || max == 0) return false;
        if (i < p.size() && p[i] == '?') ++i;  // lazy: the same matches
        if (i < p.size() && (p[i] == '?' || p[i] == '*' || p[i] == '+' || p[i] == '{')) {
          return false;  // RE2 refuses a repeated repeat
        }
        // Counts of repeats inside repeats multiply, and RE2 limits the product: left to RE2.
        bool big = min >= 2 || max >= 2;
        if (big && big_quantifiers != big_before) return false;
        if (big) ++big_quantifiers;
        // A byte repeated a varying number of times is a gap; a group is written out.
        bool gap = !is_group && min != max && max >= 2;
        if (!gap && (max == kUnbounded || max > kMaxSimpleRepeat)) return false;
        if (out == nullptr) continue;
        if (gap) {
          SimpleInst& g = (*out)[atom_start];
          g.op = SimpleInst::kGap;
          g.min = min;
          g.max = max;
          continue;
        }
        SimpleCode atom(out->begin() + static_cast<ptrdiff_t>(atom_start), out->end());
        out->resize(atom_start);
        for (uint32_t k = 0; k < min; ++k) out->insert(out->end(), atom.begin(), atom.end());
        for (uint32_t k = min; k < max; ++k) {  // optional copies: Split(atom, past it)
          SimpleInst split;
          split.op = SimpleInst::kSplit;
          split.x = 1;
          split.y = static_cast<int32_t>(atom.size() + 1);
          out->push_back(split);
          out->insert(out->end(), atom.begin(), atom.end());
        }
        if (out->size() > kMaxSimpleProgram) return false;
      }
      return true;
    }

    bool ParseRepeat(uint32_t* min, uint32_t* max) {
      char q = p[i++];
      if (q == '?') {
        *min = 0;
        *max = 1;
      } else if (q == '*') {
        *min = 0;
        *max = kUnbounded;
      } else if (q == '+') {
        *min = 1;
        *max = kUnbounded;
      } else {  // {n}, {n,} or {n,m}; anything else in braces is not simple
        if (!ParseNumber(min)) return false;
        *max = *min;
        if (i < p.size() && p[i] == ',') {
          ++i;
          *max = kUnbounded;
          if (i < p.size() && p[i] != '}' && !ParseNumber(max)) return false;
        }
        if (i >= p.size() || p[i] != '}') return false;
        ++i;
        if (*max != kUnbounded && *max < *min) return false;
      }
      return true;
    }

    bool ParseNumber(uint32_t* n) {
      size_t start = i;
      *n = 0;
      while (i < p.size() && p[i] >= '0' && p[i] <= '9' && i - start < 5) {
        *n = *n * 10 + static_cast<uint32_t>(p[i++] - '0');
      }
      return i > start && i - start < 5 && *n <= kMaxSimpleCount;
    }

    bool ParseAtom(SimpleCode* atom, bool* is_group, bool* zero_width) {
      auto c = static_cast<unsigned char>(p[i]);
      if (c == '(') {
        ++i;
        if (i < p.size() && p[i] == '?') {
          if (i + 1 >= p.size() || p[i + 1] != ':') return false;  // flags, names
          i += 2;
        } else {
          ++captures;
        }
        *is_group = true;
        if (++depth > kMaxSimpleDepth || !ParseAlternation(atom)) return false;
        --depth;
        if (i >= p.size() || p[i] != ')') return false;
        ++i;
        return true;
      }
      SimpleInst e;
      if (c == '[') {
        if (!ParseClass(&e.set)) return false;
      } else if (c == '.') {
        ++i;
        e.set = Complement(kNoBytes);
        e.set[0] &= ~(uint64_t{1} << '\n');
      } else if (c == '^' || c == '$') {
        ++i;
        e.op = c == '^' ? SimpleInst::kBegin : SimpleInst::kEnd;
        *zero_width = true;
      } else if (c == '\\') {
        if (i + 1 >= p.size()) return false;
        auto x = static_cast<unsigned char>(p[i + 1]);
        i += 2;
        if (x == 'b' || x == 'B') {
          e.op = x == 'b' ? SimpleInst::kWordBoundary : SimpleInst::kNotWordBoundary;
          *zero_width = true;
        } else if (!PerlClass(x, &e.set) && !EscapedSelf(x, &e.set)) {
          return false;
        }
      } else if (c >= 0x80) {
        // One character outside ASCII: the empty set, as no byte of ASCII text is it.
        const size_t len = NonAsciiCharLength();
        if (len == 0) return false;
        i += len;
      } else if (c == '*' || c == '+' || c == '?' || c == '{' || c == '}' || c == ']') {
        return false;  // a repeat without an argument, braces and brackets alone
      } else {
        ++i;
        AddByte(e.set, c);
      }
      if (atom != nullptr) atom->push_back(e);
      return true;
    }

    // The length of the well-formed UTF-8 character at p[i] (a non-ASCII byte), or 0.
    size_t NonAsciiCharLength() const {
      return Utf8SequenceLength(reinterpret_cast<const unsigned char*>(p.data()) + i, p.size() - i);
    }

    // \d \D \s \S \w \W, as RE2 defines them (ASCII only).
    static bool PerlClass(unsigned char x, ByteSet* set) {
      ByteSet s = kNoBytes;
      switch (x | 0x20) {
        case 'd':
          AddRange(s, '0', '9');
          break;
        case 's':
          for (unsigned char c : {'\t', '\n', '\f', '\r', ' '}) AddByte(s, c);
          break;
        case 'w':
          AddRange(s, '0', '9');
          AddRange(s, 'A', 'Z');
          AddRange(s, 'a', 'z');
          AddByte(s, '_');
          break;
        default:
          return false;
      }
      if (x != 'd' && x != 's' && x != 'w' && x != 'D' && x != 'S' && x != 'W') return false;
      *set = (x >= 'a') ? s : Complement(s);
      return true;
    }

    // An escaped ASCII punctuation character or space stands for itself (RE2 refuses other
    // escapes it does not know; letters and digits here are left to RE2).
    static bool EscapedSelf(unsigned char x, ByteSet* set) {
      if (x >= 0x80 || x < 0x20 || x == 0x7f || IsWordByte(x)) return false;
      *set = kNoBytes;
      AddByte(*set, x);
      return true;
    }

    // [abc], [a-z], [^...], with \d \s \w (and negations) and escaped punctuation inside.
    // A '-' is taken only first or last; '[' inside (POSIX classes) and a leading ']' are left
    // to RE2.
    bool ParseClass(ByteSet* set) {
      ++i;  // '['
      bool negate = false;
      if (i < p.size() && p[i] == '^') {
        negate = true;
        ++i;
      }
      ByteSet s = kNoBytes;
      bool first = true;
      for (;;) {
        if (i >= p.size()) return false;
        auto c = static_cast<unsigned char>(p[i]);
        if (c == ']') {
          if (first) return false;
          ++i;
          break;
        }
        first = false;
        if (c == '[') return false;
        if (c >= 0x80) {  // a member outside ASCII adds no byte; not as a range's end
          const size_t len = NonAsciiCharLength();
          if (len == 0) return false;
          i += len;
          if (i < p.size() && p[i] == '-' && i + 1 < p.size() && p[i + 1] != ']') return false;
          continue;
        }
        if (c == '\\') {
          if (i + 1 >= p.size()) return false;
          auto x = static_cast<unsigned char>(p[i + 1]);
          ByteSet t;
          if (!PerlClass(x, &t) && !EscapedSelf(x, &t)) return false;
          i += 2;
          if (i < p.size() && p[i] == '-' && i + 1 < p.size() && p[i + 1] != ']') return false;
          AddSet(s, t);
          continue;
        }
        if (c == '-') {
          // only as the first or the last member
          if (!(i > 0 && (p[i - 1] == '[' || (p[i - 1] == '^' && p[i - 2] == '['))) &&
              !(i + 1 < p.size() && p[i + 1] == ']')) {
            return false;
          }
          ++i;
          AddByte(s, c);
          continue;
        }
        ++i;
        if (i + 1 < p.size() && p[i] == '-' && p[i + 1] != ']') {
          auto hi = static_cast<unsigned char>(p[i + 1]);
          if (hi >= 0x80 || hi == '\\' || hi == '[' || hi == '-' || hi < c) return false;
          i += 2;
          if (i < p.size() && p[i] == '-' && i + 1 < p.size() && p[i + 1] != ']') return false;
          AddRange(s, c, hi);
        } else {
          AddByte(s, c);
        }
      }
      *set = negate ? Complement(s) : s;
      return true;
    }
  };

  SimpleCode code_;
  std::vector<ByteSet> first_;  // per pc, see FindFirstBytes
  std::vector<uint8_t> any_;
  std::vector<int32_t> row_;  // per pc: its row of visit bits, or -1
  size_t rows_ = 0;
  size_t gaps_ = 0;
  int first_byte_ = -1;  // the only byte a match can start with, if there is one
};

// One pattern of the rules, lower-cased as the text it is matched against (LowerPattern).
enum class PatternKind : uint8_t { kRuleMatch, kRuleExclude, kCode, kProviderText };
struct Pattern {
  PatternKind kind;
  uint32_t index;              // into rules, codes or providers
  std::string text;            // lower-cased
  bool literal_only = false;   // plain text (or alternatives of it): a literal found is a match
  bool in_set = false;         // matched by the RuleSet's RE2::Set
  bool always = false;         // no literal to find it by: a candidate for every reply
  bool simple_syntax = false;  // SimplePattern::IsSimple
  std::once_flag simple_once;
  std::unique_ptr<SimplePattern> simple;  // built on first use, when it can be
  std::atomic<uint32_t> simple_uses{0};   // see kSimpleUses
  std::unique_ptr<LazyRe2> re;            // for the others, and for text that is not ASCII
};

// A simple pattern is matched without RE2 this many times; after that it is compiled, as a
// pattern in such steady use pays back its compile with RE2's faster matching (a warm DFA).
constexpr uint32_t kSimpleUses = 256;

// Whether a pattern matches the lower-cased text; `simple_text` says the text is ASCII
// without a newline, so a simple pattern can match it without RE2.
bool PatternMatches(Pattern& p, std::string_view lower, bool simple_text) {
  if (p.literal_only) return true;
  // The count is read before it is incremented: once a pattern is past kSimpleUses, threads
  // parsing at once only read its cache line instead of writing it on every match.
  if (simple_text && p.simple_syntax &&
      p.simple_uses.load(std::memory_order_relaxed) < kSimpleUses &&
      p.simple_uses.fetch_add(1, std::memory_order_relaxed) < kSimpleUses) {
    std::call_once(p.simple_once, [&] { p.simple = SimplePattern::Build(p.re->text()); });
    bool fallback = false;
    if (p.simple) {
      bool m = p.simple->Match(lower, &fallback);
      if (!fallback) return m;
    }
  }
  const RE2& re = p.re->Get();
  return re.ok() && RE2::PartialMatch(lower, re);
}

// ---- Literal prefilter ------------------------------------------------------------------
// Almost every pattern needs some literal text to match ("mailbox unavailable", "[cs01]").
// One RE2::Set over a thousand patterns builds its DFA lazily, and nearly every new reply
// text reaches states never built before: ~650k instructions per reply (callgrind). So each
// pattern names the literals it cannot match without (one per top-level branch, or else one of
// a set found through mandatory groups: LiteralSetFinder), one pass over the text finds which
// of those occur, and only those patterns are candidates, each matched on its own (a
// SimplePattern or a small RE2). Simple patterns without a usable literal are candidates for
// every reply; the others without one go into one RE2::Set, matched in one pass.

constexpr size_t kMinLiteral = 3;

// The bytes of the character at p[i]: a whole UTF-8 sequence, to which a quantifier after it
// applies as a whole ("ー?" makes all three bytes optional), or else one byte.
size_t CharBytes(std::string_view p, size_t i) {
  if (static_cast<unsigned char>(p[i]) < 0x80) return 1;
  size_t len =
      Utf8SequenceLength(reinterpret_cast<const unsigned char*>(p.data()) + i, p.size() - i);
  return len == 0 ? 1 : len;
}

// Skips a group or class starting at p[i]; returns the index just past it.
size_t SkipGroup(std::string_view p, size_t i) {
  int depth = 0;
  bool in_class = false;
  for (; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
      if (i + 1 < p.size() && p[i + 1] == '^') ++i;
      if (i + 1 < p.size() && p[i + 1] == ']') ++i;  // a literal ']' first
      if (depth == 0) {
        // a class on its own: it ends at its ']'
        for (++i; i < p.size() && (p[i] != ']'); ++i) {
          if (p[i] == '\\') ++i;
        }
        return i + 1;
      }
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (--depth == 0) return i + 1;
    }
  }
  return p.size();
}

// The literal each top-level branch of a lower-cased pattern cannot match without (its
// longest run of plain characters that are neither optional nor inside a group), or nothing
// when some branch has none of at least kMinLiteral bytes.
// `exact` tells whether the pattern is nothing but those literals (alternatives of plain
// text), so that finding one is a match.
std::vector<std::string> RequiredLiterals(std::string_view p, bool* exact) {
  *exact = true;
  if (p.find("\\Q") != std::string_view::npos) return {};
  std::vector<std::string> out;
  // The current run of literal bytes: run[0, run_size) (a buffer, so that adding a byte is no
  // call).
  std::string run(p.size(), '\0'), best;
  size_t run_size = 0;
  auto cut = [&] {
    if (run_size > best.size()) best.assign(run, 0, run_size);
    run_size = 0;
    *exact = false;
  };
  auto end_branch = [&] {
    bool was_exact = *exact && best.empty();
    cut();
    *exact = was_exact;
    if (best.size() < kMinLiteral) return false;
    out.push_back(best);
    best.clear();
    return true;
  };
  size_t i = 0;
  while (i < p.size()) {
    char c = p[i];
    bool literal = false;
    size_t lit_at = i, lit_len = 1;  // the literal's bytes: p[lit_at, lit_at + lit_len)
    size_t next = i + 1;
    if (c == '|') {
      if (!end_branch()) return {};
      i = next;
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= p.size()) return {};
      char e = p[i + 1];
      next = i + 2;
      if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
        // a class, an assertion or a code point: \d \w \s \b \pL \p{..} \x41 \x{..} ...
        if ((e == 'p' || e == 'P' || e == 'x') && next < p.size() && p[next] == '{') {
          size_t close = p.find('}', next);
          next = close == std::string_view::npos ? p.size() : close + 1;
        } else if (e == 'p' || e == 'P') {
          next += 1;
        } else if (e == 'x') {
          next += 2;
        } else if (e >= '0' && e <= '7') {  // octal: up to two more digits
          for (int k = 0; k < 2 && next < p.size() && p[next] >= '0' && p[next] <= '7'; ++k) ++next;
        }
      } else {
        literal = true;  // an escaped punctuation character stands for itself
        lit_at = i + 1;
      }
    } else if (c == '(' || c == '[') {
      next = SkipGroup(p, i);
    } else if (c == '.' || c == '^' || c == '$' || c == ')' || c == ']' || c == '*' || c == '+' ||
               c == '?' || c == '{') {
      // not a literal (a stray quantifier or bracket only ever appears in a pattern RE2
      // refuses, which the loader reports)
    } else {
      literal = true;
      if (static_cast<unsigned char>(c) >= 0x80) {
        lit_len = CharBytes(p, i);
        next = i + lit_len;
      }
    }
    // A quantifier after the atom: optional ones drop it, repeated ones end the run after it.
    bool optional = false, repeated = false;
    if (next < p.size()) {
      char q = p[next];
      if (q == '?' || q == '*') {
        optional = true;
        ++next;
      } else if (q == '+') {
        repeated = true;
        ++next;
      } else if (q == '{') {
        size_t close = p.find('}', next);
        if (close != std::string_view::npos) {
          std::string_view counts = p.substr(next + 1, close - next - 1);
          optional = counts.empty() || counts[0] == '0' || counts[0] == ',';
          repeated = !optional;
          next = close + 1;
        }
      }
      if ((optional || repeated) && next < p.size() && p[next] == '?') ++next;  // lazy
    }
    if (!literal || optional) {
      cut();
    } else {
      for (size_t k = 0; k < lit_len; ++k) run[run_size++] = p[lit_at + k];
      if (repeated) cut();
    }
    i = next;
  }
  if (!end_branch()) return {};
  return out;
}

// For a pattern RequiredLiterals finds nothing in (every branch starts with a group, as in
// "(?:user|mailbox) (?:is )?disabled"): a set of literals one of which every match contains,
// found through mandatory groups too ("user", "mailbox" here, or " disabled"). Empty when
// there is none. `p` is lower-cased.
// Whether every match of `p` holds a character outside ASCII: one branch with a mandatory
// \x{...} escape of such a code point (or such a character written as is) at the top level.
// The Set's patterns are matched case-sensitively (see LowerPattern), so no case folding maps
// such a character to ASCII; a pattern with flags ("(?i)") is never counted.
bool NeedsNonAscii(std::string_view p) {
  for (size_t at = p.find("(?"); at != std::string_view::npos; at = p.find("(?", at + 1)) {
    if (at + 2 >= p.size() || p[at + 2] != ':') return false;
  }
  if (p.find("\\Q") != std::string_view::npos) return false;
  bool needs = false;
  size_t i = 0;
  while (i < p.size()) {
    char c = p[i];
    size_t next = i + 1;
    bool non_ascii = false;
    if (c == '|') return false;
    if (c == '\\') {
      if (i + 1 >= p.size()) return false;
      char e = p[i + 1];
      next = i + 2;
      if ((e == 'x' || e == 'p' || e == 'P') && next < p.size() && p[next] == '{') {
        size_t close = p.find('}', next);
        if (close == std::string_view::npos) return false;
        if (e == 'x') {
          std::string_view hex = p.substr(next + 1, close - next - 1);
          uint32_t v = 0;
          bool ok = !hex.empty() && hex.size() <= 6;
          for (char h : hex) {
            int d = (h >= '0' && h <= '9')   ? h - '0'
                    : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                    : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                             : -1;
            if (d < 0) ok = false;
            v = v * 16 + static_cast<uint32_t>(d < 0 ? 0 : d);
          }
          non_ascii = ok && v >= 0x80;
        }
        next = close + 1;
      } else if (e == 'p' || e == 'P') {
        next += 1;
      } else if (e == 'x') {
        next += 2;
      } else if (e >= '0' && e <= '7') {
        for (int k = 0; k < 2 && next < p.size() && p[next] >= '0' && p[next] <= '7'; ++k) ++next;
      }
    } else if (c == '(' || c == '[') {
      next = SkipGroup(p, i);
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      non_ascii = true;
      next = i + CharBytes(p, i);
    }
    bool optional = false;
    if (next < p.size()) {
      char q = p[next];
      if (q == '?' || q == '*') {
        optional = true;
      } else if (q == '{') {
        optional = next + 1 >= p.size() || p[next + 1] == '0' || p[next + 1] == ',';
      }
    }
    if (non_ascii && !optional) needs = true;
    i = next;
  }
  return needs;
}

class LiteralSetFinder {
 public:
  static std::vector<std::string> Find(std::string_view p) {
    if (p.find("\\Q") != std::string_view::npos) return {};
    LiteralSetFinder f{p};
    Set s = f.Alternation();
    if (!s.ok || f.bad_ || f.i_ != p.size()) return {};
    return s.lits;
  }

 private:
  struct Set {
    bool ok = false;
    std::vector<std::string> lits;
    size_t Shortest() const {
      size_t n = SIZE_MAX;
      for (const auto& l : lits) n = std::min(n, l.size());
      return n;
    }
  };
  static constexpr size_t kMaxLiterals = 16;

  explicit LiteralSetFinder(std::string_view p) : p_(p) {}

  Set Alternation() {
    Set all;
    all.ok = true;
    for (;;) {
      Set b = Concat();
      if (!b.ok) all.ok = false;
      for (auto& l : b.lits) all.lits.push_back(std::move(l));
      if (i_ < p_.size() && p_[i_] == '|') {
        ++i_;
        continue;
      }
      break;
    }
    if (all.lits.size() > kMaxLiterals) all.ok = false;
    if (!all.ok) all.lits.clear();
    return all;
  }

  // The best set among the literal runs and mandatory groups of one branch.
  Set Concat() {
    Set best;
    std::string run;
    auto consider = [&](Set s) {
      if (!s.ok || s.lits.empty()) return;
      if (!best.ok || s.Shortest() > best.Shortest() ||
          (s.Shortest() == best.Shortest() && s.lits.size() < best.lits.size())) {
        best = std::move(s);
      }
    };
    auto cut = [&] {
      if (run.size() >= kMinLiteral) consider(Set{true, {run}});
      run.clear();
    };
    while (i_ < p_.size() && p_[i_] != '|' && p_[i_] != ')') {
      char c = p_[i_];
      bool literal = false, group = false;
      size_t lit_at = i_, lit_len = 1;  // the literal's bytes: p_[lit_at, lit_at + lit_len)
      Set sub;
      if (c == '(') {
        ++i_;
        if (i_ < p_.size() && p_[i_] == '?') {
          if (i_ + 1 >= p_.size() || p_[i_ + 1] != ':') {
            bad_ = true;  // flags or names: not worth the trouble
            return {};
          }
          i_ += 2;
        }
        if (++depth_ > kMaxSimpleDepth) {
          bad_ = true;
          return {};
        }
        sub = Alternation();
        --depth_;
        if (i_ >= p_.size() || p_[i_] != ')') {
          bad_ = true;
          return {};
        }
        ++i_;
        group = true;
      } else if (c == '[') {
        i_ = SkipGroup(p_, i_);
      } else if (c == '\\') {
        if (i_ + 1 >= p_.size()) {
          bad_ = true;
          return {};
        }
        char e = p_[i_ + 1];
        i_ += 2;
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
          if ((e == 'p' || e == 'P' || e == 'x') && i_ < p_.size() && p_[i_] == '{') {
            size_t close = p_.find('}', i_);
            i_ = close == std::string_view::npos ? p_.size() : close + 1;
          } else if (e == 'p' || e == 'P') {
            i_ += 1;
          } else if (e == 'x') {
            i_ += 2;
          } else if (e >= '0' && e <= '7') {  // octal: up to two more digits
            for (int k = 0; k < 2 && i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '7'; ++k) ++i_;
          }
        } else if (static_cast<unsigned char>(e) < 0x80) {
          literal = true;
          lit_at = i_ - 1;
        }
      } else if (c == '*' || c == '+' || c == '?' || c == '{' || c == ']') {
        bad_ = true;  // a pattern RE2 refuses or reads oddly: leave it alone
        return {};
      } else if (c == '.' || c == '^' || c == '$') {
        ++i_;
      } else {
        lit_len = static_cast<unsigned char>(c) >= 0x80 ? CharBytes(p_, i_) : 1;
        i_ += lit_len;
        literal = true;
      }
      // A quantifier: optional atoms drop out, repeated ones end the run after them.
      bool optional = false, repeated = false;
      if (i_ < p_.size()) {
        char q = p_[i_];
        if (q == '?' || q == '*') {
          optional = true;
          ++i_;
        } else if (q == '+') {
          repeated = true;
          ++i_;
        } else if (q == '{') {
          size_t close = p_.find('}', i_);
          if (close == std::string_view::npos) {
            bad_ = true;
            return {};
          }
          std::string_view counts = p_.substr(i_ + 1, close - i_ - 1);
          optional = counts.empty() || counts[0] == '0' || counts[0] == ',';
          repeated = !optional;
          i_ = close + 1;
        }
        if ((optional || repeated) && i_ < p_.size() && p_[i_] == '?') ++i_;
      }
      if (literal && !optional) {
        if (lit_len == 1) {
          run.push_back(p_[lit_at]);
        } else {
          run.append(p_.data() + lit_at, lit_len);
        }
        if (repeated) cut();
        continue;
      }
      cut();
      if (group && !optional) consider(std::move(sub));
    }
    cut();
    return best;
  }

  std::string_view p_;
  size_t i_ = 0;
  bool bad_ = false;
  int depth_ = 0;
};

// Finds which of many literals occur in a text: literals are bucketed by a hash of their
// first three bytes, and the text is hashed at every position. A literal's first 8 bytes are
// compared as one word (most are no longer), so a position costs no call to memcmp.
class LiteralIndex {
 public:
  void Add(std::string literal, uint32_t pattern) {
    literals_.push_back({std::move(literal), pattern});
  }

  void Build() {
    starts_.assign(kBuckets + 1, 0);
    for (const Literal& l : literals_) ++starts_[Hash(l.text.data()) + 1];
    for (size_t b = 0; b < kBuckets; ++b) starts_[b + 1] += starts_[b];
    entries_.resize(literals_.size());
    tails_.clear();
    std::vector<uint32_t> fill(starts_.begin(), starts_.end() - 1);
    for (const Literal& l : literals_) {
      Entry& e = entries_[fill[Hash(l.text.data())]++];
      size_t head = std::min<size_t>(l.text.size(), 8);
      e.head = Load(l.text.data(), head);
      e.mask = head == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * head)) - 1;
      e.text = static_cast<uint32_t>(tails_.size());
      if (l.text.size() > 8) tails_.append(l.text, 8);
      e.size = static_cast<uint32_t>(l.text.size());
      e.pattern = l.pattern;
    }
  }

  // Calls found(pattern) for every literal occurrence (a pattern may be reported repeatedly).
  template <typename Found>
  void Scan(std::string_view text, Found&& found) const {
    if (literals_.empty() || text.size() < kMinLiteral) return;
    const char* s = text.data();
    size_t n = text.size();
    for (size_t i = 0; i + kMinLiteral <= n; ++i) {
      uint32_t h = Hash(s + i);
      uint32_t k = starts_[h], end = starts_[h + 1];
      if (k == end) continue;
      size_t left = n - i;
      uint64_t word = Load(s + i, std::min<size_t>(left, 8));
      for (; k < end; ++k) {
        const Entry& e = entries_[k];
        if ((word & e.mask) == e.head && e.size <= left &&
            (e.size <= 8 || std::memcmp(s + i + 8, tails_.data() + e.text, e.size - 8) == 0)) {
          found(e.pattern);
        }
      }
    }
  }

 private:
  static constexpr uint32_t kBuckets = 1 << 14;
  static uint32_t Hash(const char* p) {
    uint32_t v = static_cast<uint8_t>(p[0]) | static_cast<uint8_t>(p[1]) << 8 |
                 static_cast<uint32_t>(static_cast<uint8_t>(p[2])) << 16;
    return (v * 2654435761u) >> (32 - 14);
  }
  // Up to 8 bytes as a little-endian word, zero-padded (so a short text never matches a
  // longer literal's head: the mask covers its bytes and the size is checked too).
  static uint64_t Load(const char* p, size_t len) {
    uint64_t v = 0;
    if (len == 8) {
      std::memcpy(&v, p, 8);
      return le64toh(v);
    }
    for (size_t j = 0; j < len; ++j) v |= uint64_t{static_cast<uint8_t>(p[j])} << (8 * j);
    return v;
  }
  struct Literal {
    std::string text;
    uint32_t pattern;
  };
  struct Entry {
    uint64_t head;  // the literal's first (up to) 8 bytes, see Load
    uint64_t mask;  // which bytes of a text's word to compare with head
    uint32_t text;  // where the bytes past the first 8 are in tails_
    uint32_t size;
    uint32_t pattern;
  };
  std::vector<Literal> literals_;
  std::vector<uint32_t> starts_;  // bucket -> first index into entries_
  std::vector<Entry> entries_;    // literals grouped by bucket
  std::string tails_;             // the literals' bytes past their first 8
};

// The category implied by an enhanced status alone (RFC 3463 and its registry, RFC 5248 and
// later additions). Class 2 is delivered; the rest by subject and detail.
Category Rfc3463Category(std::string_view status, std::string_view stage) {
  if (status.size() < 5) return Category::kUndetermined;
  char cls = status[0];
  if (cls == '2') return Category::kDelivered;
  bool perm = cls == '5';
  size_t dot = status.find('.', 2);
  if (dot == std::string_view::npos) return Category::kUndetermined;
  std::string_view subject = status.substr(2, dot - 2);
  int detail = 0;
  for (char c : status.substr(dot + 1)) detail = detail * 10 + (c - '0');
  using C = Category;
  if (subject == "1") {
    switch (detail) {
      case 1:  // bad destination mailbox address
      case 3:  // bad destination mailbox address syntax
      case 4:  // destination mailbox address ambiguous
        return C::kUserUnknown;
      case 2:   // bad destination system address
      case 10:  // recipient address has null MX
        return C::kDomainUnknown;
      case 6:
        return C::kMailboxMoved;
      case 7:  // bad sender's mailbox address syntax
      case 8:  // bad sender's system address
        return C::kSenderRejected;
      default:
        // x.1.0 "other address status": at RCPT it is about the recipient, at MAIL the sender.
        if (detail == 0 && stage == "mail") return C::kSenderRejected;
        if (detail == 0 && perm && stage == "rcpt") return C::kUserUnknown;
        return C::kUndetermined;
    }
  }
  if (subject == "2") {
    switch (detail) {
      case 1:
        return C::kMailboxDisabled;
      case 2:
        return C::kMailboxFull;
      case 3:
        return C::kMessageTooLarge;
      case 4:
        return C::kSystemError;  // mailing list expansion problem
      default:
        return C::kUndetermined;
    }
  }
  if (subject == "3") {
    switch (detail) {
      case 2:
        return perm ? C::kNotAccept : C::kSystemError;
      case 3:
        return C::kProtocolError;  // system not capable of selected features
      case 4:
        return C::kMessageTooLarge;
      default:
        return C::kSystemError;  // x.3.0, x.3.1 system full, x.3.5 misconfigured
    }
  }
  if (subject == "4") {
    switch (detail) {
      case 4:
        return perm ? C::kDomainUnknown : C::kNetworkError;  // unable to route
      case 5:
        return C::kSystemError;  // congestion
      case 6:
        return C::kSystemError;  // routing loop
      case 7:
        return C::kExpired;  // delivery time expired
      default:
        return C::kNetworkError;  // no answer, bad connection, directory failure
    }
  }
  if (subject == "5") {
    if (detail == 3) return C::kRateLimited;  // too many recipients
    return C::kProtocolError;
  }
  if (subject == "6") return C::kContentRejected;
  if (subject == "7") {
    switch (detail) {
      case 0:
      case 1:
      case 2:
        return perm ? C::kPolicyRejection : C::kUndetermined;
      case 3:
      case 4:
      case 5:
      case 6:
      case 7:
        return C::kSecurityError;
      case 8:   // authentication credentials invalid (SMTP AUTH, RFC 4954)
      case 9:   // authentication mechanism too weak
      case 12:  // password transition needed
      case 14:  // trust relationship required
        return C::kSecurityError;
      case 10:
      case 11:
      case 30:
        return C::kTlsRequired;
      case 13:
        return C::kMailboxDisabled;  // user account disabled
      case 15:
        return C::kRateLimited;  // priority level too low
      case 16:
        return C::kMessageTooLarge;  // too big for the priority
      case 17:
        return C::kMailboxMoved;  // mailbox owner has changed
      case 18:
        return C::kMailboxMoved;  // domain owner has changed
      case 20:
      case 21:
      case 22:
      case 23:
      case 24:
      case 26:
      case 29:
        return C::kAuthFailure;  // DKIM, SPF, ARC, "multiple authentication checks failed"
      case 25:
        return C::kRequirePtr;  // reverse DNS validation failed
      case 27:
        return C::kSenderRejected;  // sender address has null MX
      case 28:
        return C::kRateLimited;  // mail flood detected
      default:
        return perm ? C::kPolicyRejection : C::kUndetermined;
    }
  }
  return C::kUndetermined;
}

// The Set matches case-sensitively against a lower-cased copy of the reply: that is about
// twice as fast as a case-insensitive Set (half the byte classes, smaller DFA states). So its
// patterns are lower-cased too, except escapes, whose letters carry meaning (\S, \d, \x4F,
// \p{Lu}). ASCII is folded, and on both sides the capitals of Latin-1, Latin Extended-A, Greek
// and Cyrillic (LowerNonAsciiLetters); a letter written as an escape (\x{410}) is not.
std::string LowerPattern(std::string_view p) {
  std::string out(p);  // lowered in place: escapes stay as they are
  bool ascii = true;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    if (static_cast<unsigned char>(c) >= 0x80) ascii = false;
    if (c != '\\' || i + 1 >= out.size()) {
      out[i] = AsciiLower(c);
      continue;
    }
    char e = out[++i];
    if ((e == 'p' || e == 'P' || e == 'x') && i + 1 < out.size() && out[i + 1] == '{') {
      while (i + 1 < out.size() && out[i] != '}') ++i;
    } else if (e == 'x') {
      i = std::min(i + 2, out.size() - 1);
    } else if ((e == 'p' || e == 'P') && i + 1 < out.size()) {
      ++i;  // one-letter class name: \pN, \PL
    }
  }
  if (!ascii) LowerNonAsciiLetters(out);
  return out;
}

// Multi-line replies folded onto one line repeat the reply code, and usually the enhanced
// status, before each line: "550-5.7.1 Messages with multiple 550 5.7.1 addresses in From:".
// Patterns are matched against the text with those inner prefixes removed, so a phrase split
// across reply lines still matches. Returns `text` itself when there is nothing to remove.
std::string_view JoinContinuations(std::string_view text, std::string_view code,
                                   std::string_view status, std::string& buf) {
  if (code.size() != 3) return text;
  auto prefix_at = [&](size_t i) {
    return i + 4 <= text.size() && text.compare(i, 3, code) == 0 &&
           (text[i + 3] == '-' || text[i + 3] == ' ') && (i == 0 || text[i - 1] == ' ');
  };
  size_t first = std::string_view::npos;
  for (size_t i = text.find(code); i != std::string_view::npos; i = text.find(code, i + 1)) {
    if (prefix_at(i)) {
      first = i;
      break;
    }
  }
  if (first == std::string_view::npos) return text;
  size_t next = first + 4;
  bool found = false;
  for (size_t i = text.find(code, next); i != std::string_view::npos; i = text.find(code, i + 1)) {
    if (prefix_at(i)) {
      found = true;
      break;
    }
  }
  if (!found) return text;
  buf.assign(text.substr(0, next));
  size_t i = next;
  while (i < text.size()) {
    if (prefix_at(i) && i > 0) {
      size_t skip = i + 4;
      if (!status.empty() && text.compare(skip, status.size(), status) == 0 &&
          (skip + status.size() == text.size() || text[skip + status.size()] == ' ')) {
        skip += status.size() + 1;
      }
      i = std::min(skip, text.size());
      continue;
    }
    buf.push_back(text[i++]);
  }
  return buf;
}

// Reads a string or an array of strings; lower-cases when asked. Returns false (and sets why)
// when the node has another type or an empty string.
bool ReadStrings(const toml::node& node, bool lower, std::vector<std::string>& out,
                 std::string& why) {
  auto take = [&](const toml::node& n) {
    const auto* s = n.as_string();
    if (s == nullptr) {
      why = "expected a string or an array of strings";
      return false;
    }
    if (s->get().empty()) {
      why = "empty string";
      return false;
    }
    out.push_back(lower ? AsciiLowerCopy(s->get()) : s->get());
    return true;
  };
  if (const auto* arr = node.as_array()) {
    if (arr->empty()) {
      why = "empty array";
      return false;
    }
    for (const auto& n : *arr) {
      if (!take(n)) return false;
    }
    return true;
  }
  return take(node);
}

bool IsKnownStage(std::string_view s) {
  return s == "connect" || s == "helo" || s == "mail" || s == "rcpt" || s == "data" || s == "eom";
}

bool IsKnownDsnAction(std::string_view s) {
  return s == "failed" || s == "delayed" || s == "delivered" || s == "relayed" || s == "expanded" ||
         s == "expired";
}

// True when every character of a status or reply-code glob is a digit, '.', '*' or '?'.
bool IsCodeGlob(std::string_view g) {
  return std::all_of(g.begin(), g.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '.' || c == '*' || c == '?';
  });
}

}  // namespace

struct RuleSet::Impl {
  std::vector<Rule> rules;
  std::vector<uint32_t> patternless;  // rules with no pattern, ascending
  std::vector<CodeExtractor> codes;
  std::vector<ProviderDef> providers;
  // recipient domain or host suffix -> provider index; globs checked in order after.
  std::unordered_map<std::string, uint32_t> domain_exact;
  std::vector<std::pair<std::string, uint32_t>> domain_globs;
  std::unordered_map<std::string, uint32_t> host_suffix;
  std::vector<std::pair<std::string, uint32_t>> host_globs;
  std::vector<std::unique_ptr<Pattern>> patterns;  // every pattern, in file order
  LiteralIndex literals;                           // their required literals
  // Patterns without a literal: the simple ones are candidates for every reply, the others are
  // matched together by the Set.
  std::vector<uint32_t> always_patterns;  // ascending
  std::vector<uint32_t> set_patterns;     // Set index -> pattern
  bool set_needs_non_ascii = true;        // every Set pattern does (NeedsNonAscii)
  std::vector<uint32_t> static_rules;     // rules tried for every reply (see Compile), ascending
  std::unique_ptr<RE2::Set> checker;  // parses the patterns that are not simple (compiles nothing)
  std::unique_ptr<RE2::Set> set;
  RE2::Options options;      // as written: case-insensitive
  RE2::Options set_options;  // the Set's: case-sensitive, against lower-cased text

  // Recent classifications, shared by every thread that classifies with this set (see
  // RuleSet::Classify); dies with the set, so a reload starts afresh.
  mutable std::shared_mutex memo_mu;
  mutable std::unordered_map<std::string, Result> memo;

  std::string_view ProviderByDomain(std::string_view domain) const;
  std::string_view ProviderByHost(std::string_view host) const;
};

namespace {

// Collects everything from one file into an Impl being built. Each method returns false and
// sets `error` ("file:line: reason") on the first problem.
class Loader {
 public:
  Loader(RuleSet::Impl& impl, std::unordered_set<std::string>& seen_ids)
      : impl_(impl), seen_ids_(seen_ids) {}

  bool LoadFile(const RulesSource& src, std::string& error) {
    name_ = src.name.empty() ? "<rules>" : src.name;
    if (src.text.size() > kMaxRulesFileBytes) {
      error = name_ + ":1: file larger than " + std::to_string(kMaxRulesFileBytes) + " bytes";
      return false;
    }
    toml::table root;
    // The built-in rules (or an installed copy left as shipped) come parsed with the build.
    std::string_view tree = src.tree.empty() ? RuleSet::BuiltinTreeFor(src.text) : src.tree;
    if (!tree.empty()) {
      if (!DecodeRulesTree(tree, &root)) {
        error = name_ + ":0: its encoded tree is damaged (rules_tree.h)";
        return false;
      }
    } else {
      try {
        root = toml::parse(std::string_view(src.text), std::string_view(name_));
      } catch (const toml::parse_error& e) {
        error = name_ + ":" + std::to_string(e.source().begin.line) + ": " +
                std::string(e.description());
        return false;
      }
    }
    std::unordered_set<std::string> file_ids;
    for (const auto& [key, node] : root) {
      std::string_view k = key.str();
      const auto* arr = node.as_array();
      if (k != "rule" && k != "provider" && k != "code") {
        return Fail(node,
                    "unknown top-level key '" + std::string(k) +
                        "' (expected [[rule]], [[provider]] or [[code]])",
                    error);
      }
      if (arr == nullptr || !arr->is_array_of_tables()) {
        return Fail(node, "'" + std::string(k) + "' must be written as [[" + std::string(k) + "]]",
                    error);
      }
      for (const auto& item : *arr) {
        const toml::table& t = *item.as_table();
        bool ok = k == "rule"       ? LoadRule(t, file_ids, error)
                  : k == "provider" ? LoadProvider(t, error)
                                    : LoadCode(t, error);
        if (!ok) return false;
      }
    }
    return true;
  }

 private:
  bool Fail(const toml::node& node, const std::string& why, std::string& error) {
    error = name_ + ":" + std::to_string(node.source().begin.line) + ": " + why;
    return false;
  }

  bool CheckKeys(const toml::table& t, std::initializer_list<std::string_view> allowed,
                 std::string_view what, std::string& error) {
    for (const auto& [key, node] : t) {
      if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end()) {
        return Fail(node, "unknown key '" + std::string(key.str()) + "' in " + std::string(what),
                    error);
      }
    }
    return true;
  }

  // Adds one pattern; a bad one is reported at its own line. A simple pattern is valid RE2 by
  // construction; the others are parsed by the checker Set (which compiles nothing), and only a
  // refused one is compiled on its own, to word the error.
  bool AddPattern(const toml::node& where, const std::string& pattern, PatternKind kind,
                  uint32_t index, std::string& error) {
    if (pattern.size() > kMaxPatternBytes) return Fail(where, "pattern too long", error);
    if (impl_.patterns.size() >= kMaxPatterns) return Fail(where, "too many patterns", error);
    std::string lowered = LowerPattern(pattern);
    auto p = std::make_unique<Pattern>();
    p->simple_syntax = SimplePattern::IsSimple(lowered, nullptr);
    std::string why;
    if (!p->simple_syntax && impl_.checker->Add(lowered, &why) < 0) {
      RE2 check(pattern, impl_.options);
      return Fail(where, "bad regular expression: " + (check.ok() ? why : check.error()), error);
    }
    auto id = static_cast<uint32_t>(impl_.patterns.size());
    bool exact = false;
    std::vector<std::string> literals = RequiredLiterals(lowered, &exact);
    bool literal_only = exact && !literals.empty();
    if (literals.empty()) literals = LiteralSetFinder::Find(lowered);
    if (literals.empty()) {
      // A simple pattern that needs a character outside ASCII is left to the Set, which ASCII
      // replies skip when all its patterns do, instead of running on every reply.
      const bool needs_non_ascii = NeedsNonAscii(lowered);
      if (p->simple_syntax && !needs_non_ascii) {
        p->always = true;
        impl_.always_patterns.push_back(id);
      } else {
        if (impl_.set->Add(lowered, &why) < 0) {
          return Fail(where, "bad regular expression: " + why, error);
        }
        p->in_set = true;
        impl_.set_patterns.push_back(id);
        if (!needs_non_ascii) impl_.set_needs_non_ascii = false;
      }
    }
    for (std::string& l : literals) impl_.literals.Add(std::move(l), id);
    p->kind = kind;
    p->index = index;
    p->literal_only = literal_only;
    if (!p->literal_only) p->re = std::make_unique<LazyRe2>(std::move(lowered), impl_.set_options);
    impl_.patterns.push_back(std::move(p));
    return true;
  }

  // Checks a pattern whose first group is a code (case-insensitive, as written) and returns it
  // to compile on first use; nullptr with `error` set when it is bad or has no group.
  std::unique_ptr<LazyRe2> CodePattern(const toml::node& where, const std::string& pattern,
                                       std::string_view no_group, std::string& error) {
    int groups = 0;
    std::unique_ptr<RE2> re;
    if (!SimplePattern::IsSimple(pattern, &groups)) {
      re = std::make_unique<RE2>(pattern, impl_.options);
      if (!re->ok()) {
        Fail(where, "bad regular expression: " + re->error(), error);
        return nullptr;
      }
      groups = re->NumberOfCapturingGroups();
    }
    if (groups < 1) {
      Fail(where, std::string(no_group), error);
      return nullptr;
    }
    return std::make_unique<LazyRe2>(pattern, impl_.options, std::move(re));
  }

  bool ReadList(const toml::table& t, std::string_view key, bool lower,
                std::vector<std::string>& out, std::string& error) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return true;
    std::string why;
    if (!ReadStrings(*n, lower, out, why)) {
      return Fail(*n, "'" + std::string(key) + "': " + why, error);
    }
    return true;
  }

  bool LoadRule(const toml::table& t, std::unordered_set<std::string>& file_ids,
                std::string& error) {
    if (!CheckKeys(t,
                   {"id", "category", "pattern", "patterns", "exclude", "status", "reply_code",
                    "stage", "provider", "dsn_action", "provider_code", "code_pattern", "enabled",
                    "note", "unless_status", "unless_stage", "keep_on_expiry"},
                   "[[rule]]", error)) {
      return false;
    }
    const auto* id = t.get_as<std::string>("id");
    if (id == nullptr || id->get().empty()) return Fail(t, "[[rule]] needs a string 'id'", error);
    if (!file_ids.insert(id->get()).second) {
      return Fail(*id, "duplicate rule id '" + id->get() + "'", error);
    }
    if (const auto* en = t.get("enabled"); en != nullptr && !en->is_boolean()) {
      return Fail(*en, "'enabled' must be true or false", error);
    }
    if (const auto* k = t.get("keep_on_expiry"); k != nullptr && !k->is_boolean()) {
      return Fail(*k, "'keep_on_expiry' must be true or false", error);
    }
    if (const auto* note = t.get("note"); note != nullptr && !note->is_string()) {
      return Fail(*note, "'note' must be a string", error);
    }
    // An id seen in an earlier file overrides this one: earlier files are on top.
    bool shadowed = !seen_ids_.insert(id->get()).second;
    bool enabled = t["enabled"].value_or(true);

    Rule rule;
    rule.id = Sanitize(id->get(), kMaxWordBytes);
    const auto* cat = t.get_as<std::string>("category");
    if (cat == nullptr) return Fail(t, "rule '" + rule.id + "' needs a string 'category'", error);
    auto category = CategoryFromName(cat->get());
    if (!category) return Fail(*cat, "unknown category '" + cat->get() + "'", error);
    rule.category = *category;
    rule.keep_on_expiry = t["keep_on_expiry"].value_or(false);

    std::vector<std::string> patterns, excludes;
    if (!ReadList(t, "pattern", false, patterns, error) ||
        !ReadList(t, "patterns", false, patterns, error) ||
        !ReadList(t, "exclude", false, excludes, error) ||
        !ReadList(t, "provider", true, rule.providers, error) ||
        !ReadList(t, "status", true, rule.statuses, error) ||
        !ReadList(t, "reply_code", true, rule.reply_codes, error) ||
        !ReadList(t, "stage", true, rule.stages, error) ||
        !ReadList(t, "dsn_action", true, rule.dsn_actions, error) ||
        !ReadList(t, "unless_status", true, rule.unless_statuses, error) ||
        !ReadList(t, "unless_stage", true, rule.unless_stages, error)) {
      return false;
    }
    for (const auto* list : {&rule.statuses, &rule.unless_statuses}) {
      for (const auto& g : *list) {
        if (!IsCodeGlob(g) || g[0] == '.') {
          const char* key = list == &rule.statuses ? "status" : "unless_status";
          return Fail(*t.get(key), "bad status glob '" + g + "' (e.g. \"5.7.*\")", error);
        }
      }
    }
    for (const auto& g : rule.reply_codes) {
      if (!IsCodeGlob(g) || g.find('.') != std::string::npos) {
        return Fail(*t.get("reply_code"), "bad reply code glob '" + g + "' (e.g. \"55?\")", error);
      }
    }
    for (const auto* list : {&rule.stages, &rule.unless_stages}) {
      for (const auto& st : *list) {
        if (!IsKnownStage(st)) {
          const char* key = list == &rule.stages ? "stage" : "unless_stage";
          return Fail(*t.get(key), "unknown stage '" + st + "'", error);
        }
      }
    }
    for (const auto& a : rule.dsn_actions) {
      if (!IsKnownDsnAction(a)) {
        return Fail(*t.get("dsn_action"), "unknown dsn_action '" + a + "'", error);
      }
    }
    for (const auto& p : rule.providers) {
      NoteProviderRef(p, *t.get("provider"));
    }
    if (patterns.empty() && rule.statuses.empty() && rule.reply_codes.empty() &&
        rule.providers.empty() && rule.stages.empty() && rule.dsn_actions.empty()) {
      return Fail(t, "rule '" + rule.id + "' has no condition (give patterns, status, ...)", error);
    }
    if (const auto* pc = t.get("provider_code")) {
      if (!pc->is_string() || pc->as_string()->get().empty()) {
        return Fail(*pc, "'provider_code' must be a non-empty string", error);
      }
      rule.provider_code = Sanitize(pc->as_string()->get(), kMaxWordBytes);
    }
    if (const auto* cp = t.get("code_pattern")) {
      if (!cp->is_string()) return Fail(*cp, "'code_pattern' must be a string", error);
      rule.code_pattern =
          CodePattern(*cp, cp->as_string()->get(),
                      "'code_pattern' needs a capture group (...) for the code", error);
      if (!rule.code_pattern) return false;
    }
    // Shadowed or disabled rules are fully checked but not compiled in.
    if (shadowed || !enabled) return true;

    auto index = static_cast<uint32_t>(impl_.rules.size());
    rule.has_patterns = !patterns.empty();
    rule.first_pattern = static_cast<uint32_t>(impl_.patterns.size());
    rule.match_patterns = static_cast<uint32_t>(patterns.size());
    rule.exclude_patterns = static_cast<uint32_t>(excludes.size());
    for (const auto& p : patterns) {
      if (!AddPattern(*(t.get("patterns") ? t.get("patterns") : t.get("pattern")), p,
                      PatternKind::kRuleMatch, index, error)) {
        return false;
      }
    }
    for (const auto& p : excludes) {
      if (!AddPattern(*t.get("exclude"), p, PatternKind::kRuleExclude, index, error)) {
        return false;
      }
    }
    if (!rule.has_patterns) impl_.patternless.push_back(index);
    impl_.rules.push_back(std::move(rule));
    return true;
  }

  bool LoadProvider(const toml::table& t, std::string& error) {
    if (!CheckKeys(t, {"name", "domains", "hosts", "text", "note"}, "[[provider]]", error)) {
      return false;
    }
    const auto* name = t.get_as<std::string>("name");
    if (name == nullptr || name->get().empty()) {
      return Fail(t, "[[provider]] needs a string 'name'", error);
    }
    std::string n = AsciiLowerCopy(Sanitize(name->get(), kMaxWordBytes));
    uint32_t index = 0;
    auto it = std::find_if(impl_.providers.begin(), impl_.providers.end(),
                           [&](const ProviderDef& p) { return p.name == n; });
    if (it == impl_.providers.end()) {
      index = static_cast<uint32_t>(impl_.providers.size());
      impl_.providers.push_back({n});
    } else {
      index = static_cast<uint32_t>(it - impl_.providers.begin());
    }
    provider_names_.insert(n);
    std::vector<std::string> domains, hosts, texts;
    if (!ReadList(t, "domains", true, domains, error) ||
        !ReadList(t, "hosts", true, hosts, error) || !ReadList(t, "text", false, texts, error)) {
      return false;
    }
    // First definition wins, so files on top can move a domain to another provider.
    for (auto& d : domains) {
      if (d.find_first_of("*?") != std::string::npos) {
        impl_.domain_globs.emplace_back(std::move(d), index);
      } else {
        impl_.domain_exact.emplace(std::move(d), index);
      }
    }
    for (auto& h : hosts) {
      if (h.find_first_of("*?") != std::string::npos) {
        impl_.host_globs.emplace_back(std::move(h), index);
      } else {
        impl_.host_suffix.emplace(std::move(h), index);
      }
    }
    for (const auto& p : texts) {
      if (!AddPattern(*t.get("text"), p, PatternKind::kProviderText, index, error)) return false;
    }
    return true;
  }

  bool LoadCode(const toml::table& t, std::string& error) {
    if (!CheckKeys(t, {"provider", "pattern", "note"}, "[[code]]", error)) return false;
    CodeExtractor code;
    if (!ReadList(t, "provider", true, code.providers, error)) return false;
    const auto* p = t.get_as<std::string>("pattern");
    if (p == nullptr) return Fail(t, "[[code]] needs a string 'pattern'", error);
    code.pattern = CodePattern(*p, p->get(),
                               "[[code]] pattern needs a capture group (...) for the code", error);
    if (!code.pattern) return false;
    for (const auto& name : code.providers) NoteProviderRef(name, *t.get("provider"));
    auto index = static_cast<uint32_t>(impl_.codes.size());
    if (!AddPattern(*p, p->get(), PatternKind::kCode, index, error)) return false;
    impl_.codes.push_back(std::move(code));
    return true;
  }

 public:
  // Provider names used by rules must be defined by some file (in any of them, any order).
  bool CheckProviderRefs(std::string& error) const {
    for (const auto& [name, where] : provider_refs_) {
      if (!provider_names_.contains(name)) {
        error = where + ": unknown provider '" + name + "'";
        return false;
      }
    }
    return true;
  }

 private:
  void NoteProviderRef(const std::string& name, const toml::node& where) {
    provider_refs_.emplace(name, name_ + ":" + std::to_string(where.source().begin.line));
  }

  RuleSet::Impl& impl_;
  std::unordered_set<std::string>& seen_ids_;
  std::string name_;
  std::unordered_set<std::string> provider_names_;
  std::unordered_map<std::string, std::string> provider_refs_;  // name -> first "file:line"
};

}  // namespace

std::string_view RuleSet::Impl::ProviderByDomain(std::string_view domain) const {
  if (domain.empty()) return {};
  // "mail.example.com", then "example.com", then "com".
  for (std::string_view d = domain;;) {
    auto it = domain_exact.find(std::string(d));
    if (it != domain_exact.end()) return providers[it->second].name;
    size_t dot = d.find('.');
    if (dot == std::string_view::npos) break;
    d.remove_prefix(dot + 1);
  }
  for (const auto& [glob, idx] : domain_globs) {
    if (GlobMatch(glob, domain)) return providers[idx].name;
  }
  return {};
}

std::string_view RuleSet::Impl::ProviderByHost(std::string_view host) const {
  // Remote-MTA fields look like "dns; mx01.mail.icloud.com", "mx.x.com[1.2.3.4]:25" or
  // "mx.x.com [1.2.3.4]"; keep the host name only.
  host = TrimSpace(host);
  if (StartsWithNoCase(host, "dns;")) host = TrimSpace(host.substr(4));
  size_t cut = host.find_first_of("[ :;(");
  if (cut != std::string_view::npos) host = host.substr(0, cut);
  while (!host.empty() && host.back() == '.') host.remove_suffix(1);
  if (host.empty()) return {};
  std::string lower = AsciiLowerCopy(host);
  for (std::string_view d = lower;;) {
    auto it = host_suffix.find(std::string(d));
    if (it != host_suffix.end()) return providers[it->second].name;
    size_t dot = d.find('.');
    if (dot == std::string_view::npos) break;
    d.remove_prefix(dot + 1);
  }
  for (const auto& [glob, idx] : host_globs) {
    if (GlobMatch(glob, lower)) return providers[idx].name;
  }
  return {};
}

RuleSet::RuleSet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RuleSet::~RuleSet() = default;

size_t RuleSet::rule_count() const { return impl_->rules.size(); }

RulesSource RuleSet::DefaultSource() {
  return RulesSource{"rules/default.toml (built in)", std::string(kDefaultRulesToml)};
}

std::string_view RuleSet::BuiltinTreeFor(std::string_view text) {
  return text == kDefaultRulesToml ? kDefaultRulesTree : std::string_view();
}

Expected<std::shared_ptr<const RuleSet>> RuleSet::Compile(const std::vector<RulesSource>& files) {
  auto impl = std::make_unique<Impl>();
  impl->options.set_case_sensitive(false);
  impl->options.set_log_errors(false);
  impl->options.set_max_mem(kRe2MaxMem);
  impl->set_options = impl->options;
  impl->set_options.set_case_sensitive(true);  // against lower-cased text, see LowerPattern
  impl->set = std::make_unique<RE2::Set>(impl->set_options, RE2::UNANCHORED);
  impl->checker = std::make_unique<RE2::Set>(impl->set_options, RE2::UNANCHORED);
  std::unordered_set<std::string> seen_ids;
  std::string error;
  Loader loader(*impl, seen_ids);
  for (const auto& f : files) {
    if (!loader.LoadFile(f, error)) return Status::Error(error);
  }
  if (!loader.CheckProviderRefs(error)) return Status::Error(error);
  impl->checker.reset();
  impl->literals.Build();
  // Rules to try for every reply: those without patterns and those with a pattern that has no
  // literal to find it by.
  for (uint32_t id : impl->always_patterns) {
    const Pattern& p = *impl->patterns[id];
    if (p.kind == PatternKind::kRuleMatch) impl->static_rules.push_back(p.index);
  }
  impl->static_rules.insert(impl->static_rules.end(), impl->patternless.begin(),
                            impl->patternless.end());
  std::sort(impl->static_rules.begin(), impl->static_rules.end());
  impl->static_rules.erase(std::unique(impl->static_rules.begin(), impl->static_rules.end()),
                           impl->static_rules.end());
  if (!impl->set_patterns.empty() && !impl->set->Compile()) {
    return Status::Error("rules: the patterns do not fit in memory (too many or too complex)");
  }
  return std::shared_ptr<const RuleSet>(new RuleSet(std::move(impl)));
}

std::shared_ptr<const RuleSet> RuleSet::Default() {
  // Compiled once; the embedded file is tested, so failing here is a build defect.
  static const std::shared_ptr<const RuleSet> rules = [] {
    auto compiled = Compile({DefaultSource()});
    if (!compiled.ok()) {
      std::fprintf(stderr, "bounced: built-in rules do not compile: %s\n",
                   compiled.error().c_str());
      std::abort();
    }
    return compiled.value();
  }();
  return rules;
}

std::string_view RuleSet::ProviderFor(std::string_view recipient_domain,
                                      std::string_view remote_mta) const {
  std::string domain = AsciiLowerCopy(TrimSpace(recipient_domain));
  if (domain.find('@') != std::string::npos) domain = DomainOf(domain);
  while (!domain.empty() && domain.back() == '.') domain.pop_back();
  std::string_view p = impl_->ProviderByDomain(domain);
  if (p.empty()) p = impl_->ProviderByHost(remote_mta);
  return p;
}

void ClassifyAgain(const RuleSet& rules, const ReplyInput& in, Result* r) {
  Result fresh = rules.Classify(in);  // before *r changes: `in` may view it
  r->category = fresh.category;
  r->provider = std::move(fresh.provider);
  r->provider_code = std::move(fresh.provider_code);
  r->rule = std::move(fresh.rule);
  if (!fresh.status.empty()) r->status = std::move(fresh.status);
  if (!fresh.reply_code.empty()) r->reply_code = std::move(fresh.reply_code);
  if (!fresh.stage.empty()) r->stage = std::move(fresh.stage);
}

std::string_view ProviderFor(const RuleSet& rules, std::string_view recipient_domain,
                             std::string_view remote_mta) {
  return rules.ProviderFor(recipient_domain, remote_mta);
}

namespace {

// Bounce traffic repeats itself: the same reply text from the same kind of host, for many
// recipients of one domain. The set remembers its recent classifications by everything that
// decides them except the recipient's local part, which only fills `recipient`. One memo for
// all threads (bouncectl parse --jobs, the daemon's inputs), so a reply is classified once
// however many threads meet it; bounded (cleared when full).
constexpr size_t kMemoEntries = 4096;
constexpr size_t kMemoMaxText = 2048;  // longer replies are rare and not worth keeping

void BuildMemoKey(const ReplyInput& in, std::string_view domain, std::string& key) {
  key.assign("rules");
  key.push_back('\0');
  for (std::string_view part :
       {in.diagnostic, in.status, in.reply_code, in.stage, domain, in.remote_mta, in.dsn_action}) {
    key.append(part);
    key.push_back('\0');
  }
}

}  // namespace

bool RuleSet::Recall(const std::string& key, Result* out) const {
  std::shared_lock lock(impl_->memo_mu);
  auto it = impl_->memo.find(key);
  if (it == impl_->memo.end()) return false;
  *out = it->second;
  return true;
}

void RuleSet::Remember(const std::string& key, const Result& r) const {
  std::lock_guard lock(impl_->memo_mu);
  if (impl_->memo.size() >= kMemoEntries) impl_->memo.clear();
  // Not the recipients, which every recall fills in with its own: copied out, they would only
  // be replaced.
  Result& kept = impl_->memo.emplace(key, r).first->second;
  kept.recipient = std::string();
  kept.original_recipient = std::string();
}

std::string RuleSet::RecipientDomain(std::string_view recipient) {
  return DomainOf(Sanitize(CanonicalAddress(recipient), kMaxAddressBytes));
}

Result RuleSet::Classify(const ReplyInput& in) const {
  std::string recipient = Sanitize(CanonicalAddress(in.recipient), kMaxAddressBytes);
  std::string domain = DomainOf(recipient);  // RecipientDomain(in.recipient)
  if (in.diagnostic.size() > kMemoMaxText)
    return ClassifyUncached(in, std::move(recipient), domain);
  thread_local std::string key;
  BuildMemoKey(in, domain, key);
  Result r;
  if (Recall(key, &r)) {
    r.recipient = std::move(recipient);
    return r;
  }
  r = ClassifyUncached(in, std::move(recipient), domain);
  Remember(key, r);
  return r;
}

Result RuleSet::ClassifyUncached(const ReplyInput& in, std::string recipient,
                                 std::string_view domain) const {
  const Impl& im = *impl_;
  Result r;
  r.diagnostic = Sanitize(in.diagnostic);
  r.recipient = std::move(recipient);
  r.remote_mta = Sanitize(in.remote_mta, kMaxHostBytes);
  r.dsn_action = AsciiLowerCopy(Sanitize(in.dsn_action, kMaxWordBytes));
  const std::string& text = r.diagnostic;

  r.status = NormalizeStatusField(in.status);
  if (r.status.empty()) r.status = ExtractEnhancedStatus(text);
  r.reply_code = NormalizeReplyCodeField(in.reply_code);
  if (r.reply_code.empty()) r.reply_code = ExtractReplyCode(text);
  if (r.status.empty() && !r.reply_code.empty()) {
    r.status = std::string(1, r.reply_code[0]) + ".0.0";
  }
  r.stage = std::string(NormalizeStage(in.stage));
  if (r.stage.empty()) r.stage = std::string(StageFromText(text));

  r.provider = std::string(im.ProviderByDomain(domain));
  if (r.provider.empty()) r.provider = std::string(im.ProviderByHost(r.remote_mta));

  // Delivered is decided by the status alone: a 2xx reply's text never makes it a failure.
  bool delivered = r.dsn_action == "delivered" || r.dsn_action == "relayed" ||
                   r.dsn_action == "expanded" || (!r.status.empty() && r.status[0] == '2');
  if (delivered) {
    r.category = Category::kDelivered;
    r.rule = "rfc3463";
    return r;
  }

  // Candidates: the patterns whose literals occur, those with no literal, and those the Set
  // matched. A candidate is only matched when its result can matter: rules are tried in file
  // order, each pattern only after the rule's other conditions hold, and the first rule that
  // matches ends the search, so the patterns of later rules are never run (nor compiled).
  // Buffers are per thread and reused.
  thread_local std::vector<int> set_hits;
  thread_local std::vector<uint32_t> candidates;
  thread_local std::vector<uint32_t> seen_at;  // per pattern: the scan that made it a candidate
  thread_local std::vector<uint32_t> hit_at;   // per pattern: the scan whose Set matched it
  thread_local uint32_t scan = 0;
  thread_local std::vector<uint32_t> rule_cands;
  thread_local std::string joined;
  thread_local std::string lower;
  std::string_view match_text = JoinContinuations(text, r.reply_code, r.status, joined);
  candidates.clear();
  rule_cands.clear();
  lower.assign(match_text);
  bool ascii = true;
  bool simple_text = true;  // ASCII without a newline: simple patterns need no RE2
  for (char& c : lower) {
    c = AsciiLower(c);
    if (static_cast<unsigned char>(c) >= 0x80) ascii = false;
    if (c == '\n') simple_text = false;
  }
  simple_text = simple_text && ascii;
  if (!ascii) LowerNonAsciiLetters(lower);  // as the patterns were (LowerPattern)
  if (seen_at.size() < im.patterns.size()) {
    seen_at.resize(im.patterns.size(), 0);
    hit_at.resize(im.patterns.size(), 0);
  }
  if (++scan == 0) {  // wrapped: forget every mark
    std::fill(seen_at.begin(), seen_at.end(), 0);
    std::fill(hit_at.begin(), hit_at.end(), 0);
    scan = 1;
  }
  auto add_candidate = [&](uint32_t id) {
    if (seen_at[id] == scan) return;
    seen_at[id] = scan;
    candidates.push_back(id);
  };
  im.literals.Scan(lower, add_candidate);
  if (!lower.empty()) {
    // (An empty reply matches nothing, as it always has: patterns are about wordings.)
    for (uint32_t id : im.always_patterns) add_candidate(id);
    // (On ASCII text the Set matches nothing when every pattern in it needs a character
    // outside ASCII, as the Japanese wordings do: then it is not run.)
    if (!im.set_patterns.empty() && (!ascii || !im.set_needs_non_ascii)) {
      set_hits.clear();
      im.set->Match(lower, &set_hits);
      for (int h : set_hits) {
        uint32_t id = im.set_patterns[static_cast<size_t>(h)];
        hit_at[id] = scan;
        add_candidate(id);
      }
    }
  }
  std::sort(candidates.begin(), candidates.end());  // file order
  auto matches = [&](uint32_t id) {
    if (seen_at[id] != scan) return false;
    Pattern& p = *im.patterns[id];
    if (p.in_set) return hit_at[id] == scan;
    return PatternMatches(p, lower, simple_text);
  };

  // The text names the provider only when the recipient domain and the host did not.
  if (r.provider.empty()) {
    for (uint32_t id : candidates) {
      const Pattern& p = *im.patterns[id];
      if (p.kind == PatternKind::kProviderText && matches(id)) {
        r.provider = im.providers[p.index].name;
        break;
      }
    }
  }

  auto conditions_hold = [&](const Rule& rule) {
    if (!rule.providers.empty() && !AnyEqual(rule.providers, r.provider)) return false;
    if (!rule.statuses.empty() && !AnyGlob(rule.statuses, r.status)) return false;
    if (!rule.reply_codes.empty() && !AnyGlob(rule.reply_codes, r.reply_code)) return false;
    if (!rule.stages.empty() && !AnyEqual(rule.stages, r.stage)) return false;
    if (!rule.unless_statuses.empty() && AnyGlob(rule.unless_statuses, r.status)) return false;
    if (!rule.unless_stages.empty() && AnyEqual(rule.unless_stages, r.stage)) return false;
    if (!rule.dsn_actions.empty() && !AnyEqual(rule.dsn_actions, r.dsn_action)) return false;
    return true;
  };
  auto any_matches = [&](uint32_t first, uint32_t count) {
    for (uint32_t id = first; id < first + count; ++id) {
      if (matches(id)) return true;
    }
    return false;
  };

  // The rules with a candidate pattern and those tried for every reply, in file order.
  for (uint32_t id : candidates) {
    const Pattern& p = *im.patterns[id];
    if (p.kind == PatternKind::kRuleMatch) rule_cands.push_back(p.index);
  }
  rule_cands.insert(rule_cands.end(), im.static_rules.begin(), im.static_rules.end());
  std::sort(rule_cands.begin(), rule_cands.end());
  rule_cands.erase(std::unique(rule_cands.begin(), rule_cands.end()), rule_cands.end());
  const Rule* winner = nullptr;
  for (uint32_t ri : rule_cands) {
    const Rule& rule = im.rules[ri];
    if (!conditions_hold(rule)) continue;
    if (rule.has_patterns && !any_matches(rule.first_pattern, rule.match_patterns)) continue;
    if (any_matches(rule.first_pattern + rule.match_patterns, rule.exclude_patterns)) continue;
    winner = &rule;
    break;
  }

  // The MTA gave up on a temporary failure: Postfix's status=expired, a DSN "failed" with a
  // 4.x.x status, or a final failure whose only cause was reaching the host (SMTP connection
  // failures are temporary by nature, so failing for good means the retry time ran out).
  bool gave_up = r.dsn_action == "expired" ||
                 (r.dsn_action == "failed" && !r.status.empty() && r.status[0] == '4');
  if (winner != nullptr) {
    r.category = winner->category;
    r.rule = winner->id;
    if (!winner->provider_code.empty()) {
      r.provider_code = winner->provider_code;
    } else if (winner->code_pattern) {
      const RE2& re = winner->code_pattern->Get();
      std::string code;
      if (re.ok() && RE2::PartialMatch(match_text, re, &code)) {
        r.provider_code = Sanitize(code, kMaxWordBytes);
      }
    }
  } else if (!r.status.empty()) {
    r.category = Rfc3463Category(r.status, r.stage);
    r.rule = r.category == Category::kUndetermined ? "" : "rfc3463";
  }
  if (r.dsn_action == "failed" && r.category == Category::kNetworkError) gave_up = true;
  // Such a failure is "expired", unless the reply named a cause that is not itself transient
  // (mailbox full, a block, a policy ...) or the deciding rule says its category stands.
  bool keep = winner != nullptr && winner->keep_on_expiry;
  if (gave_up && !keep &&
      (r.category == Category::kUndetermined || Describe(r.category).fault == Fault::kTransient)) {
    r.category = Category::kExpired;
    if (r.rule.empty() || r.rule == "rfc3463") r.rule = "expired";
  }

  if (r.provider_code.empty()) {
    for (uint32_t id : candidates) {
      const Pattern& p = *im.patterns[id];
      if (p.kind != PatternKind::kCode) continue;
      const CodeExtractor& ce = im.codes[p.index];
      if (!ce.providers.empty() && !AnyEqual(ce.providers, r.provider)) continue;
      if (!matches(id)) continue;
      const RE2& re = ce.pattern->Get();
      std::string code;
      if (re.ok() && RE2::PartialMatch(match_text, re, &code) && !code.empty()) {
        r.provider_code = Sanitize(code, kMaxWordBytes);
        break;
      }
    }
  }
  return r;
}

}  // namespace bounced
