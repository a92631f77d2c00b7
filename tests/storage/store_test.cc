// store_test.cc: the SQLite store on real files: open/migrate/refuse, batches and positions,
// DSN de-duplication, counters and stats, list/status/health, the view in step with commits.
#include "storage/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "storage/store_json.h"
#include "tests/storage/test_util.h"

namespace bounced {
namespace {

using testing::ExecSql;
using testing::kDay;
using testing::kT0;
using testing::MakeEvent;
using testing::OpenStore;
using testing::Scalar;
using testing::TempDir;

TEST(StoreOpenTest, CreatesWalDatabaseAtCurrentSchemaVersion) {
  TempDir dir;
  std::string path = dir.File("b.db");
  {
    auto s = OpenStore(path);
    ASSERT_NE(s, nullptr);
  }
  EXPECT_EQ(Scalar(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(Scalar(path, "PRAGMA page_size"), 16384);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
  // Every table the schema documents exists.
  for (const char* t : {"events", "recipient_state", "daily_counters", "suppressions",
                        "suppression_log", "allowlist", "audit", "input_positions"}) {
    EXPECT_EQ(
        Scalar(path, std::string("SELECT count(*) FROM sqlite_master WHERE name='") + t + "'"), 1)
        << t;
  }
}

TEST(StoreOpenTest, ReopensAndKeepsData) {
  TempDir dir;
  std::string path = dir.File("b.db");
  {
    auto s = OpenStore(path);
    Batch b;
    b.events.push_back(MakeEvent("u@example.com", Category::kUserUnknown, "bounced", kT0));
    ASSERT_TRUE(s->Write(std::move(b)).ok());
  }
  auto s = OpenStore(path);
  EXPECT_TRUE(s->view().Lookup("u@example.com").has_value());
  EXPECT_EQ(s->view().size(), 1u);
}

TEST(StoreWriteTest, AnEventWithoutTextsAfterOneWithAllOfThemStoresNulls) {
  // The writer keeps the event insert's bindings from one event to the next: texts the
  // previous event had must not leak into the next one, in one batch or the next.
  TempDir dir;
  std::string path = dir.File("n.db");
  auto s = OpenStore(path);
  auto full = [](const std::string& rcpt) {
    Event e = MakeEvent(rcpt, Category::kUserUnknown, "bounced", kT0);
    e.source_ref = "off=1";
    e.time_text = "2026-11-01T00:00:00Z";
    e.queue_id = "QFULL";
    e.message_id = "<m@example.com>";
    e.sender = "s@example.com";
    e.relay = "mx.example.com[192.0.2.1]:25";
    e.bounce_queue_id = "QB";
    e.result.remote_mta = "mx.example.com";
    e.result.original_recipient = "orig@example.com";
    return e;
  };
  auto bare = [](const std::string& rcpt) {
    Event e = MakeEvent(rcpt, Category::kDelivered, "sent", kT0 + 1);
    e.result.diagnostic.clear();
    return e;
  };
  Batch one;
  one.events.push_back(full("A@Example.com"));
  one.events.push_back(bare("b@example.com"));
  ASSERT_TRUE(s->Write(std::move(one)).ok());
  Batch two;
  two.events.push_back(full("C@Example.com"));
  ASSERT_TRUE(s->Write(std::move(two)).ok());
  Batch three;
  three.events.push_back(bare("d@example.com"));
  ASSERT_TRUE(s->Write(std::move(three)).ok());
  s.reset();
  EXPECT_EQ(Scalar(path,
                   "SELECT count(*) FROM event_rows WHERE recipient_key IN ('b@example.com', "
                   "'d@example.com') AND queue_id IS NULL AND source_ref IS NULL AND recipient "
                   "IS NULL AND message_id IS NULL AND sender IS NULL AND relay IS NULL AND "
                   "diagnostic IS NULL AND remote_mta IS NULL AND time_text IS NULL AND "
                   "original_recipient IS NULL AND bounce_queue_id IS NULL"),
            2);
  EXPECT_EQ(Scalar(path,
                   "SELECT count(*) FROM events WHERE recipient IN ('A@Example.com', "
                   "'C@Example.com') AND queue_id = 'QFULL' AND source_ref = 'off=1' AND "
                   "message_id = '<m@example.com>' AND sender = 's@example.com' AND relay <> '' "
                   "AND diagnostic <> '' AND remote_mta = 'mx.example.com' AND time_text <> '' "
                   "AND original_recipient = 'orig@example.com' AND bounce_queue_id = 'QB'"),
            2);
}

TEST(StoreWriteTest, RowsOfALongBatchKeepTheirTextsOrderAndDays) {
  // The writer inserts rows several at a time (one statement for 16, then one per row): each
  // row keeps its own texts and NULLs, ids follow the submission order and event_days covers
  // every id with its day, across a midnight inside the batch.
  TempDir dir;
  std::string path = dir.File("r.db");
  auto s = OpenStore(path);
  Batch batch;
  constexpr int kEvents = 40;  // two full statements and 8 single rows
  for (int i = 0; i < kEvents; ++i) {
    const std::string rcpt = "user" + std::to_string(i) + "@example.com";
    Event e = MakeEvent(rcpt, Category::kDelivered, "sent", kT0 + int64_t{i} * 3600);
    if (i % 3 == 0) {
      e.result.diagnostic.clear();
    } else {
      e.source_ref = "off=" + std::to_string(i);
      e.queue_id = "Q" + std::to_string(i);
      e.sender = "s@example.com";
      e.relay = "mx" + std::to_string(i % 4) + ".example.com";  // repeats, but not every row
      e.time_text = "t" + std::to_string(i);
    }
    batch.events.push_back(std::move(e));
  }
  ASSERT_TRUE(s->Write(std::move(batch)).ok());
  s.reset();
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM event_rows"), kEvents);
  EXPECT_EQ(Scalar(path,
                   "SELECT count(*) FROM event_rows WHERE queue_id IS NULL AND source_ref IS "
                   "NULL AND sender IS NULL AND relay IS NULL AND diagnostic IS NULL AND "
                   "time_text IS NULL AND (time - " +
                       std::to_string(kT0) + ") / 3600 % 3 = 0"),
            (kEvents + 2) / 3);
  EXPECT_EQ(
      Scalar(path, "SELECT count(*) FROM event_rows WHERE queue_id = 'Q' || ((time - " +
                       std::to_string(kT0) + ") / 3600) AND source_ref = 'off=' || ((time - " +
                       std::to_string(kT0) + ") / 3600) AND time_text = 't' || ((time - " +
                       std::to_string(kT0) +
                       ") / 3600) AND sender = 's@example.com' AND relay = 'mx' || ((time - " +
                       std::to_string(kT0) +
                       ") / 3600 % 4) || '.example.com' AND "
                       "diagnostic <> '' AND recipient_key = 'user' || ((time - " +
                       std::to_string(kT0) + ") / 3600) || '@example.com'"),
      kEvents - (kEvents + 2) / 3);
  EXPECT_EQ(Scalar(path,
                   "SELECT count(*) FROM event_rows a JOIN event_rows b ON a.id < b.id "
                   "AND a.time > b.time"),
            0);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM event_days"), 2);
  EXPECT_EQ(Scalar(path,
                   "SELECT count(*) FROM event_rows e JOIN event_days d ON d.day = "
                   "strftime('%Y-%m-%d', e.time, 'unixepoch') AND e.id BETWEEN d.first_id AND "
                   "d.last_id"),
            kEvents);
}

TEST(StoreOpenTest, RefusesNewerSchema) {
  TempDir dir;
  std::string path = dir.File("b.db");
  { auto s = OpenStore(path); }
  ExecSql(path, "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  StoreOptions o;
  o.path = path;
  auto s = Store::Open(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("newer"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find(path), std::string::npos) << s.error();
}

TEST(StoreOpenTest, RefusesGarbageFileWithClearError) {
  TempDir dir;
  std::string path = dir.File("garbage.db");
  std::ofstream(path) << std::string(8192, 'x');
  StoreOptions o;
  o.path = path;
  auto s = Store::Open(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("not a database"), std::string::npos) << s.error();
}

TEST(StoreOpenTest, RefusesSomeoneElsesDatabase) {
  TempDir dir;
  std::string path = dir.File("other.db");
  ExecSql(path, "CREATE TABLE t(x)");
  StoreOptions o;
  o.path = path;
  auto s = Store::Open(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("not a bounced database"), std::string::npos) << s.error();
}

TEST(StoreOpenTest, MissingDirectoryIsAnError) {
  StoreOptions o;
  o.path = "/nonexistent-dir-for-bounced/x.db";
  auto s = Store::Open(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("/nonexistent-dir-for-bounced/x.db"), std::string::npos);
}

TEST(StoreOpenTest, LockedDatabaseGivesAnErrorNotAHang) {
  TempDir dir;
  std::string path = dir.File("b.db");
  { auto s = OpenStore(path); }
  // Another process holds the write lock: the writer's commit fails after the busy timeout.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  StoreOptions o;
  o.path = path;
  o.busy_timeout_ms = 100;
  auto s = Store::Open(o);
  ASSERT_TRUE(s.ok()) << s.error();  // opening needs no write lock at the current version
  Batch b;
  b.events.push_back(MakeEvent("u@example.com", Category::kUserUnknown, "bounced", kT0));
  Status st = (*s)->Write(std::move(b));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("locked"), std::string::npos) << st.message();
  auto h = (*s)->GetHealth();
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->last_write_error.empty());
  EXPECT_FALSE((*s)->view().Lookup("u@example.com").has_value());
  sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  Batch again;
  again.events.push_back(MakeEvent("u@example.com", Category::kUserUnknown, "bounced", kT0));
  EXPECT_TRUE((*s)->Write(std::move(again)).ok());
  EXPECT_TRUE((*s)->view().Lookup("u@example.com").has_value());
}

TEST(StoreOpenTest, MigratesAnEmptyVersionZeroFile) {
  TempDir dir;
  std::string path = dir.File("b.db");
  ExecSql(path, "PRAGMA user_version = 0");
  auto s = OpenStore(path);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Scalar(path, "PRAGMA user_version"), kSchemaVersion);
}

TEST(StoreOpenTest, ExistingFileKeepsItsPageSize) {
  // Databases created before 16 KiB pages (4 KiB, WAL) open, take writes and keep their size.
  TempDir dir;
  std::string path = dir.File("b.db");
  ExecSql(path,
          "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE x (y); DROP TABLE x");
  {
    auto s = OpenStore(path);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->Write(Batch{{MakeEvent("a@example.com", Category::kUserUnknown, "bounced", kT0)},
                               InputPosition{"log:x", 1, 10, ""}})
                    .ok());
  }
  auto s = OpenStore(path);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Scalar(path, "PRAGMA page_size"), 4096);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events"), 1);
  EXPECT_TRUE(s->view().Lookup("a@example.com").has_value());
}

TEST(StoreCheckpointTest, CheckpointsOffTheWriterKeepTheWalBoundedAndLoseNothing) {
  // Small thresholds so a few MiB of events cross them many times: the checkpointer copies the
  // WAL into the database while the store is open, and the writer's waits past the cap keep the
  // WAL file (its high-water mark) near the cap instead of growing with everything written.
  TempDir dir;
  std::string path = dir.File("c.db");
  StoreOptions o;
  o.path = path;
  o.checkpoint_bytes = 64 << 10;
  o.wal_cap_bytes = 256 << 10;
  o.max_batch_events = 200;  // one batch per transaction: 60 commits
  auto opened = Store::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.error();
  auto store = std::move(*opened);
  constexpr int kBatches = 60, kPerBatch = 200;
  std::vector<std::future<Status>> done;
  for (int b = 0; b < kBatches; ++b) {
    Batch batch;
    for (int i = 0; i < kPerBatch; ++i) {
      const int n = b * kPerBatch + i;
      batch.events.push_back(MakeEvent("user" + std::to_string(n * 7919 % 5000) + "@example.com",
                                       n % 3 ? Category::kDelivered : Category::kRateLimited,
                                       n % 3 ? "sent" : "deferred", kT0 + n));
    }
    batch.position = InputPosition{"log:x", 1, static_cast<uint64_t>(b + 1) * 100, ""};
    done.push_back(store->Submit(std::move(batch)));
  }
  for (auto& f : done) ASSERT_TRUE(f.get().ok());
  // Written so far: several MiB of WAL frames in all.
  const auto wal = std::filesystem::file_size(path + "-wal");
  EXPECT_LT(wal, uintmax_t{2} << 20) << "the WAL grew with the data: no checkpoint restarted it";
  // Checkpoints copied pages into the database file while the store was open.
  EXPECT_GT(std::filesystem::file_size(path), uintmax_t{256} << 10);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events"), kBatches * kPerBatch);
  store.reset();
  auto again = OpenStore(path);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events"), kBatches * kPerBatch);
  auto pos = again->LoadPosition("log:x");
  ASSERT_TRUE(pos.ok() && pos->has_value());
  EXPECT_EQ((*pos)->offset, uint64_t{kBatches} * 100);
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("s.db");
    store_ = OpenStore(path_);
    ASSERT_NE(store_, nullptr);
  }
  int64_t Count(const std::string& sql) { return Scalar(path_, sql); }
  TempDir dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreTest, EventRowKeepsEverythingTheClassifierReturned) {
  Event e = MakeEvent("User@Icloud.com", Category::kPolicyRejection, "bounced", kT0);
  e.source_ref = "ino=5 off=100";
  e.queue_id = "4F9D2C0A1B";
  e.sender = "news@shop.example";
  e.message_id = "<m1@shop.example>";
  e.relay = "mx01.mail.icloud.com[17.57.154.6]:25";
  e.program = "postfix/smtp";
  e.time_text = "2026-11-01T00:00:00+00:00";
  e.result.status = "5.7.1";
  e.result.reply_code = "554";
  e.result.stage = "rcpt";
  e.result.provider = "icloud";
  e.result.provider_code = "CS01";
  e.result.rule = "icloud-cs01";
  ASSERT_TRUE(store_->Write(Batch{{e}, std::nullopt}).ok());
  auto events = store_->EventsFor("user@icloud.com", 10);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  const Event& got = (*events)[0].event;
  EXPECT_EQ(got.source, EventSource::kLog);
  EXPECT_EQ(got.source_ref, "ino=5 off=100");
  EXPECT_EQ(got.queue_id, "4F9D2C0A1B");
  EXPECT_EQ(got.sender, "news@shop.example");
  EXPECT_EQ(got.relay, e.relay);
  EXPECT_EQ(got.result.provider_code, "CS01");
  EXPECT_EQ(got.result.category, Category::kPolicyRejection);
  EXPECT_EQ(got.result.recipient, "User@Icloud.com");
  EXPECT_EQ(got.unix_time, kT0);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE fault='sender' AND hard_bounce=0 "
                  "AND domain='icloud.com' AND recipient_key='user@icloud.com'"),
            1);
  auto j = ToJson((*events)[0]);
  EXPECT_EQ(j["provider_code"], "CS01");
  EXPECT_EQ(j["source"], "log");
}

