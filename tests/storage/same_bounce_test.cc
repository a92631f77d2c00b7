// same_bounce_test.cc: a log bounce and the DSN Postfix sends for it count once, whichever
// comes first, across restarts, rolled-back batches and the 7-day window; and the writer's
// in-memory index for that lookup (storage/same_bounce_index.h) never hides a match and
// answers "yes" only for a committed (or its own transaction's) copy.
// Store tests use real SQLite files in a temp directory.
#include "storage/same_bounce_index.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "storage/store.h"
#include "tests/storage/test_util.h"

namespace bounced {
namespace {

using testing::kDay;
using testing::kT0;
using testing::MakeEvent;
using testing::OpenStore;
using testing::Scalar;
using testing::TempDir;

constexpr int64_t kWindow = 7 * kDay;

// --- the index alone -------------------------------------------------------------------------

TEST(SameBounceIndexTest, EmptyIndexThatCoversEverythingNeverMatches) {
  SameBounceIndex idx(kWindow, kDay, 100);
  EXPECT_FALSE(idx.MayMatch("Q1", "a@example.com", kT0));
  EXPECT_EQ(idx.covered_from(), SameBounceIndex::kEverything);
}

TEST(SameBounceIndexTest, MatchesWithinTheWindowOnly) {
  SameBounceIndex idx(kWindow, kDay, 100);
  idx.Add("Q1", "a@example.com", kT0, kT0);
  EXPECT_TRUE(idx.MayMatch("Q1", "a@example.com", kT0));
  EXPECT_TRUE(idx.MayMatch("Q1", "a@example.com", kT0 + kWindow));
  EXPECT_TRUE(idx.MayMatch("Q1", "a@example.com", kT0 - kWindow));
  EXPECT_FALSE(idx.MayMatch("Q1", "a@example.com", kT0 + kWindow + 1));
  EXPECT_FALSE(idx.MayMatch("Q1", "b@example.com", kT0));
  EXPECT_FALSE(idx.MayMatch("Q2", "a@example.com", kT0));
  // The fingerprint covers both parts, not their concatenation.
  EXPECT_FALSE(idx.MayMatch("Q1a", "@example.com", kT0));
}

TEST(SameBounceIndexTest, BelowTheCoveredTimeItAlwaysSaysMaybe) {
  SameBounceIndex idx(kWindow, kDay, 100);
  idx.Reset(kT0);
  EXPECT_TRUE(idx.MayMatch("Q1", "a@example.com", kT0));
  EXPECT_TRUE(idx.MayMatch("Q1", "a@example.com", kT0 + kWindow - 1));
  EXPECT_FALSE(idx.MayMatch("Q1", "a@example.com", kT0 + kWindow));
  // Past the year 9999 the file's day ranges cannot vouch for it.
  EXPECT_TRUE(idx.MayMatch("Q1", "a@example.com", 253402300799));
}

TEST(SameBounceIndexTest, AfterForgetNoExactHitReachesBelowTheForgottenTime) {
  SameBounceIndex idx(kWindow, kDay, 100);
  idx.Reset(kT0 - 30 * kDay);
  idx.Add("Q1", "a@example.com", kT0, kT0);
  idx.Add("Q2", "b@example.com", kT0 + 5 * kDay, kT0 + 5 * kDay);
  idx.Commit();
  ASSERT_EQ(idx.Lookup("Q1", "a@example.com", kT0 + kDay), SameBounceIndex::Match::kYes);
  idx.Forget(kT0 + 1);  // rows before it were pruned: Q1's among them
  EXPECT_EQ(idx.covered_from(), kT0 + 1);
  EXPECT_EQ(idx.Lookup("Q1", "a@example.com", kT0 + kDay), SameBounceIndex::Match::kMaybe);
  EXPECT_EQ(idx.Lookup("Q2", "b@example.com", kT0 + 8 * kDay), SameBounceIndex::Match::kYes)
      << "a window wholly after it still answers from memory";
  idx.Forget(kT0 - kDay);
  EXPECT_EQ(idx.covered_from(), kT0 + 1) << "never moves back";
}

TEST(SameBounceIndexTest, OldEntriesAreDroppedAndTheCoveredTimeMovesPastThem) {
  SameBounceIndex idx(kWindow, kDay, 100);
  idx.Add("Q1", "a@example.com", kT0, kT0);
  idx.Add("Q2", "b@example.com", kT0 + 30 * kDay, kT0 + 30 * kDay);
  EXPECT_EQ(idx.size(), 1u);
  EXPECT_GT(idx.covered_from(), kT0);
  // A log line from the dropped entry's time must go to SQL (maybe), not be told "no".
  EXPECT_TRUE(idx.MayMatch("Q1", "a@example.com", kT0 + 1));
  EXPECT_TRUE(idx.MayMatch("Q2", "b@example.com", kT0 + 30 * kDay));
  EXPECT_FALSE(idx.MayMatch("Q1", "a@example.com", kT0 + 30 * kDay));
}

TEST(SameBounceIndexTest, AFutureTimeDoesNotEmptyTheIndex) {
  SameBounceIndex idx(kWindow, kDay, 100);
  idx.Add("Q1", "a@example.com", kT0, kT0);
  idx.Add("Q2", "b@example.com", kT0 + 3650 * kDay, kT0);  // a bad clock
  EXPECT_EQ(idx.size(), 2u);
  EXPECT_TRUE(idx.MayMatch("Q1", "a@example.com", kT0 + 10));
  EXPECT_FALSE(idx.MayMatch("Q3", "c@example.com", kT0 + 10));
}

TEST(SameBounceIndexTest, CapDropsTheOldestAndSaysMaybeForTheirTimes) {
  SameBounceIndex idx(kWindow, kDay, 3);
  for (int i = 0; i < 5; ++i) {
    idx.Add(testing::Numbered("Q", i), "a@example.com", kT0 + i * 60, kT0 + i * 60);
  }
  EXPECT_EQ(idx.size(), 3u);
  EXPECT_EQ(idx.covered_from(), kT0 + 60 + 1);
  EXPECT_TRUE(idx.MayMatch("Q0", "a@example.com", kT0));
  EXPECT_TRUE(idx.MayMatch("Q4", "a@example.com", kT0 + 240));
  EXPECT_GT(idx.memory_bytes(), 0u);
}

TEST(SameBounceIndexTest, AnOlderDuplicateDroppedFirstKeepsTheNewerTime) {
  SameBounceIndex idx(kWindow, kDay, 2);
  idx.Add("Q1", "a@example.com", kT0, kT0);
  idx.Add("Q1", "a@example.com", kT0 + 3 * kDay, kT0 + 3 * kDay);
  idx.Add("Q2", "b@example.com", kT0 + 3 * kDay, kT0 + 3 * kDay);  // over the cap: drops the first
  EXPECT_EQ(idx.covered_from(), kT0 + 1);
  EXPECT_TRUE(idx.MayMatch("Q1", "a@example.com", kT0 + 9 * kDay));
}

TEST(SameBounceIndexTest, ExactHitsOnlyForTheSamePairWithItsNewestTimeInTheWindow) {
  using Match = SameBounceIndex::Match;
  SameBounceIndex idx(kWindow, kDay, 100);
  idx.Add("Q1", "a@example.com", kT0, kT0);
  idx.Commit();
  EXPECT_EQ(idx.Lookup("Q1", "a@example.com", kT0 + 5), Match::kYes);
  EXPECT_EQ(idx.Lookup("Q1", "a@example.com", kT0 + kWindow), Match::kYes);
  EXPECT_EQ(idx.Lookup("Q1", "a@example.com", kT0 - kWindow), Match::kYes);
  EXPECT_EQ(idx.Lookup("Q1", "a@example.com", kT0 + kWindow + 1), Match::kNo);
  EXPECT_EQ(idx.Lookup("Q1", "b@example.com", kT0), Match::kNo);
  // A newer copy of the pair past the window: the older one may still be in it, SQL decides.
  idx.Add("Q1", "a@example.com", kT0 + 8 * kDay, kT0 + 8 * kDay);
  idx.Commit();
  EXPECT_EQ(idx.Lookup("Q1", "a@example.com", kT0), Match::kMaybe);
  EXPECT_EQ(idx.Lookup("Q1", "a@example.com", kT0 + 8 * kDay), Match::kYes);
}

TEST(SameBounceIndexTest, WhatARolledBackTransactionAddedIsNeverAnExactHit) {
  using Match = SameBounceIndex::Match;
  SameBounceIndex idx(kWindow, kDay, 100);
  idx.Add("Q1", "a@example.com", kT0, kT0);
  idx.Commit();
  // Seen by the running transaction (its row is written before COMMIT), gone after a rollback.
  idx.Add("Q2", "b@example.com", kT0, kT0);
  EXPECT_EQ(idx.Lookup("Q2", "b@example.com", kT0), Match::kYes);
  idx.Rollback();
  EXPECT_EQ(idx.Lookup("Q2", "b@example.com", kT0), Match::kMaybe);
  EXPECT_EQ(idx.Lookup("Q1", "a@example.com", kT0), Match::kYes);
  // A rolled-back copy of a committed pair moved its newest time: that pair asks SQL too.
  idx.Add("Q1", "a@example.com", kT0 + 60, kT0 + 60);
  idx.Rollback();
  EXPECT_EQ(idx.Lookup("Q1", "a@example.com", kT0), Match::kMaybe);
  // Committed additions after it stay exact; a Reset forgets the taint with the entries.
  idx.Add("Q3", "c@example.com", kT0, kT0);
  idx.Commit();
  EXPECT_EQ(idx.Lookup("Q3", "c@example.com", kT0), Match::kYes);
  idx.Reset(SameBounceIndex::kEverything);
  idx.Add("Q2", "b@example.com", kT0, kT0);
  idx.Commit();
  EXPECT_EQ(idx.Lookup("Q2", "b@example.com", kT0), Match::kYes);
}

// --- the store -------------------------------------------------------------------------------

Event LogBounce(const std::string& rcpt, const std::string& queue_id, int64_t t) {
  Event e = MakeEvent(rcpt, Category::kUserUnknown, "bounced", t);
  e.queue_id = queue_id;
  e.source_ref = "off=" + std::to_string(t);
  return e;
}

// The DSN Postfix sends for a bounce of `rcpt` in message `queue_id`, seen at `t`.
Event Dsn(const std::string& rcpt, const std::string& queue_id, int64_t t,
          EventSource source = EventSource::kMilter) {
  ParsedBounce pb;
  pb.kind = MessageKind::kDsn;
  pb.message_id = "<" + queue_id + "." + rcpt + "@bounce.example>";
  pb.postfix_queue_id = queue_id;
  Result r;
  r.recipient = rcpt;
  r.category = Category::kUserUnknown;
  r.dsn_action = "failed";
  r.status = "5.1.1";
  pb.recipients = {r};
  auto events = EventsFromBounce(pb, "", source, t);
  EXPECT_EQ(events.size(), 1u);
  return events.at(0);
}

class SameBounceStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("s.db");
    Reopen();
  }
  void Reopen() {
    store_.reset();
    store_ = OpenStore(path_);
    ASSERT_NE(store_, nullptr);
  }
  void Write(std::vector<Event> events) {
    ASSERT_TRUE(store_->Write(Batch{std::move(events), std::nullopt}).ok());
  }
  // counted of the one event of `source` for rcpt and queue id (-1: none).
  int64_t Counted(const std::string& source, const std::string& rcpt, const std::string& qid) {
    return Scalar(path_, "SELECT counted FROM events WHERE source = '" + source +
                             "' AND recipient_key = '" + rcpt + "' AND queue_id = '" + qid + "'");
  }
  TempDir dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

TEST_F(SameBounceStoreTest, LogThenDsnCountsOnce) {
  Write({LogBounce("a@example.com", "QA", kT0)});
  Write({Dsn("a@example.com", "QA", kT0 + 5)});
  Write({Dsn("b@example.com", "QB", kT0 + 5, EventSource::kDsn)});
  Write({LogBounce("b@example.com", "QB", kT0 + 6)});
  EXPECT_EQ(Counted("log", "a@example.com", "QA"), 1);
  EXPECT_EQ(Counted("milter", "a@example.com", "QA"), 0);
  EXPECT_EQ(Counted("dsn", "b@example.com", "QB"), 1);
  EXPECT_EQ(Counted("log", "b@example.com", "QB"), 0);
}

TEST_F(SameBounceStoreTest, DsnThenLogCountsOnceAndOnlyForTheSameQueueIdAndRecipient) {
  Write({Dsn("a@example.com", "QA", kT0)});
  Write({LogBounce("a@example.com", "QA", kT0 + 1),
         // Same recipient, another message; same message, another recipient (case and
         // +extension fold to the key the DSN was stored under).
         LogBounce("a@example.com", "QOTHER", kT0 + 1), LogBounce("c@example.com", "QA", kT0 + 1),
         Dsn("d@example.com", "QD", kT0 + 2), LogBounce("D+news@Example.com", "QD", kT0 + 3)});
  EXPECT_EQ(Counted("log", "a@example.com", "QA"), 0);
  EXPECT_EQ(Counted("log", "a@example.com", "QOTHER"), 1);
  EXPECT_EQ(Counted("log", "c@example.com", "QA"), 1);
  // DSN and log line in one batch (one transaction): the DSN's row is not committed yet.
  EXPECT_EQ(Counted("log", "d@example.com", "QD"), 0);
  EXPECT_EQ(Scalar(path_, "SELECT sum(count) FROM daily_counters"), 4);
}

TEST_F(SameBounceStoreTest, DsnBeforeARestartStillMatchesTheLogLineAfterIt) {
  Write({Dsn("a@example.com", "QA", kT0), Dsn("b@example.com", "QB", kT0 + 6 * kDay)});
  Reopen();
  Write({LogBounce("a@example.com", "QA", kT0 + 10),
         LogBounce("b@example.com", "QB", kT0 + 6 * kDay),
         LogBounce("c@example.com", "QC", kT0 + 6 * kDay)});
  EXPECT_EQ(Counted("log", "a@example.com", "QA"), 0);
  EXPECT_EQ(Counted("log", "b@example.com", "QB"), 0);
  EXPECT_EQ(Counted("log", "c@example.com", "QC"), 1);
}

TEST_F(SameBounceStoreTest, ARolledBackDsnDoesNotSwallowItsLogLine) {
  // A batch with a DSN that fails as a whole (an input position without a name): nothing of it
  // is stored, so the log line that follows is the only copy and counts.
  Batch bad{{Dsn("a@example.com", "QA", kT0)}, InputPosition{"", 1, 10, ""}};
  auto bad_done = store_->Submit(std::move(bad));
  auto log_done = store_->Submit(Batch{{LogBounce("a@example.com", "QA", kT0 + 1)}, std::nullopt});
  EXPECT_FALSE(bad_done.get().ok());
  EXPECT_TRUE(log_done.get().ok());
  Write({LogBounce("b@example.com", "QB", kT0 + 2)});
  EXPECT_EQ(Counted("milter", "a@example.com", "QA"), -1);
  EXPECT_EQ(Counted("log", "a@example.com", "QA"), 1);
  EXPECT_EQ(Counted("log", "b@example.com", "QB"), 1);
  // The same DSN later commits: it is the copy now.
  Write({Dsn("a@example.com", "QA", kT0 + 3)});
  EXPECT_EQ(Counted("milter", "a@example.com", "QA"), 0);
  // Counters are written per transaction: the rolled-back one left none.
  EXPECT_EQ(Scalar(path_, "SELECT sum(count) FROM daily_counters"), 2);
}

TEST_F(SameBounceStoreTest, SevenDayWindowEdges) {
  Write({Dsn("a@example.com", "QA", kT0), Dsn("b@example.com", "QB", kT0)});
  Write({LogBounce("a@example.com", "QA", kT0 + kWindow),
         LogBounce("b@example.com", "QB", kT0 + kWindow + 1)});
  EXPECT_EQ(Counted("log", "a@example.com", "QA"), 0);
  EXPECT_EQ(Counted("log", "b@example.com", "QB"), 1);
}

TEST_F(SameBounceStoreTest, LogCatchUpOlderThanTheIndexFallsBackToTheDatabase) {
  // A DSN, then a month of newer DSNs (the index drops the old one), then the log of the first
  // month read late (a log catch-up): its bounce still finds the DSN.
  Write({Dsn("old@example.com", "QOLD", kT0), Dsn("mid@example.com", "QMID", kT0 + 2 * kDay)});
  Write({Dsn("new@example.com", "QNEW", kT0 + 30 * kDay)});
  Write({LogBounce("old@example.com", "QOLD", kT0 + kDay),
         LogBounce("none@example.com", "QNONE", kT0 + kDay)});
  EXPECT_EQ(Counted("log", "old@example.com", "QOLD"), 0);
  EXPECT_EQ(Counted("log", "none@example.com", "QNONE"), 1);
  // The same across a restart: the index is loaded for the last days only.
  Reopen();
  Write({LogBounce("mid@example.com", "QMID", kT0 + 2 * kDay + 10),
         LogBounce("new@example.com", "QNEW", kT0 + 30 * kDay + 10),
         LogBounce("none2@example.com", "QNONE2", kT0 + 30 * kDay + 10)});
  EXPECT_EQ(Counted("log", "mid@example.com", "QMID"), 0);
  EXPECT_EQ(Counted("log", "new@example.com", "QNEW"), 0);
  EXPECT_EQ(Counted("log", "none2@example.com", "QNONE2"), 1);
}

TEST_F(SameBounceStoreTest, AnUncountedDsnIsNoCopyForALaterLogLine) {
  // As the SQL lookup always did: only counted rows of the other family match. The DSN repeats
  // the first log line, so a second log line of the same bounce (a replayed log) counts again.
  Write({LogBounce("a@example.com", "QA", kT0)});
  Write({Dsn("a@example.com", "QA", kT0 + 1)});
  Write({LogBounce("a@example.com", "QA", kT0 + 2)});
  EXPECT_EQ(Scalar(path_,
                   "SELECT count(*) FROM events WHERE source = 'log' AND counted = 1 AND "
                   "recipient_key = 'a@example.com'"),
            2);
}

TEST_F(SameBounceStoreTest, RowsWrittenBehindTheStoresBackAreFoundAfterOpen) {
  // A DSN copy inserted through the `events` view (hand repair, fixtures) while bounced was
  // down: the index is built from the file at open.
  store_.reset();
  testing::ExecSql(path_,
                   "INSERT INTO events (time, source, source_ref, queue_id, recipient, "
                   "recipient_key, domain, log_status, category, fault, action, hard_bounce) "
                   "VALUES (" +
                       std::to_string(kT0) +
                       ", 'dsn', '<x@y>', 'QH', 'h@example.com', 'h@example.com', 'example.com', "
                       "'bounced', 'user_unknown', 'recipient', 'suppress', 1)");
  Reopen();
  Write({LogBounce("h@example.com", "QH", kT0 + 60)});
  EXPECT_EQ(Counted("log", "h@example.com", "QH"), 0);
}

}  // namespace
}  // namespace bounced
