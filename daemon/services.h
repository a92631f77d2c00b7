// services.h: what the daemon's parts share while it runs: the store (which may be unavailable),
// the current rules, the recorder that commits events and tells observers, and the hooks the
// query socket calls (reload, health details).
//
// Thread safety: every member may be used from any thread. The store and the rules are swapped
// as whole shared_ptrs under a mutex; users keep their copy for the duration of one request.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "classifier/rules.h"
#include "common/status.h"
#include "daemon/config.h"
#include "storage/store.h"

namespace bounced {

// Told about events once they are committed (e.g. the reports engineer's alert monitor). Called
// on the thread that saw the commit complete; must be quick and must not throw.
class CommitObserver {
 public:
  virtual ~CommitObserver() = default;
  virtual void OnCommitted(const std::vector<Event>& events) = 0;
};

// The events whose entry in `counted` (Batch::counted, filled by the writer) is 1, in order.
std::vector<Event> OnlyCounted(std::vector<Event> events, const std::vector<uint8_t>& counted);

class Services {
 public:
  // The store, or null while it cannot be opened (then store_problem() says why).
  std::shared_ptr<Store> store() const;
  std::string store_problem() const;
  void SetStore(std::shared_ptr<Store> store);
  void SetStoreProblem(std::string problem);

  std::shared_ptr<const RuleSet> rules() const;
  std::vector<std::string> rules_sources() const;
  void SetRules(std::shared_ptr<const RuleSet> rules, std::vector<std::string> sources);

  Config config() const;
  void SetConfig(Config config);

  // Commits events (no input position) and tells the observers about those stored as counted
  // (not a DSN recorded before, not the DSN copy of a logged bounce: Batch::counted): for DSNs
  // fed over the query socket and bounces seen by the milter. Waits for the commit.
  Status Record(std::vector<Event> events);
  // Tells the observers about events committed elsewhere (the log input's batches, filtered
  // with OnlyCounted).
  void NotifyCommitted(const std::vector<Event>& events);
  void AddObserver(std::shared_ptr<CommitObserver> observer);
  bool has_observers() const;

  // Set by the daemon: reload config and rules (the `reload` command and SIGHUP). Returns what
  // was loaded, or why nothing changed.
  std::function<Expected<nlohmann::json>()> reload;
  // Set by the daemon: inputs, sockets and milter details for the `health` command.
  std::function<nlohmann::json()> health_details;
  // Set by the daemon: what the `metrics` command reports beside the store and rules (start
  // time, the health_details parts, open alerts, event counts: daemon/metrics.h's RenderMetrics
  // members). Must not touch SQLite.
  std::function<nlohmann::json()> metrics_details;
  // Set by the daemon: the alert monitor's state, added to the `stats` reply.
  std::function<nlohmann::json()> alerts_json;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<Store> store_;
  std::string store_problem_ = "storage not opened yet";
  std::shared_ptr<const RuleSet> rules_;
  std::vector<std::string> rules_sources_;
  Config config_;
  std::vector<std::shared_ptr<CommitObserver>> observers_;
};

}  // namespace bounced
