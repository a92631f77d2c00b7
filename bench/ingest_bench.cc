// ingest_bench.cc: storage figures from issue 3, side by side in one run, printed as a table.
//
//   1. Durable ingest: events/s into SQLite (WAL, synchronous=FULL) through the batching writer
//      (batches submitted as an input would, group commit) vs a naive baseline that commits
//      each event in its own transaction through the same Store (Write of a one-event batch).
//   2. Start-up: Store::Open (open, migrate check, view load) with 1M suppressions.
//   3. Suppression view with 1M loaded: lookups/s (hits and misses, 1 and 2 threads) and memory
//      per suppressed address (the view's own estimate and the process RSS growth).
//
// Reads nothing from /work/shared; writes its databases under --dir (default /var/tmp) and
// removes them. Usage:
//   ingest_bench [--dir DIR] [--events N] [--naive N] [--suppressions N] [--part all|ingest|view]
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
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

std::unique_ptr<Store> Open(const std::string& path) {
  StoreOptions o;
  o.path = path;
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

// Batches as the log input submits them: a few hundred events per read, not waiting for each.
double BatchedIngest(const std::string& path, uint64_t n, size_t per_batch, double* cpu_us) {
  Remove(path);
  auto store = Open(path);
  std::vector<Event> events;
  events.reserve(n);
  for (uint64_t i = 0; i < n; ++i) events.push_back(MakeEvent(i));
  auto t0 = Clock::now();
  double c0 = CpuSeconds();
  uint64_t offset = 0;
  for (uint64_t i = 0; i < n; i += per_batch) {
    Batch b;
    uint64_t end = std::min<uint64_t>(n, i + per_batch);
    b.events.assign(std::make_move_iterator(events.begin() + static_cast<long>(i)),
                    std::make_move_iterator(events.begin() + static_cast<long>(end)));
    offset = end * 180;
    b.position = bounced::InputPosition{"log:/var/log/mail.log", 1, offset, ""};
    store->Submit(std::move(b));
  }
  if (auto s = store->Flush(); !s.ok()) {
    std::fprintf(stderr, "flush: %s\n", s.message().c_str());
    std::exit(1);
  }
  double secs = Seconds(t0, Clock::now());
  *cpu_us = (CpuSeconds() - c0) * 1e6 / static_cast<double>(n);
  store.reset();
  Remove(path);
  return static_cast<double>(n) / secs;
}

// One event per transaction: the input waits for each commit before the next.
double NaiveIngest(const std::string& path, uint64_t n) {
  Remove(path);
  auto store = Open(path);
  std::vector<Event> events;
  for (uint64_t i = 0; i < n; ++i) events.push_back(MakeEvent(i));
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
  const std::string path = dir + "/bounced-ingest-bench-" + std::to_string(getpid()) + ".db";

  std::printf("# bounced storage bench (SQLite %s, WAL, synchronous=FULL, dir %s)\n",
              sqlite3_libversion(), dir.c_str());
  std::printf("%-58s %14s\n", "measure", "value");

  double cpu_us = 0;
  if (part == "ingest") {
    std::printf("%-58s %14.0f\n", "durable ingest, batching writer (events/s)",
                BatchedIngest(path, n_events, 500, &cpu_us));
    std::printf("%-58s %14.2f\n", "  CPU per event (us, all threads)", cpu_us);
    return 0;
  }
  if (part != "view") {
    double batched = BatchedIngest(path, n_events, 500, &cpu_us);
    std::printf("%-58s %14.0f\n",
                ("durable ingest, batching writer (events/s, n=" + std::to_string(n_events) +
                 ", 500/batch)")
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