TEST_F(StoreTest, BatchCommitsEventsAndPositionTogether) {
  Batch b;
  for (int i = 0; i < 1000; ++i) {
    b.events.push_back(MakeEvent(testing::Numbered("r", i, "@example.com"), Category::kDelivered,
                                 "sent", kT0 + i));
  }
  b.position = InputPosition{"log:/var/log/mail.log", 77, 123456, ""};
  ASSERT_TRUE(store_->Write(std::move(b)).ok());
  auto p = store_->LoadPosition("log:/var/log/mail.log");
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->has_value());
  EXPECT_EQ((*p)->inode, 77u);
  EXPECT_EQ((*p)->offset, 123456u);
  EXPECT_EQ(Count("SELECT count(*) FROM events"), 1000);
  auto none = store_->LoadPosition("journal");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST_F(StoreTest, ManyConcurrentSubmittersGroupCommitAndLoseNothing) {
  constexpr int kThreads = 4, kBatches = 200, kPerBatch = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::future<Status>> futures;
      for (int b = 0; b < kBatches; ++b) {
        Batch batch;
        for (int i = 0; i < kPerBatch; ++i) {
          batch.events.push_back(MakeEvent(testing::Numbered("t", t) + testing::Numbered("b", b) +
                                               testing::Numbered("i", i, "@example.com"),
                                           Category::kRateLimited, "deferred", kT0));
        }
        batch.position = InputPosition{"input" + std::to_string(t), 1,
                                       static_cast<uint64_t>((b + 1) * kPerBatch), ""};
        futures.push_back(store_->Submit(std::move(batch)));
      }
      for (auto& f : futures) EXPECT_TRUE(f.get().ok());
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(Count("SELECT count(*) FROM events"), kThreads * kBatches * kPerBatch);
  for (int t = 0; t < kThreads; ++t) {
    auto p = store_->LoadPosition("input" + std::to_string(t));
    ASSERT_TRUE(p.ok() && p->has_value());
    EXPECT_EQ((*p)->offset, static_cast<uint64_t>(kBatches * kPerBatch));
  }
  EXPECT_EQ(Count("SELECT sum(count) FROM daily_counters WHERE category='rate_limited'"),
            kThreads * kBatches * kPerBatch);
}

