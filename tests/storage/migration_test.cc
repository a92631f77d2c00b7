// migration_test.cc: schema version 1 databases are migrated in place to version 2
// (storage/migrate_2.sql) with every event and recipient state as version 1 held them, version 2
// databases to version 3 (storage/migrate_3.sql: pending deliveries), version 4 queue facts to
// rows by id (storage/migrate_5.sql), the policy carries on from the migrated state, and the
// writer's in-memory caches (event kinds, policy rows) forget what a rolled-back transaction
// wrote.
//
// A version-1 file is built from the repository's storage/schema.sql; its rows are what a
// version-2 store wrote for a realistic history, read back through the version-1 names (the
// `events` and `recipient_state` views), so "before" and "after" can be compared column for
// column.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "storage/store.h"
#include "tests/read_file.h"
#include "tests/storage/test_util.h"

namespace bounced {
namespace {

using testing::ExecSql;
using testing::kDay;
using testing::kT0;
using testing::MakeEvent;
using testing::OpenStore;
using testing::TempDir;

using testing::ReadFile;

// Every row of `sql`, each column followed by '|', each row by '\n' (NULL as "<null>").
std::string Dump(const std::string& path, const std::string& sql) {
  std::string out;
  for (const auto& row : testing::QueryRows(path, sql)) {
    for (const std::string& column : row) out += column + '|';
    out += '\n';
  }
  return out;
}

int64_t Scalar(const std::string& path, const std::string& sql) {
  std::string d = Dump(path, sql);
  return d.empty() ? -1 : std::stoll(d.substr(0, d.find('|')));
}

const char* const kEventsSql = "SELECT * FROM events ORDER BY id";
// The version-1 columns (version 3 adds two at the end).
const char* const kStateColumns =
    "address, display, first_seen, last_event, last_category, last_log_status, last_delivered, "
    "last_failure, incidents, incidents_since, last_incident, manual_unsuppressed, events";
const std::string kStateSql =
    std::string("SELECT ") + kStateColumns + " FROM recipient_state ORDER BY address";

// A history with every kind of row: deliveries, hard bounces, repeated mailbox_full incidents
// (one recipient two incidents short of suppression), a DSN and its duplicate, a log bounce and
// its milter copy (recorded, not counted), a blocked result, out-of-order times, a manual
// unsuppress of an address never seen, and a recipient that is not an address.
void WriteHistory(Store& s) {
  std::vector<Event> ev;
  ev.push_back(MakeEvent("Alice@Example.com", Category::kDelivered, "sent", kT0));
  ev.push_back(MakeEvent("bob@example.com", Category::kUserUnknown, "bounced", kT0 + 60));
  ev.push_back(MakeEvent("full@example.com", Category::kMailboxFull, "bounced", kT0 + 120));
  ev.push_back(MakeEvent("full@example.com", Category::kMailboxFull, "bounced", kT0 + 2 * kDay));
  ev.push_back(MakeEvent("alice@example.com", Category::kRateLimited, "deferred", kT0 - kDay));
  ev.push_back(MakeEvent("carol@example.org", Category::kDelivered, "blocked", kT0 + 5));
  ev.push_back(MakeEvent("not an address", Category::kUndetermined, "bounced", kT0 + 6));
  Event log = MakeEvent("dave@example.net", Category::kUserUnknown, "bounced", kT0 + 300);
  log.queue_id = "4F9D2C0A1B";
  log.relay = "mx.example.net[192.0.2.7]:25";
  log.program = "postfix/smtp";
  log.result.status = "5.1.1";
  log.result.reply_code = "550";
  log.result.provider = "gmail";
  log.result.provider_code = "NoSuchUser";
  log.result.rule = "gmail-user-unknown";
  ev.push_back(log);
  Event copy = log;
  copy.source = EventSource::kMilter;
  copy.source_ref = "<dsn1@example.com>";
  copy.unix_time = kT0 + 360;
  ev.push_back(copy);
  Event dsn = MakeEvent("erin@example.com", Category::kMailboxFull, "bounced", kT0 + 400,
                        EventSource::kDsn);
  dsn.source_ref = "<dsn2@example.com>";
  dsn.message_id = "<orig@shop.example>";
  dsn.result.dsn_action = "failed";
  dsn.result.remote_mta = "mx.example.com";
  dsn.result.original_recipient = "rfc822;erin@example.com";
  ev.push_back(dsn);
  ASSERT_TRUE(s.Write(Batch{ev, InputPosition{"log:/var/log/mail.log", 7, 4096, ""}}).ok());
  ASSERT_TRUE(s.Write(Batch{{dsn}, std::nullopt}).ok());  // recorded once
  ASSERT_TRUE(s.Suppress({"frank@example.com", "", 0}, Actor{0, "asked"}).ok());
  ASSERT_TRUE(s.Unsuppress("frank@example.com", Actor{0, "changed their mind"}).ok());
  ASSERT_TRUE(s.Unsuppress("bob@example.com", Actor{0, "mailbox exists again"}).ok());
}

// Turns the version-2 file `v2` into a version-1 file `v1` holding the same rows.
void MakeVersionOne(const std::string& v2, const std::string& v1) {
  ExecSql(v1, ReadFile(BOUNCED_SOURCE_DIR "/storage/schema.sql") +
                  "PRAGMA user_version = 1; PRAGMA application_id = 1651471726;");
  ExecSql(v1, "ATTACH '" + v2 +
                  "' AS v2; BEGIN;"
                  "INSERT INTO events SELECT * FROM v2.events;"
                  "INSERT INTO recipient_state SELECT " +
                  kStateColumns +
                  " FROM v2.recipient_state;"
                  "INSERT INTO daily_counters SELECT * FROM v2.daily_counters;"
                  "INSERT INTO suppressions SELECT * FROM v2.suppressions;"
                  "INSERT INTO suppression_log SELECT id, time, day, address, action, source, "
                  "reason, category, actor_uid FROM v2.suppression_log;"
                  "INSERT INTO allowlist SELECT * FROM v2.allowlist;"
                  "INSERT INTO audit SELECT * FROM v2.audit;"
                  "INSERT INTO input_positions SELECT * FROM v2.input_positions;"
                  "COMMIT;");
}

TEST(StoreMigrationTest, VersionOneDatabaseIsMigratedInPlaceWithEveryRow) {
  TempDir dir;
  const std::string v2 = dir.File("v2.db"), v1 = dir.File("v1.db");
  {
    auto s = OpenStore(v2);
    ASSERT_NE(s, nullptr);
    WriteHistory(*s);
  }
  MakeVersionOne(v2, v1);
  ASSERT_EQ(Scalar(v1, "PRAGMA user_version"), 1);
  ASSERT_EQ(Scalar(v1, "SELECT type = 'table' FROM sqlite_master WHERE name = 'events'"), 1);
  const std::string events = Dump(v1, kEventsSql), states = Dump(v1, kStateSql);
  EXPECT_EQ(Scalar(v1, "SELECT count(*) FROM events"), 10);
  EXPECT_NE(states.find("full@example.com|full@example.com|"), std::string::npos) << states;
  EXPECT_NE(states.find("frank@example.com|frank@example.com|"), std::string::npos) << states;

  auto s = OpenStore(v1);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Scalar(v1, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(Scalar(v1, "SELECT type = 'view' FROM sqlite_master WHERE name = 'events'"), 1);
  EXPECT_EQ(Dump(v1, kEventsSql), events);
  EXPECT_EQ(Dump(v1, kStateSql), states);
  EXPECT_EQ(Dump(v1, "SELECT * FROM event_days ORDER BY day"),
            "2026-10-31|5|5|\n2026-11-01|1|10|\n2026-11-03|4|4|\n");
  // Only recipients the policy must remember keep a row: full and erin (incidents), bob and
  // frank (unsuppressed by hand).
  EXPECT_EQ(Dump(v1, "SELECT address FROM recipient_policy ORDER BY address"),
            "bob@example.com|\nerin@example.com|\nfrank@example.com|\nfull@example.com|\n");
  EXPECT_EQ((*s->LoadPosition("log:/var/log/mail.log"))->offset, 4096u);
  auto health = s->GetHealth();
  ASSERT_TRUE(health.ok()) << health.error();
  EXPECT_EQ(health->schema_version, kSchemaVersion);
  EXPECT_EQ(health->recipients, Scalar(v1, "SELECT count(*) FROM recipient_state"));
  EXPECT_EQ(health->recipients, 7);  // alice bob carol dave erin frank full, not "not an address"
  EXPECT_TRUE(s->view().Lookup("dave@example.net").has_value());
  EXPECT_FALSE(s->view().Lookup("bob@example.com").has_value());

  // The policy carries on from the migrated state: a third mailbox_full incident, 7 days after
  // the first, suppresses.
  EXPECT_FALSE(s->view().Lookup("full@example.com").has_value());
  ASSERT_TRUE(s->Write(Batch{{MakeEvent("full@example.com", Category::kMailboxFull, "bounced",
                                        kT0 + 7 * kDay + 120)},
                             std::nullopt})
                  .ok());
  EXPECT_TRUE(s->view().Lookup("full@example.com").has_value());
  // The DSN seen before the migration is still recorded only once.
  Event dsn = MakeEvent("erin@example.com", Category::kMailboxFull, "bounced", kT0 + 400,
                        EventSource::kDsn);
  dsn.source_ref = "<dsn2@example.com>";
  ASSERT_TRUE(s->Write(Batch{{dsn}, std::nullopt}).ok());
  EXPECT_EQ(Scalar(v1, "SELECT count(*) FROM events WHERE recipient_key = 'erin@example.com'"), 1);
  auto st = s->GetStatus("Full@example.com", 10);
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_TRUE(st->state.has_value());
  EXPECT_EQ(st->state->events, 3);
  EXPECT_EQ(st->state->incidents, 3);
  EXPECT_EQ(st->state->first_seen, kT0 + 120);
  EXPECT_EQ(st->events.size(), 3u);
}

// A version-2 file, as a bounced of that version made it (schema.sql, then migrate_2.sql), with
// a recipient two mailbox_full incidents short of nothing: Open adds the pending-delivery
// columns with no delivery pending (version 2 reset the count at the delivery itself), the
// recipient_state view gets them too, and the count carries on under the version-3 rule: the
// delivery of the message that then bounces resets nothing.
TEST(StoreMigrationTest, VersionTwoDatabaseGetsPendingDeliveriesAndCountsOn) {
  TempDir dir;
  const std::string path = dir.File("v2.db");
  ExecSql(path, ReadFile(BOUNCED_SOURCE_DIR "/storage/schema.sql") +
                    ReadFile(BOUNCED_SOURCE_DIR "/storage/migrate_2.sql") +
                    "PRAGMA user_version = 2; PRAGMA application_id = 1651471726;");
  const std::string t1 = std::to_string(kT0), t2 = std::to_string(kT0 + 4 * kDay);
  ExecSql(
      path,
      "INSERT INTO events (time, day, source, source_ref, message_id, recipient, "
      "recipient_key, domain, log_status, category, fault, action, hard_bounce) VALUES "
      "(" +
          t1 +
          ", '', 'milter', 'dsn.1', 'm1@shop.example', 'full@example.com', "
          "'full@example.com', 'example.com', 'bounced', 'mailbox_full', 'recipient', 'count', 0),"
          "(" +
          t2 +
          ", '', 'milter', 'dsn.2', 'm2@shop.example', 'full@example.com', "
          "'full@example.com', 'example.com', 'bounced', 'mailbox_full', 'recipient', 'count', 0);"
          "INSERT INTO recipient_policy (address, incidents, incidents_since, last_incident) "
          "VALUES ('full@example.com', 2, " +
          t1 + ", " + t2 +
          ");"
          "INSERT INTO recipient_policy (address, display, first_seen, manual_unsuppressed) "
          "VALUES ('back@example.com', 'Back@example.com', 1000, 1000);");
  const std::string before = Dump(path, kStateSql);
  ASSERT_NE(before.find("full@example.com|full@example.com|"), std::string::npos) << before;

  auto s = OpenStore(path);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Scalar(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(Dump(path, kStateSql), before);
  EXPECT_EQ(Dump(path,
                 "SELECT address, incidents, pending_delivery, pending_message_id "
                 "FROM recipient_policy ORDER BY address"),
            "back@example.com|0|0||\nfull@example.com|2|0||\n");
  EXPECT_EQ(Dump(path,
                 "SELECT address, incidents, pending_delivery, pending_message_id "
                 "FROM recipient_state ORDER BY address"),
            "back@example.com|0|0||\nfull@example.com|2|0||\n");

  // A third message goes through a relay that accepts it and bounces it: the third incident,
  // 8 days after the first, suppresses.
  const int64_t t3 = kT0 + 8 * kDay;
  Event sent = MakeEvent("full@example.com", Category::kDelivered, "sent", t3);
  sent.message_id = "<m3@shop.example>";
  ASSERT_TRUE(s->Write(Batch{{sent}, std::nullopt}).ok());
  auto st = s->GetStatus("full@example.com", 10);
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_TRUE(st->state.has_value());
  EXPECT_EQ(st->state->incidents, 2);
  EXPECT_EQ(st->state->pending_delivery, t3);
  EXPECT_EQ(st->state->pending_message_id, "m3@shop.example");
  Event dsn = MakeEvent("full@example.com", Category::kMailboxFull, "bounced", t3 + 3600,
                        EventSource::kMilter);
  dsn.source_ref = "dsn.3";
  dsn.message_id = "m3@shop.example";
  ASSERT_TRUE(s->Write(Batch{{dsn}, std::nullopt}).ok());
  auto hit = s->view().Lookup("full@example.com");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->category, Category::kMailboxFull);
  st = s->GetStatus("full@example.com", 10);
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_EQ(st->suppression->first_event, kT0);
  EXPECT_EQ(st->state->incidents, 3);
  EXPECT_EQ(st->state->pending_delivery, 0);
  EXPECT_EQ(st->state->events, 4);
  // The unsuppressed address is still remembered as such.
  auto back = s->GetStatus("back@example.com", 10);
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_TRUE(back->state.has_value());
  EXPECT_EQ(back->state->manual_unsuppressed, 1000);
}

TEST(StoreMigrationTest, NewerVersionIsStillRefusedAfterTheMigrationExists) {
  TempDir dir;
  const std::string path = dir.File("b.db");
  { auto s = OpenStore(path); }
  ExecSql(path, "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  StoreOptions o;
  o.path = path;
  auto s = Store::Open(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(
      s.error().find("schema version " + std::to_string(kSchemaVersion + 1) +
                     " is newer than this bounced knows (" + std::to_string(kSchemaVersion) + ")"),
      std::string::npos)
      << s.error();
}

// Version 4 adds queue_facts (the log correlator's facts kept with the input position): a
// version-3 database gets the table, keeps its rows, and the facts round-trip with a batch.
// Turns a database of this version back into version 6: without event_originals
// (storage/migrate_7.sql).
// Turns a database of this version back into version 7: suppression_log without its note and
// its index by address (storage/migrate_8.sql).
void DowngradeToVersionSeven(const std::string& path) {
  ExecSql(path,
          "DROP INDEX suppressions_by_expiry; DROP INDEX suppression_log_by_address; "
          "ALTER TABLE suppression_log DROP COLUMN note; PRAGMA user_version = 7;");
}

// Version 8 had no index by expiry: the purge, and the question of when the next entry
// expires, read the whole list (storage/migrate_9.sql).
TEST(StoreMigrationTest, VersionEightGetsTheIndexByExpiryThePurgeUses) {
  TempDir dir;
  const std::string path = dir.File("v8.db");
  {
    auto s = OpenStore(path);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->Suppress({"later@example.com", "", 4102444800}, {0, "until 2100"}).ok());
  }
  ExecSql(path, "DROP INDEX suppressions_by_expiry; PRAGMA user_version = 8;");
  auto s = OpenStore(path);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->Flush().ok());
  EXPECT_EQ(Scalar(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(Scalar(path,
                   "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                   "name = 'suppressions_by_expiry'"),
            1);
  // Only entries with an expiry are in it.
  EXPECT_EQ(Scalar(path,
                   "SELECT count(*) FROM suppressions INDEXED BY suppressions_by_expiry "
                   "WHERE expires <> 0"),
            1);
  EXPECT_TRUE(s->view().Lookup("later@example.com").has_value());
}

void DowngradeToVersionSix(const std::string& path) {
  DowngradeToVersionSeven(path);
  ExecSql(path, "DROP TABLE event_originals; PRAGMA user_version = 6;");
}

// Version 7's changes get their notes from the audit trail: an unsuppress's reason, a manual
// suppress's; a bounce's own add has none. Each address's history is found through the index.
TEST(StoreMigrationTest, VersionSevenChangesGetTheirNotesFromTheAuditTrail) {
  TempDir dir;
  const std::string path = dir.File("v7.db");
  {
    auto s = OpenStore(path);
    ASSERT_NE(s, nullptr);
    WriteHistory(*s);
  }
  DowngradeToVersionSeven(path);
  auto s = OpenStore(path);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Scalar(path, "PRAGMA user_version"), kSchemaVersion);
  auto frank = s->GetStatus("frank@example.com");
  ASSERT_TRUE(frank.ok()) << frank.error();
  ASSERT_EQ(frank->history.size(), 2u);
  EXPECT_EQ(frank->history[0].action, "remove");
  EXPECT_EQ(frank->history[0].note, "changed their mind");
  EXPECT_EQ(frank->history[0].actor_uid, 0);
  EXPECT_EQ(frank->history[1].action, "add");
  EXPECT_EQ(frank->history[1].note, "asked");
  auto bob = s->GetStatus("bob@example.com");
  ASSERT_TRUE(bob.ok()) << bob.error();
  ASSERT_EQ(bob->history.size(), 2u);
  EXPECT_EQ(bob->history[0].note, "mailbox exists again");
  EXPECT_EQ(bob->history[1].note, "");  // the bounce's own add
  EXPECT_EQ(bob->history[1].actor_uid, -1);
  EXPECT_EQ(Dump(path,
                 "EXPLAIN QUERY PLAN SELECT id FROM suppression_log WHERE address = 'x' "
                 "ORDER BY id DESC")
                    .find("suppression_log_by_address") != std::string::npos,
            true);
}

// Turns a database of this version back into version 4: without recipient_policy's
// pending_earlier (storage/migrate_5.sql), and with version 3's recipient_state view (the view
// reads the column, so it goes first and comes back as migrate_3.sql made it).
void DowngradeToVersionFour(const std::string& path) {
  DowngradeToVersionSix(path);
  const std::string v3 = ReadFile(BOUNCED_SOURCE_DIR "/storage/migrate_3.sql");
  const size_t view = v3.find("DROP VIEW recipient_state;");
  ASSERT_NE(view, std::string::npos);
  ExecSql(path,
          "DROP VIEW recipient_state; ALTER TABLE recipient_policy DROP COLUMN pending_earlier; "
          "CREATE VIEW recipient_state AS SELECT 1;" +
              v3.substr(view) + "PRAGMA user_version = 4;");
}

// A file with WriteHistory's rows, as this version writes them, turned back into version 4.
void WriteHistoryAtVersionFour(const std::string& path) {
  {
    auto s = OpenStore(path);
    ASSERT_NE(s, nullptr);
    WriteHistory(*s);
  }
  DowngradeToVersionFour(path);
}

// Version 7: the events of a forward are found by the address the sender used too (status of
// it), for the rows stored before the migration as for those after.
TEST(StoreMigrationTest, VersionSixDatabaseFindsEventsByTheirOriginalRecipient) {
  TempDir dir;
  const std::string path = dir.File("v6.db");
  auto forward = [](const std::string& target, const std::string& original, int64_t t) {
    Event e = MakeEvent(target, Category::kUserUnknown, "bounced", t, EventSource::kDsn);
    e.source_ref = "<dsn-" + std::to_string(t) + "@example.net>";
    e.result.original_recipient = original;
    return e;
  };
  {
    auto s = OpenStore(path);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->Write(Batch{{forward("target@example.net", "Alias+news@Example.COM", kT0),
                                forward("same@example.net", "Same@Example.NET", kT0 + 1),
                                forward("other@example.net", "not an address", kT0 + 2)},
                               std::nullopt})
                    .ok());
  }
  DowngradeToVersionSix(path);
  ASSERT_EQ(Scalar(path, "SELECT count(*) FROM sqlite_master WHERE name = 'event_originals'"), 0);
  auto s = OpenStore(path);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Scalar(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(Dump(path,
                 "SELECT e.recipient_key, o.original_key, o.time = e.time FROM event_originals o "
                 "JOIN event_rows e ON e.id = o.event_id"),
            "target@example.net|alias@example.com|1|\n")
      << "only the forward's event: a forward to itself or to no address has no row";
  ASSERT_TRUE(
      s->Write(Batch{{forward("next@example.net", "alias@example.com", kT0 + 10)}, std::nullopt})
          .ok());
  auto st = s->GetStatus("ALIAS@example.com");
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->events.size(), 2u);
  EXPECT_EQ(st->events[0].event.result.recipient, "next@example.net") << "the newest first";
  EXPECT_EQ(st->events[1].event.result.recipient, "target@example.net");
  EXPECT_EQ(st->events[1].event.result.original_recipient, "Alias+news@Example.COM");
  auto limited = s->EventsFor("alias@example.com", 1);
  ASSERT_TRUE(limited.ok());
  ASSERT_EQ(limited->size(), 1u);
  EXPECT_EQ((*limited)[0].event.result.recipient, "next@example.net");
  auto target = s->GetStatus("target@example.net");
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target->events.size(), 1u);
  // A forward to itself (the usual Original-Recipient) is found once.
  auto same = s->GetStatus("same@example.net");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->events.size(), 1u);
}

TEST(StoreMigrationTest, VersionThreeDatabaseGetsTheQueueFactsTable) {
  TempDir dir;
  const std::string path = dir.File("v2.db");
  WriteHistoryAtVersionFour(path);
  ExecSql(path, "DROP TABLE queue_facts; PRAGMA user_version = 3");
  const std::string events = Dump(path, kEventsSql);
  auto s = OpenStore(path);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Scalar(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(Dump(path, kEventsSql), events);
  Batch b;
  b.position = InputPosition{"log:/var/log/mail.log", 7, 8192, ""};
  QueueFacts f;
  f.queue_id = "4A1B2C3D4E";
  f.sender = "news@sender.example";
  f.sender_known = true;
  f.message_id = "<m@x>";
  f.size = 533;
  f.nrcpt = 2;
  b.queue_facts.push_back(f);
  ASSERT_TRUE(s->Write(b).ok());
  auto loaded = s->LoadQueueFacts("log:/var/log/mail.log");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].sender, "news@sender.example");
  EXPECT_TRUE((*loaded)[0].sender_known);
  EXPECT_EQ((*loaded)[0].message_id, "<m@x>");
  EXPECT_EQ((*loaded)[0].size, 533);
  EXPECT_EQ((*loaded)[0].nrcpt, 2);
  EXPECT_GT((*loaded)[0].updated, 0);
  EXPECT_TRUE(s->LoadQueueFacts("journal")->empty());
  Batch forget;
  forget.position = InputPosition{"log:/var/log/mail.log", 7, 9000, ""};
  forget.queue_facts_forgotten = {"4A1B2C3D4E"};
  ASSERT_TRUE(s->Write(forget).ok());
  EXPECT_TRUE(s->LoadQueueFacts("log:/var/log/mail.log")->empty());
  // Facts need the input a position names.
  Batch orphan;
  orphan.queue_facts.push_back(f);
  EXPECT_FALSE(s->Write(orphan).ok());
}

// A version-4 file (schema.sql, then migrate_2.sql to migrate_4.sql) with a recipient two
// mailbox_full incidents in and one relay delivery noted: Open adds pending_earlier empty (a
// version-4 row has at most the one delivery), the recipient_state view gets it too, and the
// count carries on under the version-5 rule: a second message accepted before the first one's
// DSN waits for its own, and the third incident suppresses.
TEST(StoreMigrationTest, VersionFourDatabaseGetsEarlierPendingDeliveriesAndCountsOn) {
  TempDir dir;
  const std::string path = dir.File("v4.db");
  ExecSql(path, ReadFile(BOUNCED_SOURCE_DIR "/storage/schema.sql") +
                    ReadFile(BOUNCED_SOURCE_DIR "/storage/migrate_2.sql") +
                    ReadFile(BOUNCED_SOURCE_DIR "/storage/migrate_3.sql") +
                    ReadFile(BOUNCED_SOURCE_DIR "/storage/migrate_4.sql") +
                    "PRAGMA user_version = 4; PRAGMA application_id = 1651471726;");
  const int64_t t1 = kT0, t2 = kT0 + 4 * kDay, t3 = kT0 + 5 * kDay;
  ExecSql(path,
          "INSERT INTO events (time, day, source, source_ref, message_id, recipient, "
          "recipient_key, domain, log_status, category, fault, action, hard_bounce) VALUES "
          "(" +
              std::to_string(t1) +
              ", '', 'milter', 'dsn.1', 'm1@shop.example', 'full@example.com', "
              "'full@example.com', 'example.com', 'bounced', 'mailbox_full', 'recipient', "
              "'count', 0),"
              "(" +
              std::to_string(t2) +
              ", '', 'milter', 'dsn.2', 'm2@shop.example', 'full@example.com', "
              "'full@example.com', 'example.com', 'bounced', 'mailbox_full', 'recipient', "
              "'count', 0);"
              "INSERT INTO recipient_policy (address, incidents, incidents_since, last_incident, "
              "pending_delivery, pending_message_id) VALUES ('full@example.com', 2, " +
              std::to_string(t1) + ", " + std::to_string(t2) + ", " + std::to_string(t3) +
              ", 'm3@shop.example');");

  auto s = OpenStore(path);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Scalar(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(Dump(path,
                 "SELECT address, incidents, pending_delivery, pending_message_id, "
                 "pending_earlier FROM recipient_state"),
            "full@example.com|2|" + std::to_string(t3) + "|m3@shop.example||\n");

  // m4 goes through the relay too before m3's DSN comes back: both wait.
  Event sent = MakeEvent("full@example.com", Category::kDelivered, "sent", t3 + 600);
  sent.message_id = "<m4@shop.example>";
  ASSERT_TRUE(s->Write(Batch{{sent}, std::nullopt}).ok());
  auto st = s->GetStatus("full@example.com", 10);
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_TRUE(st->state.has_value());
  EXPECT_EQ(st->state->incidents, 2);
  EXPECT_EQ(st->state->pending_delivery, t3 + 600);
  EXPECT_EQ(st->state->pending_message_id, "m4@shop.example");
  EXPECT_EQ(st->state->pending_earlier, std::to_string(t3) + " m3@shop.example\n");
  int n = 0;
  for (const char* id : {"m3@shop.example", "m4@shop.example"}) {
    Event dsn = MakeEvent("full@example.com", Category::kMailboxFull, "bounced",
                          kT0 + (8 + n) * kDay, EventSource::kMilter);
    dsn.source_ref = std::string("dsn.") + id;
    dsn.message_id = id;
    ASSERT_TRUE(s->Write(Batch{{dsn}, std::nullopt}).ok());
    ++n;
  }
  auto hit = s->view().Lookup("full@example.com");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->category, Category::kMailboxFull);
  st = s->GetStatus("full@example.com", 10);
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_EQ(st->suppression->first_event, kT0);
  EXPECT_EQ(st->state->pending_delivery, 0);
  EXPECT_EQ(st->state->pending_earlier, "");
}

// Version 6 keeps queue facts by increasing id instead of by (input, queue_id): a version-4
// table's rows move over (through version 5), oldest first, and the writer updates and forgets them
// by queue id as before, without a second row for a queue id it finds there.
TEST(StoreMigrationTest, VersionFourQueueFactsMoveToRowsByIdAndStayOnePerQueueId) {
  TempDir dir;
  const std::string path = dir.File("v4.db");
  WriteHistoryAtVersionFour(path);
  // The version-4 table (storage/migrate_4.sql) with what a version-4 bounced stored.
  ExecSql(path,
          "DROP TABLE queue_facts;"
          "CREATE TABLE queue_facts (input TEXT NOT NULL, queue_id TEXT NOT NULL,"
          " sender TEXT NOT NULL DEFAULT '', sender_known INTEGER NOT NULL DEFAULT 0,"
          " message_id TEXT NOT NULL DEFAULT '', bounce_queue_id TEXT NOT NULL DEFAULT '',"
          " size INTEGER NOT NULL DEFAULT -1, nrcpt INTEGER NOT NULL DEFAULT -1,"
          " updated INTEGER NOT NULL, PRIMARY KEY (input, queue_id)) WITHOUT ROWID;"
          "INSERT INTO queue_facts VALUES"
          " ('log:/var/log/mail.log', '4A1B2C3D4E', 'a@x', 1, '<a@x>', '', 533, 2, 1700000300),"
          " ('log:/var/log/mail.log', '0F1E2D3C4B', 'b@x', 1, '<b@x>', 'BB99', 10, 1, 1700000100),"
          " ('journal', '4A1B2C3D4E', '', 0, '<j@x>', '', -1, -1, 1700000200);"
          "PRAGMA user_version = 4");
  const std::string events = Dump(path, kEventsSql);
  auto s = OpenStore(path);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Scalar(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(Dump(path, kEventsSql), events);
  EXPECT_EQ(Dump(path,
                 "SELECT id, input, queue_id, sender, sender_known, message_id, "
                 "bounce_queue_id, size, nrcpt, updated FROM queue_facts ORDER BY id"),
            "1|log:/var/log/mail.log|0F1E2D3C4B|b@x|1|<b@x>|BB99|10|1|1700000100|\n"
            "2|journal|4A1B2C3D4E||0|<j@x>||-1|-1|1700000200|\n"
            "3|log:/var/log/mail.log|4A1B2C3D4E|a@x|1|<a@x>||533|2|1700000300|\n");
  auto loaded = s->LoadQueueFacts("log:/var/log/mail.log");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].queue_id, "0F1E2D3C4B");
  EXPECT_EQ((*loaded)[0].bounce_queue_id, "BB99");
  EXPECT_EQ((*loaded)[1].queue_id, "4A1B2C3D4E");
  EXPECT_EQ((*loaded)[1].size, 533);

