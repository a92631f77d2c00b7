// ingest_bench.cc: storage figures from issue 3, side by side in one run, printed as a table.
//
//   1. Durable ingest: events/s into SQLite (WAL, synchronous=FULL) through the batching writer
//      (batches submitted as an input would, group commit) vs a naive baseline that commits
//      each event in its own transaction through the same Store (Write of a one-event batch).
//      With --dsn-copies F, a fraction F of the log's permanent failures also arrive as the DSN
//      Postfix sends for them (alternately through ingest-dsn and the milter: same queue id
//      and recipient, its own Message-ID), each submitted as its own one-event batch as the
//      milter does, up to 250 log events before or after its log line; the store must count
//      each pair once (checked after the run).
//   2. Start-up: Store::Open (open, migrate check, view load) with 1M suppressions.
//   3. Suppression view with 1M loaded: lookups/s (hits and misses, 1 and 2 threads) and memory
//      per suppressed address (the view's own estimate and the process RSS growth).
//
// Reads nothing from /work/shared; writes its databases under --dir (default /var/tmp) and
// removes them. Usage:
//   4. Retention (--part retention only): pruning a year of events down to 30 days, and the
//      commit latency of one-event writes meanwhile against without it.
//
//   ingest_bench [--dir DIR] [--events N] [--naive N] [--suppressions N]
//                [--part all|ingest|view|retention]
//                [--dsn-copies F] [--group-events N]
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "storage/store.h"

namespace {

using bounced::Batch;
using bounced::Category;
using bounced::Event;
using bounced::Store;
using bounced::StoreOptions;
using Clock = std::chrono::steady_clock;

// Process CPU time (user + system, all threads) in seconds.
double CpuSeconds() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// On-CPU nanoseconds of each thread of this process by thread id (/proc/self/task/*/schedstat).
std::map<std::string, uint64_t> ThreadCpuNs() {
  std::map<std::string, uint64_t> out;
  std::error_code ec;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream f(t.path() / "schedstat");
    uint64_t ns = 0;
    if (f >> ns) out[t.path().filename().string()] = ns;
  }
  return out;
}

