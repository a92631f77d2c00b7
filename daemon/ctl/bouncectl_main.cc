// bouncectl: the command-line tool. Offline commands (parse, parse-log, classify, report) work
// on files and the database; the others talk to a running bounced over its query socket.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/ctl/commands.h"

// mimalloc's heap stays on 4 KiB pages, its default. Its large_os_pages option (2 MiB transparent
// huge pages, one fault each) made back-to-back runs ~2 ms faster, but a run that follows a pause,
// as most runs do, ~13 ms slower (corpus x10 with two threads, 2.5 s between runs: 51.0 against
// 38.2 ms median wall; bench/RESULTS.md, "Fourteenth session"): on a virtual machine that hands
// free memory back to its host, a huge page is taken from the free blocks the host was given
// back, and the first touch of each of its 512 small pages is a fault on the host as well.
// MIMALLOC_LARGE_OS_PAGES=1 in the environment still turns it on (with
// MIMALLOC_EAGER_COMMIT_DELAY=0 for the worker threads' heaps too).

namespace {

// The subcommand being run, for error messages.
std::string Command(const CLI::App& app) {
  std::vector<CLI::App*> subs = app.get_subcommands();
  return subs.empty() ? std::string("error") : subs.front()->get_name();
}

// The first argument that is neither a global option nor its value, when it names no command
// (CLI11 only says "A subcommand is required" for `bouncectl stauts ADDR`); "" otherwise.
std::string UnknownCommand(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--socket" || arg == "--config") {
      ++i;  // its value
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') continue;
    auto named = [&arg](const CLI::App* sub) { return sub->get_name() == arg; };
    return app.get_subcommands(named).empty() ? arg : std::string();
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  bounced::ctl::Context ctx;
  CLI::App app{"bouncectl: inspect bounces and manage bounced's suppression list"};
  app.require_subcommand(1);
  app.set_version_flag("--version", BOUNCED_VERSION);
  app.add_option("--socket", ctx.socket_path,
                 "query socket of the running bounced (default: [query] socket of --config)")
      ->each([&ctx](const std::string&) { ctx.socket_given = true; });
  app.add_option("--config", ctx.config_path, "bounced configuration file");
  app.add_flag("--json", ctx.json, "print JSON instead of readable tables");
  app.add_option("--timeout", ctx.reply_timeout_seconds,
                 "query commands: give up when bounced says nothing for this many seconds "
                 "(0: wait for ever)")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  bounced::ctl::RegisterParseCommands(app, ctx);
  bounced::ctl::RegisterParseLogCommand(app, ctx);
  bounced::ctl::RegisterClassifyCommand(app, ctx);
  bounced::ctl::RegisterQueryCommands(app, ctx);
  bounced::ctl::RegisterReportCommands(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (const std::string unknown = UnknownCommand(app, argc, argv); !unknown.empty()) {
      std::fprintf(stderr, "bouncectl: unknown command '%s' (bouncectl --help lists them)\n",
                   unknown.c_str());
      return bounced::ctl::kExitUsage;
    }
    int rc = app.exit(e);
    return rc == 0 ? bounced::ctl::kExitOk : bounced::ctl::kExitUsage;
  } catch (const nlohmann::json::exception& e) {
    // A reply of the protocol's shape whose result is not what the command reads (a socket
    // that is not bounced's, a newer bounced): a failed request, said as such, not an abort.
    std::fflush(stdout);
    std::fprintf(stderr, "bouncectl: %s: unexpected reply from bounced: %s\n", Command(app).c_str(),
                 e.what());
    return bounced::ctl::kExitFailed;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "bouncectl: %s: %s\n", Command(app).c_str(), e.what());
    return bounced::ctl::kExitFailed;
  }
  if (ctx.fast_exit) {
    std::fflush(nullptr);
    std::_Exit(ctx.exit_code);
  }
  return ctx.exit_code;
}
