// parse_commands.cc: bouncectl's parse command group (see commands.h).
//
// `bouncectl parse [--format=jsonl|text] [--rules FILE]... FILE...` reads bounce messages
// ("-" is stdin) and prints, per input file, one line: {"file", "kind", "recipients": [...]}
// (plus "error" when the file could not be read or is not a bounce, and "warnings" when a limit
// cut the message short). Rules are compiled once
// per run (the embedded defaults, with --rules files merged on top), so hundreds of files cost
// one process. Exit 0 when every input parsed as a bounce, 1 when some did not, 2 on usage or
// rules errors.
//
// Many files are parsed by several threads (--jobs, default one per CPU): each takes the next
// chunk of files, and the main thread writes the chunks' output in the order the files were
// given, so the output is the same whatever the number of threads.
//
// A folder stands for its messages: a Maildir's (cur/ and new/), or else the folder's own files,
// each with its own line. With --mbox every FILE is a Unix mailbox, streamed through
// classifier/mbox.h, and each message in it gets its own line with "message": its position
// (1 for the first).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "classifier/dsn_parser.h"
#include "classifier/mbox.h"
#include "classifier/result_json.h"
#include "classifier/rules.h"
#include "classifier/verp.h"
#include "common/file_open.h"
#include "common/read_buffer.h"
#include "common/spread_thread.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/decompress.h"
#include "daemon/ctl/message_sources.h"

namespace bounced::ctl {
namespace {

struct ParseOptions {
  std::string format = "jsonl";
  std::vector<std::string> rules_files;
  std::vector<std::string> files;
  unsigned jobs = 0;               // 0: one thread per CPU
  bool mbox = false;               // every file is a mailbox
  std::optional<VerpFormat> verp;  // --verp: read each message's VERP return path
};

// How each message's line is made: text or JSON, and whether its VERP return path is read.
struct ParseOutput {
  bool text = false;
  std::optional<VerpFormat> verp = {};
};

// Files per unit of work handed to a thread, and how many units may wait, parsed, for the
// writer (bounds memory when stdout is slow).
constexpr size_t kChunkFiles = 32;
constexpr size_t kMaxChunksAhead = 256;
// Bytes of files read ahead while the rules load (see ParseParallel), a bound on memory: on the
// bench the rules load while about 10 chunks (320 files, ~1.4 MB) are read.
constexpr size_t kReadAheadBytes = 16 << 20;

// A reusable read buffer: page-aligned (common/read_buffer.h: the kernel's copy out of the page
// cache is several times slower into a buffer 16 bytes into a page, where malloc puts one) and,
// unlike std::string, not zero-filled when it grows.
class ReadBuffer {
 public:
  std::string_view view() const { return {buffer_.data(), size_}; }

  // Reads at most kMaxMessageBytes + 1 bytes of `path` ("-" = stdin): the parser reads no more
  // than kMaxMessageBytes, and the byte after tells it to warn that it cut the message.
  // Files are opened from their folder's descriptor (common/file_open.h) and read to their end
  // by ReadToEnd (common/read_buffer.h): no stdio buffer between, and no fstat for the size (the
  // read of 0 bytes that sees the end costs less than an fstat).
  bool Read(const std::string& path, std::string* error) {
    size_ = 0;
    int fd = path == "-" ? STDIN_FILENO : opener_.Open(path);
    if (fd < 0) {
      *error = "cannot open " + path + ": " + std::strerror(errno);
      return false;
    }
    int saved = ReadToEnd(fd, &buffer_, kMaxMessageBytes + 1, &size_);
    // A compressed file (a saved message, gzip'ed) is read again through its decompressor;
    // the check is a few byte compares on what was read.
    const char* tool = saved == 0 ? DecompressorFor(buffer_.data(), size_) : "";
    if (*tool != '\0') {
      bool ok = false;
      if (::lseek(fd, 0, SEEK_SET) != 0) {
        // A pipe (stdin, a FIFO) cannot be read again from its start; a file (stdin too) can.
        *error = CompressedPipe(path == "-" ? "stdin" : path, buffer_.data(), size_);
      } else {
        ok = ReadDecompressed(tool, fd, path, error);
      }
      if (fd != STDIN_FILENO) ::close(fd);
      return ok;
    }
    if (fd != STDIN_FILENO) ::close(fd);
    if (saved != 0) {
      *error = "cannot read " + path + ": " + std::strerror(saved);
      return false;
    }
    return true;
  }