// The most CPU one thread used between two ThreadCpuNs() snapshots: in the ingest run, the
// writer's (the rate can be at most events / this on a machine with a free core per thread).
double BusiestThreadSeconds(const std::map<std::string, uint64_t>& before,
                            const std::map<std::string, uint64_t>& after) {
  uint64_t most = 0;
  for (const auto& [tid, ns] : after) {
    auto b = before.find(tid);
    most = std::max(most, ns - (b == before.end() ? 0 : b->second));
  }
  return static_cast<double>(most) / 1e9;
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

long RssKb() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long size = 0, resident = 0;
  if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
  std::fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// A realistic mix: mostly deliveries and deferrals, some hard bounces and iCloud CS01/HM08.
Event MakeEvent(uint64_t i) {
  static const struct {
    Category c;
    const char* status;
    const char* provider;
    const char* code;
  } kMix[] = {
      {Category::kDelivered, "sent", "gmail", ""},
      {Category::kDelivered, "sent", "icloud", ""},
      {Category::kDelivered, "sent", "microsoft", ""},
      {Category::kRateLimited, "deferred", "yahoo", "TSS04"},
      {Category::kDelivered, "sent", "gmail", ""},
      {Category::kPolicyRejection, "bounced", "icloud", "CS01"},
      {Category::kDelivered, "sent", "", ""},
      {Category::kUserUnknown, "bounced", "gmail", ""},
      {Category::kAuthFailure, "bounced", "icloud", "HM08"},
      {Category::kMailboxFull, "bounced", "yahoo", ""},
  };
  static const char* kDomains[] = {"gmail.com", "icloud.com", "outlook.com", "yahoo.com",
                                   "example.org"};
  const auto& m = kMix[i % std::size(kMix)];
  Event e;
  e.source = bounced::EventSource::kLog;
  e.source_ref = "off=" + std::to_string(i * 180);
  e.unix_time = 1793491200 + static_cast<int64_t>(i / 10);
  e.queue_id = "4F" + std::to_string(100000 + i);
  e.sender = "news@shop.example";
  e.log_status = m.status;
  e.relay = "mx.example[192.0.2.1]:25";
  e.program = "postfix/smtp";
  e.result.recipient =
      "user" + std::to_string((i * 7919) % 200000) + "@" + kDomains[(i / 3) % std::size(kDomains)];
  e.result.category = m.c;
  e.result.provider = m.provider;
  e.result.provider_code = m.code;
  e.result.status = m.c == Category::kDelivered ? "2.0.0" : "5.7.1";
  e.result.diagnostic = m.c == Category::kDelivered
                            ? "250 2.0.0 OK 1732900000 queued"
                            : "554 5.7.1 [CS01] Message rejected due to local policy";
  return e;
}

// --group-events: the writer's events per group-commit transaction (StoreOptions default when 0).
size_t g_group_events = 0;

std::unique_ptr<Store> Open(const std::string& path) {
  StoreOptions o;
  o.path = path;
  if (g_group_events != 0) o.max_batch_events = g_group_events;
  auto s = Store::Open(o);
  if (!s.ok()) {
    std::fprintf(stderr, "open %s: %s\n", path.c_str(), s.error().c_str());
    std::exit(1);
  }
  return std::move(*s);
}

void Remove(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

// A deterministic pseudo-random number for event i (splitmix64).
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The DSN Postfix sends for log event `log` (a permanent failure), as EventsFromBounce makes it.
Event DsnCopy(const Event& log, uint64_t i) {
  Event e;
  e.source = i % 2 ? bounced::EventSource::kMilter : bounced::EventSource::kDsn;
  e.source_ref = "<" + std::to_string(i) + ".bounce@mx.shop.example>";
  e.unix_time = log.unix_time + 1;
  e.queue_id = log.queue_id;
  e.log_status = "bounced";
  e.result = log.result;
  e.result.dsn_action = "failed";
  return e;
}

// One submission: a log event (goes into the current log batch) or a DSN (its own batch).
struct Arrival {
  uint64_t order;
  bool dsn;
  Event event;
};

// The events of one run in submission order; *copies = DSN copies among them.
std::vector<Arrival> MakeArrivals(uint64_t n, double dsn_copies, uint64_t* copies) {
  std::vector<Arrival> out;
  out.reserve(n + static_cast<uint64_t>(static_cast<double>(n) * dsn_copies * 0.4) + 16);
  *copies = 0;
  const auto threshold = static_cast<uint64_t>(dsn_copies * 1e6);
  for (uint64_t i = 0; i < n; ++i) {
    Event e = MakeEvent(i);
    if (e.log_status == "bounced" && Mix(i) % 1000000 < threshold) {
      // Before or after the log line: the milter sees the DSN at once, the log follower reads
      // the log a little later, or the other way round.
      int64_t shift = static_cast<int64_t>(Mix(i ^ 0xd5a) % 501) - 250;
      int64_t at = std::max<int64_t>(0, static_cast<int64_t>(i) + shift);
      out.push_back(Arrival{static_cast<uint64_t>(at) * 2 + 1, true, DsnCopy(e, i)});
      ++*copies;
    }
    out.push_back(Arrival{i * 2, false, std::move(e)});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Arrival& a, const Arrival& b) { return a.order < b.order; });
  return out;
}

// Writes back the dirty page cache before a timed run: the data an earlier run (or another
// process) left unwritten would otherwise be flushed by this run's commit fsyncs and charged to
// it, so back-to-back runs measured each other's writes (200k events write ~200 MB).
void FlushPageCache() { ::sync(); }

// Batches as the log input submits them: a few hundred events per read, not waiting for each;
// DSN copies one per batch, as the milter and ingest-dsn submit them. Returns events/s over all
// events (log and DSN); *total = that count.
double BatchedIngest(const std::string& path, uint64_t n, size_t per_batch, double dsn_copies,
                     double* cpu_us, double* busiest_us, uint64_t* total, double* reopen_s) {
  Remove(path);
  auto store = Open(path);
  uint64_t copies = 0;
  std::vector<Arrival> arrivals = MakeArrivals(n, dsn_copies, &copies);
  *total = arrivals.size();
  FlushPageCache();
  auto threads0 = ThreadCpuNs();
  auto t0 = Clock::now();
  double c0 = CpuSeconds();
  Batch b;
  uint64_t logged = 0;
  auto submit_log_batch = [&] {
    b.position = bounced::InputPosition{"log:/var/log/mail.log", 1, logged * 180, ""};
    store->Submit(std::move(b));
    b = Batch{};
  };
  for (Arrival& a : arrivals) {
    if (a.dsn) {
      Batch d;
      d.events.push_back(std::move(a.event));
      store->Submit(std::move(d));
      continue;
    }
    b.events.push_back(std::move(a.event));
    ++logged;
    if (b.events.size() == per_batch) submit_log_batch();
  }
  if (!b.events.empty()) submit_log_batch();
  if (auto s = store->Flush(); !s.ok()) {
    std::fprintf(stderr, "flush: %s\n", s.message().c_str());
    std::exit(1);
  }
  double secs = Seconds(t0, Clock::now());
  *cpu_us = (CpuSeconds() - c0) * 1e6 / static_cast<double>(*total);
  *busiest_us = BusiestThreadSeconds(threads0, ThreadCpuNs()) * 1e6 / static_cast<double>(*total);
  store.reset();
  // Start-up with these events stored (the writer's index of recent DSN bounces is read then).
  auto r0 = Clock::now();
  Open(path).reset();
  *reopen_s = Seconds(r0, Clock::now());
  // Each log bounce and its DSN copy count once: exactly one of the two is not counted.
  sqlite3* db = nullptr;
  sqlite3_stmt* st = nullptr;
  int64_t uncounted = -1;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT count(*) FROM event_rows WHERE counted = 0", -1, &st,
                         nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    uncounted = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  if (uncounted != static_cast<int64_t>(copies)) {
    std::fprintf(stderr, "check failed: %lld events not counted, expected %llu\n",
                 static_cast<long long>(uncounted), static_cast<unsigned long long>(copies));
    std::exit(1);
  }
  Remove(path);
  return static_cast<double>(*total) / secs;
}

// One event per transaction: the input waits for each commit before the next.
double NaiveIngest(const std::string& path, uint64_t n) {
  Remove(path);
  auto store = Open(path);
  std::vector<Event> events;
  for (uint64_t i = 0; i < n; ++i) events.push_back(MakeEvent(i));
  FlushPageCache();
  auto t0 = Clock::now();
  for (uint64_t i = 0; i < n; ++i) {
    Batch b;
    b.events.push_back(std::move(events[i]));
    b.position = bounced::InputPosition{"log:/var/log/mail.log", 1, (i + 1) * 180, ""};
    if (auto s = store->Write(std::move(b)); !s.ok()) {
      std::fprintf(stderr, "write: %s\n", s.message().c_str());
      std::exit(1);
    }
  }
  double secs = Seconds(t0, Clock::now());
  store.reset();
  Remove(path);
  return static_cast<double>(n) / secs;
}

std::string SuppressedAddress(uint64_t i) {
  return "customer." + std::to_string(i) + "@example-" + std::to_string(i % 5000) + ".com";
}

// Fills a database with n suppressions (schema from a Store, rows by plain SQL: fast set-up).
void FillSuppressions(const std::string& path, uint64_t n) {
  Remove(path);
  Open(path).reset();
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "PRAGMA synchronous=OFF; BEGIN", nullptr, nullptr, nullptr);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO suppressions (address, display, domain, reason, category, "
                     "source, first_event, last_event, created, expires, detail, updated) "
                     "VALUES (?1, ?1, ?2, 'hard_bounce', 'user_unknown', 'bounce', ?3, ?3, ?3, "
                     "0, '550 5.1.1 user unknown', ?3)",
                     -1, &st, nullptr);
  for (uint64_t i = 0; i < n; ++i) {
    std::string a = SuppressedAddress(i);
    std::string d = a.substr(a.find('@') + 1);
    sqlite3_bind_text(st, 1, a.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, d.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, 1793491200 + static_cast<int64_t>(i));
    sqlite3_step(st);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(db);
}

// p50, p99 and max of `ms`, sorted in place.
struct Latency {
  double p50 = 0, p99 = 0, max = 0;
};
Latency Percentiles(std::vector<double>& ms) {
  if (ms.empty()) return {};
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[ms.size() * 99 / 100], ms.back()};
}

