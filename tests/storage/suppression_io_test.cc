// suppression_io_test.cc: export and import of the suppression list (CSV, JSONL and text): errors
// with line numbers, all-or-nothing, a round trip through a second database, and the column
// names of other tools' exports.
#include "storage/suppression_io.h"

#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <map>

#include "storage/timefmt.h"
#include "tests/storage/test_util.h"

namespace bounced {
namespace {

using testing::kT0;
using testing::MakeEvent;

std::string ExportAll(Store& s, ExportFormat f) {
  std::string out;
  EXPECT_TRUE(s.Export(f, ListFilter(), [&](std::string_view line) {
                 out += line;
                 return true;
               }).ok());
  return out;
}

TEST(TimeTest, ParsesRfc3339AndUnixSeconds) {
  EXPECT_EQ(ParseTime("2026-11-01T00:00:00Z"), kT0);
  EXPECT_EQ(ParseTime("2026-11-01T01:00:00+01:00"), kT0);
  EXPECT_EQ(ParseTime("2026-11-01 00:00:00.123Z"), kT0);
  EXPECT_EQ(ParseTime("2026-11-01"), kT0);
  EXPECT_EQ(ParseTime("1793491200"), kT0);
  EXPECT_FALSE(ParseTime("yesterday"));
  EXPECT_FALSE(ParseTime("2026-13-01"));
  EXPECT_FALSE(ParseTime("2026-11-01T00:00"));
  EXPECT_EQ(DayOf(kT0 + 86399), "2026-11-01");
}

TEST(TimeTest, DayOfAnAbsurdTimeIsWholeText) {
  // Ten-digit years, negative too (a hostile or broken time in an input): the whole date, with
  // nothing after the day; past what gmtime can represent, the epoch's day.
  for (int64_t t : {int64_t{60000000000000000}, int64_t{-60000000000000000}}) {
    const std::string day = DayOf(t);
    ASSERT_GE(day.size(), 16u) << t;
    EXPECT_EQ(day.size(), day.find_last_of('-') + 3) << day;
    EXPECT_EQ(day[day.size() - 6], '-') << day;
  }
  EXPECT_EQ(DayOf(std::numeric_limits<int64_t>::max()), "1970-01-01");
}

TEST(ImportTest, CsvErrorsNameTheirLines) {
  std::string csv =
      "address,reason,category,expires\n"
      "ok@example.com,bad list,user_unknown,\n"
      "not-an-address,x,,\n"
      "b@example.com,x,no_such_category,\n"
      "\n"
      "c@example.com,x,,tomorrow\n"
      "d@example.com,x\n";
  ParsedImport r = ParseImport(ExportFormat::kCsv, csv, "+", kT0);
  EXPECT_TRUE(r.entries.empty());
  ASSERT_EQ(r.errors.size(), 4u);
  EXPECT_EQ(r.errors[0], "line 3: invalid address 'not-an-address'");
  EXPECT_EQ(r.errors[1], "line 4: unknown category 'no_such_category'");
  EXPECT_EQ(r.errors[2].rfind("line 6: bad time 'tomorrow' in expires", 0), 0u) << r.errors[2];
  EXPECT_EQ(r.errors[3], "line 7: expected 4 fields, found 2");
}

TEST(ImportTest, CsvQuotingAndMultilineFieldsKeepLineNumbers) {
  std::string csv =
      "address,detail\r\n"
      "\"a@example.com\",\"said \"\"no\"\", twice\"\r\n"
      "b@example.com,\"two\nlines\"\r\n"
      "bad,x\r\n";
  ParsedImport r = ParseImport(ExportFormat::kCsv, csv, "+", kT0);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], "line 5: invalid address 'bad'");
  r = ParseImport(ExportFormat::kCsv, "address\n\"unterminated@x.org\n", "+", kT0);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], "line 2: unterminated quoted field");
  r = ParseImport(ExportFormat::kCsv, "mail\nx@y.org\n", "+", kT0);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("unknown column 'mail'"), std::string::npos);
  r = ParseImport(ExportFormat::kCsv, "", "+", kT0);
  ASSERT_EQ(r.errors.size(), 1u);
}