  Batch b;
  b.position = InputPosition{"log:/var/log/mail.log", 7, 9000, ""};
  QueueFacts f = (*loaded)[1];
  f.bounce_queue_id = "CC77";
  b.queue_facts.push_back(f);
  b.queue_facts_forgotten = {"0F1E2D3C4B"};
  ASSERT_TRUE(s->Write(b).ok());
  EXPECT_EQ(Dump(path, "SELECT id, input, queue_id, bounce_queue_id FROM queue_facts ORDER BY id"),
            "2|journal|4A1B2C3D4E||\n3|log:/var/log/mail.log|4A1B2C3D4E|CC77|\n");
}

// Keys an older bounced wrote with needless quotes (it kept a quoted local part as given, and
// cut an extension inside the quotes) are moved at Open to the key lookups make now; where that
// key already has a row, the stronger suppression, the present allowlist entry and the later
// manual unsuppress stay. Keys that need their quotes stay, and a second Open changes nothing.
TEST(StoreMigrationTest, QuotedKeysOfAnOlderBouncedMoveToTheirPresentForm) {
  TempDir dir;
  const std::string path = dir.File("b.db");
  {
    auto s = OpenStore(path);
    ASSERT_TRUE(s);
    // john.doe@example.org: suppressed automatically under the key Postfix's log gives.
    ASSERT_TRUE(
        s
            ->Write(Batch{
                {MakeEvent("john.doe@example.org", Category::kUserUnknown, "bounced", kT0),
                 MakeEvent("\"John.Doe\"@example.org", Category::kUserUnknown, "bounced", kT0 + 60),
                 MakeEvent("quoted.only@example.org", Category::kDelivered, "sent", kT0 + 120)},
                std::nullopt})
            .ok());
  }
  // What the older bounced wrote: the second bounce's key and the delivery's in quoted form (the
  // delivery's display is the key itself, stored as NULL), a manual suppression of the quoted
  // spelling, one whose extension was cut inside the quotes, one that needs its quotes, an
  // allowlist entry and a manual unsuppress.
  ExecSql(path,
          "UPDATE event_rows SET recipient_key = '\"john.doe\"@example.org' WHERE recipient = "
          "'\"John.Doe\"@example.org';"
          "UPDATE event_rows SET recipient_key = '\"quoted.only\"@example.org', recipient = NULL "
          "WHERE recipient_key = 'quoted.only@example.org';"
          "INSERT INTO suppressions (address, display, domain, reason, source, created, expires, "
          "updated) VALUES "
          "('\"john.doe\"@example.org', '\"John.Doe\"@example.org', 'example.org', 'asked', "
          "'manual', 1000, 0, 1000),"
          "('\"cut.off@example.org', '\"cut.off+x\"@example.org', 'example.org', 'asked', "
          "'manual', 1000, 0, 1000),"
          "('\"jane roe\"@example.org', '\"Jane Roe\"@example.org', 'example.org', 'asked', "
          "'manual', 1000, 0, 1000);"
          "INSERT INTO allowlist (entry, kind, reason, created, actor_uid) VALUES "
          "('\"vip\"@example.org', 'address', 'our boss', 1000, 0);"
          "INSERT INTO recipient_policy (address, manual_unsuppressed) VALUES "
          "('\"back\"@example.org', 1234);");
  auto quoted_rows = [&] {
    return Scalar(path,
                  "SELECT (SELECT count(*) FROM suppressions WHERE address LIKE '\"%') + "
                  "(SELECT count(*) FROM allowlist WHERE entry LIKE '\"%') + "
                  "(SELECT count(*) FROM recipient_policy WHERE address LIKE '\"%') + "
                  "(SELECT count(*) FROM event_rows WHERE recipient_key LIKE '\"%')");
  };
  ASSERT_EQ(quoted_rows(), 7);
  for (int open = 0; open < 2; ++open) {
    auto s = OpenStore(path);
    ASSERT_TRUE(s);
    EXPECT_EQ(quoted_rows(), 1) << "only \"jane roe\"@example.org needs its quotes";
    // The operator's manual entry outranks the automatic one already under the present key.
    auto john = s->view().Lookup("\"john.doe\"@example.org");
    ASSERT_TRUE(john.has_value());
    EXPECT_TRUE(john->manual);
    EXPECT_EQ(s->view().Lookup("john.doe+news@example.org")->since, 1000);
    EXPECT_TRUE(s->view().Lookup("\"cut.off+x\"@example.org").has_value());
    EXPECT_TRUE(s->view().Lookup("\"Jane Roe\"@example.org").has_value());
    EXPECT_EQ(s->view().size(), 3u);
    EXPECT_EQ(Scalar(path, "SELECT count(*) FROM allowlist WHERE entry = 'vip@example.org'"), 1);
    EXPECT_EQ(Scalar(path,
                     "SELECT manual_unsuppressed FROM recipient_policy "
                     "WHERE address = 'back@example.org'"),
              1234);
    // Both events of john.doe are found under the one key, each with its spelling.
    auto st = s->GetStatus("john.doe@example.org");
    ASSERT_TRUE(st.ok()) << st.error();
    ASSERT_EQ(st->events.size(), 2u);
    EXPECT_EQ(st->events[0].event.result.recipient, "\"John.Doe\"@example.org");
    EXPECT_EQ(st->events[1].event.result.recipient, "john.doe@example.org");
    auto delivered = s->GetStatus("quoted.only@example.org");
    ASSERT_TRUE(delivered.ok()) << delivered.error();
    ASSERT_EQ(delivered->events.size(), 1u);
    EXPECT_EQ(delivered->events[0].event.result.recipient, "\"quoted.only\"@example.org");
  }
}

