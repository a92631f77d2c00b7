// retention_test.cc: [storage] event_retention_days and counter_retention_days on real SQLite
// files: what pruning removes and keeps, events that arrive too old, a backlog pruned in steps
// by the writer alone, the same-bounce index after a prune.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <thread>

#include "storage/store.h"
#include "storage/timefmt.h"
#include "tests/storage/test_util.h"

namespace bounced {
namespace {

using testing::kDay;
using testing::MakeEvent;
using testing::Scalar;
using testing::TempDir;

int64_t Now() { return static_cast<int64_t>(std::time(nullptr)); }

std::unique_ptr<Store> Open(const std::string& path, RetentionPolicy retention = {}) {
  return testing::OpenStore(path, SuppressionPolicy(), retention);
}

TEST(RetentionHorizonTest, KeepsWholeDays) {
  EXPECT_EQ(RetentionHorizon(0, 1'800'000'000), 0) << "0 keeps everything";
  // 2026-12-01T10:00:00Z with 30 days: from 2026-11-01T00:00:00Z on.
  const int64_t now = 1'796'119'200;
  ASSERT_EQ(DayOf(now), "2026-12-01");
  EXPECT_EQ(RetentionHorizon(30, now), 1'793'491'200);
  EXPECT_EQ(DayOf(RetentionHorizon(30, now)), "2026-11-01");
  EXPECT_EQ(RetentionHorizon(30, 1'793'491'200 + 30 * kDay), 1'793'491'200) << "at midnight";
}

// A forward's event, sent to `original`, which delivered it to `rcpt`.
Event Forwarded(const std::string& rcpt, const std::string& original, int64_t t) {
  Event e = MakeEvent(rcpt, Category::kDelivered, "sent", t);
  e.result.original_recipient = original;
  return e;
}

TEST(RetentionTest, OldEventsGoTheSuppressionListAndPolicyStay) {
  TempDir dir;
  const std::string path = dir.File("r.db");
  auto store = Open(path);
  ASSERT_NE(store, nullptr);
  const int64_t now = Now();
  ASSERT_TRUE(store
                  ->Write(Batch{{Forwarded("fwd@example.net", "alias@example.com", now - 50 * kDay),
                                 Forwarded("fwd@example.net", "alias@example.com", now - 5 * kDay)},
                                std::nullopt})
                  .ok());
  ASSERT_EQ(Scalar(path, "SELECT count(*) FROM event_originals"), 2);
  ASSERT_TRUE(
      store
          ->Write(Batch{
              {MakeEvent("gone@example.com", Category::kUserUnknown, "bounced", now - 100 * kDay),
               MakeEvent("a@example.com", Category::kDelivered, "sent", now - 40 * kDay),
               MakeEvent("a@example.com", Category::kDelivered, "sent", now - 10 * kDay),
               MakeEvent("b@example.org", Category::kMailboxFull, "bounced", now - kDay)},
              std::nullopt})
          .ok());
  ASSERT_TRUE(store->Suppress({"manual@example.com", "", 0}, {0, "ticket 9"}).ok());
  ASSERT_EQ(Scalar(path, "SELECT count(*) FROM events"), 6);
  const int64_t old_counters = Scalar(path, "SELECT count(*) FROM daily_counters WHERE day < '" +
                                                DayOf(RetentionHorizon(30, now)) + "'");
  ASSERT_EQ(old_counters, 3);

  store->SetRetention({.event_days = 30});
  auto pruned = store->Prune();
  ASSERT_TRUE(pruned.ok()) << pruned.error();
  // The automatic step at the first commit after SetRetention may have run first.
  EXPECT_EQ(store->Pruned().events_pruned, 3);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events"), 3);
  EXPECT_EQ(Scalar(path, "SELECT time FROM event_originals"), now - 5 * kDay)
      << "a pruned event's original-recipient row goes with it";
  auto alias = store->GetStatus("alias@example.com");
  ASSERT_TRUE(alias.ok());
  ASSERT_EQ(alias->events.size(), 1u);
  EXPECT_TRUE(alias->events[0].as_original_recipient);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events WHERE time < " +
                             std::to_string(RetentionHorizon(30, now))),
            0);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM event_days WHERE day < '" +
                             DayOf(RetentionHorizon(30, now)) + "'"),
            0);
  // Kept: the suppressions (automatic and manual), their log, the audit trail, the counters.
  EXPECT_TRUE(store->view().Lookup("gone@example.com").has_value());
  EXPECT_TRUE(store->view().Lookup("manual@example.com").has_value());
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM suppressions"), 2);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM suppression_log"), 2);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM audit"), 1);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM daily_counters WHERE day < '" +
                             DayOf(RetentionHorizon(30, now)) + "'"),
            old_counters);
  auto status = store->GetStatus("gone@example.com");
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(status->suppressed);
  EXPECT_TRUE(status->events.empty());
  auto kept = store->GetStatus("a@example.com");
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->events.size(), 1u);
  EXPECT_EQ(kept->events[0].event.unix_time, now - 10 * kDay);

  auto health = store->GetHealth();
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->retention.event_days, 30);
  EXPECT_EQ(health->oldest_event_day, DayOf(now - 10 * kDay));
  EXPECT_EQ(health->pruned.events_pruned, 3);

  // Counters go by their own key, a day at a time.
  store->SetRetention({.event_days = 30, .counter_days = 30});
  pruned = store->Prune();
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(store->Pruned().counter_rows_pruned, old_counters);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM daily_counters"), 3);
  store.reset();
  auto reopened = Open(path);
  ASSERT_NE(reopened, nullptr);
  auto after = reopened->GetHealth();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->integrity_ok) << after->integrity_detail;
  EXPECT_EQ(after->events, 3);
}