TEST(ImportTest, JsonlErrorsNameTheirLines) {
  std::string jsonl =
      "{\"address\": \"a@example.com\", \"reason\": \"list\"}\n"
      "{\"address\": \"b@example.com\", \"colour\": \"red\"}\n"
      "not json\n"
      "\n"
      "{\"address\": 42}\n"
      "{\"reason\": \"no address\"}\n"
      "[1, 2]\n";
  ParsedImport r = ParseImport(ExportFormat::kJsonl, jsonl, "+", kT0);
  EXPECT_TRUE(r.entries.empty());
  ASSERT_EQ(r.errors.size(), 5u);
  EXPECT_EQ(r.errors[0], "line 2: unknown field 'colour'");
  EXPECT_EQ(r.errors[1], "line 3: not a JSON object");
  EXPECT_EQ(r.errors[2], "line 5: field 'address' must be a string");
  EXPECT_EQ(r.errors[3], "line 6: missing address");
  EXPECT_EQ(r.errors[4], "line 7: not a JSON object");
}

// Export's JSONL carries the normalised key in "address" and the address as first seen in
// "display"; importing it again keeps the display form (found by import_fuzz's round trip).
TEST(ImportTest, JsonlExportKeepsTheDisplayFormOnImport) {
  ParsedImport r = ParseImport(ExportFormat::kJsonl,
                               "{\"address\":\"john.doe@example.com\",\"display\":"
                               "\"John.Doe@Example.COM\"}\n"
                               "{\"address\":\"a@example.com\",\"display\":\"b@example.com\"}\n",
                               "+", kT0);
  ASSERT_TRUE(r.errors.empty());
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_EQ(r.entries[0].address, "john.doe@example.com");
  EXPECT_EQ(r.entries[0].display, "John.Doe@Example.COM");
  // A display that is another address is not taken: the key decides.
  EXPECT_EQ(r.entries[1].address, "a@example.com");
  EXPECT_EQ(r.entries[1].display, "a@example.com");
  // Times export could not write back (before 1970, after 9999) are refused with their line.
  ParsedImport odd = ParseImport(
      ExportFormat::kJsonl,
      "{\"address\":\"a@example.com\",\"created\":\"0409-11-03T10:00:00Z\"}\n", "+", kT0);
  ASSERT_EQ(odd.errors.size(), 1u);
  EXPECT_EQ(odd.errors[0],
            "line 1: time '0409-11-03T10:00:00Z' in created is out of range (1970 to 9999)");
  std::string again = FormatJsonLine(r.entries[0]);
  ParsedImport back = ParseImport(ExportFormat::kJsonl, again, "+", kT0);
  ASSERT_EQ(back.entries.size(), 1u);
  EXPECT_EQ(back.entries[0].display, "John.Doe@Example.COM");
}