// Writes one-event batches (an input or the milter waiting for each commit) until `stop`, and
// returns each one's commit latency in ms.
std::vector<double> WriteLatencies(Store& store, const std::atomic<bool>& stop, uint64_t first,
                                   uint64_t at_least) {
  std::vector<double> ms;
  for (uint64_t i = first; !stop || ms.size() < at_least; ++i) {
    Batch b;
    b.events.push_back(MakeEvent(i));
    b.events.back().unix_time = 0;  // now
    auto t0 = Clock::now();
    if (auto s = store.Write(std::move(b)); !s.ok()) {
      std::fprintf(stderr, "write: %s\n", s.message().c_str());
      std::exit(1);
    }
    ms.push_back(Seconds(t0, Clock::now()) * 1e3);
    if (ms.size() >= 200000) break;
  }
  return ms;
}

int64_t FileBytes(const std::string& path) {
  std::error_code ec;
  int64_t n = 0;
  for (const char* suffix : {"", "-wal"}) {
    auto b = std::filesystem::file_size(path + suffix, ec);
    if (!ec) n += static_cast<int64_t>(b);
  }
  return n;
}

// --part retention: n events spread over the last 400 days, then [storage]
// event_retention_days = 30 turned on: how long the writer takes to prune the older ones, and
// what a one-event write waits for its commit meanwhile, against the same writes without it.
int RetentionBench(const std::string& path, uint64_t n) {
  Remove(path);
  auto store = Open(path);
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  const int64_t span = 400 * 86400;
  std::vector<std::future<bounced::Status>> done;
  Batch b;
  for (uint64_t i = 0; i < n; ++i) {
    Event e = MakeEvent(i);
    e.unix_time = now - span + static_cast<int64_t>(static_cast<double>(i) / n * span);
    b.events.push_back(std::move(e));
    if (b.events.size() == 5000 || i + 1 == n) done.push_back(store->Submit(std::move(b)));
  }
  for (auto& f : done) {
    if (auto s = f.get(); !s.ok()) {
      std::fprintf(stderr, "fill: %s\n", s.message().c_str());
      return 1;
    }
  }
  store.reset();  // checkpointed
  const int64_t bytes = FileBytes(path);
  store = Open(path);
  const int64_t horizon = bounced::RetentionHorizon(30, now);
  const int64_t old = static_cast<int64_t>(
      std::ceil(static_cast<double>(horizon - (now - span)) / span * static_cast<double>(n)));
  std::printf("%-58s %14.0f\n",
              ("database bytes per event (" + std::to_string(n) + " events)").c_str(),
              static_cast<double>(bytes) / static_cast<double>(n));

  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    stop = true;
  });
  std::vector<double> quiet = WriteLatencies(*store, stop, n, 0);
  stopper.join();
  Latency q = Percentiles(quiet);

  stop = false;
  auto p0 = Clock::now();
  double pruning_s = 0;
  std::thread watcher([&] {
    while (store->Pruned().events_pruned < old) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pruning_s = Seconds(p0, Clock::now());
    stop = true;
  });
  store->SetRetention({.event_days = 30});
  std::vector<double> busy = WriteLatencies(*store, stop, 2 * n, 0);
  watcher.join();
  Latency p = Percentiles(busy);
  const int64_t pruned = store->Pruned().events_pruned;
  if (pruned != old) {
    std::fprintf(stderr, "check failed: %lld events pruned, expected %lld\n",
                 static_cast<long long>(pruned), static_cast<long long>(old));
    return 1;
  }
  std::printf("%-58s %14.2f\n",
              ("pruning " + std::to_string(old) + " events older than 30 days (s)").c_str(),
              pruning_s);
  std::printf("%-58s %14.0f\n", "  events pruned per second", static_cast<double>(old) / pruning_s);
  std::printf("%-58s %14s\n", "one-event write latency p50 / p99 / max (ms):", "");
  std::printf("%-58s %4.2f / %4.2f / %5.1f\n",
              ("  without pruning (" + std::to_string(quiet.size()) + " writes)").c_str(), q.p50,
              q.p99, q.max);
  std::printf("%-58s %4.2f / %4.2f / %5.1f\n",
              ("  while pruning (" + std::to_string(busy.size()) + " writes)").c_str(), p.p50,
              p.p99, p.max);
  store.reset();
  std::printf("%-58s %14.0f\n", "database bytes after (freed pages are reused, not returned)",
              static_cast<double>(FileBytes(path)));
  Remove(path);
  return 0;
}

