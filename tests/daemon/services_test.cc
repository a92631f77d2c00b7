// services_test.cc: what the daemon's services tell commit observers (the alert monitor): only
// events the store counted, never a DSN recorded before or the DSN copy of a logged bounce.
// A real store on a temporary SQLite file.
#include "daemon/services.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/daemon/daemon_harness.h"

namespace bounced::testing {
namespace {

constexpr int64_t kT = 1764435600;  // 2025-11-29T17:00:00Z

Event MakeEvent(const std::string& rcpt, Category c, const std::string& log_status, int64_t t,
                EventSource source = EventSource::kLog) {
  Event e;
  e.source = source;
  e.unix_time = t;
  e.log_status = log_status;
  e.result.recipient = rcpt;
  e.result.category = c;
  e.result.diagnostic = "554 5.7.1 [CS01] Message rejected due to local policy";
  return e;
}

int64_t StoredEvents(const std::string& db_path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM events", -1, &st, nullptr);
  int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

class Collect : public CommitObserver {
 public:
  void OnCommitted(const std::vector<Event>& events) override {
    for (const Event& e : events) seen.push_back(e.result.recipient);
  }
  std::vector<std::string> seen;
};

Event Cs01Dsn(const std::string& rcpt, const std::string& message_id, int64_t t) {
  Event e = MakeEvent(rcpt, Category::kPolicyRejection, "bounced", t, EventSource::kDsn);
  e.result.provider = "icloud";
  e.result.provider_code = "CS01";
  e.source_ref = message_id;
  e.queue_id = "4A1B2C3D4E";
  return e;
}

TEST(Services, ObserversSeeOnlyTheEventsTheStoreCounted) {
  TempDir dir;
  StoreOptions options;
  options.path = dir / "b.db";
  auto opened = Store::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.error();
  std::shared_ptr<Store> store = std::move(*opened);
  Services services;
  services.SetStore(store);
  auto collect = std::make_shared<Collect>();
  services.AddObserver(collect);

  // The same two DSNs fed twice (a mailbox ingested again): stored and seen once.
  std::vector<Event> mailbox = {Cs01Dsn("a@icloud.com", "<dsn1@x>", kT),
                                Cs01Dsn("b@icloud.com", "<dsn2@x>", kT + 1)};
  ASSERT_TRUE(services.Record(mailbox).ok());
  ASSERT_TRUE(services.Record(mailbox).ok());
  EXPECT_EQ(collect->seen, (std::vector<std::string>{"a@icloud.com", "b@icloud.com"}));
  EXPECT_EQ(StoredEvents(dir / "b.db"), 2);

  // A bounce logged by Postfix, then the DSN Postfix sent for it (same queue id and
  // recipient): one incident, seen once.
  collect->seen.clear();
  Event logged = MakeEvent("c@icloud.com", Category::kPolicyRejection, "bounced", kT + 10);
  logged.queue_id = "5B2C3D4E5F";
  ASSERT_TRUE(services.Record({logged}).ok());
  Event copy = Cs01Dsn("c@icloud.com", "<dsn3@x>", kT + 12);
  copy.queue_id = "5B2C3D4E5F";
  ASSERT_TRUE(services.Record({copy}).ok());
  EXPECT_EQ(collect->seen, std::vector<std::string>{"c@icloud.com"});

  // Batch::counted itself, for a writer's caller that is not Services.
  Batch b;
  b.events = {Cs01Dsn("a@icloud.com", "<dsn1@x>", kT), Cs01Dsn("d@icloud.com", "<dsn4@x>", kT)};
  b.counted = std::make_shared<std::vector<uint8_t>>();
  auto counted = b.counted;
  ASSERT_TRUE(store->Write(std::move(b)).ok());
  EXPECT_EQ(*counted, (std::vector<uint8_t>{0, 1}));
}

}  // namespace
}  // namespace bounced::testing