TEST(ImportTest, AllOrNothingThroughTheStore) {
  testing::TempDir dir;
  auto store = testing::OpenStore(dir.File("i.db"));
  auto r = store->Import(ExportFormat::kCsv, "address\ngood@example.com\nbad\n", {0, "import"});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_EQ(r->errors[0], "line 3: invalid address 'bad'");
  EXPECT_FALSE(store->view().Lookup("good@example.com").has_value());
  r = store->Import(ExportFormat::kCsv, "address\ngood@example.com\nOther+x@Example.com\n",
                    {7, "import"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->errors.empty());
  EXPECT_EQ(r->added, 2u);
  EXPECT_TRUE(store->view().Lookup("good@example.com").has_value());
  EXPECT_TRUE(store->view().Lookup("other@example.com")->manual);
}

// Through the store, each reply is classified once (the pass that checks the file), and the
// entries keep the categories it gave.
TEST(ImportTest, TheStoreClassifiesEachReplyOnce) {
  testing::TempDir dir;
  auto store = testing::OpenStore(dir.File("c.db"));
  std::atomic<int> calls{0};
  ImportOptions o;
  o.classify = [&calls](const ImportedReply& r) -> std::string {
    ++calls;
    return r.status == "5.1.1" ? "user_unknown" : "";
  };
  o.category = "mailbox_disabled";
  auto r = store->Import(ExportFormat::kCsv,
                         "email,reason,status\na@example.com,gone,5.1.1\nb@example.com,x,4.0.0\n"
                         "c@example.com,abuse,\n",
                         {0, "from the ESP"}, o);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_TRUE(r->errors.empty()) << r->errors[0];
  EXPECT_EQ(r->added, 3u);
  EXPECT_EQ(r->categorized, 2u);
  EXPECT_EQ(calls.load(), 2);
  std::map<std::string, std::string> categories;
  ASSERT_TRUE(store
                  ->List(ListFilter{},
                         [&](const Suppression& s) {
                           categories[s.address] = s.category;
                           return true;
                         })
                  .ok());
  EXPECT_EQ(categories, (std::map<std::string, std::string>{{"a@example.com", "user_unknown"},
                                                            {"b@example.com", "mailbox_disabled"},
                                                            {"c@example.com", "complaint"}}));
}

// A dry run checks the file and counts what the import would add and update (an address twice
// in the file is an update the second time), per category, and writes nothing.
TEST(ImportTest, ADryRunCountsAndWritesNothing) {
  testing::TempDir dir;
  const std::string path = dir.File("d.db");
  auto store = testing::OpenStore(path);
  ASSERT_TRUE(store->Suppress({"old@example.com", "", 0}, {0, "ticket 1"}).ok());
  ImportOptions o;
  o.dry_run = true;
  const std::string csv =
      "address,category\nold@example.com,user_unknown\nnew@example.com,\n"
      "New+x@example.com,user_unknown\nthird@example.com,complaint\n";
  auto r = store->Import(ExportFormat::kCsv, csv, {0, "test"}, o);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_TRUE(r->errors.empty()) << r->errors[0];
  EXPECT_EQ(r->added, 2u);
  EXPECT_EQ(r->updated, 2u);
  EXPECT_EQ(r->categories,
            (std::map<std::string, size_t>{{"", 1}, {"user_unknown", 2}, {"complaint", 1}}));
  EXPECT_EQ(testing::Scalar(path, "SELECT count(*) FROM suppressions"), 1);
  EXPECT_EQ(testing::Scalar(path, "SELECT count(*) FROM audit WHERE action = 'import'"), 0);
  EXPECT_FALSE(store->view().Lookup("new@example.com").has_value());
  // Errors are found as by the import itself.
  auto bad = store->Import(ExportFormat::kCsv, "address\nnot an address\n", {0, "test"}, o);
  ASSERT_TRUE(bad.ok());
  ASSERT_EQ(bad->errors.size(), 1u);
  // The import itself counts the same, and says the categories too.
  o.dry_run = false;
  r = store->Import(ExportFormat::kCsv, csv, {0, "test"}, o);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->added, 2u);
  EXPECT_EQ(r->updated, 2u);
  EXPECT_EQ(r->categories.at("user_unknown"), 2u);
  EXPECT_EQ(testing::Scalar(path, "SELECT count(*) FROM suppressions"), 3);
}

TEST(ImportTest, ExportImportRoundTripBothFormats) {
  testing::TempDir dir;
  auto a = testing::OpenStore(dir.File("a.db"));
  std::vector<Event> evs = {
      MakeEvent("Hard@Example.com", Category::kUserUnknown, "bounced", kT0),
      MakeEvent("complainer@example.org", Category::kComplaint, "complaint", kT0 + 60)};
  evs[0].result.diagnostic = "550 5.1.1 \"quoted\", with comma";
  ASSERT_TRUE(a->Write(Batch{evs, std::nullopt}).ok());
  ASSERT_TRUE(
      a->Suppress({"manual@example.net", "mailbox_full", kT0 + 86400 * 400}, {0, "asked, twice"})
          .ok());
  for (ExportFormat f : {ExportFormat::kCsv, ExportFormat::kJsonl}) {
    std::string text = ExportAll(*a, f);
    auto b = testing::OpenStore(dir.File(f == ExportFormat::kCsv ? "b.db" : "c.db"));
    auto r = b->Import(f, text, {0, "restore"});
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->errors.empty()) << r->errors[0];
    EXPECT_EQ(r->added, 3u);
    std::vector<Suppression> sa, sb;
    ASSERT_TRUE(
        a->List(ListFilter(), [&](const Suppression& s) { return sa.push_back(s), true; }).ok());
    ASSERT_TRUE(
        b->List(ListFilter(), [&](const Suppression& s) { return sb.push_back(s), true; }).ok());
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t i = 0; i < sa.size(); ++i) {
      EXPECT_EQ(sa[i].address, sb[i].address);
      EXPECT_EQ(sa[i].reason, sb[i].reason);
      EXPECT_EQ(sa[i].category, sb[i].category);
      EXPECT_EQ(sa[i].created, sb[i].created);
      EXPECT_EQ(sa[i].expires, sb[i].expires);
      EXPECT_EQ(sa[i].first_event, sb[i].first_event);
      EXPECT_EQ(sa[i].last_event, sb[i].last_event);
      EXPECT_EQ(sa[i].detail, sb[i].detail);
      EXPECT_EQ(sb[i].source, "import");
    }
    // Exporting the copy gives the same lines apart from the source column.
    std::string again = ExportAll(*b, f);
    EXPECT_EQ(std::count(again.begin(), again.end(), '\n'),
              std::count(text.begin(), text.end(), '\n'));
  }
}

