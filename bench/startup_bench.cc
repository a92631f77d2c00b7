// startup_bench: how long the real bounced takes from exec to answering its query socket, with
// an empty database and with N suppressed addresses (the in-memory view is loaded at start),
// and its resident memory in both cases.
//   build/bench/startup_bench [N_SUPPRESSED=1000000] [RUNS=5]
// Reads nothing from /work/shared.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/lookup_bench_util.h"

namespace {

struct Result {
  double median_s = 0;
  double min_s = 0;
  long rss_kb = 0;
};

Result Run(const std::string& dir, const std::string& db, int runs) {
  std::vector<double> times;
  long rss = 0;
  for (int i = 0; i < runs; ++i) {
    bounced::bench::Daemon d;
    d.dir = dir;
    double t = d.Start(db);
    if (t < 0) {
      std::fprintf(stderr, "bounced did not start on %s\n", db.c_str());
      std::exit(1);
    }
    times.push_back(t);
    rss = d.RssKb();
    d.Stop();
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front(), rss};
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000000;
  int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  char tmpl[] = "/tmp/bounced-startup-bench.XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string empty = dir + "/empty.db";
  std::string full = dir + "/full.db";
  if (!bounced::bench::MakeDatabase(empty, 0)) return 1;
  std::printf("building %s with %zu suppressed addresses...\n", full.c_str(), n);
  std::fflush(stdout);
  if (!bounced::bench::MakeDatabase(full, n)) return 1;
  Result e = Run(dir, empty, runs);
  Result f = Run(dir, full, runs);
  std::printf("\nstart-up to first answered query (median of %d, min), resident memory:\n", runs);
  std::printf("  empty database        %7.3f s  (min %.3f s)  RSS %6.1f MB\n", e.median_s, e.min_s,
              e.rss_kb / 1e3);
  std::printf("  %zu suppressed  %7.3f s  (min %.3f s)  RSS %6.1f MB  (+%.0f bytes/address)\n", n,
              f.median_s, f.min_s, f.rss_kb / 1e3,
              (f.rss_kb - e.rss_kb) * 1024.0 / static_cast<double>(std::max<size_t>(n, 1)));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