TEST(StoreMigrationTest, StatusStateIsTheFoldOfTheRecipientsEvents) {
  // first_seen / last_* / events are derived from the events when read; they must equal what
  // the policy's fold (storage/policy.cc) computes over the same events in commit order.
  TempDir dir;
  auto s = OpenStore(dir.File("b.db"));
  ASSERT_NE(s, nullptr);
  const struct {
    Category c;
    const char* status;
    int64_t t;
  } history[] = {
      {Category::kDelivered, "sent", kT0 + 500},
      {Category::kMailboxFull, "bounced", kT0 + 100},
      {Category::kRateLimited, "deferred", kT0 + 900},
      {Category::kDelivered, "blocked", kT0 + 950},
      {Category::kMailboxFull, "deferred", kT0 + 900},
      {Category::kDelivered, "sent", kT0 + 20},
  };
  for (const auto& h : history) {
    ASSERT_TRUE(
        s->Write(Batch{{MakeEvent("x@example.com", h.c, h.status, h.t)}, std::nullopt}).ok());
  }
  auto st = s->GetStatus("x@example.com", 10);
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_TRUE(st->state.has_value());
  EXPECT_EQ(st->state->events, 6);
  EXPECT_EQ(st->state->first_seen, kT0 + 20);
  EXPECT_EQ(st->state->last_event, kT0 + 950);
  EXPECT_EQ(st->state->last_category, "delivered");
  EXPECT_EQ(st->state->last_log_status, "blocked");  // the latest event, blocked or not
  EXPECT_EQ(st->state->last_delivered, kT0 + 500);   // blocked is no delivery
  EXPECT_EQ(st->state->last_failure, kT0 + 900);
  // The delivery at +500 was committed before the incident at +100, and the one at +20 is
  // older than it: neither resets it.
  EXPECT_EQ(st->state->incidents, 1);
}

