// parse_log_command.cc: `bouncectl parse-log` (see commands.h): a Postfix log in, one
// classified delivery event per line out, or a summary of counts.
//
// Reads FILE... (or stdin for "-" / no file) with 64 KiB reads, one file after another as one log,
// compressed ones through their decompressor (log_source.h). With two CPUs (or --jobs 2)
// it runs as a two-stage pipeline: a reader thread reads blocks, splits them into lines and runs
// ParseLogLine on each (BlockReader below); the main thread feeds the parsed lines, in order, to
// LogCorrelator::FeedParsed and writes the output. With one (--jobs 1) the main thread does all
// of it (LogLineSplitter + LogCorrelator::Feed, the same parse and the same correlator). The
// output is the same either way, byte for byte.
// Writes JSON lines, text lines, or a summary to stdout; errors to stderr.
// Exit 0 ok, 1 some input could not be read (all of it), 2 usage or rules error.
#include <fcntl.h>
#include <unistd.h>

#include <sched.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "classifier/log_parser.h"
#include "classifier/result_json.h"
#include "classifier/rules.h"
#include "common/read_buffer.h"
#include "common/spread_thread.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/log_source.h"

namespace bounced::ctl {
namespace {

// Reads of 64 KiB: the buffer stays in the L2 cache (512 KiB per core on the bench machine)
// next to the parser's own tables, so the kernel's copy into it and the parse after it hit
// cache. Measured on the 1M-line bench log: 4 MiB reads spent about twice the system time of
// 256 KiB ones, and 256 KiB about twice that of 64 KiB (0.11 s vs 0.05 s); 32-128 KiB are alike.
constexpr size_t kReadChunkBytes = 64 << 10;
constexpr size_t kOutputFlushBytes = 1 << 20;
// The pipeline's blocks: new bytes per block (four reads; about 1,500 lines of the bench log,
// whose parsed fields take some 300 bytes a line), and blocks in flight (the reader runs at most
// this far ahead of the correlator, so memory is kBlocks blocks, 3-6 MB, whatever the log's
// size; a block handed over is read by the other core from the shared L3). Blocks are large
// enough that handing one over (a lock and, when a thread waits, a wake-up) costs nothing
// measurable.
constexpr size_t kBlockBytes = 256 << 10;
constexpr size_t kBlocks = 4;
// Lines per block at most: a block of short lines (hostile input: a file of newlines) would
// otherwise hold a parsed line per byte, about 300 times the block's size. The bench log has
// about 1,500 lines a block.
constexpr size_t kMaxBlockLines = 4096;
// The start of a line that a block did not end, carried to the next block: at most this much of
// it, which is enough to count it as too long (as LogLineSplitter carries it). Lines a full block
// had no room for are carried whole: they come from the last read, so this bounds them too.
constexpr size_t kCarryBytes = kLogLineCarryBytes;
static_assert(kCarryBytes >= kReadChunkBytes);

struct ParseLogOptions {
  std::string format = "jsonl";
  bool summary = false;
  std::vector<std::string> rules_files;
  std::vector<std::string> files;  // none: stdin
  int year = 0;
  unsigned jobs = 0;  // 0: two threads when there are two CPUs; 1: one thread; 2 or more: two
};

// One block of the log, split into lines and parsed: from the reader thread to the main thread.
struct ParsedBlock {
  struct Line {
    std::string_view text;  // into `bytes`, without its newline (and "\r")
    ParsedLogLine parsed;   // not set when text is longer than kMaxLogLineBytes
  };
  // The carried start of a line, then the block's reads.
  std::unique_ptr<char[]> bytes{new char[kCarryBytes + kBlockBytes]};
  std::vector<Line> lines;  // [0, count) belong to this block; the vector is reused
  size_t count = 0;
  // Lines left out because the correlator would only have counted them (LogCorrelator::UseOf),
  // and how many of those it counts as Postfix lines.
  uint64_t left_out = 0;
  uint64_t left_out_postfix = 0;
  bool last = false;  // the input ends with this block
};

// Stage 1 of the pipeline, on its own thread: reads `source` to its end into
// blocks, splits each into lines, parses them, and queues the blocks in input order. A fixed set
// of kBlocks blocks goes round between the threads, so memory stays flat. A line is cut into
// lines, and too-long lines counted, as LogLineSplitter does: the output does not depend on
// where blocks or reads break.
class BlockReader {
 public:
  // `filter`, when set, is asked which lines to leave out (LogCorrelator::UseOf): with a summary
  // most lines are only counted, and the main thread, the pipeline's slower stage, then reads
  // about a third of them.
  BlockReader(LogSource* source, const LogCorrelator* filter) : source_(source), filter_(filter) {
    for (ParsedBlock& b : blocks_) free_.push_back(&b);
    thread_ = SpreadThread([this] { Run(); });  // on another CPU at once (spread_thread.h)
  }
  ~BlockReader() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    free_cv_.notify_all();
    thread_.join();
  }
  BlockReader(const BlockReader&) = delete;
  BlockReader& operator=(const BlockReader&) = delete;