TEST_F(StoreTest, BadBatchFailsAloneAndLeavesPositionUntouched) {
  ASSERT_TRUE(store_
                  ->Write(Batch{{MakeEvent("a@example.com", Category::kDelivered, "sent", kT0)},
                                InputPosition{"log:x", 1, 10, ""}})
                  .ok());
  // A position without an input name is refused: nothing of that batch is stored.
  auto bad = store_->Submit(Batch{{MakeEvent("b@example.com", Category::kDelivered, "sent", kT0)},
                                  InputPosition{"", 1, 20, ""}});
  auto good = store_->Submit(
      Batch{{MakeEvent("c@example.com", Category::kDelivered, "sent", kT0)}, std::nullopt});
  EXPECT_FALSE(bad.get().ok());
  EXPECT_TRUE(good.get().ok());
  EXPECT_EQ(Count("SELECT count(*) FROM events"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE recipient_key='b@example.com'"), 0);
  EXPECT_EQ((*store_->LoadPosition("log:x"))->offset, 10u);
}

// An input pipelines its batches; each says which stored position it follows. When one fails,
// those queued behind it must not commit: their position would skip the failed batch's lines.
TEST_F(StoreTest, BatchesFollowingAFailedOneAreRefusedWhole) {
  auto batch = [](const std::string& rcpt, InputPosition follows, InputPosition position) {
    Batch b{{MakeEvent(rcpt, Category::kDelivered, "sent", kT0)}, std::move(position)};
    b.follows = std::move(follows);
    return b;
  };
  // No stored position yet: the input is at 0, 0, "".
  ASSERT_TRUE(
      store_->Write(batch("a@example.com", {"log:x", 0, 0, ""}, {"log:x", 1, 10, ""})).ok());
  // Submitted back to back (one group or several): the first fails on its own (a position
  // without an input name), the two behind it follow it and are refused.
  auto bad = store_->Submit(batch("b@example.com", {"log:x", 1, 10, ""}, {"", 1, 20, ""}));
  auto next = store_->Submit(batch("c@example.com", {"log:x", 1, 20, ""}, {"log:x", 1, 30, ""}));
  auto last = store_->Submit(batch("d@example.com", {"log:x", 1, 30, ""}, {"log:x", 1, 40, ""}));
  EXPECT_FALSE(bad.get().ok());
  Status refused = next.get();
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("refused"), std::string::npos) << refused.message();
  EXPECT_FALSE(last.get().ok());
  EXPECT_EQ(Count("SELECT count(*) FROM events"), 1);
  EXPECT_EQ((*store_->LoadPosition("log:x"))->offset, 10u);
  // Read again from the stored position, the same lines commit.
  ASSERT_TRUE(
      store_->Write(batch("b@example.com", {"log:x", 1, 10, ""}, {"log:x", 1, 20, ""})).ok());
  ASSERT_TRUE(
      store_->Write(batch("c@example.com", {"log:x", 1, 20, ""}, {"log:x", 1, 30, ""})).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM events"), 3);
  // The inode counts (a rotated file), and so does a journald cursor; other inputs do not.
  EXPECT_FALSE(
      store_->Write(batch("e@example.com", {"log:x", 2, 30, ""}, {"log:x", 2, 40, ""})).ok());
  ASSERT_TRUE(
      store_->Write(batch("f@example.com", {"journal", 0, 0, ""}, {"journal", 0, 0, "c1"})).ok());
  EXPECT_FALSE(
      store_->Write(batch("g@example.com", {"journal", 0, 0, "c0"}, {"journal", 0, 0, "c2"})).ok());
  ASSERT_TRUE(
      store_->Write(batch("h@example.com", {"journal", 0, 0, "c1"}, {"journal", 0, 0, "c2"})).ok());
  EXPECT_EQ((*store_->LoadPosition("journal"))->cursor, "c2");
  EXPECT_EQ((*store_->LoadPosition("log:x"))->offset, 30u);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE recipient_key IN ('e@example.com', "
                  "'g@example.com')"),
            0);
}

// The same with the failure the reviewer saw: another process holds the write lock longer than
// the busy timeout, so the first batch fails; the one queued behind it gets the lock once it is
// released and must still not commit.
TEST(StoreLockTest, BatchQueuedBehindOneThatFoundTheDatabaseLockedIsRefused) {
  TempDir dir;
  std::string path = dir.File("s.db");
  StoreOptions o;
  o.path = path;
  o.busy_timeout_ms = 1500;
  auto opened = Store::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.error();
  std::unique_ptr<Store> store = std::move(*opened);
  auto batch = [](const std::string& rcpt, uint64_t from, uint64_t to) {
    Batch b{{MakeEvent(rcpt, Category::kDelivered, "sent", kT0)},
            InputPosition{"log:x", 1, to, ""}};
    // (No stored position is inode 0, offset 0.)
    b.follows = InputPosition{"log:x", from == 0 ? 0u : 1u, from, ""};
    return b;
  };
  ASSERT_TRUE(store->Write(batch("a@example.com", 0, 10)).ok());

  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &lock), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto first = store->Submit(batch("b@example.com", 10, 20));
  // The writer has taken the first batch (and waits for the lock) before the second is queued,
  // so they are not in one transaction: BEGIN failing would fail both.
  for (;;) {
    auto h = store->GetHealth();
    ASSERT_TRUE(h.ok()) << h.error();
    if (h->queued_batches == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto second = store->Submit(batch("c@example.com", 20, 30));
  Status s = first.get();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("locked"), std::string::npos) << s.message();
  ASSERT_EQ(sqlite3_exec(lock, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(lock);
  EXPECT_FALSE(second.get().ok());
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events"), 1);
  EXPECT_EQ(Scalar(path, "SELECT offset FROM input_positions WHERE input = 'log:x'"), 10);
}

TEST_F(StoreTest, QueueEventsReadsWhatTheLogSaidOfAQueueIdOldestFirst) {
  auto event = [](const std::string& rcpt, const std::string& qid, const std::string& status,
                  int64_t t, EventSource source) {
    Event e = MakeEvent(rcpt, status == "sent" ? Category::kDelivered : Category::kExpired, status,
                        t, source);
    e.queue_id = qid;
    return e;
  };
  ASSERT_TRUE(
      store_
          ->Write(Batch{{event("a@example.com", "Q1", "deferred", kT0, EventSource::kLog),
                         event("b@example.com", "Q1", "deferred", kT0 + 10, EventSource::kJournal),
                         event("a@example.com", "Q2", "sent", kT0 + 5, EventSource::kLog),
                         // A DSN's event is not what the log said.
                         event("a@example.com", "Q1", "expired", kT0 + 20, EventSource::kDsn),
                         // Written last, three days older.
                         event("c@example.com", "Q1", "sent", kT0 - 3 * kDay, EventSource::kLog)},
                        std::nullopt})
          .ok());
  auto text = [](const Expected<std::vector<StoredEvent>>& got) {
    std::string out;
    if (!got.ok()) return "error: " + got.error();
    for (const StoredEvent& se : *got) {
      out += se.event.result.recipient + " " + se.event.log_status + ";";
    }
    return out;
  };
  EXPECT_EQ(text(store_->QueueEvents({"Q1", kT0 - kDay, ""})),
            "a@example.com deferred;b@example.com deferred;");
  EXPECT_EQ(text(store_->QueueEvents({"Q1", kT0 - 5 * kDay, ""})),
            "a@example.com deferred;b@example.com deferred;c@example.com sent;");
  EXPECT_EQ(text(store_->QueueEvents({"Q1", kT0 - 5 * kDay, "A+x@Example.com"})),
            "a@example.com deferred;");
  EXPECT_EQ(text(store_->QueueEvents({"Q1", kT0 + 11, ""})), "");
  EXPECT_EQ(text(store_->QueueEvents({"Q3", 0, ""})), "");
  EXPECT_EQ(text(store_->QueueEvents({"", 0, ""})), "");
}

// FindEvents (`bouncectl events`): each filter alone and together, the time window (its days
// found through event_days, so an event written late under an older time is still found), the
// most recently recorded first, the limit, and the spellings of "none": provider "-" and the
// null sender "<>".
TEST_F(StoreTest, FindEventsFiltersByEveryFieldNewestFirst) {
  auto event = [](const std::string& rcpt, Category c, const std::string& status, int64_t t,
                  const std::string& provider, const std::string& code, const std::string& sender,
                  EventSource source = EventSource::kLog) {
    Event e = MakeEvent(rcpt, c, status, t, source);
    e.result.provider = provider;
    e.result.provider_code = code;
    e.sender = sender;
    return e;
  };
  ASSERT_TRUE(store_
                  ->Write(Batch{
                      {event("a@icloud.com", Category::kPolicyRejection, "bounced", kT0, "icloud",
                             "CS01", "news@us.example"),
                       event("b@icloud.com", Category::kPolicyRejection, "bounced", kT0 + 60,
                             "icloud", "CS02", "news@us.example"),
                       event("c@gmail.com", Category::kUserUnknown, "bounced", kT0 + 120, "gmail",
                             "", "shop@Eu.Example", EventSource::kDsn),
                       event("d@example.org", Category::kDelivered, "sent", kT0 + 180, "", "", ""),
                       event("e@icloud.com", Category::kRateLimited, "deferred", kT0 + 240,
                             "icloud", "", "news@us.example")},
                      std::nullopt})
                  .ok());
  // Recorded last, two days older: found when the window reaches back to it.
  ASSERT_TRUE(store_
                  ->Write(Batch{{event("f@icloud.com", Category::kPolicyRejection, "bounced",
                                       kT0 - 2 * kDay, "icloud", "CS01", "old@us.example")},
                                std::nullopt})
                  .ok());
  auto find = [&](EventsQuery q) {
    if (q.since == 0) q.since = kT0 - kDay;
    auto got = store_->FindEvents(q);
    if (!got.ok()) return "error: " + got.error();
    std::string out;
    for (const StoredEvent& se : *got) out += se.event.result.recipient.substr(0, 1);
    return out;
  };
  EXPECT_EQ(find({}), "edcba") << "the most recently recorded first";
  EXPECT_EQ(find({.since = kT0 - 3 * kDay}), "fedcba");
  EXPECT_EQ(find({.since = kT0 + 60}), "edcb");
  EXPECT_EQ(find({.since = kT0 + 60, .until = kT0 + 180}), "cb") << "until is exclusive";
  EXPECT_EQ(find({.category = "policy_rejection"}), "ba");
  EXPECT_EQ(find({.since = kT0 - 3 * kDay, .category = "policy_rejection"}), "fba");
  EXPECT_EQ(find({.provider = "icloud"}), "eba");
  EXPECT_EQ(find({.provider = "-"}), "d") << "\"-\": no provider known";
  EXPECT_EQ(find({.provider_code = "CS02"}), "b");
  EXPECT_EQ(find({.log_status = "bounced"}), "cba");
  EXPECT_EQ(find({.source = "dsn"}), "c");
  EXPECT_EQ(find({.domain = "icloud.com"}), "eba");
  EXPECT_EQ(find({.recipient = "<B+news@ICLOUD.com>"}), "b") << "any spelling of it";
  EXPECT_EQ(find({.since = kT0 - 3 * kDay, .recipient = "f@icloud.com"}), "f");
  EXPECT_EQ(find({.recipient = "f@icloud.com"}), "") << "since still applies";
  EXPECT_EQ(find({.recipient = "nobody@icloud.com"}), "");
  EXPECT_EQ(find({.recipient = "not an address"}), "error: invalid address 'not an address'");
  EXPECT_EQ(find({.sender = "shop@Eu.Example"}), "c");
  EXPECT_EQ(find({.sender = "<>"}), "d") << "\"<>\": the null sender";
  EXPECT_EQ(find({.sender_domain = "us.example"}), "eba");
  EXPECT_EQ(find({.sender_domain = "eu.example"}), "c") << "the sender's domain in any case";
  EXPECT_EQ(find({.sender_domain = "<>"}), "d");
  EXPECT_EQ(find({.category = "policy_rejection",
                  .provider = "icloud",
                  .provider_code = "CS01",
                  .log_status = "bounced",
                  .source = "log",
                  .domain = "icloud.com",
                  .sender = "news@us.example"}),
            "a");
  EXPECT_EQ(find({.category = "policy_rejection", .provider = "gmail"}), "");
  EXPECT_EQ(find({.limit = 2}), "ed");
  EXPECT_EQ(find({.limit = 0}), "");
  EXPECT_EQ(find({.since = kT0 + kDay}), "") << "no events on those days";
  // After an id: what was recorded since, the oldest first (--follow reads on from there).
  auto all = store_->FindEvents({.since = kT0 - 3 * kDay});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 6u);
  const int64_t b_id = (*all)[4].id;  // b, the second recorded
  EXPECT_EQ(find({.since = kT0 - 3 * kDay, .after_id = b_id}), "cdef");
  EXPECT_EQ(find({.since = kT0 - 3 * kDay, .limit = 2, .after_id = b_id}), "cd")
      << "the oldest first, so a reader that goes on from the last one misses none";
  EXPECT_EQ(find({.since = kT0 - 3 * kDay, .log_status = "bounced", .after_id = b_id}), "cf");
  EXPECT_EQ(find({.since = kT0 - 3 * kDay, .after_id = (*all)[0].id}), "");
  EXPECT_EQ(find({.since = kT0 - 3 * kDay, .limit = 2, .after_id = 0}), "ab")
      << "after_id 0: from the first event on";
}

// Every row of `sql` on the file at `path`, columns joined by '|', each row ended by '\n'.
std::string Rows(const std::string& path, const std::string& sql) {
  std::string out;
  for (const auto& row : testing::QueryRows(path, sql)) {
    for (size_t i = 0; i < row.size(); ++i) out += (i > 0 ? "|" : "") + row[i];
    out += '\n';
  }
  return out;
}

// Queue facts (Batch::queue_facts) as LoadQueueFacts gives them back: "id=sender,message-id,
// notice,size,nrcpt;" in load order.
std::string FactsText(Store& s, std::string_view input) {
  auto got = s.LoadQueueFacts(input);
  if (!got.ok()) return "error: " + got.error();
  std::string out;
  for (const QueueFacts& f : *got) {
    out += f.queue_id + "=" + f.sender + "," + f.message_id + "," + f.bounce_queue_id + "," +
           std::to_string(f.size) + "," + std::to_string(f.nrcpt) + ";";
  }
  return out;
}

QueueFacts Facts(const std::string& queue_id, const std::string& sender, int64_t size = 100) {
  QueueFacts f;
  f.queue_id = queue_id;
  f.sender = sender;
  f.sender_known = true;
  f.message_id = "<" + queue_id + "@x>";
  f.size = size;
  f.nrcpt = 1;
  return f;
}

// The writer finds a queue id's row through its map of the table (storage/migrate_6.sql): a
// change updates the row, a forgotten id deletes it, an id forgotten and stored again in one
// batch (Postfix reused it) has the new facts only, and a store opened again reads the map
// from the table instead of adding a second row.
TEST_F(StoreTest, QueueFactsAreUpdatedInPlaceForgottenAndFoundAgainAfterReopen) {
  const std::string in = "log:/var/log/mail.log";
  auto batch = [&](uint64_t offset, std::vector<QueueFacts> facts,
                   std::vector<std::string> forgotten) {
    Batch b;
    b.position = InputPosition{in, 7, offset, ""};
    b.queue_facts = std::move(facts);
    b.queue_facts_forgotten = std::move(forgotten);
    return b;
  };
  ASSERT_TRUE(store_->Write(batch(10, {Facts("AAA01", "a@x"), Facts("BBB02", "b@x")}, {})).ok());
  QueueFacts bounced = Facts("AAA01", "a@x");
  bounced.bounce_queue_id = "NNN09";
  ASSERT_TRUE(store_->Write(batch(20, {bounced}, {"BBB02", "NEVER0"})).ok());
  EXPECT_EQ(FactsText(*store_, in), "AAA01=a@x,<AAA01@x>,NNN09,100,1;");
  EXPECT_EQ(Count("SELECT count(*) FROM queue_facts"), 1);

  store_.reset();
  store_ = OpenStore(path_);
  ASSERT_NE(store_, nullptr);
  bounced.size = 200;
  ASSERT_TRUE(store_->Write(batch(30, {bounced, Facts("CCC03", "c@x")}, {})).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM queue_facts"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM queue_facts WHERE queue_id = 'AAA01' AND size = 200"), 1);
  // Reused: forgotten, then stored anew in the same batch. New rows go after the others.
  ASSERT_TRUE(store_->Write(batch(40, {Facts("AAA01", "new@x", 5)}, {"AAA01"})).ok());
  EXPECT_EQ(Rows(path_, "SELECT queue_id, sender FROM queue_facts ORDER BY id"),
            "CCC03|c@x\nAAA01|new@x\n");
  // Another input's facts are its own, under the same queue id too.
  ASSERT_TRUE(store_
                  ->Write(Batch{{},
                                InputPosition{"journal", 0, 0, "c1"},
                                std::nullopt,
                                {Facts("AAA01", "j@x")},
                                {"CCC03"}})
                  .ok());
  EXPECT_EQ(FactsText(*store_, "journal"), "AAA01=j@x,<AAA01@x>,,100,1;");
  ASSERT_TRUE(store_->Write(batch(50, {}, {"CCC03"})).ok());
  EXPECT_EQ(FactsText(*store_, in), "AAA01=new@x,<AAA01@x>,,5,1;");
}

// A transaction that fails after storing facts rolls them back; the writer must forget what it
// noted of them, or the batch read again would update a row that is not there.
TEST_F(StoreTest, QueueFactsOfARolledBackBatchAreStoredByItsRetry) {
  const std::string in = "log:/var/log/mail.log";
  ASSERT_TRUE(store_
                  ->Write(Batch{
                      {}, InputPosition{in, 7, 10, ""}, std::nullopt, {Facts("AAA01", "a@x")}, {}})
                  .ok());
  // The position is written after the facts: this one fails the transaction there.
  ExecSql(path_,
          "CREATE TRIGGER refuse BEFORE INSERT ON input_positions WHEN NEW.offset = 20 "
          "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END");
  auto retried = [&](uint64_t offset) {
    return Batch{{},
                 InputPosition{in, 7, offset, ""},
                 std::nullopt,
                 {Facts("BBB02", "b@x"), Facts("AAA01", "a2@x")},
                 {"AAA01"}};
  };
  EXPECT_FALSE(store_->Write(retried(20)).ok());
  EXPECT_EQ(FactsText(*store_, in), "AAA01=a@x,<AAA01@x>,,100,1;");
  ExecSql(path_, "DROP TRIGGER refuse");
  ASSERT_TRUE(store_->Write(retried(30)).ok());
  EXPECT_EQ(Rows(path_, "SELECT queue_id, sender FROM queue_facts ORDER BY queue_id"),
            "AAA01|a2@x\nBBB02|b@x\n");
  QueueFacts again = Facts("BBB02", "b2@x");
  ASSERT_TRUE(
      store_->Write(Batch{{}, InputPosition{in, 7, 40, ""}, std::nullopt, {again}, {}}).ok());
  EXPECT_EQ(Rows(path_, "SELECT queue_id, sender FROM queue_facts ORDER BY queue_id"),
            "AAA01|a2@x\nBBB02|b2@x\n");
}

// Many batches of changes and forgotten ids over two inputs, with reopens and failed
// transactions between them, leave what a map kept beside them holds.
TEST_F(StoreTest, QueueFactsFollowAModelThroughBatchesReopensAndRollbacks) {
  const std::vector<std::string> inputs = {"log:/var/log/mail.log", "journal"};
  std::map<std::string, std::map<std::string, QueueFacts>> model;
  uint32_t seed = 12345;
  auto next = [&seed](uint32_t n) {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 8) % n;
  };
  ExecSql(path_,
          "CREATE TRIGGER refuse BEFORE INSERT ON input_positions WHEN NEW.inode = 666 "
          "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END");
  for (int round = 0; round < 300; ++round) {
    const std::string& in = inputs[next(2)];
    const bool fail = next(10) == 0;
    Batch b;
    b.position = InputPosition{in, fail ? 666u : 1u, static_cast<uint64_t>(round), ""};
    std::map<std::string, QueueFacts> after = model[in];
    std::set<std::string> listed;
    for (uint32_t n = next(40); n > 0; --n) {
      std::string id = "Q" + std::to_string(next(120));
      if (!listed.insert(id).second) continue;  // an id at most once per list
      if (next(3) == 0) {
        b.queue_facts_forgotten.push_back(id);
        after.erase(id);
      }
    }
    listed.clear();
    for (uint32_t n = next(60); n > 0; --n) {
      std::string id = "Q" + std::to_string(next(120));
      if (!listed.insert(id).second) continue;
      QueueFacts f = Facts(id, "s" + std::to_string(round) + "@x", next(100000));
      b.queue_facts.push_back(f);
      after[id] = f;
    }
    ASSERT_EQ(store_->Write(b).ok(), !fail) << round;
    if (!fail) model[in] = std::move(after);
    if (next(20) == 0) {
      store_.reset();
      store_ = OpenStore(path_);
      ASSERT_NE(store_, nullptr);
    }
    for (const std::string& i : inputs) {
      auto got = store_->LoadQueueFacts(i);
      ASSERT_TRUE(got.ok()) << got.error();
      std::map<std::string, std::string> have, want;
      for (const QueueFacts& f : *got) {
        EXPECT_TRUE(have.emplace(f.queue_id, f.sender + std::to_string(f.size)).second)
            << "two rows of " << f.queue_id << " in " << i;
      }
      for (const auto& [id, f] : model[i]) want.emplace(id, f.sender + std::to_string(f.size));
      ASSERT_EQ(have, want) << "round " << round << ", input " << i;
    }
  }
}