uint64_t Arg(int argc, char** argv, const char* name, uint64_t def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::strtoull(argv[i + 1], nullptr, 10);
  }
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/var/tmp", part = "all";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
    if (std::strcmp(argv[i], "--part") == 0) part = argv[i + 1];
  }
  const uint64_t n_events = Arg(argc, argv, "--events", 500000);
  const uint64_t n_naive = Arg(argc, argv, "--naive", 5000);
  const uint64_t n_supp = Arg(argc, argv, "--suppressions", 1000000);
  g_group_events = Arg(argc, argv, "--group-events", 0);
  double dsn_copies = 0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--dsn-copies") == 0) dsn_copies = std::strtod(argv[i + 1], nullptr);
  }
  if (!(dsn_copies >= 0 && dsn_copies <= 1)) {
    std::fprintf(stderr, "--dsn-copies wants a fraction between 0 and 1\n");
    return 2;
  }
  const std::string path = dir + "/bounced-ingest-bench-" + std::to_string(getpid()) + ".db";

  std::printf("# bounced storage bench (SQLite %s, WAL, synchronous=FULL, dir %s)\n",
              sqlite3_libversion(), dir.c_str());
  std::printf("%-58s %14s\n", "measure", "value");

  double cpu_us = 0, busiest_us = 0, reopen_s = 0;
  uint64_t total = 0;
  if (part == "retention") return RetentionBench(path, n_events);
  if (part == "ingest") {
    double rate =
        BatchedIngest(path, n_events, 500, dsn_copies, &cpu_us, &busiest_us, &total, &reopen_s);
    std::printf("%-58s %14.0f\n",
                ("durable ingest, batching writer (events/s, " + std::to_string(total) + " events" +
                 (total > n_events ? ", DSN copies among them" : "") + ")")
                    .c_str(),
                rate);
    std::printf("%-58s %14.2f\n", "  CPU per event (us, all threads)", cpu_us);
    std::printf("%-58s %14.2f\n", "  CPU per event of the busiest thread (us, the writer)",
                busiest_us);
    std::printf("%-58s %14.3f\n", "  re-open with these events stored (s)", reopen_s);
    return 0;
  }
  if (part != "view") {
    double batched =
        BatchedIngest(path, n_events, 500, dsn_copies, &cpu_us, &busiest_us, &total, &reopen_s);
    std::printf(
        "%-58s %14.0f\n",
        ("durable ingest, batching writer (events/s, n=" + std::to_string(total) + ", 500/batch)")
            .c_str(),
        batched);
    double naive = NaiveIngest(path, n_naive);
    std::printf(
        "%-58s %14.0f\n",
        ("durable ingest, 1 txn per event (events/s, n=" + std::to_string(n_naive) + ")").c_str(),
        naive);
    std::printf("%-58s %13.1fx\n", "batching / naive", batched / naive);
  }
  FillSuppressions(path, n_supp);
  long rss0 = RssKb();
  auto t0 = Clock::now();
  double oc0 = CpuSeconds();
  auto store = Open(path);
  double open_s = Seconds(t0, Clock::now());
  double open_cpu = CpuSeconds() - oc0;
  long rss1 = RssKb();
  const auto& view = store->view();
  std::printf(
      "%-58s %14.3f\n",
      ("start-up: open + view load (s, " + std::to_string(view.size()) + " suppressions)").c_str(),
      open_s);
  std::printf("%-58s %14.3f\n", "  start-up CPU time (s)", open_cpu);
  std::printf("%-58s %14.1f\n", "view memory per suppressed address (bytes, estimate)",
              static_cast<double>(view.memory_bytes()) / static_cast<double>(view.size()));
  std::printf("%-58s %14.1f\n", "process RSS growth per suppressed address (bytes)",
              static_cast<double>(rss1 - rss0) * 1024.0 / static_cast<double>(view.size()));

  // Lookups: pre-built addresses, half suppressed (mixed case and +extension), half not.
  std::vector<std::string> probes;
  std::mt19937_64 rng(42);
  for (int i = 0; i < 1 << 20; ++i) {
    uint64_t k = rng() % n_supp;
    if (i % 2) {
      probes.push_back("Customer." + std::to_string(k) + "+tag@Example-" +
                       std::to_string(k % 5000) + ".com");
    } else {
      probes.push_back("someone." + std::to_string(k) + "@example-" + std::to_string(k % 5000) +
                       ".com");
    }
  }
  for (int threads : {1, 2}) {
    std::atomic<uint64_t> hits{0};
    const int rounds = 4;
    auto l0 = Clock::now();
    double lc0 = CpuSeconds();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        uint64_t h = 0;
        for (int r = 0; r < rounds; ++r) {
          for (size_t i = t; i < probes.size(); i += threads) {
            h += view.Lookup(probes[i]).has_value();
          }
        }
        hits += h;
      });
    }
    for (auto& th : pool) th.join();
    double secs = Seconds(l0, Clock::now());
    double cpu = CpuSeconds() - lc0;
    double total = static_cast<double>(probes.size()) * rounds;
    std::printf("%-58s %14.0f\n",
                ("view lookups/s, " + std::to_string(threads) + " thread(s), 50% hits").c_str(),
                total / secs);
    std::printf("%-58s %14.0f\n",
                ("  ns per lookup per thread (" + std::to_string(threads) + " thread(s))").c_str(),
                secs * 1e9 * threads / total);
    std::printf("%-58s %14.0f\n",
                ("  CPU ns per lookup (" + std::to_string(threads) + " thread(s))").c_str(),
                cpu * 1e9 / total);
    if (hits.load() != static_cast<uint64_t>(total / 2)) {
      std::fprintf(stderr, "lookup check failed: %lu hits of %.0f\n",
                   static_cast<unsigned long>(hits.load()), total);
      return 1;
    }
  }
  store.reset();
  Remove(path);
  return 0;
}