  // The next block in input order (waits for it), or nullptr after the last one. Give it back
  // with Recycle once its lines are fed.
  ParsedBlock* Next() {
    if (done_) return nullptr;
    std::unique_lock lock(mu_);
    ready_cv_.wait(lock, [this] { return !ready_.empty(); });
    ParsedBlock* b = ready_.front();
    ready_.pop_front();
    done_ = b->last;
    return b;
  }

  void Recycle(ParsedBlock* b) {
    {
      std::lock_guard lock(mu_);
      free_.push_back(b);
    }
    free_cv_.notify_one();
  }

 private:
  // A free block, or nullptr when the main thread has stopped the reader.
  ParsedBlock* TakeFree() {
    std::unique_lock lock(mu_);
    free_cv_.wait(lock, [this] { return stop_ || !free_.empty(); });
    if (stop_) return nullptr;
    ParsedBlock* b = free_.back();
    free_.pop_back();
    return b;
  }

  void Publish(ParsedBlock* b) {
    {
      std::lock_guard lock(mu_);
      ready_.push_back(b);
    }
    ready_cv_.notify_one();
  }

  void AddLine(ParsedBlock* b, const char* p, size_t n) const {
    if (n > 0 && p[n - 1] == '\r') --n;
    if (b->count == b->lines.size()) b->lines.emplace_back();
    ParsedBlock::Line& line = b->lines[b->count];
    line.text = std::string_view(p, n);
    if (n <= kMaxLogLineBytes) ParseLogLine(line.text, &line.parsed);
    const LogCorrelator::LineUse use =
        filter_ != nullptr ? filter_->UseOf(line.text, line.parsed) : LogCorrelator::LineUse::kFeed;
    if (use == LogCorrelator::LineUse::kFeed) {
      ++b->count;
    } else {
      ++b->left_out;  // its slot is taken by the next line
      if (use == LogCorrelator::LineUse::kSkipPostfixLine) ++b->left_out_postfix;
    }
  }

  // Adds the lines ended in buf[from, to), the first one starting at buf[*line_start], while
  // the block has room, and moves *line_start past them. Returns false once the block is full.
  bool AddLines(ParsedBlock* b, const char* buf, size_t* line_start, size_t from, size_t to) const {
    const char* p = buf + from;
    const char* end = buf + to;
    while (p < end && b->count < kMaxBlockLines) {
      const void* nl = __builtin_memchr(p, '\n', static_cast<size_t>(end - p));
      if (nl == nullptr) break;
      const char* e = static_cast<const char*>(nl);
      AddLine(b, buf + *line_start, static_cast<size_t>(e - buf) - *line_start);
      *line_start = static_cast<size_t>(e - buf) + 1;
      p = e + 1;
    }
    return b->count < kMaxBlockLines;
  }