TEST_F(StoreTest, RecipientStateCarriesAcrossBatchesOfOneGroupAndSurvivesARerun) {
  // Batches submitted back to back usually share one transaction, where the writer keeps the
  // recipient's state in memory and writes its row once, before COMMIT. A bad batch among them
  // makes the writer roll back and rerun each batch alone: the state must not count twice.
  SuppressionPolicy p;  // mailbox_full: 3 incidents at least 7 days apart suppress
  store_->SetPolicy(p);
  std::vector<std::future<Status>> futures;
  const char* spellings[] = {"Full@Example.com", "full+x@example.com", "FULL@example.com"};
  for (int i = 0; i < 3; ++i) {
    futures.push_back(store_->Submit(
        Batch{{MakeEvent(spellings[i], Category::kMailboxFull, "bounced", kT0 + i * 4 * kDay)},
              std::nullopt}));
    if (i == 1) {
      futures.push_back(
          store_->Submit(Batch{{MakeEvent("other@example.com", Category::kDelivered, "sent", kT0)},
                               InputPosition{"", 1, 1, ""}}));
    }
  }
  for (size_t i = 0; i < futures.size(); ++i) EXPECT_EQ(futures[i].get().ok(), i != 2) << i;
  EXPECT_EQ(Count("SELECT events FROM recipient_state WHERE address='full@example.com'"), 3);
  EXPECT_EQ(Count("SELECT incidents FROM recipient_state WHERE address='full@example.com'"), 3);
  EXPECT_EQ(Count("SELECT count(*) FROM recipient_state WHERE display='Full@Example.com'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM recipient_state WHERE address='other@example.com'"), 0);
  auto hit = store_->view().Lookup("full@example.com");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(Count("SELECT count(*) FROM suppressions WHERE reason='repeated_failure'"), 1);
  // Later transactions start from the written row (or the cache), not from zero.
  ASSERT_TRUE(store_
                  ->Write(Batch{{MakeEvent("full@example.com", Category::kDelivered, "sent",
                                           kT0 + 20 * kDay)},
                                std::nullopt})
                  .ok());
  EXPECT_EQ(Count("SELECT events FROM recipient_state WHERE address='full@example.com'"), 4);
  EXPECT_EQ(Count("SELECT incidents FROM recipient_state WHERE address='full@example.com'"), 0);
  store_.reset();
  store_ = OpenStore(path_);
  ASSERT_NE(store_, nullptr);
  ASSERT_TRUE(store_
                  ->Write(Batch{{MakeEvent("full@example.com", Category::kMailboxFull, "bounced",
                                           kT0 + 21 * kDay)},
                                std::nullopt})
                  .ok());
  EXPECT_EQ(Count("SELECT events FROM recipient_state WHERE address='full@example.com'"), 5);
  EXPECT_EQ(Count("SELECT incidents FROM recipient_state WHERE address='full@example.com'"), 1);
}

