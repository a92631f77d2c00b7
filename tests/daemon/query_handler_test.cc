// query_handler_test.cc: the query socket's requests answered in process (HandleQuery and the
// query session) over a real Store (SQLite in a temp directory): `expires` and `since` values
// that would overflow, lie in the past or too far ahead are refused with a clear error and
// change nothing; a session given many pipelined requests answers them in order in rounds of
// about kMaxPendingReplyBytes, holding the rest as requests.
#include "daemon/query_handler.h"

#include <ctime>

#include "classifier/rules.h"
#include "daemon/services.h"
#include "storage/store.h"
#include "tests/daemon/daemon_harness.h"

namespace bounced::testing {
namespace {

class QueryHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions o;
    o.path = dir_ / "bounced.db";
    o.synchronous_full = false;
    auto store = Store::Open(o);
    ASSERT_TRUE(store.ok()) << store.error();
    services_.SetStore(std::shared_ptr<Store>(std::move(*store)));
    services_.SetRules(RuleSet::Default(), {"(embedded default)"});
  }

  json Ask(const json& request) { return HandleQuery(services_, root_, true, request); }

  json Suppress(const std::string& address, const json& expires) {
    return Ask(
        {{"cmd", "suppress"}, {"address", address}, {"reason", "test"}, {"expires", expires}});
  }

  bool Suppressed(const std::string& address) {
    json r = Ask({{"cmd", "status"}, {"address", address}});
    EXPECT_TRUE(r["ok"]) << r;
    return r["result"].value("suppressed", false);
  }

  // The error of a refused request ("" when it was not refused).
  static std::string Error(const json& reply) {
    return reply.value("ok", true) ? "" : reply.value("error", std::string("(no error text)"));
  }

  TempDir dir_;
  Services services_;
  PeerCred root_{1, 0, 0};
};

// A manual reason is stored without control characters (an escape sequence typed or pasted
// into --reason would otherwise reach every terminal that lists it).
TEST_F(QueryHandlerTest, ManualReasonsAreStoredWithoutControlCharacters) {
  json r = Ask({{"cmd", "suppress"},
                {"address", "a@example.com"},
                {"reason",
                 "ticket\x1b]0;pwned\x07 42\r\n\xc2\x9b"
                 "31m \xc3\xa9t\xc3\xa9"}});
  ASSERT_TRUE(r["ok"]) << r;
  EXPECT_EQ(r["result"]["reason"], "ticket ]0;pwned  42   31m \xc3\xa9t\xc3\xa9") << r;
  r = Ask({{"cmd", "allow"}, {"entry", "b@example.com"}, {"reason", "ok\x1b[2J"}});
  ASSERT_TRUE(r["ok"]) << r;
  r = Ask({{"cmd", "allowlist"}});
  ASSERT_TRUE(r["ok"]) << r;
  EXPECT_EQ(r["result"][0]["reason"], "ok [2J") << r;
}

TEST_F(QueryHandlerTest, RefusesAnExpirySpanThatWouldOverflow) {
  for (const char* span :
       {"999999999999999d", "99999999999999999999999d", "9999999999999w", "36526d"}) {
    json r = Suppress("a@example.com", span);
    EXPECT_FALSE(r["ok"]) << span << ": " << r;
  }
  json r = Suppress("a@example.com", "999999999999999d");
  EXPECT_EQ(Error(r), "\"expires\": the span 999999999999999d is longer than 100 years") << r;
  EXPECT_FALSE(Suppressed("a@example.com"));
}

TEST_F(QueryHandlerTest, RefusesAnExpiryThatIsNotInTheFuture) {
  const int64_t now = std::time(nullptr);
  for (const json& when : {json("2020-01-01"), json("2020-01-01T10:00:00Z"), json("0d"),
                           json(now - 60), json(int64_t{-5})}) {
    json r = Suppress("b@example.com", when);
    EXPECT_NE(Error(r).find("is not in the future"), std::string::npos) << when << ": " << r;
    EXPECT_NE(Error(r).find("nothing changed"), std::string::npos) << r;
  }
  EXPECT_EQ(Error(Suppress("b@example.com", "2020-01-01")).rfind("\"expires\": 2020-01-01 is", 0),
            0u);
  EXPECT_FALSE(Suppressed("b@example.com"));
}

TEST_F(QueryHandlerTest, RefusesAnExpiryMoreThanAHundredYearsAhead) {
  const int64_t now = std::time(nullptr);
  for (const json& when : {json("9999-12-31"), json(now + int64_t{101} * 365 * 86400),
                           json(uint64_t{18446744073709551615u}), json("36600d")}) {
    json r = Suppress("c@example.com", when);
    EXPECT_FALSE(r["ok"]) << when << ": " << r;
    EXPECT_TRUE(Error(r).find("more than 100 years ahead") != std::string::npos ||
                Error(r).find("longer than 100 years") != std::string::npos)
        << r;
  }
  EXPECT_FALSE(Suppressed("c@example.com"));
}

