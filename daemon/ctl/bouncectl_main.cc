// bouncectl: the command-line tool. Offline commands (parse, parse-log, classify, report) work
// on files and the database; the others talk to a running bounced over its query socket.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#if defined(BOUNCED_WITH_MIMALLOC)
#include <mimalloc.h>
#endif

#include "daemon/ctl/commands.h"

#if defined(BOUNCED_WITH_MIMALLOC)
namespace {
// bouncectl is a short process, and page faults are most of its start-up: a single
// `bouncectl parse FILE` took ~610 of them, at several microseconds each on a virtual machine.
// mimalloc's large_os_pages option puts its heap segments on 2 MiB transparent huge pages
// (madvise mode, Debian's default), one fault each: ~235 faults instead, 4.5 -> 4.1 ms for one
// file, ~1 ms less for 3,720 (bench/RESULTS.md, "Eleventh session"), for ~2.5 MB more resident
// memory. mimalloc reads its options when it initialises, before main and before the program's
// own constructors; functions in .preinit_array run earlier, right after relocation.
//
// MIMALLOC_LARGE_OS_PAGES in the environment still decides (looked up in `envp`: getenv does
// not work yet). Not for bounced: a daemon's start-up does not matter, and its heap should stay
// as small as it can.
void PreferLargePages(int, char**, char** envp) {
  constexpr std::string_view kVariable = "MIMALLOC_LARGE_OS_PAGES=";
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    if (std::string_view(*e).substr(0, kVariable.size()) == kVariable) return;
  }
  mi_option_enable(mi_option_large_os_pages);
}
}  // namespace
__attribute__((section(".preinit_array"),
               used)) void (*const bounced_preinit)(int, char**, char**) = PreferLargePages;
#endif

namespace bounced::ctl {

// A worker thread's heap would still be on 4 KiB pages: once a process has a second thread,
// mimalloc delays committing each thread's first heap segment (eager_commit_delay, 1 by
// default) and leaves such a segment off large pages. A parse worker then took ~640 page faults
// that the main thread did not (a threaded run on 3,720 files: 1,775 -> 1,140 faults, -1.4 ms of
// CPU, -1 ms wall; bench/RESULTS.md, "Twelfth session"). Committing eagerly costs each thread a
// few MiB of resident memory (16 threads: 36 -> 103 MB), which is what the delay is for; so only
// up to kEagerHeapThreads threads get it. MIMALLOC_EAGER_COMMIT_DELAY in the environment still
// decides.
void PrepareThreadHeaps(unsigned threads) {
#if defined(BOUNCED_WITH_MIMALLOC)
  constexpr unsigned kEagerHeapThreads = 4;
  if (threads > kEagerHeapThreads || !mi_option_is_enabled(mi_option_large_os_pages) ||
      std::getenv("MIMALLOC_EAGER_COMMIT_DELAY") != nullptr) {
    return;
  }
  mi_option_set(mi_option_eager_commit_delay, 0);
#else
  (void)threads;
#endif
}

}  // namespace bounced::ctl

int main(int argc, char** argv) {
  bounced::ctl::Context ctx;
  CLI::App app{"bouncectl: inspect bounces and manage bounced's suppression list"};
  app.require_subcommand(1);
  app.set_version_flag("--version", BOUNCED_VERSION);
  app.add_option("--socket", ctx.socket_path, "query socket of the running bounced");
  app.add_option("--config", ctx.config_path, "bounced configuration file");
  app.add_flag("--json", ctx.json, "print JSON instead of readable tables");
  bounced::ctl::RegisterParseCommands(app, ctx);
  bounced::ctl::RegisterParseLogCommand(app, ctx);
  bounced::ctl::RegisterClassifyCommand(app, ctx);
  bounced::ctl::RegisterQueryCommands(app, ctx);
  bounced::ctl::RegisterReportCommands(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? bounced::ctl::kExitOk : bounced::ctl::kExitUsage;
  }
  if (ctx.fast_exit) {
    std::fflush(nullptr);
    std::_Exit(ctx.exit_code);
  }
  return ctx.exit_code;
}