TEST_F(StoreTest, AllowlistChangedInTheSameGroupStillWins) {
  // Allow and a hard bounce queued together: the writer must see the allowlist row written by
  // the same transaction (the in-memory view only shows it after COMMIT).
  std::thread allow([&] { EXPECT_TRUE(store_->Allow("example.net", {0, "ours"}).ok()); });
  std::vector<std::future<Status>> futures;
  for (int i = 0; i < 50; ++i) {
    futures.push_back(store_->Submit(Batch{{MakeEvent(testing::Numbered("u", i, "@example.net"),
                                                      Category::kUserUnknown, "bounced", kT0)},
                                           std::nullopt}));
  }
  allow.join();
  for (auto& f : futures) EXPECT_TRUE(f.get().ok());
  // Whatever committed before the Allow is suppressed; nothing after it.
  int64_t suppressed = Count("SELECT count(*) FROM suppressions");
  ASSERT_TRUE(
      store_
          ->Write(Batch{{MakeEvent("late@example.net", Category::kUserUnknown, "bounced", kT0)},
                        std::nullopt})
          .ok());
  EXPECT_EQ(Count("SELECT count(*) FROM suppressions"), suppressed);
  EXPECT_FALSE(store_->view().Lookup("late@example.net").has_value());
}

TEST(StorePurgeTest, ExpiredSuppressionsArePurgedAndLoggedAsRemoved) {
  TempDir dir;
  std::string path = dir.File("purge.db");
  SuppressionPolicy p;
  p.hard_bounce_expiry_seconds = kDay;  // events at kT0 (2026-11-01): long expired now
  {
    auto s = OpenStore(path, p);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->Flush().ok());  // the first commit after open purges (nothing yet)
    ASSERT_TRUE(
        s->Write(Batch{{MakeEvent("old@example.com", Category::kUserUnknown, "bounced", kT0)},
                       std::nullopt})
            .ok());
    ASSERT_TRUE(s->Suppress({"kept@example.com", "", 0}, {0, "ticket 7"}).ok());
    // Expired entries never suppress, even before they are purged (the writer purges this one,
    // expired when it was written, right after).
    EXPECT_FALSE(s->view().Lookup("old@example.com").has_value());
  }
  auto s = OpenStore(path, p);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->Flush().ok());
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM suppressions"), 1);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM suppressions WHERE address='kept@example.com'"), 1);
  EXPECT_EQ(Scalar(path,
                   "SELECT count(*) FROM suppression_log WHERE address='old@example.com' "
                   "AND action='remove' AND actor_uid=-1 AND reason='hard_bounce' AND "
                   "note='expired'"),
            1);
  EXPECT_EQ(s->view().size(), 1u);
  EXPECT_TRUE(s->view().Lookup("kept@example.com").has_value());
  // The history stays: the event and the recipient's state are not touched.
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events WHERE recipient_key='old@example.com'"), 1);
  EXPECT_EQ(Scalar(path, "SELECT events FROM recipient_state WHERE address='old@example.com'"), 1);
  auto st = s->GetStatus("old@example.com");
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(st->suppression.has_value());
}