TEST_F(QueryHandlerTest, AcceptsFutureExpiriesAndNever) {
  const int64_t now = std::time(nullptr);
  json r = Suppress("d@example.com", "30d");
  ASSERT_TRUE(r["ok"]) << r;
  EXPECT_TRUE(Suppressed("d@example.com"));
  r = Suppress("e@example.com", "36500d");  // just under the bound
  EXPECT_TRUE(r["ok"]) << r;
  r = Suppress("f@example.com", now + 3600);
  EXPECT_TRUE(r["ok"]) << r;
  EXPECT_TRUE(Suppressed("f@example.com"));
  for (const json& never : {json("never"), json(0), json(nullptr)}) {
    r = Suppress("g@example.com", never);
    ASSERT_TRUE(r["ok"]) << never << ": " << r;
    EXPECT_TRUE(r["result"]["expires"].is_null()) << r;
  }
}

TEST_F(QueryHandlerTest, RefusesASinceSpanThatWouldOverflow) {
  json r = Ask({{"cmd", "list"}, {"since", "999999999999999d"}});
  EXPECT_EQ(Error(r), "\"since\": the span 999999999999999d is longer than 100 years") << r;
  r = Ask({{"cmd", "list"}, {"since", "7d"}});
  EXPECT_TRUE(r["ok"]) << r;
}

TEST_F(QueryHandlerTest, SessionStopsAnsweringOnceItsPendingReplyReachesTheBound) {
  // An allowlist reply of about 40 KiB for a request of 20 bytes.
  std::shared_ptr<Store> store = services_.store();
  for (int i = 0; i < 200; ++i) {
    auto a = store->Allow(
        "allowed" + std::to_string(i) + "@example.com",
        Actor{0, "a reason long enough to make each entry weigh " + std::string(100, 'x')});
    ASSERT_TRUE(a.ok()) << a.error();
  }
  const size_t one_reply = ReplyLine(Ask({{"cmd", "allowlist"}})).size();
  ASSERT_GT(one_reply, 30u * 1024);
  const int n = 100;  // about four times the bound in replies
  std::string requests;
  for (int i = 0; i < n; ++i) requests += "{\"cmd\":\"allowlist\"}\n";
  requests += json{{"cmd", "lookup"}, {"address", "last@example.com"}}.dump() + "\n";

  std::unique_ptr<Session> session = MakeQuerySession(services_, root_, 1 << 20, "");
  std::string reply;
  ASSERT_TRUE(session->OnData(requests, &reply));
  EXPECT_GE(reply.size(), kMaxPendingReplyBytes);
  EXPECT_LT(reply.size(), kMaxPendingReplyBytes + one_reply);
  EXPECT_TRUE(session->HasPendingRequests());
  // The connection writes that, then asks for the rest: every request answered, in order.
  std::string all = reply;
  int rounds = 1;
  while (session->HasPendingRequests()) {
    reply.clear();
    ASSERT_TRUE(session->OnData({}, &reply));
    ASSERT_FALSE(reply.empty());
    EXPECT_LT(reply.size(), kMaxPendingReplyBytes + one_reply);
    all += reply;
    ASSERT_LT(++rounds, 10);
  }
  EXPECT_GE(rounds, 4);
  std::istringstream lines(all);
  std::string line;
  int answered = 0;
  while (std::getline(lines, line)) {
    json r = json::parse(line);
    ASSERT_TRUE(r["ok"]) << line.substr(0, 200);
    if (++answered <= n) {
      EXPECT_EQ(r["result"].size(), 200u);
    } else {
      EXPECT_EQ(r["result"]["address"], "last@example.com");
    }
  }
  EXPECT_EQ(answered, n + 1);
}

// A user without write permission may ask what a bulk unsuppress would lift (it only reads),
// and nothing else of unsuppress: not the lift, not a dry run that names an address.
TEST_F(QueryHandlerTest, ABulkDryRunIsAReadTheLiftIsAWrite) {
  ASSERT_TRUE(Suppress("a@example.com", nullptr)["ok"]);
  const PeerCred reader{2, 65534, 65534};
  auto ask_as_reader = [&](const json& request) {
    return HandleQuery(services_, reader, false, request);
  };
  json r = ask_as_reader({{"cmd", "unsuppress"}, {"domain", "example.com"}, {"dry_run", true}});
  ASSERT_TRUE(r["ok"]) << r;
  EXPECT_EQ(r["result"]["count"], 1);
  for (const json& refused :
       {json{{"cmd", "unsuppress"}, {"domain", "example.com"}, {"reason", "x"}},
        json{{"cmd", "unsuppress"}, {"domain", "example.com"}, {"dry_run", false}, {"reason", "x"}},
        json{{"cmd", "unsuppress"}, {"domain", "example.com"}, {"dry_run", "yes"}},
        json{{"cmd", "unsuppress"}, {"address", "a@example.com"}, {"dry_run", true}}}) {
    EXPECT_NE(Error(ask_as_reader(refused)).find("permission denied"), std::string::npos)
        << refused;
  }
  EXPECT_TRUE(Suppressed("a@example.com"));
}

}  // namespace
}  // namespace bounced::testing
