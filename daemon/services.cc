// services.cc: the daemon's shared state (see services.h).
#include "daemon/services.h"

namespace bounced {

std::shared_ptr<Store> Services::store() const {
  std::lock_guard lock(mu_);
  return store_;
}

std::string Services::store_problem() const {
  std::lock_guard lock(mu_);
  return store_ ? std::string() : store_problem_;
}

void Services::SetStore(std::shared_ptr<Store> store) {
  std::lock_guard lock(mu_);
  store_ = std::move(store);
}

void Services::SetStoreProblem(std::string problem) {
  std::lock_guard lock(mu_);
  store_problem_ = std::move(problem);
}

std::shared_ptr<const RuleSet> Services::rules() const {
  std::lock_guard lock(mu_);
  return rules_;
}

std::vector<std::string> Services::rules_sources() const {
  std::lock_guard lock(mu_);
  return rules_sources_;
}

void Services::SetRules(std::shared_ptr<const RuleSet> rules, std::vector<std::string> sources) {
  std::lock_guard lock(mu_);
  rules_ = std::move(rules);
  rules_sources_ = std::move(sources);
}

Config Services::config() const {
  std::lock_guard lock(mu_);
  return config_;
}

void Services::SetConfig(Config config) {
  std::lock_guard lock(mu_);
  config_ = std::move(config);
}

Status Services::Record(std::vector<Event> events) {
  std::shared_ptr<Store> s = store();
  if (!s) return Status::Error("storage unavailable: " + store_problem());
  Batch batch;
  batch.events = events;
  auto counted = std::make_shared<std::vector<uint8_t>>();
  batch.counted = counted;
  Status st = s->Write(std::move(batch));
  if (st.ok()) NotifyCommitted(OnlyCounted(std::move(events), *counted));
  return st;
}

std::vector<Event> OnlyCounted(std::vector<Event> events, const std::vector<uint8_t>& counted) {
  size_t kept = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    if (i < counted.size() && counted[i] != 0) {
      if (kept != i) events[kept] = std::move(events[i]);
      ++kept;
    }
  }
  events.resize(kept);
  return events;
}

void Services::NotifyCommitted(const std::vector<Event>& events) {
  if (events.empty()) return;
  std::vector<std::shared_ptr<CommitObserver>> observers;
  {
    std::lock_guard lock(mu_);
    observers = observers_;
  }
  for (const auto& o : observers) o->OnCommitted(events);
}

void Services::AddObserver(std::shared_ptr<CommitObserver> observer) {
  std::lock_guard lock(mu_);
  observers_.push_back(std::move(observer));
}

bool Services::has_observers() const {
  std::lock_guard lock(mu_);
  return !observers_.empty();
}

}  // namespace bounced