TEST(RetentionTest, AnEventOlderThanTheHorizonIsNotRecordedButItsPositionIs) {
  TempDir dir;
  const std::string path = dir.File("r.db");
  auto store = Open(path, {.event_days = 30});
  ASSERT_NE(store, nullptr);
  const int64_t now = Now();
  Batch b;
  b.events = {MakeEvent("old@example.com", Category::kUserUnknown, "bounced", now - 31 * kDay),
              MakeEvent("new@example.com", Category::kUserUnknown, "bounced", now - 29 * kDay),
              MakeEvent("now@example.com", Category::kUserUnknown, "bounced", 0)};
  b.position = InputPosition{"log:x", 1, 500, ""};
  b.counted = std::make_shared<std::vector<uint8_t>>();
  auto counted = b.counted;
  ASSERT_TRUE(store->Write(std::move(b)).ok());
  EXPECT_EQ(*counted, (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events"), 2);
  EXPECT_FALSE(store->view().Lookup("old@example.com").has_value())
      << "a bounce the retention does not keep changes nothing";
  EXPECT_TRUE(store->view().Lookup("new@example.com").has_value());
  EXPECT_EQ(store->Pruned().events_too_old, 1);
  auto pos = store->LoadPosition("log:x");
  ASSERT_TRUE(pos.ok() && pos->has_value());
  EXPECT_EQ((*pos)->offset, 500u) << "skipped on purpose, not lost: the input goes on";
}

TEST(RetentionTest, TheWriterPrunesABacklogInStepsWithoutWaitingForBatches) {
  TempDir dir;
  const std::string path = dir.File("r.db");
  auto store = Open(path);
  ASSERT_NE(store, nullptr);
  const int64_t now = Now();
  // Recent events first, then old ones recorded late (an old mailbox fed today): the old
  // days' id ranges then span the recent rows, which must stay.
  constexpr int kRecent = 3000, kOld = 25000;
  std::vector<Event> recent, old;
  for (int i = 0; i < kRecent; ++i) {
    recent.push_back(MakeEvent("r" + std::to_string(i) + "@example.com", Category::kDelivered,
                               "sent", now - (i % 20) * kDay));
  }
  for (int i = 0; i < kOld; ++i) {
    old.push_back(MakeEvent("o" + std::to_string(i) + "@example.net", Category::kMailboxFull,
                            "deferred", now - (40 + i % 300) * kDay));
  }
  ASSERT_TRUE(store->Write(Batch{recent, std::nullopt}).ok());
  ASSERT_TRUE(store->Write(Batch{old, std::nullopt}).ok());
  ASSERT_TRUE(store->Write(Batch{recent, std::nullopt}).ok());
  ASSERT_EQ(Scalar(path, "SELECT count(*) FROM events"), 2 * kRecent + kOld);

  store->SetRetention({.event_days = 30});
  ASSERT_TRUE(store->Flush().ok());  // the first step; the rest follow without a batch
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (store->Pruned().events_pruned < kOld && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->Pruned().events_pruned, kOld);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events"), 2 * kRecent);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events WHERE recipient_key LIKE 'o%'"), 0);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM event_days"), 20);
  // Nothing left: a second pass finds nothing.
  auto again = store->Prune();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->events, 0);
  // The recent events are still found by the day ranges.
  auto found = store->FindEvents({.since = now - 25 * kDay, .limit = 10000});
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->size(), size_t{2 * kRecent});
}

