// commands.h: how bouncectl's subcommands are registered. Each group lives in its own file:
// parse_commands.cc (parse), parse_log_command.cc (parse-log), classify_command.cc (classify):
// offline, no daemon needed; query_commands.cc (status, suppress, ... over the query socket);
// report_commands.cc (report, postfix-config, doctor). Exit codes: 0 ok, 1 some inputs or requests
// failed, 2 usage error.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "classifier/rules.h"
#include "common/status.h"

namespace bounced::ctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

struct Context {
  std::string socket_path = "/run/bounced/query.sock";
  bool socket_given = false;  // --socket was given; else QuerySocketPath reads the config
  // QuerySocketPath's answer, found once per run: ingest-dsn and --follow make many requests.
  mutable std::optional<std::string> resolved_socket;
  std::string config_path = "/etc/bounced/bounced.toml";
  bool json = false;
  // --timeout: how long a query command waits for bounced to say anything more (idle, not in
  // all: a long export or import keeps sending or is waited for by its own reply); 0 = no limit.
  int reply_timeout_seconds = 300;
  int exit_code = kExitOk;
  // Set by a command whose work ends with its output written (parse): main then flushes the
  // standard streams and ends the process at once (std::_Exit) instead of running destructors
  // and atexit handlers, whose freeing of a run's heap (rule set, memo, GMime's state) costs
  // about a millisecond that the kernel's unmapping does anyway.
  bool fast_exit = false;
};

// The query socket a command talks to: --socket when given, else [query] socket of the
// configuration file (--config, /etc/bounced/bounced.toml by default: an admin who moved the
// socket there need not say it twice), else the default path when that file is absent or does
// not read (a user who may not read it still reaches the default socket).
std::string QuerySocketPath(const Context& ctx);

// The rules for parse, parse-log and classify: the --rules files first (they take precedence),
// then the embedded defaults; the defaults alone when no file is given. Errors name the file
// (and, from the compiler, the line).
Expected<std::shared_ptr<const RuleSet>> LoadCommandRules(const std::vector<std::string>& paths);

void RegisterParseCommands(CLI::App& app, Context& ctx);
void RegisterParseLogCommand(CLI::App& app, Context& ctx);
void RegisterClassifyCommand(CLI::App& app, Context& ctx);
void RegisterQueryCommands(CLI::App& app, Context& ctx);
void RegisterReportCommands(CLI::App& app, Context& ctx);

}  // namespace bounced::ctl