// An ESP's or a spreadsheet's export: its own column names (any case, spaces), a byte order
// mark, fractional seconds; columns import does not know refuse the file unless asked to skip
// them, and then the result names them.
TEST(ImportTest, CsvTakesOtherExportsColumnNames) {
  const std::string csv =
      "\xEF\xBB\xBF\"Email Address\",Origin,\"Created At\",SuppressionReason\n"
      "Alice@Example.com,Recipient,2026-11-01T00:00:00.250Z,HardBounce\n"
      "bob+news@example.org,Customer,1793491200,SpamComplaint\n";
  ParsedImport refused = ParseImport(ExportFormat::kCsv, csv, "+", kT0 + 5);
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_EQ(refused.errors[0].rfind("line 1: unknown column 'Origin'", 0), 0u) << refused.errors[0];
  EXPECT_NE(refused.errors[0].find("--ignore-unknown-columns"), std::string::npos);

  ImportOptions skip;
  skip.ignore_unknown_columns = true;
  ParsedImport r = ParseImport(ExportFormat::kCsv, csv, "+", kT0 + 5, skip);
  ASSERT_TRUE(r.errors.empty()) << r.errors[0];
  EXPECT_EQ(r.ignored_columns, std::vector<std::string>{"Origin"});
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_EQ(r.entries[0].address, "alice@example.com");
  EXPECT_EQ(r.entries[0].display, "Alice@Example.com");
  EXPECT_EQ(r.entries[0].reason, "HardBounce");
  EXPECT_EQ(r.entries[0].created, kT0);
  EXPECT_EQ(r.entries[1].address, "bob@example.org");
  EXPECT_EQ(r.entries[1].created, kT0);
  EXPECT_EQ(r.entries[1].source, "import");

  // Two columns for one field, and no address at all, are errors whatever is skipped.
  ParsedImport twice =
      ParseImport(ExportFormat::kCsv, "email,Address\na@example.com,b@x.org\n", "+", kT0, skip);
  ASSERT_EQ(twice.errors.size(), 1u);
  EXPECT_EQ(twice.errors[0], "line 1: columns 'email' and 'Address' both give address");
  ParsedImport none = ParseImport(ExportFormat::kCsv, "name,list\nx,y\n", "+", kT0, skip);
  ASSERT_EQ(none.errors.size(), 1u);
  EXPECT_EQ(none.errors[0].rfind("line 1: header has no 'address' column", 0), 0u);
}

// JSONL from an API listing (Amazon SES's suppressed destinations, say) reads the same way,
// after a byte order mark too.
TEST(ImportTest, JsonlTakesOtherExportsFieldNames) {
  const std::string jsonl =
      "\xEF\xBB\xBF{\"EmailAddress\":\"carol@example.net\",\"Reason\":\"BOUNCE\","
      "\"LastUpdateTime\":\"2026-11-01T00:00:00Z\",\"Attributes\":{\"x\":1}}\n";
  ParsedImport refused = ParseImport(ExportFormat::kJsonl, jsonl, "+", kT0 + 5);
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_EQ(refused.errors[0], "line 1: unknown field 'Attributes'");
  ImportOptions skip;
  skip.ignore_unknown_columns = true;
  ParsedImport r = ParseImport(ExportFormat::kJsonl, jsonl, "+", kT0 + 5, skip);
  ASSERT_TRUE(r.errors.empty()) << r.errors[0];
  EXPECT_EQ(r.ignored_columns, std::vector<std::string>{"Attributes"});
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_EQ(r.entries[0].address, "carol@example.net");
  EXPECT_EQ(r.entries[0].reason, "BOUNCE");
  EXPECT_EQ(r.entries[0].created, kT0);
}