  void Run() {
    // What the last block left: the lines it had no room for (at most one read's worth), then
    // the start of a line not ended yet (kept only as far as counting it needs).
    std::string carry;
    for (;;) {
      ParsedBlock* b = TakeFree();
      if (b == nullptr) return;
      b->count = 0;
      b->left_out = 0;
      b->left_out_postfix = 0;
      b->last = false;
      char* buf = b->bytes.get();
      size_t line_start = 0;
      size_t filled = 0;
      bool end = false;
      // Until the block ends a line or the input ends (a long line may need several rounds).
      do {
        std::memcpy(buf, carry.data(), carry.size());
        filled = carry.size();
        line_start = 0;
        bool room = AddLines(b, buf, &line_start, 0, filled);
        const size_t limit = filled + kBlockBytes;
        while (room && filled < limit) {
          const size_t n = source_->Read(buf + filled, std::min(kReadChunkBytes, limit - filled));
          if (n == 0) {
            end = true;
            break;
          }
          room = AddLines(b, buf, &line_start, filled, filled + n);
          filled += n;
        }
        const size_t rest = filled - line_start;
        carry.assign(buf + line_start, room ? std::min(rest, kCarryBytes) : rest);
      } while (b->count + b->left_out == 0 && !end);
      if (end) {
        // A last line without a newline still counts (as LogLineSplitter::Finish hands it out).
        if (filled > line_start) AddLine(b, buf + line_start, filled - line_start);
        b->last = true;
      }
      Publish(b);
      if (end) return;
    }
  }

