// bounced_main.cc: the bounced executable: command line, logging, config and rules, then the
// Daemon. bounced never forks itself (systemd Type=notify runs it as is); --foreground is
// accepted for scripts that expect it.
//   bounced [--config FILE] [--foreground]       run the service
//   bounced --check-config [--config FILE]       validate config and rules, exit 0/1
//   bounced --once [--config FILE]               read the log input to its end, commit, exit
//   bounced --print-default-config               the embedded defaults as TOML
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/rules_loader.h"

int main(int argc, char** argv) {
  std::string config_path = bounced::kDefaultConfigPath;
  bool check = false;
  bool once = false;
  bool foreground = false;
  bool print_default = false;
  CLI::App app{
      "bounced: bounce processor beside Postfix (log input, suppression list, "
      "query socket, Postfix socketmap, milter)"};
  app.set_version_flag("--version", BOUNCED_VERSION);
  app.add_option("-c,--config", config_path, "configuration file (missing = embedded defaults)");
  app.add_flag("--check-config", check, "validate the configuration and rules, then exit");
  app.add_flag("--once", once, "read the log input to its end, commit, exit (no sockets)");
  app.add_flag("-f,--foreground", foreground, "run in the foreground (always the case)");
  app.add_flag("--print-default-config", print_default, "print the default configuration");
  CLI11_PARSE(app, argc, argv);

  if (print_default) {
    std::fputs(bounced::DefaultConfigToml().c_str(), stdout);
    return 0;
  }
  // Until the daemon's handlers are in place (Daemon::Run), SIGHUP and SIGTERM wait: their default
  // action would end a bounced that is still loading rules or opening a large database (a
  // `kill -HUP` from a log rotation script at that moment would take it down).
  if (!check && !once) bounced::BlockStopAndReloadSignals();
  // stderr: journald records it under systemd; no colours, no timestamps there (it adds its own).
  auto logger = spdlog::stderr_logger_mt("bounced");
  logger->set_pattern(std::getenv("JOURNAL_STREAM") != nullptr ? "%l: %v"
                                                               : "%Y-%m-%d %H:%M:%S.%e %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::flush_on(spdlog::level::info);

  // An exception that reaches here (memory exhausted, a thread that cannot be started) ends
  // bounced with its reason in the log and exit status 1, not an abort and a core dump. What was
  // committed is on disk; systemd starts it again.
  try {
    auto config = bounced::LoadConfig(config_path);
    if (!config) {
      spdlog::critical("configuration refused: {}", config.error());
      return 1;
    }
    bounced::ApplyLogLevel(config->log.level);
    auto rules = bounced::LoadRules(config->rules.files);
    if (!rules) {
      spdlog::critical("rules refused: {}", rules.error());
      return 1;
    }
    if (check) {
      std::printf("%s: ok (%zu rules from %zu file(s))\n", config->source.c_str(),
                  rules->rules->rule_count(), rules->sources.size());
      return 0;
    }
    bounced::DaemonOptions options;
    options.config_path = config_path;
    options.once = once;
    bounced::Daemon daemon(std::move(*config), std::move(*rules), options);
    return daemon.Run();
  } catch (const std::exception& e) {
    spdlog::critical("stopped by an unexpected error: {}", e.what());
    return 1;
  }
}