// An ESP's export says why in its own words, and an entry of a file without a category column
// gets its category from them: complaint words at once; a reply (with the ESP's status and code)
// as `classify` reads it; else the import's default. A file's own category column wins.
TEST(ImportTest, AnEspsReasonGivesTheCategory) {
  std::vector<std::string> asked;
  ImportOptions o;
  o.classify = [&asked](const ImportedReply& r) -> std::string {
    asked.push_back(std::string(r.text) + "|" + std::string(r.status) + "|" + std::string(r.code) +
                    "|" + std::string(r.address));
    if (r.status == "5.1.1" || r.text.find("does not exist") != std::string_view::npos) {
      return "user_unknown";
    }
    return r.code == "552" ? "mailbox_full" : "";
  };
  // SendGrid's bounces: created, email, reason, status.
  const std::string sendgrid =
      "created,email,reason,status\n"
      "1793491200,a@example.com,\"550 5.1.1 The email account does not exist.\",5.1.1\n"
      "1793491200,b@example.com,Mailbox unavailable,5.1.1\n"
      "1793491200,c@example.com,Spam Report,\n"
      "1793491200,d@example.com,customer asked,\n"
      "1793491200,e@example.com,,bounced\n"
      "1793491200,trap@example.com,Spam Trap,\n";
  ParsedImport r = ParseImport(ExportFormat::kCsv, sendgrid, "+", kT0, o);
  ASSERT_TRUE(r.errors.empty()) << r.errors[0];
  ASSERT_EQ(r.entries.size(), 6u);
  EXPECT_EQ(r.entries[0].category, "user_unknown");
  EXPECT_EQ(r.entries[0].detail, "5.1.1");
  EXPECT_EQ(r.entries[0].reason, "550 5.1.1 The email account does not exist.");
  EXPECT_EQ(r.entries[1].category, "user_unknown");
  EXPECT_EQ(r.entries[2].category, "complaint");  // a word: not asked
  EXPECT_EQ(r.entries[3].category, "");
  // No reason, and a status that is none ("bounced"): nothing to ask, no detail.
  EXPECT_EQ(r.entries[4].category, "");
  EXPECT_EQ(r.entries[4].detail, "");
  EXPECT_EQ(r.entries[4].reason, "import");
  // A spam trap is no reply to read (rules would call it spam content): not asked either.
  EXPECT_EQ(r.entries[5].category, "");
  EXPECT_EQ(r.entries[5].reason, "Spam Trap");
  EXPECT_EQ(r.categorized, 3u);
  EXPECT_EQ(asked,
            (std::vector<std::string>{
                "550 5.1.1 The email account does not exist.|5.1.1||a@example.com",
                "Mailbox unavailable|5.1.1||b@example.com", "customer asked|||d@example.com"}));

  // Mailgun's (JSON: a numeric code, a mail date); SparkPost's source words and description.
  const std::string jsonl =
      "{\"address\":\"f@example.org\",\"code\":552,\"error\":\"Quota exceeded\","
      "\"created_at\":\"Fri, 30 Oct 2026 11:02:55 UTC\"}\n"
      "{\"recipient\":\"g@example.org\",\"source\":\"Spam Complaint\",\"description\":\"\"}\n"
      "{\"recipient\":\"h@example.org\",\"source\":\"Manually Added\"}\n";
  asked.clear();
  ParsedImport j = ParseImport(ExportFormat::kJsonl, jsonl, "+", kT0, o);
  ASSERT_TRUE(j.errors.empty()) << j.errors[0];
  ASSERT_EQ(j.entries.size(), 3u);
  EXPECT_EQ(j.entries[0].category, "mailbox_full");
  EXPECT_EQ(j.entries[0].detail, "552");
  EXPECT_EQ(j.entries[0].created, 1793358175);
  EXPECT_EQ(j.entries[1].category, "complaint");
  EXPECT_EQ(j.entries[1].reason, "Spam Complaint");
  EXPECT_EQ(j.entries[1].source, "import");
  EXPECT_EQ(j.entries[2].category, "");
  EXPECT_EQ(j.entries[2].reason, "Manually Added");
  EXPECT_EQ(asked, std::vector<std::string>{"Quota exceeded||552|f@example.org"});

  // The import's default category; a category column (even empty) is never second-guessed.
  o.category = "complaint";
  ParsedImport text = ParseImport(ExportFormat::kText, "i@example.net\n", "+", kT0, o);
  ASSERT_EQ(text.entries.size(), 1u);
  EXPECT_EQ(text.entries[0].category, "complaint");
  EXPECT_EQ(text.categorized, 0u);
  asked.clear();
  ParsedImport own = ParseImport(
      ExportFormat::kCsv, "address,reason,category\nj@example.net,does not exist,\n", "+", kT0, o);
  ASSERT_EQ(own.entries.size(), 1u);
  EXPECT_EQ(own.entries[0].category, "");
  EXPECT_TRUE(asked.empty());
  ParsedImport bad =
      ParseImport(ExportFormat::kCsv, "address,created\nk@example.net,\"Fri, 30 Oct\"\n", "+", kT0);
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0],
            "line 2: bad time 'Fri, 30 Oct' in created (RFC 3339, an RFC 5322 date or Unix "
            "seconds)");
}