 private:
  // Reads the file open at `fd` (at its start) again through `tool` (decompress.h).
  bool ReadDecompressed(const char* tool, int fd, const std::string& path, std::string* error) {
    Decompressor d;
    std::string why;
    if (!StartDecompressor(tool, fd, &d, &why)) {
      *error = "cannot read " + path + ": " + why;
      return false;
    }
    size_ = 0;
    int saved = ReadToEnd(d.out, &buffer_, kMaxMessageBytes + 1, &size_);
    // More than the parser reads: the rest is not read, and the decompressor may die of that.
    why = FinishDecompressor(tool, &d, saved == 0 && size_ <= kMaxMessageBytes);
    if (saved != 0 || !why.empty()) {
      *error = "cannot read " + path + ": " + (saved != 0 ? std::strerror(saved) : why);
      return false;
    }
    return true;
  }

  FolderOpener opener_;
  PageBuffer buffer_;
  size_t size_ = 0;
};

// `number`: the message's position in its mailbox (--mbox), or 0.
// `verp`: the recipient the message's VERP return path names (--verp), if any.
void PrintText(const std::string& file, uint64_t number, const ParsedBounce& p,
               const std::optional<std::string>& verp, std::string* out) {
  *out += file;
  if (number != 0) *out += "#" + std::to_string(number);
  *out += ": ";
  *out += ToString(p.kind);
  if (!p.mta.empty()) *out += " (" + p.mta + ")";
  if (verp) *out += " for " + *verp + " (VERP)";
  if (!p.error.empty()) *out += ": " + p.error;
  *out += '\n';
  for (const std::string& w : p.warnings) *out += "  warning: " + w + '\n';
  for (const Result& r : p.recipients) {
    const CategoryInfo& info = Describe(r.category);
    *out += "  " + (r.recipient.empty() ? std::string("(unknown recipient)") : r.recipient);
    *out += "  " + std::string(info.name) + "  " + (r.status.empty() ? "-" : r.status) + "  " +
            (r.reply_code.empty() ? "-" : r.reply_code) +
            "  fault=" + std::string(ToString(info.fault)) +
            " action=" + std::string(ToString(r.action()));
    if (!r.provider.empty()) *out += " provider=" + r.provider;
    if (!r.provider_code.empty()) *out += " code=" + r.provider_code;
    if (!r.original_recipient.empty()) *out += " original=" + r.original_recipient;
    *out += '\n';
    if (!r.diagnostic.empty()) *out += "    " + r.diagnostic + '\n';
  }
}

// Parses one file's bytes (or reports its read error, when read_error is not empty) and appends
// its output line(s) to *out; false when it yielded no recipient. `number`: the message's
// position in its mailbox (--mbox), or 0 for a file.
bool ParseOne(const std::string& file, std::string_view message, const std::string& read_error,
              const std::function<const RuleSet&()>& rules, const ParseOutput& output,
              std::string* out, uint64_t number = 0) {
  ParsedBounce parsed;
  if (!read_error.empty()) {
    parsed.error = read_error;
  } else {
    parsed = ParseBounce(message, rules);
  }
  // Where the bounce was delivered, as its header says (see verp.h): the recipient it is about.
  std::optional<std::string> verp;
  if (output.verp && !parsed.recipients.empty()) {
    verp = VerpRecipientOf(message, *output.verp);
    if (verp) ApplyVerp(&parsed, *verp, rules());
  }
  if (output.text) {
    PrintText(file, number, parsed, verp, out);
  } else {
    // {"error", "file", "kind", "message", "mta", "recipients", "verp_recipient", "warnings"}:
    // written directly, keys in the order nlohmann's dump gives them (tests compare the two).
    *out += '{';
    if (!parsed.error.empty()) {
      *out += "\"error\":";
      AppendJsonString(parsed.error, out);
      *out += ',';
    }
    *out += "\"file\":";
    AppendJsonString(file, out);
    *out += ",\"kind\":";
    AppendJsonString(ToString(parsed.kind), out);
    if (number != 0) {
      *out += ",\"message\":";
      *out += std::to_string(number);
    }
    if (!parsed.mta.empty()) {
      *out += ",\"mta\":";
      AppendJsonString(parsed.mta, out);
    }
    *out += ",\"recipients\":[";
    for (size_t i = 0; i < parsed.recipients.size(); ++i) {
      if (i > 0) *out += ',';
      AppendJson(parsed.recipients[i], out);
    }
    *out += ']';
    if (verp) {
      *out += ",\"verp_recipient\":";
      AppendJsonString(*verp, out);
    }
    if (!parsed.warnings.empty()) {
      *out += ",\"warnings\":[";
      for (size_t i = 0; i < parsed.warnings.size(); ++i) {
        if (i > 0) *out += ',';
        AppendJsonString(parsed.warnings[i], out);
      }
      *out += ']';
    }
    *out += "}\n";
  }
  return !parsed.recipients.empty();
}

// Parses every message of a folder (see FolderFiles), a line each; false when one of them
// yielded no recipient or the folder could not be listed. An empty folder prints nothing.
bool ParseFolder(const std::string& dir, const std::function<const RuleSet&()>& rules,
                 const ParseOutput& output, ReadBuffer* message, std::string* out);

// Reads one file into *message and parses it (see ParseOne); a folder, its messages.
bool ReadAndParse(const std::string& file, const std::function<const RuleSet&()>& rules,
                  const ParseOutput& output, ReadBuffer* message, std::string* out) {
  std::string error;
  if (!message->Read(file, &error)) {
    if (IsFolder(file)) return ParseFolder(file, rules, output, message, out);
    return ParseOne(file, {}, error, rules, output, out);
  }
  return ParseOne(file, message->view(), std::string(), rules, output, out);
}

bool ParseFolder(const std::string& dir, const std::function<const RuleSet&()>& rules,
                 const ParseOutput& output, ReadBuffer* message, std::string* out) {
  std::error_code ec;
  std::vector<std::string> files = FolderFiles(dir, &ec);
  if (ec)
    return ParseOne(dir, {}, "cannot list folder " + dir + ": " + ec.message(), rules, output, out);
  bool ok = true;
  for (const std::string& file : files) ok = ReadAndParse(file, rules, output, message, out) && ok;
  return ok;
}

int ParseSequential(const ParseOptions& opt, const RuleSet& rules, const ParseOutput& output) {
  int rc = kExitOk;
  ReadBuffer message;
  std::string out;
  const std::function<const RuleSet&()> get_rules = [&rules]() -> const RuleSet& { return rules; };
  for (const std::string& file : opt.files) {
    if (!ReadAndParse(file, get_rules, output, &message, &out)) rc = kExitFailed;
    if (out.size() > (1 << 16)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return rc;
}

// The main thread loads the rules once the other workers have started, and they read files
// ahead meanwhile (they only need the rules to classify, at the end of each message): loading
// costs as much as parsing a few hundred bounces. Loading them on a thread of its own, with the
// main thread waiting, made the same wall time for ~3 ms more CPU (a thread to start and wake).
// Nothing is written before the rules are known to be good, so a bad --rules file still ends
// the run with its error alone.
using LoadedRules = Expected<std::shared_ptr<const RuleSet>>;

int ParseParallel(const ParseOptions& opt, const ParseOutput& output, unsigned jobs) {
  std::promise<LoadedRules> rules_promise;
  std::shared_future<LoadedRules> loading = rules_promise.get_future().share();
  const std::function<const RuleSet&()> get_rules = [&loading]() -> const RuleSet& {
    const LoadedRules& loaded = loading.get();
    if (loaded) return **loaded;
    // The run ends with the load error and this output is thrown away; the workers only need
    // something to finish their current chunk with.
    static const std::shared_ptr<const RuleSet> fallback = RuleSet::Default();
    return *fallback;
  };
  // A chunk's files read ahead of parsing: their bytes one after another.
  struct ReadAhead {
    std::string bytes;
    std::vector<size_t> ends;         // per file, where its bytes end
    std::vector<std::string> errors;  // per file, why it could not be read (empty: read)
  };
  struct Chunk {
    ReadAhead ahead;
    std::string out;
    bool failed = false;
    bool done = false;
  };
  const size_t chunks = (opt.files.size() + kChunkFiles - 1) / kChunkFiles;
  std::vector<Chunk> results(chunks);
  std::mutex mu;
  std::condition_variable written;  // the output moved on (or the run was stopped)
  size_t next = 0;                  // next chunk to hand out
  size_t write_pos = 0;             // next chunk to write
  bool writing = false;             // a worker is writing chunks out
  bool failed_any = false;
  std::deque<size_t> ahead;  // chunks read ahead, waiting to be parsed (ascending)
  size_t ahead_bytes = 0;    // bytes those hold
  // The workers write the output themselves, in order: whoever finishes the chunk at write_pos
  // writes it and every finished chunk after it, outside the lock. With no writer thread to wake
  // per chunk, two workers keep two CPUs busy (a third thread waking 117 times a run cost some
  // 120 preemptions of the workers).
  auto write_ready = [&](std::unique_lock<std::mutex>& lock) {
    if (writing) return;  // the worker writing will find this chunk too
    writing = true;
    while (write_pos < chunks && results[write_pos].done) {
      std::string out = std::move(results[write_pos].out);
      if (results[write_pos].failed) failed_any = true;
      ++write_pos;
      lock.unlock();
      std::fwrite(out.data(), 1, out.size(), stdout);
      out = std::string();
      lock.lock();
      written.notify_all();
    }
    writing = false;
  };
  auto rules_loading = [&loading] {
    return loading.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
  };
  auto worker = [&] {
    ReadBuffer message;
    // GMime loads on first use (3-4 ms of mapping and relocating its 15 libraries), and every
    // thread's first message waits for it. A worker started while the rules load does it then,
    // on the CPU the rules leave free, instead of both workers waiting for it afterwards. A
    // failure is not acted on here: each message reports it (ParseBounce).
    if (rules_loading()) (void)MimeLibraryProblem();
    std::unique_lock lock(mu);
    for (;;) {
      written.wait(lock, [&] {
        return !ahead.empty() || next >= chunks || next < write_pos + kMaxChunksAhead;
      });
      // While the rules load, a worker would only wait for them at its first classification:
      // it reads the next chunks' files instead (a quarter of a parse run is reading), up to
      // kReadAheadBytes. Chunks read ahead are parsed first once the rules are there.
      if (next < chunks && next < write_pos + kMaxChunksAhead && ahead_bytes < kReadAheadBytes &&
          rules_loading()) {
        size_t c = next++;
        lock.unlock();
        ReadAhead& ra = results[c].ahead;
        size_t end = std::min(opt.files.size(), (c + 1) * kChunkFiles);
        for (size_t i = c * kChunkFiles; i < end; ++i) {
          std::string error;
          if (message.Read(opt.files[i], &error)) ra.bytes.append(message.view());
          ra.ends.push_back(ra.bytes.size());
          ra.errors.push_back(std::move(error));
        }
        lock.lock();
        ahead.insert(std::upper_bound(ahead.begin(), ahead.end(), c), c);
        ahead_bytes += ra.bytes.size();
        continue;
      }
      size_t c;
      if (!ahead.empty()) {
        c = ahead.front();
        ahead.pop_front();
        ahead_bytes -= results[c].ahead.bytes.size();
      } else if (next < chunks) {
        c = next++;
      } else {
        return;
      }
      lock.unlock();
      std::string out;
      bool failed = false;
      size_t first = c * kChunkFiles;
      size_t end = std::min(opt.files.size(), (c + 1) * kChunkFiles);
      ReadAhead ra = std::move(results[c].ahead);
      for (size_t i = first; i < end; ++i) {
        bool ok;
        if (ra.ends.empty()) {
          ok = ReadAndParse(opt.files[i], get_rules, output, &message, &out);
        } else {
          size_t k = i - first;
          size_t from = k == 0 ? 0 : ra.ends[k - 1];
          if (!ra.errors[k].empty() && IsFolder(opt.files[i])) {
            ok = ParseFolder(opt.files[i], get_rules, output, &message, &out);
          } else {
            ok = ParseOne(opt.files[i], std::string_view(ra.bytes).substr(from, ra.ends[k] - from),
                          ra.errors[k], get_rules, output, &out);
          }
        }
        if (!ok) failed = true;
      }
      // Only good rules let output out (see above). Asked outside the lock: a chunk of files
      // that were all unreadable classified nothing, so the rules may still be loading.
      const bool rules_ok = static_cast<bool>(loading.get());
      lock.lock();
      results[c].out = std::move(out);
      results[c].failed = failed;
      results[c].done = true;
      if (c == write_pos && rules_ok) write_ready(lock);
    }
  };
  // Started on other CPUs at once (common/spread_thread.h), to read ahead while this thread
  // loads the rules.
  std::vector<SpreadThread> threads;
  for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(worker);
  // The workers wait for a value, so a failure must become one (as a bad file's error does).
  try {
    rules_promise.set_value(LoadCommandRules(opt.rules_files));
  } catch (const std::exception& e) {
    rules_promise.set_value(Status::Error(std::string("cannot load the rules: ") + e.what()));
  }
  if (const LoadedRules& loaded = loading.get(); !loaded) {
    {
      std::lock_guard lock(mu);
      next = chunks;  // hand out nothing more, and drop what was read ahead
      ahead.clear();
    }
    written.notify_all();
    for (SpreadThread& t : threads) t.join();
    std::cerr << "bouncectl parse: " << loaded.error() << '\n';
    return kExitUsage;
  }
  worker();  // this thread is a worker too
  for (SpreadThread& t : threads) t.join();
  // Every chunk is done and, as each one's worker saw the chunk before it written or being
  // written, written; this only makes sure.
  std::unique_lock lock(mu);
  write_ready(lock);
  return failed_any ? kExitFailed : kExitOk;
}

// Mailbox messages parsed on worker threads, their output written by the caller's thread in
// the order the messages came. A batch is a run of messages of one mailbox (kChunkFiles of
// them, or 1 MiB), copied out of the reader's buffer; at most kMailboxBatchesAhead batches are
// parsed or wait, which bounds memory: ~2.6 MB for bounces of the usual size.
constexpr size_t kMailboxBatchesAhead = 16;
struct MailboxBatch {
  const std::string* file = nullptr;
  std::string bytes;         // the messages, one after another
  std::vector<size_t> ends;  // per message, where its bytes end
  std::vector<uint64_t> numbers;
  std::string error;  // set: the batch is the mailbox's error line (it could not be read)
};

class MailboxParser {
 public:
  MailboxParser(unsigned threads, const RuleSet& rules, const ParseOutput& output)
      : rules_(rules), output_(output), get_rules_([this]() -> const RuleSet& { return rules_; }) {
    for (unsigned t = 0; threads > 1 && t < threads; ++t) workers_.emplace_back([this] { Work(); });
  }
  MailboxParser(const MailboxParser&) = delete;
  MailboxParser& operator=(const MailboxParser&) = delete;
  ~MailboxParser() { Finish(); }

  void Submit(MailboxBatch batch) {
    if (workers_.empty()) {  // one thread: parse and write at once
      Slot slot(std::move(batch));
      Parse(&slot);
      Write(slot);
      return;
    }
    auto slot = std::make_shared<Slot>(std::move(batch));
    std::unique_lock lock(mu_);
    for (;;) {
      WriteReady(lock);
      if (in_flight_.size() < kMailboxBatchesAhead) break;
      done_.wait(lock);
    }
    in_flight_.push_back(slot);
    todo_.push_back(slot);
    work_.notify_one();
  }

  // Waits for every batch and writes the rest; false when a message yielded no recipient or a
  // mailbox could not be read.
  bool Finish() {
    if (!workers_.empty()) {
      std::unique_lock lock(mu_);
      for (;;) {
        WriteReady(lock);
        if (in_flight_.empty()) break;
        done_.wait(lock);
      }
      stop_ = true;
      work_.notify_all();
      lock.unlock();
      for (SpreadThread& t : workers_) t.join();
      workers_.clear();
    }
    return !failed_;
  }

 private:
  struct Slot {
    explicit Slot(MailboxBatch b) : batch(std::move(b)) {}
    MailboxBatch batch;
    std::string out;
    bool ok = true;
    bool done = false;
  };

  void Parse(Slot* slot) {
    const MailboxBatch& b = slot->batch;
    if (!b.error.empty()) {
      slot->ok = ParseOne(*b.file, {}, b.error, get_rules_, output_, &slot->out);
      return;
    }
    std::string_view bytes(b.bytes);
    for (size_t k = 0; k < b.ends.size(); ++k) {
      size_t from = k == 0 ? 0 : b.ends[k - 1];
      if (!ParseOne(*b.file, bytes.substr(from, b.ends[k] - from), std::string(), get_rules_,
                    output_, &slot->out, b.numbers[k]))
        slot->ok = false;
    }
  }

  void Write(const Slot& slot) {
    if (!slot.ok) failed_ = true;
    std::fwrite(slot.out.data(), 1, slot.out.size(), stdout);
  }

  // Writes the finished batches at the front, in order (the lock is held: only this thread
  // writes, and the workers only append to the strings of batches not yet done).
  void WriteReady(std::unique_lock<std::mutex>&) {
    while (!in_flight_.empty() && in_flight_.front()->done) {
      Write(*in_flight_.front());
      in_flight_.pop_front();
    }
  }

  void Work() {
    std::unique_lock lock(mu_);
    for (;;) {
      work_.wait(lock, [this] { return stop_ || !todo_.empty(); });
      if (todo_.empty()) return;
      std::shared_ptr<Slot> slot = todo_.front();
      todo_.pop_front();
      lock.unlock();
      Parse(slot.get());
      lock.lock();
      slot->done = true;
      done_.notify_one();
    }
  }

  const RuleSet& rules_;
  const ParseOutput output_;
  const std::function<const RuleSet&()> get_rules_;
  std::vector<SpreadThread> workers_;
  std::mutex mu_;
  std::condition_variable work_;                 // a batch to parse, or stop
  std::condition_variable done_;                 // a batch was parsed
  std::deque<std::shared_ptr<Slot>> in_flight_;  // submitted, not yet written (in order)
  std::deque<std::shared_ptr<Slot>> todo_;       // submitted, not yet taken by a worker
  bool stop_ = false;
  bool failed_ = false;
};

// --mbox: every FILE ("-": stdin) is a mailbox, read in blocks and split as it streams
// (message_sources.h); its messages go to the workers in batches.
int ParseMailboxes(const ParseOptions& opt, const RuleSet& rules, const ParseOutput& output,
                   unsigned jobs) {
  constexpr size_t kBatchBytes = 1 << 20;
  MailboxParser parser(jobs, rules, output);
  MailboxBatch batch;
  auto submit = [&] {
    parser.Submit(std::move(batch));
    batch = MailboxBatch();
  };
  ForEachMessage(
      opt.files, true,
      [&](const std::string& file, uint64_t number, std::string_view bytes) {
        if (batch.file != nullptr && batch.file != &file) submit();
        batch.file = &file;
        batch.bytes.append(bytes);
        batch.ends.push_back(batch.bytes.size());
        batch.numbers.push_back(number);
        if (batch.ends.size() == kChunkFiles || batch.bytes.size() >= kBatchBytes) submit();
      },
      [&](const std::string& file, const std::string& error) {
        if (batch.file != nullptr) submit();
        batch.file = &file;
        batch.error = error;
        submit();
      });
  if (batch.file != nullptr) submit();
  return parser.Finish() ? kExitOk : kExitFailed;
}

// Up to this many arguments are looked at before parsing, so that a folder among them is parsed
// on every thread (`bouncectl parse ~/Maildir/.bounces`); in a longer list (a shell glob, where
// a stat of every file would cost as much as its open), a folder is found when its read fails
// and parsed by the thread that found it.
constexpr size_t kFolderLookArgs = 64;

int RunParse(ParseOptions opt) {
  if (!opt.mbox && opt.files.size() <= kFolderLookArgs) {
    std::vector<std::string> expanded;
    for (std::string& f : opt.files) {
      std::error_code ec;
      std::vector<std::string> inside;
      if (IsFolder(f)) inside = FolderFiles(f, &ec);
      if (inside.empty() || ec) {
        // A file, an empty folder (prints nothing either way), or a folder that cannot be
        // listed, which says so when it is read.
        expanded.push_back(std::move(f));
      } else {
        expanded.insert(expanded.end(), inside.begin(), inside.end());
      }
    }
    opt.files = std::move(expanded);
  }
  const ParseOutput output{opt.format == "text", opt.verp};
  const unsigned wanted =
      opt.jobs != 0 ? opt.jobs : std::max(1u, std::thread::hardware_concurrency());
  // A thread per chunk of files at most; a handful of files is not worth a thread. A mailbox's
  // messages are counted as they are read.
  const unsigned jobs = static_cast<unsigned>(
      std::min<size_t>(wanted, (opt.files.size() + kChunkFiles - 1) / kChunkFiles));
  int rc;
  if (opt.mbox || jobs <= 1) {
    auto loaded = LoadCommandRules(opt.rules_files);
    if (!loaded) {
      std::cerr << "bouncectl parse: " << loaded.error() << '\n';
      return kExitUsage;
    }
    rc = opt.mbox ? ParseMailboxes(opt, **loaded, output, wanted)
                  : ParseSequential(opt, **loaded, output);
  } else {
    rc = ParseParallel(opt, output, jobs);
  }
  std::fflush(stdout);
  return rc;
}

}  // namespace

void RegisterParseCommands(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<ParseOptions>();
  CLI::App* parse = app.add_subcommand(
      "parse", "parse bounce messages (DSN, ARF, auto-replies, MTA bounces); one line per message");
  parse->add_option("--format", opt->format, "output format")
      ->check(CLI::IsMember({"jsonl", "text"}));
  parse->add_option("--rules", opt->rules_files,
                    "extra rules file merged on top of the defaults (repeatable)");
  parse
      ->add_option("--jobs", opt->jobs,
                   "threads parsing files at once (0: one per CPU); output order is unchanged")
      ->check(CLI::Range(0u, 256u));
  parse->add_flag("--mbox", opt->mbox,
                  "every FILE is a Unix mailbox: one line per message in it, with \"message\": "
                  "its position");
  auto verp = std::make_shared<bool>(false);
  auto verp_format = std::make_shared<VerpFormat>();
  parse->add_flag(
      "--verp", *verp,
      "each message was delivered to a VERP return path (bounces+alice=example.com@...): "
      "read it from X-Original-To, Delivered-To or To, and the bounce is about the "
      "recipient it encodes (\"verp_recipient\")");
  parse
      ->add_option("--verp-delimiters", verp_format->delimiters,
                   "with --verp: the two VERP delimiters (Postfix's default_verp_delimiters)")
      ->capture_default_str();
  parse->add_option("--verp-prefix", verp_format->prefixes,
                    "with --verp: only return paths whose local part before the first delimiter "
                    "matches (a shell pattern, repeatable; default: any)");
  parse->add_option("--verp-domain", verp_format->domains,
                    "with --verp: only return paths at this domain (a shell pattern, repeatable; "
                    "default: any)");
  parse->add_option("files", opt->files, "message files or folders (Maildir), '-' for stdin")
      ->required();
  parse->callback([opt, verp, verp_format, &ctx] {
    if (*verp) {
      if (Status s = CheckVerpFormat(*verp_format); !s.ok()) {
        // "delimiters: why" -> "--verp-delimiters: why", "prefixes: ..." -> "--verp-prefix: ..."
        std::string why = s.message();
        for (auto [key, option] : {std::pair{"prefixes", "prefix"}, std::pair{"domains", "domain"}})
          if (why.rfind(key, 0) == 0) why.replace(0, std::strlen(key), option);
        std::cerr << "bouncectl parse: --verp-" << why << '\n';
        ctx.exit_code = kExitUsage;
        return;
      }
      opt->verp = *verp_format;
    }
    ctx.exit_code = RunParse(std::move(*opt));  // runs once: the options are not needed again
    ctx.fast_exit = true;
  });
}

}  // namespace bounced::ctl
