// postfix_throughput_bench.cc: hosts the bounced milter for bench/postfix_throughput.py.
//
// Opens a real Store (SQLite file given by --db), imports --suppressed synthetic suppressions
// (supp<N>@example.org), starts the milter on --socket exactly as bounced does
// (MilterDependenciesForStore, the default rules), and serves until SIGTERM/SIGINT. Then it
// prints the milter's counters and its per-RCPT check latency histogram as JSON (stdout, and
// --stats-out FILE if given). Reads nothing from ../shared.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include <spdlog/spdlog.h>

#include "classifier/rules.h"
#include "milter/milter.h"
#include "milter/store_dependencies.h"
#include "storage/store.h"

namespace {

void Usage() {
  std::cerr << "usage: postfix_throughput_bench --db FILE --socket SPEC [--suppressed N] "
               "[--socket-group GROUP] [--stats-out FILE]\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string db, socket, socket_group, stats_out;
  long suppressed = 1000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--db") {
      db = next();
    } else if (a == "--socket") {
      socket = next();
    } else if (a == "--suppressed") {
      suppressed = std::stol(next());
    } else if (a == "--socket-group") {
      socket_group = next();
    } else if (a == "--stats-out") {
      stats_out = next();
    } else {
      Usage();
      return 2;
    }
  }
  if (db.empty() || socket.empty()) {
    Usage();
    return 2;
  }
  // Signals are taken with sigwait below; block them before any thread starts.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  if (getenv("BOUNCED_MILTER_DEBUG")) spdlog::set_level(spdlog::level::debug);
  bounced::StoreOptions opts;
  opts.path = db;
  auto store = bounced::Store::Open(opts);
  if (!store.ok()) {
    std::cerr << store.error() << "\n";
    return 1;
  }
  if (suppressed > 0) {
    std::string csv = "address,reason\n";
    for (long i = 0; i < suppressed; ++i) {
      csv += "supp" + std::to_string(i) + "@example.org,bench\n";
    }
    auto imported = (*store)->Import(bounced::ExportFormat::kCsv, csv, {0, "bench"});
    if (!imported.ok() || !imported->errors.empty()) {
      std::cerr << "import failed: " << imported.error() << "\n";
      return 1;
    }
  }
  std::shared_ptr<const bounced::RuleSet> rules = bounced::RuleSet::Default();
  bounced::MilterConfig config;
  config.socket = socket;
  config.socket_group = socket_group;
  auto deps = bounced::MilterDependenciesForStore(
      **store, [rules] { return rules; }, config.callback_timeout);
  if (bounced::Status s = bounced::StartMilter(config, std::move(deps)); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 1;
  }
  std::fprintf(stderr, "milter host ready on %s with %ld suppressions\n", socket.c_str(),
               suppressed);
  int sig = 0;
  sigwait(&set, &sig);
  bounced::StopMilter();

  bounced::MilterStats st = bounced::GetMilterStats();
  nlohmann::json j;
  j["suppressed_loaded"] = suppressed;
  j["connections"] = st.connections;
  j["smtpd_messages"] = st.smtpd_messages;
  j["non_smtpd_messages"] = st.non_smtpd_messages;
  j["rcpt_checked"] = st.rcpt_checked;
  j["rcpt_rejected"] = st.rcpt_rejected;
  j["bounces_seen"] = st.bounces_seen;
  j["callback_timeouts"] = st.callback_timeouts;
  j["storage_errors"] = st.storage_errors;
  for (auto [name, q] : {std::pair{"p50_ns", 0.5},
                         {"p90_ns", 0.9},
                         {"p99_ns", 0.99},
                         {"p999_ns", 0.999},
                         {"max_ns", 1.0}}) {
    j["rcpt_latency"][name] = st.RcptLatencyQuantileNs(q);
  }
  nlohmann::json buckets = nlohmann::json::array();
  for (size_t i = 0; i < st.rcpt_latency.size(); ++i) {
    if (st.rcpt_latency[i] == 0) continue;
    buckets.push_back(
        {{"from_ns", i * bounced::MilterStats::kRcptBucketNs},
         {"to_ns", i + 1 == st.rcpt_latency.size()
                       ? nlohmann::json("inf")
                       : nlohmann::json((i + 1) * bounced::MilterStats::kRcptBucketNs)},
         {"count", st.rcpt_latency[i]}});
  }
  j["rcpt_latency"]["histogram"] = buckets;
  std::string out = j.dump(1);
  std::cout << out << std::endl;
  if (!stats_out.empty()) std::ofstream(stats_out) << out << "\n";
  return 0;
}