// The display form is the address as written without the blanks around it (found by
// import_fuzz: a trailing tab came back from export as a space, another display form).
TEST(ImportTest, DisplayFormHasNoSurroundingBlanks) {
  for (ExportFormat f : {ExportFormat::kCsv, ExportFormat::kJsonl}) {
    const std::string data = f == ExportFormat::kCsv ? "address\n\" Ann@Example.org\t\"\n"
                                                     : "{\"address\":\" Ann@Example.org\\t\"}\n";
    ParsedImport r = ParseImport(f, data, "+", kT0);
    ASSERT_TRUE(r.errors.empty()) << r.errors[0];
    ASSERT_EQ(r.entries.size(), 1u);
    EXPECT_EQ(r.entries[0].display, "Ann@Example.org");
    ParsedImport back =
        ParseImport(f,
                    (f == ExportFormat::kCsv ? std::string(kCsvHeader) + "\n" : std::string()) +
                        FormatExportLine(f, r.entries[0]),
                    "+", kT0);
    ASSERT_EQ(back.entries.size(), 1u);
    EXPECT_EQ(back.entries[0].display, "Ann@Example.org");
  }
}

// A plain list: one address per line; blanks, comments and surrounding spaces do not count,
// and a bad line is named like any other.
TEST(ImportTest, TextIsOneAddressPerLine) {
  const std::string text =
      "# unsubscribed before the move\n"
      "  Dave+promo@Example.com \r\n"
      "\n"
      "erin@example.org\n";
  ParsedImport r = ParseImport(ExportFormat::kText, text, "+", kT0);
  ASSERT_TRUE(r.errors.empty()) << r.errors[0];
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_EQ(r.entries[0].address, "dave@example.com");
  EXPECT_EQ(r.entries[0].reason, "import");
  EXPECT_EQ(r.entries[0].created, kT0);
  EXPECT_EQ(r.entries[1].address, "erin@example.org");

  // '#' then a blank, or a '#' line without '@', is a comment; an address may start with '#'.
  ParsedImport hash = ParseImport(ExportFormat::kText, "#\n#ops@example.com\n#note\n", "+", kT0);
  ASSERT_TRUE(hash.errors.empty()) << hash.errors[0];
  ASSERT_EQ(hash.entries.size(), 1u);
  EXPECT_EQ(hash.entries[0].address, "#ops@example.com");

  ParsedImport bad = ParseImport(ExportFormat::kText, "ok@example.com\nnot an address\n", "+", kT0);
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0], "line 2: invalid address 'not an address'");
  EXPECT_TRUE(bad.entries.empty());

  // Export writes the keys, and they read back as the same entries.
  testing::TempDir dir;
  auto store = testing::OpenStore(dir.File("t.db"));
  auto imported = store->Import(ExportFormat::kText, text, {0, "move"});
  ASSERT_TRUE(imported.ok());
  EXPECT_EQ(imported->added, 2u);
  EXPECT_EQ(ExportAll(*store, ExportFormat::kText), "dave@example.com\nerin@example.org\n");
  EXPECT_EQ(ExportFormatFromName("txt"), ExportFormat::kText);
  EXPECT_STREQ(ExportFormatName(ExportFormat::kText), "text");
}

}  // namespace
}  // namespace bounced