// An entry is removed at its expiry, its remove in the change feed then, also when nothing else
// is written: the writer wakes for it (it used to wait for the next batch, and an hour).
TEST(StorePurgeTest, AnEntryIsPurgedAtItsExpiryWithoutAnyOtherWrite) {
  TempDir dir;
  std::string path = dir.File("expiry.db");
  auto s = OpenStore(path);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->Flush().ok());
  const int64_t expires = static_cast<int64_t>(std::time(nullptr)) + 2;
  ASSERT_TRUE(s->Suppress({"brief@example.com", "", expires}, {0, "for two seconds"}).ok());
  ASSERT_TRUE(s->Suppress({"kept@example.com", "", expires + 86400}, {0, "for a day"}).ok());
  EXPECT_TRUE(s->view().Lookup("brief@example.com").has_value());
  const std::string removed =
      "SELECT count(*) FROM suppression_log WHERE address = 'brief@example.com' AND "
      "action = 'remove' AND actor_uid = -1 AND note = 'expired'";
  // Polled, not timed: the remove comes once the second of its expiry has passed.
  for (int i = 0; i < 200 && Scalar(path, removed) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(Scalar(path, removed), 1);
  EXPECT_GE(Scalar(path,
                   "SELECT time FROM suppression_log WHERE address = 'brief@example.com' AND "
                   "action = 'remove'"),
            expires);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM suppressions"), 1);
  EXPECT_FALSE(s->view().Lookup("brief@example.com").has_value());
  EXPECT_TRUE(s->view().Lookup("kept@example.com").has_value());
  EXPECT_EQ(s->view().size(), 1u);
  auto changes = s->Changes(ChangesQuery{});
  ASSERT_TRUE(changes.ok()) << changes.error();
  ASSERT_FALSE(changes->empty());
  EXPECT_EQ(changes->back().address, "brief@example.com");
  EXPECT_EQ(changes->back().action, "remove");
  EXPECT_EQ(changes->back().note, "expired");
}

TEST_F(StoreTest, DsnRecordedOncePerMessageIdAndRecipient) {
  ParsedBounce pb;
  pb.kind = MessageKind::kDsn;
  pb.message_id = "<bounce-1@mx.example>";
  Result r;
  r.recipient = "gone@example.com";
  r.category = Category::kUserUnknown;
  r.dsn_action = "failed";
  r.status = "5.1.1";
  pb.recipients = {r};
  auto events = EventsFromBounce(pb, "raw", EventSource::kMilter, kT0);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].log_status, "bounced");
  ASSERT_TRUE(store_->Write(Batch{events, std::nullopt}).ok());
  // Postfix retries the milter; the same DSN is also fed through ingest-dsn.
  ASSERT_TRUE(store_->Write(Batch{events, std::nullopt}).ok());
  ASSERT_TRUE(
      store_->Write(Batch{EventsFromBounce(pb, "raw", EventSource::kDsn, kT0 + 5), std::nullopt})
          .ok());
  EXPECT_EQ(Count("SELECT count(*) FROM events"), 1);
  EXPECT_EQ(Count("SELECT sum(count) FROM daily_counters"), 1);
  // Without a Message-ID the raw bytes identify the bounce.
  pb.message_id.clear();
  auto a = EventsFromBounce(pb, "raw one", EventSource::kDsn, kT0);
  auto b = EventsFromBounce(pb, "raw two", EventSource::kDsn, kT0);
  ASSERT_TRUE(store_->Write(Batch{a, std::nullopt}).ok());
  ASSERT_TRUE(store_->Write(Batch{a, std::nullopt}).ok());
  ASSERT_TRUE(store_->Write(Batch{b, std::nullopt}).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM events"), 3);
}

TEST_F(StoreTest, LogBounceAndItsPostfixDsnCountOnce) {
  Event log = MakeEvent("gone@example.com", Category::kUserUnknown, "bounced", kT0);
  log.queue_id = "ABC123";
  ASSERT_TRUE(store_->Write(Batch{{log}, std::nullopt}).ok());
  ParsedBounce pb;
  pb.kind = MessageKind::kDsn;
  pb.message_id = "<dsn@ours>";
  pb.postfix_queue_id = "ABC123";
  Result r = log.result;
  r.dsn_action = "failed";
  pb.recipients = {r};
  ASSERT_TRUE(
      store_->Write(Batch{EventsFromBounce(pb, "", EventSource::kMilter, kT0 + 2), std::nullopt})
          .ok());
  EXPECT_EQ(Count("SELECT count(*) FROM events"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE counted=0 AND source='milter'"), 1);
  EXPECT_EQ(Count("SELECT sum(count) FROM daily_counters"), 1);
  EXPECT_EQ(Count("SELECT events FROM recipient_state WHERE address='gone@example.com'"), 1);
}

// The other order, across a restart: the DSN (milter) copy first, the store reopened, then the
// log line. The writer skips the same-bounce lookup while no bounce of the other family can be
// stored, and must learn at open that one is.
TEST_F(StoreTest, LogBounceAndItsDsnInOneBatchCountOnce) {
  // The DSN's check must see the log bounce written earlier in the same batch.
  Batch b;
  Event log = MakeEvent("gone@example.com", Category::kUserUnknown, "bounced", kT0);
  log.queue_id = "ABC123";
  b.events.push_back(log);
  for (int i = 0; i < 3; ++i) {
    b.events.push_back(MakeEvent("ok" + std::to_string(i) + "@example.com", Category::kDelivered,
                                 "sent", kT0 + 1));
  }
  Event dsn = log;
  dsn.source = EventSource::kDsn;
  dsn.source_ref = "<dsn@ours>";
  dsn.unix_time = kT0 + 2;
  dsn.result.dsn_action = "failed";
  b.events.push_back(dsn);
  ASSERT_TRUE(store_->Write(std::move(b)).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM events"), 5);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE counted=0 AND source='dsn'"), 1);
  EXPECT_EQ(Count("SELECT sum(count) FROM daily_counters"), 4);
}

TEST_F(StoreTest, PostfixDsnThenItsLogBounceCountOnceAcrossRestart) {
  Event log = MakeEvent("gone@example.com", Category::kUserUnknown, "bounced", kT0);
  log.queue_id = "DEF456";
  ParsedBounce pb;
  pb.kind = MessageKind::kDsn;
  pb.message_id = "<dsn2@ours>";
  pb.postfix_queue_id = "DEF456";
  Result r = log.result;
  r.dsn_action = "failed";
  pb.recipients = {r};
  ASSERT_TRUE(
      store_->Write(Batch{EventsFromBounce(pb, "", EventSource::kMilter, kT0), std::nullopt}).ok());
  // A log-only bounce of someone else first: the log family's own bounces do not count as DSNs.
  Event other = MakeEvent("other@example.com", Category::kUserUnknown, "bounced", kT0);
  other.queue_id = "OTHER1";
  ASSERT_TRUE(store_->Write(Batch{{other}, std::nullopt}).ok());
  store_.reset();
  store_ = OpenStore(path_);
  ASSERT_NE(store_, nullptr);
  ASSERT_TRUE(store_->Write(Batch{{log}, std::nullopt}).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM events"), 3);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE counted=0 AND source='log'"), 1);
  EXPECT_EQ(Count("SELECT sum(count) FROM daily_counters"), 2);
}