TEST(RetentionTest, WithoutRetentionNothingIsSkippedOrPruned) {
  TempDir dir;
  const std::string path = dir.File("r.db");
  auto store = Open(path);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(
      store
          ->Write(Batch{{MakeEvent("epoch@example.com", Category::kUserUnknown, "bounced", 1),
                         MakeEvent("before@example.com", Category::kUserUnknown, "bounced", -kDay)},
                        std::nullopt})
          .ok());
  auto pruned = store->Prune();
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(pruned->events, 0);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events"), 2);
  EXPECT_EQ(store->Pruned().events_too_old, 0);
}

TEST(RetentionTest, ARetentionInForceAtOpenPrunesWithoutABatchAndSparesFarFutureDays) {
  TempDir dir;
  const std::string path = dir.File("r.db");
  const int64_t now = Now();
  const int64_t year_10000 = 253402300800 + kDay;  // a clock gone wrong: day "10000-01-02"
  {
    auto store = Open(path);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(
        store
            ->Write(Batch{
                {MakeEvent("old@example.com", Category::kMailboxFull, "deferred", now - 90 * kDay),
                 MakeEvent("future@example.com", Category::kMailboxFull, "deferred", year_10000)},
                std::nullopt})
            .ok());
  }
  auto store = Open(path, {.event_days = 30, .counter_days = 30});
  ASSERT_NE(store, nullptr);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (store->Pruned().events_pruned < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(store->Pruned().events_pruned, 1) << "pruned at open, no batch needed";
  ASSERT_TRUE(store->Prune().ok());
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events WHERE recipient_key = 'future@example.com'"),
            1);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM event_days WHERE day = '10000-01-02'"), 1)
      << "its day sorts before 2026 as text, but it is not old";
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM daily_counters WHERE day = '10000-01-02'"), 1);
  auto status = store->GetStatus("future@example.com");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->events.size(), 1u);
}

TEST(RetentionTest, AfterAPruneTheSameBounceLookupAsksSqlite) {
  TempDir dir;
  const std::string path = dir.File("r.db");
  auto store = Open(path);
  ASSERT_NE(store, nullptr);
  const int64_t horizon = RetentionHorizon(30, Now());
  // The DSN of a bounce, just before the horizon; Postfix's log line for it, just after.
  Event dsn = MakeEvent("gone@example.com", Category::kUserUnknown, "bounced", horizon - 3600,
                        EventSource::kMilter);
  dsn.queue_id = "4XyZ1";
  dsn.source_ref = "<dsn-1@example.com>";
  dsn.result.dsn_action = "failed";
  ASSERT_TRUE(store->Write(Batch{{dsn}, std::nullopt}).ok());
  store->SetRetention({.event_days = 30});
  ASSERT_TRUE(store->Prune().ok());
  ASSERT_EQ(Scalar(path, "SELECT count(*) FROM events"), 0);
  Event log = MakeEvent("gone@example.com", Category::kUserUnknown, "bounced", horizon + 3600);
  log.queue_id = "4XyZ1";
  Batch b{{log}, std::nullopt};
  b.counted = std::make_shared<std::vector<uint8_t>>();
  auto counted = b.counted;
  ASSERT_TRUE(store->Write(std::move(b)).ok());
  // The index still remembered the pruned DSN; it must not call the log line its copy.
  EXPECT_EQ(*counted, (std::vector<uint8_t>{1}));
  EXPECT_EQ(Scalar(path, "SELECT counted FROM events"), 1);
}

}  // namespace
}  // namespace bounced