  LogSource* const source_;
  const LogCorrelator* const filter_;
  std::array<ParsedBlock, kBlocks> blocks_;
  std::mutex mu_;
  std::condition_variable ready_cv_;  // a block was queued
  std::condition_variable free_cv_;   // a block came back, or stop_
  std::deque<ParsedBlock*> ready_;    // read and parsed, in input order
  std::vector<ParsedBlock*> free_;
  bool stop_ = false;
  bool done_ = false;  // the main thread has taken the last block (main thread only)
  SpreadThread thread_;
};

// CPUs this process may run on (taskset and cpusets included).
unsigned UsableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void FlushWhenFull(std::string* out) {
  if (out->size() >= kOutputFlushBytes) {
    std::fwrite(out->data(), 1, out->size(), stdout);
    out->clear();
  }
}

// One thread: reads, splits, parses and correlates in turn.
void FeedSequential(LogSource* source, LogCorrelator* correlator, std::string* out) {
  LogLineSplitter splitter;
  PageBuffer buf(kReadChunkBytes);  // page-aligned: see common/read_buffer.h
  auto feed = [correlator](std::string_view line) { correlator->Feed(line); };
  while (const size_t n = source->Read(buf.data(), kReadChunkBytes)) {
    splitter.Push(std::string_view(buf.data(), n), feed);
    FlushWhenFull(out);
  }
  splitter.Finish(feed);
}

// Two threads: BlockReader reads and parses, this thread correlates.
void FeedPipelined(LogSource* source, LogCorrelator* correlator, std::string* out) {
  BlockReader reader(source, correlator);
  while (ParsedBlock* b = reader.Next()) {
    for (size_t i = 0; i < b->count; ++i) {
      correlator->FeedParsed(b->lines[i].text, b->lines[i].parsed);
    }
    correlator->AddLeftOutLines(b->left_out, b->left_out_postfix);
    reader.Recycle(b);
    FlushWhenFull(out);
  }
}

constexpr const char* kHelp =
    R"(Reads a Postfix log (classic syslog, RFC 3339 or postlog; any syslog_name;
short or long queue ids) and prints one event per final or deferred delivery:
status=sent|deferred|bounced lines, and for "status=expired, returned to sender" one
event per recipient still pending (with its last deferral's reply).

--format=jsonl (default): one JSON object per event with
  queue_id, time (RFC 3339; classic timestamps get --year and this machine's zone),
  unix_time, sender (qmgr from=, "" = null sender), sender_known, message_id,
  size, nrcpt (qmgr; -1 when not seen), recipient, orig_recipient, program,
  relay, bounce_queue_id (when already logged),
  status      the LOG status: sent, deferred, bounced or expired
  dsn         the result's enhanced status code (the classified status: Postfix's
              dsn= unless the reply text gave a better one; "" when unknown)
  log_dsn     dsn= exactly as Postfix logged it
  and every other result field as `bouncectl parse` prints them: original_recipient,
  category, fault, cause, hard_bounce, action, reply_code, stage, provider,
  provider_code, diagnostic (the remote reply), remote_mta, dsn_action, rule.
  (The result's own `status` field is the one renamed to `dsn`.)
--format=text: one line per event.
--summary: counts per log status, category, provider and category x provider, plus
  skipped-line counters, instead of events (as JSON with --format=jsonl).
An expiry whose recipients were never seen in the log gives one event with recipient "".
Several files are read one after another as one log, so a message's lines correlate
across them; the files of one rotated log are read oldest first whatever their order
(mail.log* gives mail.log mail.log.1 mail.log.2.gz: read as mail.log.2.gz mail.log.1
mail.log; dated names too). A compressed file (gzip, bzip2, xz, zstd: told by its first
bytes) is read through its decompressor. A file that cannot be read is named on stderr
and the rest are still read (exit 1).)";

nlohmann::json EventJson(const DeliveryEvent& e) {
  nlohmann::json j = ToJson(e.result);
  j["dsn"] = e.result.status;
  j.erase("status");
  j["status"] = e.log_status;
  j["log_dsn"] = e.dsn;
  j["queue_id"] = e.queue_id;
  j["time"] = e.time;
  j["unix_time"] = e.unix_time;
  j["sender"] = e.sender;
  j["sender_known"] = e.sender_known;
  j["message_id"] = e.message_id;
  j["size"] = e.size;
  j["nrcpt"] = e.nrcpt;
  j["recipient"] = e.recipient;
  j["orig_recipient"] = e.orig_recipient;
  j["relay"] = e.relay;
  j["program"] = e.program;
  j["bounce_queue_id"] = e.bounce_queue_id;
  return j;
}

void AppendText(const DeliveryEvent& e, std::string* out) {
  const Result& r = e.result;
  auto field = [out](std::string_view s) {
    out->append(s.empty() ? std::string_view("-") : s);
    out->push_back(' ');
  };
  field(e.time);
  field(e.queue_id);
  field(e.log_status);
  field(e.recipient);
  field(ToString(r.category));
  field(r.status);
  field(r.provider);
  field(r.provider_code);
  out->append("from=");
  field(e.sender);
  out->append(r.diagnostic);
  out->push_back('\n');
}

// Counts for --summary, filled once at the end from LogCorrelator::counts() (the correlator
// counts events by number while it reads; no event is built). Log statuses (four) and providers
// (a dozen or so, from the rules) are few: short vectors searched linearly.
struct Summary {
  std::map<std::string, uint64_t> by_status;  // filled from `statuses` at the end
  std::vector<std::pair<std::string, uint64_t>> statuses;
  uint64_t by_category[kCategoryCount] = {};
  std::vector<std::pair<std::string, std::vector<uint64_t>>> by_provider_category;

  // The entry of `key` in `v`, appended (value-initialised) when missing.
  template <typename T>
  static T& Slot(std::vector<std::pair<std::string, T>>* v, const std::string& key) {
    for (auto& [k, value] : *v) {
      // The first byte tells most names apart without a memcmp call.
      if (k.size() == key.size() && (k.empty() || k[0] == key[0]) && k == key) return value;
    }
    return v->emplace_back(key, T{}).second;
  }

  // Fills the counts from a counts-only correlator (the summary's fast path: no event is built).
  void AddCounts(const std::vector<EventCount>& counts) {
    for (const EventCount& e : counts) {
      Slot(&statuses, std::string(e.log_status)) += e.count;
      int c = static_cast<int>(e.category);
      by_category[c] += e.count;
      std::vector<uint64_t>& row = Slot(&by_provider_category, std::string(e.provider));
      if (row.empty()) row.resize(kCategoryCount);
      row[static_cast<size_t>(c)] += e.count;
    }
  }

  void Finish() {
    for (const auto& [st, n] : statuses) by_status[st] += n;
  }

  const std::vector<uint64_t>& ProviderCounts(const std::string& p) const {
    for (const auto& [k, counts] : by_provider_category) {
      if (k == p) return counts;
    }
    static const std::vector<uint64_t> kNone(kCategoryCount);
    return kNone;
  }

  static std::string ProviderName(const std::string& p) { return p.empty() ? "(other)" : p; }

  std::vector<std::pair<std::string, uint64_t>> ProviderTotals() const {
    std::vector<std::pair<std::string, uint64_t>> v;
    for (const auto& [p, counts] : by_provider_category) {
      uint64_t n = 0;
      for (uint64_t c : counts) n += c;
      v.emplace_back(ProviderName(p), n);
    }
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    return v;
  }

  nlohmann::json Json(const LogStats& s) const {
    nlohmann::json j;
    j["events"] = s.events;
    j["by_status"] = by_status;
    nlohmann::json cats = nlohmann::json::object();
    for (int c = 0; c < kCategoryCount; ++c) {
      if (by_category[c] != 0)
        cats[std::string(ToString(static_cast<Category>(c)))] = by_category[c];
    }
    j["by_category"] = cats;
    nlohmann::json provs = nlohmann::json::object();
    for (const auto& [p, n] : ProviderTotals()) provs[p] = n;
    j["by_provider"] = provs;
    nlohmann::json cross = nlohmann::json::object();
    for (const auto& [p, counts] : by_provider_category) {
      nlohmann::json row = nlohmann::json::object();
      for (int c = 0; c < kCategoryCount; ++c) {
        if (counts[static_cast<size_t>(c)] != 0) {
          row[std::string(ToString(static_cast<Category>(c)))] = counts[static_cast<size_t>(c)];
        }
      }
      cross[ProviderName(p)] = row;
    }
    j["by_provider_category"] = cross;
    j["lines"] = {{"total", s.lines},
                  {"postfix", s.postfix_lines},
                  {"skipped_garbage", s.skipped_garbage},
                  {"skipped_truncated", s.skipped_truncated},
                  {"skipped_too_long", s.skipped_too_long},
                  {"cut_reasons", s.cut_reasons},
                  {"ignored_statuses", s.ignored_statuses}};
    j["queue_ids"] = {{"tracked_at_end", s.tracked_queue_ids},
                      {"max_tracked", s.max_tracked_queue_ids},
                      {"evicted", s.evicted_queue_ids},
                      {"expired_without_recipients", s.expired_without_recipients},
                      {"dropped_pending", s.dropped_pending}};
    j["classifier"] = {{"rule_evaluations", s.classify_calls},
                       {"cache_hits", s.classify_cache_hits}};
    return j;
  }

  std::string Text(const LogStats& s) const {
    std::string out;
    char buf[256];
    auto line = [&](const char* fmt, auto... args) {
      snprintf(buf, sizeof buf, fmt, args...);
      out += buf;
    };
    line("events: %llu (lines %llu, postfix lines %llu)\n",
         static_cast<unsigned long long>(s.events), static_cast<unsigned long long>(s.lines),
         static_cast<unsigned long long>(s.postfix_lines));
    out += "\nby log status:\n";
    for (const auto& [st, n] : by_status)
      line("  %-22s %12llu\n", st.c_str(), static_cast<unsigned long long>(n));
    out += "\nby category:\n";
    std::vector<std::pair<uint64_t, int>> cats;
    for (int c = 0; c < kCategoryCount; ++c) {
      if (by_category[c] != 0) cats.emplace_back(by_category[c], c);
    }
    std::sort(cats.begin(), cats.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& [n, c] : cats) {
      const CategoryInfo& info = Describe(static_cast<Category>(c));
      line("  %-22s %12llu  fault=%s action=%s\n", std::string(info.name).c_str(),
           static_cast<unsigned long long>(n), std::string(ToString(info.fault)).c_str(),
           std::string(ToString(info.action)).c_str());
    }
    out += "\nby provider:\n";
    for (const auto& [p, n] : ProviderTotals())
      line("  %-22s %12llu\n", p.c_str(), static_cast<unsigned long long>(n));
    out += "\nby provider and category (not delivered):\n";
    for (const auto& [p, total] : ProviderTotals()) {
      const std::string key = p == "(other)" ? "" : p;
      const auto& counts = ProviderCounts(key);
      for (int c = 0; c < kCategoryCount; ++c) {
        uint64_t n = counts[static_cast<size_t>(c)];
        if (n == 0 || static_cast<Category>(c) == Category::kDelivered) continue;
        line("  %-14s %-22s %10llu\n", p.c_str(),
             std::string(ToString(static_cast<Category>(c))).c_str(),
             static_cast<unsigned long long>(n));
      }
    }
    out += "\nskipped lines:\n";
    line(
        "  garbage %llu, truncated %llu, too long %llu; replies cut short (kept) %llu; "
        "probe statuses ignored %llu\n",
        static_cast<unsigned long long>(s.skipped_garbage),
        static_cast<unsigned long long>(s.skipped_truncated),
        static_cast<unsigned long long>(s.skipped_too_long),
        static_cast<unsigned long long>(s.cut_reasons),
        static_cast<unsigned long long>(s.ignored_statuses));
    line(
        "queue ids: %llu tracked at end (max %llu), %llu evicted, %llu expiries without known "
        "recipients\n",
        static_cast<unsigned long long>(s.tracked_queue_ids),
        static_cast<unsigned long long>(s.max_tracked_queue_ids),
        static_cast<unsigned long long>(s.evicted_queue_ids),
        static_cast<unsigned long long>(s.expired_without_recipients));
    line("classifier: %llu rule evaluations, %llu cache hits\n",
         static_cast<unsigned long long>(s.classify_calls),
         static_cast<unsigned long long>(s.classify_cache_hits));
    return out;
  }
};

int RunParseLog(const ParseLogOptions& opt) {
  auto loaded = LoadCommandRules(opt.rules_files);
  if (!loaded) {
    std::cerr << "bouncectl parse-log: " << loaded.error() << '\n';
    return kExitUsage;
  }
  std::shared_ptr<const RuleSet> rules = *loaded;

  const bool text = opt.format == "text";
  std::string out;
  Summary summary;
  LogCorrelator::Sink sink;
  if (opt.summary) {
    // No sink: the correlator counts the events itself (see AddCounts below).
  } else if (text) {
    sink = [&out](const DeliveryEvent& e) { AppendText(e, &out); };
  } else {
    sink = [&out](const DeliveryEvent& e) {
      out += EventJson(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      out += '\n';
    };
  }
  LogCorrelator correlator(rules, sink);
  correlator.set_counts_only(opt.summary);  // a summary needs no sender, time or text
  time_t now = time(nullptr);
  struct tm local {};
  localtime_r(&now, &local);
  correlator.set_utc_offset(static_cast<int>(local.tm_gmtoff));
  // Without --year, the year of the first classic line is the one that puts it no later than
  // tomorrow (December's log read in January is last year's).
  if (opt.year != 0) {
    correlator.set_year(opt.year);
  } else {
    correlator.set_reference_time(now);
  }

  LogSource source(OldestFirst(opt.files));
  unsigned jobs = opt.jobs != 0 ? opt.jobs : std::min(2u, UsableCpus());
  if (jobs >= 2) {
    FeedPipelined(&source, &correlator, &out);
  } else {
    FeedSequential(&source, &correlator, &out);
  }
  int rc = source.failed() ? kExitFailed : kExitOk;

  if (opt.summary) {
    summary.AddCounts(correlator.counts());
    summary.Finish();
    out = text ? summary.Text(correlator.stats())
               : summary.Json(correlator.stats())
                         .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                     "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0) rc = kExitFailed;
  return rc;
}

}  // namespace

void RegisterParseLogCommand(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<ParseLogOptions>();
  CLI::App* cmd = app.add_subcommand(
      "parse-log", "classify every delivery in a Postfix log; one JSON line per event");
  cmd->footer(kHelp);
  auto* format = cmd->add_option("--format", opt->format,
                                 "output format (default jsonl; the summary defaults to text, "
                                 "or JSON with the global --json)")
                     ->check(CLI::IsMember({"jsonl", "text"}));
  cmd->add_flag("--summary", opt->summary,
                "print counts per status, category and provider instead of events");
  cmd->add_option("--rules", opt->rules_files,
                  "extra rules file merged on top of the defaults (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--year", opt->year,
                  "year of classic syslog timestamps (default: this year, or last year for a first "
                  "line dated after tomorrow)")
      ->check(CLI::Range(1970, 9999));
  cmd->add_option("--jobs", opt->jobs,
                  "threads (0: two when there are two CPUs; 1: one; 2 or more: two, one reading "
                  "and parsing lines, one correlating them); the output is the same")
      ->check(CLI::Range(0u, 256u));
  cmd->add_option("file", opt->files,
                  "Postfix log files, read one after another as one log (a rotated log's files "
                  "oldest first, whatever their order: mail.log* works); gzip, bzip2, xz and "
                  "zstd files are decompressed; '-' or none: stdin");
  cmd->callback([opt, format, &ctx] {
    // The global --json asks for JSON whatever the command's own default is.
    if (opt->summary && format->count() == 0 && !ctx.json) opt->format = "text";
    ctx.exit_code = RunParseLog(*opt);
  });
}

}  // namespace bounced::ctl
