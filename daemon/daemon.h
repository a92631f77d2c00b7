// daemon.h: the bounced process: wires config, rules, store, log input, query socket, Postfix
// socketmap, milter and alerts together, and handles signals and systemd notification.
//
// Reads: the config file (again on SIGHUP / `reload`), the rules files, the log input. Writes:
// the database, the sockets. Signals: SIGTERM/SIGINT stop cleanly (the input's last batch is
// committed, the writer flushed); SIGHUP reloads config and rules, keeping the old ones when the
// new ones are bad. Under systemd (NOTIFY_SOCKET) it sends READY=1 once serving, WATCHDOG=1 at
// half the watchdog interval, STOPPING=1 on shutdown.
//
// Storage that cannot be opened is retried every few seconds while the sockets answer
// "unavailable" (socketmap: TEMP), so a full or locked disk never takes Postfix's lookups down
// with an error the admin cannot see.
//
// Threads: the Postfix socketmap has an io_context and a thread of its own. Its lookups read
// the in-memory view only, while query commands wait for SQLite and the writer (a database
// locked by another process, a long list): on shared threads a few query clients could hold up
// every Postfix lookup. The query socket, timers and signals share io_threads threads; the log
// input, the storage writer and the milter have their own.
#pragma once

#include <memory>
#include <string>

#include "daemon/config.h"
#include "daemon/rules_loader.h"

namespace bounced {

struct DaemonOptions {
  std::string config_path = kDefaultConfigPath;
  // Read the input to its end, commit, exit (no sockets, no milter).
  bool once = false;
  // Threads serving the query socket (the socketmap has one of its own).
  int io_threads = 2;
};

class Daemon {
 public:
  Daemon(Config config, LoadedRules rules, DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Runs until SIGTERM/SIGINT (or, with once, the end of the input). Returns the exit code:
  // 0 clean, 1 a fatal start-up error (socket in use, storage unusable in --once mode).
  int Run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Applies [log] level to spdlog.
void ApplyLogLevel(const std::string& level);

// Blocks SIGHUP, SIGTERM and SIGINT in the calling thread (call it first in main, before any
// thread starts): Run in service mode takes them over and unblocks them once its handlers are in
// place, so one that arrives while bounced is still starting is acted on, not fatal.
void BlockStopAndReloadSignals();

}  // namespace bounced