TEST_F(StoreTest, CountersAndStatsPerDomainAndProvider) {
  std::vector<Event> evs;
  for (int i = 0; i < 5; ++i) {
    Event e = MakeEvent("u" + std::to_string(i) + "@icloud.com", Category::kPolicyRejection,
                        "bounced", kT0 + i);
    e.result.provider = "icloud";
    e.result.provider_code = "CS01";
    evs.push_back(e);
  }
  Event me = MakeEvent("x@me.com", Category::kAuthFailure, "bounced", kT0 + kDay);
  me.result.provider = "icloud";
  me.result.provider_code = "HM08";
  evs.push_back(me);
  evs.push_back(MakeEvent("y@gmail.com", Category::kDelivered, "sent", kT0 + kDay));
  ASSERT_TRUE(store_->Write(Batch{evs, std::nullopt}).ok());

  StatsQuery q;
  q.by = StatsQuery::By::kProvider;
  q.days = 7;
  q.now = kT0 + 2 * kDay;
  auto rows = store_->Stats(q);
  ASSERT_TRUE(rows.ok()) << rows.error();
  int64_t cs01 = 0, hm08 = 0, total = 0;
  for (const auto& r : *rows) {
    total += r.count;
    if (r.key == "icloud" && r.provider_code == "CS01") cs01 += r.count;
    if (r.key == "icloud" && r.provider_code == "HM08") hm08 += r.count;
  }
  EXPECT_EQ(cs01, 5);
  EXPECT_EQ(hm08, 1);
  EXPECT_EQ(total, 7);
  q.by = StatsQuery::By::kDomain;
  q.only = "icloud.com";
  q.per_day = true;
  rows = store_->Stats(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].day, "2026-11-01");
  EXPECT_EQ((*rows)[0].count, 5);
  // Outside the window: nothing.
  q.now = kT0 + 30 * kDay;
  rows = store_->Stats(q);
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows->empty());
  q.days = 0;
  EXPECT_FALSE(store_->Stats(q).ok());
}

// Which of our sender domains gets what: from the events, counted ones only, within the days.
TEST_F(StoreTest, StatsPerSenderDomain) {
  std::vector<Event> evs;
  auto add = [&](const std::string& rcpt, Category c, const std::string& status, int64_t t,
                 const std::string& sender, const std::string& code = "") {
    Event e = MakeEvent(rcpt, c, status, t);
    e.sender = sender;
    e.result.provider_code = code;
    evs.push_back(e);
  };
  add("a@icloud.com", Category::kPolicyRejection, "bounced", kT0, "news@Brand-A.example", "CS01");
  add("b@icloud.com", Category::kPolicyRejection, "bounced", kT0 + 1, "info@brand-a.example",
      "CS01");
  add("c@gmail.com", Category::kDelivered, "sent", kT0 + kDay, "news@brand-b.example");
  add("d@gmail.com", Category::kUserUnknown, "bounced", kT0 + kDay, "");  // null sender
  add("e@gmail.com", Category::kDelivered, "sent", kT0 + kDay, "root");   // a local sender
  add("f@gmail.com", Category::kDelivered, "sent", kT0 - 10 * kDay, "news@brand-b.example");
  ASSERT_TRUE(store_->Write(Batch{evs, std::nullopt}).ok());
  StatsQuery q;
  q.by = StatsQuery::By::kSenderDomain;
  q.days = 7;
  q.now = kT0 + 2 * kDay;
  auto rows = store_->Stats(q);
  ASSERT_TRUE(rows.ok()) << rows.error();
  std::vector<std::string> got;
  for (const StatsRow& r : *rows) {
    got.push_back(r.key + " " + r.log_status + " " + r.category + " " + r.provider_code + " " +
                  std::to_string(r.count));
  }
  EXPECT_EQ(got,
            (std::vector<std::string>{
                "<> bounced user_unknown  1", "brand-a.example bounced policy_rejection CS01 2",
                "brand-b.example sent delivered  1", "root sent delivered  1"}));
  // The same events as the daily counters count them.
  auto total = [&](StatsQuery::By by) {
    StatsQuery t = q;
    t.by = by;
    auto got_rows = store_->Stats(t);
    int64_t n = -1;
    if (got_rows.ok()) {
      n = 0;
      for (const StatsRow& r : got_rows.value()) n += r.count;
    }
    return n;
  };
  EXPECT_EQ(total(StatsQuery::By::kSenderDomain), 5);
  EXPECT_EQ(total(StatsQuery::By::kDomain), 5);
  q.only = "Brand-A.example";
  q.per_day = true;
  rows = store_->Stats(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].key, "brand-a.example");
  EXPECT_EQ((*rows)[0].day, "2026-11-01");
  EXPECT_EQ((*rows)[0].count, 2);
  q.only = "<>";
  q.per_day = false;
  rows = store_->Stats(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].category, "user_unknown");
  q.only = "";
  q.now = kT0 + 30 * kDay;  // no events on those days
  rows = store_->Stats(q);
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows->empty());
}

TEST_F(StoreTest, ListFiltersAndPages) {
  std::vector<Event> evs;
  for (int i = 0; i < 25; ++i) {
    evs.push_back(MakeEvent(testing::Numbered("u", 100 + i, "@a.example"), Category::kUserUnknown,
                            "bounced", kT0 + i));
  }
  evs.push_back(MakeEvent("c@b.example", Category::kComplaint, "complaint", kT0 + 5 * kDay));
  ASSERT_TRUE(store_->Write(Batch{evs, std::nullopt}).ok());
  std::vector<std::string> all;
  ListFilter f;
  f.limit = 10;
  for (;;) {
    std::vector<std::string> page;
    ASSERT_TRUE(store_
                    ->List(f,
                           [&](const Suppression& s) {
                             page.push_back(s.address);
                             return true;
                           })
                    .ok());
    if (page.empty()) break;
    all.insert(all.end(), page.begin(), page.end());
    f.after = page.back();
  }
  EXPECT_EQ(all.size(), 26u);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 26u);
  ListFilter byc;
  byc.category = "complaint";
  int n = 0;
  ASSERT_TRUE(store_
                  ->List(byc,
                         [&](const Suppression& s) {
                           EXPECT_EQ(s.reason, kReasonComplaint);
                           EXPECT_EQ(s.source, "complaint");
                           ++n;
                           return true;
                         })
                  .ok());
  EXPECT_EQ(n, 1);
  ListFilter byd;
  byd.domain = "A.example";
  byd.since = kT0 + 10;
  n = 0;
  ASSERT_TRUE(store_->List(byd, [&](const Suppression&) { return ++n, true; }).ok());
  EXPECT_EQ(n, 15);
  ListFilter badc;
  badc.category = "nope";
  EXPECT_FALSE(store_->List(badc, [](const Suppression&) { return true; }).ok());
}

TEST_F(StoreTest, ViewIsInStepWithEveryCommit) {
  // A reader thread hammers the view while commits land; after each Write returns, the next
  // lookup must see the change.
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop) store_->view().Lookup("hot@example.com");
  });
  for (int i = 0; i < 50; ++i) {
    std::string a = testing::Numbered("v", i, "@example.com");
    ASSERT_TRUE(
        store_->Write(Batch{{MakeEvent(a, Category::kUserUnknown, "bounced", kT0)}, std::nullopt})
            .ok());
    EXPECT_TRUE(store_->view().Lookup(a).has_value()) << a;
    ASSERT_TRUE(store_->Unsuppress(a, {0, "test"}).ok());
    EXPECT_FALSE(store_->view().Lookup(a).has_value()) << a;
    ASSERT_TRUE(store_->Suppress({a, "user_unknown", 0}, {0, "test"}).ok());
    auto hit = store_->view().Lookup(a);
    ASSERT_TRUE(hit.has_value());
    EXPECT_TRUE(hit->manual);
  }
  stop = true;
  reader.join();
  EXPECT_EQ(store_->view().size(), 50u);
  EXPECT_GT(store_->view().memory_bytes(), 50u * 40);
}

// What `bouncectl metrics` counts as bounced_suppressions_added_total: each "add" of the
// suppression log, by source and category, once committed.
TEST_F(StoreTest, SuppressionsAddedCountsNewEntriesBySourceAndCategory) {
  EXPECT_TRUE(store_->SuppressionsAdded().empty());
  std::vector<Event> evs;
  evs.push_back(MakeEvent("a@example.com", Category::kUserUnknown, "bounced", kT0));
  evs.push_back(MakeEvent("a@example.com", Category::kUserUnknown, "bounced", kT0 + 60));  // again
  evs.push_back(MakeEvent("b@example.com", Category::kDomainUnknown, "bounced", kT0));
  evs.push_back(MakeEvent("c@icloud.com", Category::kPolicyRejection, "bounced", kT0));  // none
  evs.push_back(MakeEvent("d@example.com", Category::kComplaint, "complaint", kT0));
  ASSERT_TRUE(store_->Write(Batch{evs, std::nullopt}).ok());
  ASSERT_TRUE(store_->Suppress({"m@example.com", "", 0}, {0, "ticket 1"}).ok());
  ASSERT_TRUE(store_->Suppress({"m@example.com", "", 0}, {0, "ticket 2"}).ok());  // an update
  ASSERT_TRUE(store_->Suppress({"a@example.com", "", 0}, {0, "ticket 3"}).ok());  // an update
  auto imported =
      store_->Import(ExportFormat::kCsv, "address\ni@example.com\nm@example.com\n", {0, "import"});
  ASSERT_TRUE(imported.ok());
  EXPECT_EQ(imported->added, 1);
  // A refused import adds nothing.
  ASSERT_TRUE(store_->Import(ExportFormat::kCsv, "address\nj@example.com\nbad\n", {0, "x"}).ok());

  std::vector<std::string> got;
  for (const AddedSuppressions& a : store_->SuppressionsAdded()) {
    got.push_back(a.source + "/" + a.category + "=" + std::to_string(a.count));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"bounce/domain_unknown=1", "bounce/user_unknown=1",
                                           "complaint/complaint=1", "import/=1", "manual/=1"}));
  EXPECT_EQ(static_cast<size_t>(Count("SELECT count(*) FROM suppression_log WHERE action='add'")),
            5u)
      << "the log's adds and the counts agree";
}