TEST(StoreMigrationTest, RolledBackTransactionLeavesNoKindOrPolicyStateInMemory) {
  // A batch whose position is invalid fails after its events were written: the transaction
  // rolls back, and with it the event kind and the policy row it created. The writer's caches
  // must forget both, or the next transaction would reuse a kind id SQLite hands out again (to
  // a different kind) and count an incident that never committed.
  TempDir dir;
  auto s = OpenStore(dir.File("b.db"));
  ASSERT_NE(s, nullptr);
  Event odd = MakeEvent("a@example.com", Category::kSpamContent, "bounced", kT0);
  odd.result.provider = "odd-provider";
  Event full = MakeEvent("c@example.com", Category::kMailboxFull, "bounced", kT0);
  EXPECT_FALSE(s->Write(Batch{{odd, full}, InputPosition{"", 1, 1, ""}}).ok());

  Event other = MakeEvent("b@example.com", Category::kMailboxDisabled, "bounced", kT0 + 10);
  other.result.provider = "other-provider";
  ASSERT_TRUE(s->Write(Batch{{other}, std::nullopt}).ok());
  ASSERT_TRUE(s->Write(Batch{{odd}, std::nullopt}).ok());
  auto a = s->EventsFor("a@example.com", 10);
  auto b = s->EventsFor("b@example.com", 10);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), 1u);
  ASSERT_EQ(b->size(), 1u);
  EXPECT_EQ((*a)[0].event.result.category, Category::kSpamContent);
  EXPECT_EQ((*a)[0].event.result.provider, "odd-provider");
  EXPECT_EQ((*b)[0].event.result.category, Category::kMailboxDisabled);
  EXPECT_EQ((*b)[0].event.result.provider, "other-provider");

  // c@ has no committed incident: two more, 8 days apart, are two incidents, not three.
  for (int64_t t : {kT0 + 4 * kDay, kT0 + 8 * kDay}) {
    ASSERT_TRUE(s->Write(Batch{{MakeEvent("c@example.com", Category::kMailboxFull, "bounced", t)},
                               std::nullopt})
                    .ok());
  }
  EXPECT_FALSE(s->view().Lookup("c@example.com").has_value());
  auto st = s->GetStatus("c@example.com", 10);
  ASSERT_TRUE(st.ok() && st->state.has_value());
  EXPECT_EQ(st->state->incidents, 2);
  EXPECT_EQ(st->state->events, 2);
}

}  // namespace
}  // namespace bounced