// The change feed: every add, update and remove in commit order, each once to a client that
// continues after the last id it got, by domain, and from a time on.
TEST_F(StoreTest, ChangesFeedEveryChangeOnceInOrder) {
  Batch b;
  b.events = {MakeEvent("gone@a.example", Category::kUserUnknown, "bounced", kT0),
              MakeEvent("x@b.example", Category::kUserUnknown, "bounced", kT0)};
  ASSERT_TRUE(store_->Write(std::move(b)).ok());
  ASSERT_TRUE(store_->Suppress({"gone@a.example", "", 0}, {1001, "confirmed"}).ok());  // update
  ASSERT_TRUE(store_->Unsuppress("x@b.example", {1002, "typo fixed"}).ok());
  ASSERT_TRUE(
      store_->Import(ExportFormat::kCsv, "address\nz@a.example\nsub@s.a.example\n", {0, "list"})
          .ok());

  ChangesQuery q;
  auto all = store_->Changes(q);
  ASSERT_TRUE(all.ok()) << all.error();
  std::vector<std::string> got;
  for (const SuppressionChange& c : *all) got.push_back(c.action + " " + c.address);
  EXPECT_EQ(got, (std::vector<std::string>{"add gone@a.example", "add x@b.example",
                                           "update gone@a.example", "remove x@b.example",
                                           "add z@a.example", "add sub@s.a.example"}));
  for (size_t i = 1; i < all->size(); ++i) EXPECT_LT((*all)[i - 1].id, (*all)[i].id);
  EXPECT_EQ((*all)[0].actor_uid, -1);  // bounced itself
  EXPECT_EQ((*all)[0].category, "user_unknown");
  EXPECT_EQ((*all)[0].source, "bounce");
  EXPECT_EQ((*all)[0].note, "");
  EXPECT_EQ((*all)[3].actor_uid, 1002);
  EXPECT_EQ((*all)[3].reason, "hard_bounce");  // the entry's
  EXPECT_EQ((*all)[3].note, "typo fixed");     // why it went
  EXPECT_EQ((*all)[2].source, "manual");
  EXPECT_EQ((*all)[2].reason, "confirmed");
  EXPECT_EQ((*all)[2].note, "confirmed");
  EXPECT_EQ((*all)[4].note, "list");  // the import's reason

  // Pages of two, each after the last id seen: the same changes, once each.
  std::vector<int64_t> ids;
  q.limit = 2;
  for (;;) {
    auto page = store_->Changes(q);
    ASSERT_TRUE(page.ok());
    for (const SuppressionChange& c : *page) ids.push_back(c.id);
    if (page->size() < 2) break;
    q.after_id = page->back().id;
  }
  ASSERT_EQ(ids.size(), all->size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], (*all)[i].id);

  ChangesQuery by_domain;
  by_domain.domain = "@A.example";  // exact domain: not s.a.example
  auto a = store_->Changes(by_domain);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size(), 3u);
  by_domain.domain = "not a domain";
  EXPECT_FALSE(store_->Changes(by_domain).ok());
  ChangesQuery later;
  later.since = static_cast<int64_t>(std::time(nullptr)) + 3600;
  auto none = store_->Changes(later);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  later.since = static_cast<int64_t>(std::time(nullptr)) - 3600;
  auto recent = store_->Changes(later);
  ASSERT_TRUE(recent.ok());
  EXPECT_EQ(recent->size(), all->size());  // committed now, whatever the events' own times
}

TEST_F(StoreTest, ManualChangesAreAudited) {
  ASSERT_TRUE(store_->Suppress({"m@example.com", "", 0}, {1001, "ticket 42"}).ok());
  ASSERT_TRUE(store_->Unsuppress("m@example.com", {1002, "ticket 43"}).ok());
  ASSERT_TRUE(store_->Allow("example.org", {1003, "our own"}).ok());
  ASSERT_TRUE(store_->Disallow("@example.org", {1004, "not any more"}).ok());
  EXPECT_FALSE(store_->Disallow("example.org", {1004, "again"}).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM audit"), 4);
  EXPECT_EQ(Count("SELECT actor_uid FROM audit WHERE action='unsuppress' AND reason='ticket 43' "
                  "AND target='m@example.com'"),
            1002);
  EXPECT_EQ(Count("SELECT count(*) FROM suppression_log WHERE address='m@example.com'"), 2);
  EXPECT_FALSE(store_->Suppress({"not an address", "", 0}, {0, "x"}).ok());
  EXPECT_FALSE(store_->Suppress({"a@example.com", "bogus", 0}, {0, "x"}).ok());
  EXPECT_FALSE(store_->Suppress({"a@example.com", "", 0}, {0, ""}).ok());
  EXPECT_FALSE(store_->Allow("not a domain!", {0, "x"}).ok());
}

TEST_F(StoreTest, StatusAnswersWhatAPersonNeeds) {
  Event e = MakeEvent("s@example.com", Category::kUserUnknown, "bounced", kT0);
  ASSERT_TRUE(store_->Write(Batch{{e}, std::nullopt}).ok());
  auto st = store_->GetStatus("S@example.com");
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->suppressed);
  EXPECT_EQ(st->key, "s@example.com");
  EXPECT_EQ(st->suppression->reason, kReasonHardBounce);
  EXPECT_EQ(st->suppression->category, "user_unknown");
  EXPECT_EQ(st->events.size(), 1u);
  auto j = ToJson(*st);
  EXPECT_EQ(j["suppressed"], true);
  EXPECT_EQ(j["reason"], "hard_bounce");
  EXPECT_EQ(j["category"], "user_unknown");
  EXPECT_EQ(j["since"], "2026-11-01T00:00:00Z");
  EXPECT_TRUE(j["expires"].is_null());
  EXPECT_EQ(j["events"].size(), 1u);
  auto none = store_->GetStatus("nobody@example.com");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->suppressed);
  EXPECT_FALSE(none->suppression.has_value());
  EXPECT_FALSE(store_->GetStatus("garbage").ok());
}

TEST_F(StoreTest, HealthReportsCountsAndIntegrity) {
  ASSERT_TRUE(
      store_
          ->Write(Batch{{MakeEvent("h@example.com", Category::kUserUnknown, "bounced", kT0)},
                        std::nullopt})
          .ok());
  auto h = store_->GetHealth();
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h->schema_version, kSchemaVersion);
  EXPECT_TRUE(h->integrity_ok);
  EXPECT_EQ(h->integrity_detail, "ok");
  EXPECT_EQ(h->events, 1);
  EXPECT_EQ(h->suppressions, 1);
  EXPECT_EQ(h->recipients, 1);
  EXPECT_TRUE(h->last_write_error.empty());
}

TEST_F(StoreTest, NonAddressRecipientIsStoredButNeverSuppressed) {
  ASSERT_TRUE(
      store_
          ->Write(Batch{{MakeEvent("not-an-address", Category::kUserUnknown, "bounced", kT0)},
                        std::nullopt})
          .ok());
  EXPECT_EQ(Count("SELECT count(*) FROM events"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM suppressions"), 0);
}

// Stats, events and the report group senders in SQL, alerts in C++: the two agree.
TEST(SenderDomain, SqlAndCodeGroupAlike) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, ("SELECT " + SenderDomainSql("?1")).c_str(), -1, &st, nullptr),
            SQLITE_OK);
  for (const std::string sender : {"news@Shop.Example", "", "root", "\"a@b\"@Brand.example", "x@",
                                   "@only.example", "MAILER-DAEMON@Mx.Example."}) {
    sqlite3_bind_text(st, 1, sender.data(), static_cast<int>(sender.size()), SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), SenderDomainOf(sender))
        << sender;
    sqlite3_reset(st);
  }
  sqlite3_bind_null(st, 1);  // event_rows keeps the null sender as NULL
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "<>");
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_EQ(SenderDomainOf("news@Shop.Example"), "shop.example");
  EXPECT_EQ(SenderDomainOf("\"a@b\"@Brand.example"), "brand.example") << "after the last '@'";
  EXPECT_EQ(SenderDomainOf("root"), "root");
  EXPECT_EQ(SenderDomainOf(""), "<>");
}

}  // namespace
}  // namespace bounced
