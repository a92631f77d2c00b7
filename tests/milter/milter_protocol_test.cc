// milter_protocol_test.cc: the real milter (StartMilter, libmilter, a real Store on a temp SQLite
// file, the default rules) driven over its unix socket by a small MTA-side client speaking the
// Sendmail milter protocol v6, as Postfix does. libmilter is process-global, so one milter serves
// every test here (started once by the environment below); each test uses its own addresses.
#include <gtest/gtest.h>
#include <libmilter/mfdef.h>
#include <poll.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "classifier/rules.h"
#include "milter/milter.h"
#include "milter/store_dependencies.h"
#include "storage/store.h"
#include "tests/large_bounce.h"

namespace bounced {
namespace {

// Longer than any test holds the database locked: a record waits for its commit until then.
constexpr std::chrono::milliseconds kCommitWait{120000};

std::filesystem::path g_dir;
std::unique_ptr<Store> g_store;
std::string g_socket;

class MilterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    g_dir = std::filesystem::temp_directory_path() /
            ("bounced-milter-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(g_dir);
    StoreOptions so;
    so.path = (g_dir / "bounced.db").string();
    // Writes wait as long as a test holds the database locked (WriteLock below), and so do the
    // milter's records (commit wait): what is stuck behind the lock stays stuck until it is
    // released, whatever the machine's speed.
    so.busy_timeout_ms = 120000;
    auto store = Store::Open(so);
    ASSERT_TRUE(store.ok()) << store.error();
    g_store = std::move(*store);
    g_socket = (g_dir / "milter.sock").string();
    MilterConfig c;
    c.socket = "unix:" + g_socket;
    // [verp] on, for return paths "bounces+...": the other tests' recipients are none.
    c.verp = VerpFormat{.prefixes = {"bounces"}};
    auto rules = RuleSet::Default();
    Status s = StartMilter(c, MilterDependenciesForStore(
                                  *g_store, [rules] { return rules; }, kCommitWait));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  void TearDown() override {
    StopMilter();
    g_store.reset();
    std::filesystem::remove_all(g_dir);
  }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new MilterEnvironment);

// The MTA side of one milter connection.
class Mta {
 public:
  Mta() {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", g_socket.c_str());
    ok_ = fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  ~Mta() {
    if (fd_ >= 0) {
      Send(SMFIC_QUIT, "");
      close(fd_);
    }
  }
  bool ok() const { return ok_; }

  void Send(char cmd, const std::string& data) {
    uint32_t len = htonl(static_cast<uint32_t>(data.size() + 1));
    std::string pkt(reinterpret_cast<char*>(&len), 4);
    pkt.push_back(cmd);
    pkt += data;
    ASSERT_EQ(write(fd_, pkt.data(), pkt.size()), static_cast<ssize_t>(pkt.size()));
  }
  // One reply packet: (command, data). ('\0', "") on timeout or EOF.
  std::pair<char, std::string> Read() {
    std::string hdr = ReadN(5);
    if (hdr.size() < 5) return {'\0', ""};
    uint32_t len;
    memcpy(&len, hdr.data(), 4);
    len = ntohl(len);
    return {hdr[4], ReadN(len - 1)};
  }

  // Option negotiation as Postfix 3.7 offers it: every action, every protocol step flag.
  void Negotiate() {
    std::string d;
    for (uint32_t v : {6u, 0x1ffu, 0x1fffffu}) {
      uint32_t n = htonl(v);
      d.append(reinterpret_cast<char*>(&n), 4);
    }
    Send(SMFIC_OPTNEG, d);
    auto [cmd, data] = Read();
    ASSERT_EQ(cmd, SMFIC_OPTNEG);
    ASSERT_GE(data.size(), 12u);
    uint32_t p;
    memcpy(&p, data.data() + 8, 4);
    protocol_ = ntohl(p);
  }
  // A connect event; returns the reply command or 0 when the milter negotiated no reply.
  char Connect(const std::string& host, const std::string& addr, uint16_t port) {
    std::string d = host + '\0' + SMFIA_INET;
    uint16_t p = htons(port);
    d.append(reinterpret_cast<char*>(&p), 2);
    d += addr + '\0';
    Send(SMFIC_CONNECT, d);
    return (protocol_ & SMFIP_NR_CONN) ? 0 : Read().first;
  }
  char Mail(const std::string& from) {
    Send(SMFIC_MAIL, from + '\0');
    return (protocol_ & SMFIP_NR_MAIL) ? 0 : Read().first;
  }
  std::pair<char, std::string> Rcpt(const std::string& to) {
    Send(SMFIC_RCPT, to + '\0');
    return Read();
  }
  void Header(const std::string& name, const std::string& value) {
    Send(SMFIC_HEADER, name + '\0' + value + '\0');
    if (!(protocol_ & SMFIP_NR_HDR)) Read();
  }
  char Eoh() {
    Send(SMFIC_EOH, "");
    return (protocol_ & SMFIP_NR_EOH) ? 0 : Read().first;
  }
  char Body(const std::string& chunk) {
    Send(SMFIC_BODY, chunk);
    return Read().first;
  }
  // End of message: every packet up to the final verdict.
  std::vector<std::pair<char, std::string>> Eom(const std::string& queue_id) {
    Send(SMFIC_MACRO, std::string(1, SMFIC_BODYEOB) + "i" + '\0' + queue_id + '\0');
    Send(SMFIC_BODYEOB, "");
    std::vector<std::pair<char, std::string>> out;
    for (;;) {
      auto r = Read();
      out.push_back(r);
      if (r.first == '\0' || r.first == SMFIR_CONTINUE || r.first == SMFIR_ACCEPT ||
          r.first == SMFIR_DISCARD || r.first == SMFIR_REJECT || r.first == SMFIR_TEMPFAIL ||
          r.first == SMFIR_REPLYCODE)
        return out;
    }
  }

 private:
  std::string ReadN(size_t n) {
    std::string out;
    while (out.size() < n) {
      pollfd pfd{fd_, POLLIN, 0};
      if (poll(&pfd, 1, 10000) <= 0) break;
      char buf[4096];
      ssize_t r = read(fd_, buf, std::min(sizeof buf, n - out.size()));
      if (r <= 0) break;
      out.append(buf, static_cast<size_t>(r));
    }
    return out;
  }
  int fd_ = -1;
  bool ok_ = false;
  uint32_t protocol_ = 0;
};

// Another process's write transaction on the store's database (as a `sqlite3` shell doing
// BEGIN IMMEDIATE): the store's writer cannot commit until it ends. Ended by the destructor.
class WriteLock {
 public:
  WriteLock() {
    ok_ = sqlite3_open_v2(g_store->path().c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) ==
              SQLITE_OK &&
          sqlite3_busy_timeout(db_, 10000) == SQLITE_OK &&
          sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  ~WriteLock() {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }
  bool ok() const { return ok_; }

 private:
  sqlite3* db_ = nullptr;
  bool ok_ = false;
};

// tests/data/milter/remote_dsn.eml: a DSN as a remote MTA sends it back over SMTP (CRLF lines).
std::string RemoteDsn() {
  std::ifstream in(std::string(BOUNCED_TEST_DATA) + "/milter/remote_dsn.eml", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The headers (folded ones whole), end of headers and the body of a CRLF message, as Postfix
// sends them to a milter that wants the body (a possible bounce).
void SendMessage(Mta& mta, const std::string& msg) {
  const size_t split = msg.find("\r\n\r\n");
  ASSERT_NE(split, std::string::npos);
  const std::string head = msg.substr(0, split + 2);
  for (size_t pos = 0; pos < head.size();) {
    size_t eol = head.find("\r\n", pos);
    std::string line = head.substr(pos, eol - pos);
    pos = eol + 2;
    while (pos < head.size() && (head[pos] == ' ' || head[pos] == '\t')) {  // folded
      size_t next = head.find("\r\n", pos);
      line += "\r\n" + head.substr(pos, next - pos);
      pos = next + 2;
    }
    size_t colon = line.find(':');
    mta.Header(line.substr(0, colon), line.substr(colon + 2));
  }
  EXPECT_EQ(mta.Eoh(), SMFIR_CONTINUE);
  EXPECT_EQ(mta.Body(msg.substr(split + 4)), SMFIR_CONTINUE);
}

void SuppressByHand(const std::string& address) {
  ManualSuppression m;
  m.address = address;
  m.category = "user_unknown";
  auto s = g_store->Suppress(m, Actor{0, "milter protocol test"});
  ASSERT_TRUE(s.ok()) << s.error();
}

TEST(MilterProtocol, RejectsSuppressedRecipientAtRcptAndLetsOthersThrough) {
  SuppressByHand("gone-1@example.org");
  Mta mta;
  ASSERT_TRUE(mta.ok());
  mta.Negotiate();
  mta.Connect("[192.0.2.10]", "192.0.2.10", 40000);
  mta.Mail("<sender@e2e.test>");
  auto [cmd, text] = mta.Rcpt("<Gone-1@Example.org>");
  ASSERT_EQ(cmd, SMFIR_REPLYCODE);
  EXPECT_EQ(text.substr(0, 10), "550 5.1.1 ");
  EXPECT_NE(text.find("<Gone-1@Example.org>: recipient suppressed since"), std::string::npos);
  EXPECT_NE(text.find("(user_unknown); not sent"), std::string::npos);
  EXPECT_EQ(mta.Rcpt("<fine-1@example.org>").first, SMFIR_CONTINUE);
  // Not a bounce and nothing to change: accepted at end of headers (no body, no EOM).
  mta.Header("Subject", "hello");
  EXPECT_EQ(mta.Eoh(), SMFIR_ACCEPT);
}

TEST(MilterProtocol, SuppressionAppliesOnTheVeryNextRcpt) {
  Mta mta;
  ASSERT_TRUE(mta.ok());
  mta.Negotiate();
  mta.Connect("[192.0.2.11]", "192.0.2.11", 40001);
  mta.Mail("<sender@e2e.test>");
  EXPECT_EQ(mta.Rcpt("<later-2@example.org>").first, SMFIR_CONTINUE);
  SuppressByHand("later-2@example.org");
  EXPECT_EQ(mta.Rcpt("<later-2@example.org>").first, SMFIR_REPLYCODE);
}

// Postfix hands the milter the recipient as the client wrote it, quotes included, while it
// logs and looks up "john.doe"@x as john.doe@x: the suppression of the one is the other's.
TEST(MilterProtocol, QuotedLocalPartIsTheMailboxPostfixMakesOfIt) {
  SuppressByHand("john.doe-8@example.org");
  SuppressByHand("\"Jane Roe-8\"@example.org");
  Mta mta;
  ASSERT_TRUE(mta.ok());
  mta.Negotiate();
  mta.Connect("[192.0.2.18]", "192.0.2.18", 40018);
  mta.Mail("<sender@e2e.test>");
  for (const char* rcpt : {"<\"john.doe-8\"@example.org>", "<\"John.Doe-8+x\"@example.org>",
                           "<\"jane roe-8\"@example.org>"}) {
    auto [cmd, text] = mta.Rcpt(rcpt);
    ASSERT_EQ(cmd, SMFIR_REPLYCODE) << rcpt;
    EXPECT_EQ(text.substr(0, 10), "550 5.1.1 ") << rcpt;
  }
  // A dot for the space is another mailbox.
  EXPECT_EQ(mta.Rcpt("<\"jane.roe-8\"@example.org>").first, SMFIR_CONTINUE);
}

TEST(MilterProtocol, SendmailPathRemovesSuppressedRecipientAtEndOfMessage) {
  SuppressByHand("gone-3@example.org");
  Mta mta;
  ASSERT_TRUE(mta.ok());
  mta.Negotiate();
  mta.Connect("localhost", "127.0.0.1", 0);  // cleanup(8)'s emulated connect for sendmail(1)
  mta.Mail("sender@e2e.test");
  EXPECT_EQ(mta.Rcpt("gone-3@example.org").first, SMFIR_CONTINUE);  // never refused here
  EXPECT_EQ(mta.Rcpt("fine-3@example.org").first, SMFIR_CONTINUE);
  mta.Header("Subject", "from sendmail");
  EXPECT_EQ(mta.Eoh(), SMFIR_CONTINUE);  // work left for end of message
  auto eom = mta.Eom("QID3");
  ASSERT_EQ(eom.size(), 3u);
  EXPECT_EQ(eom[0].first, SMFIR_DELRCPT);
  EXPECT_EQ(eom[0].second, std::string("gone-3@example.org") + '\0');
  EXPECT_EQ(eom[1].first, SMFIR_ADDHEADER);
  EXPECT_EQ(eom[1].second, std::string("X-Bounced-Suppressed") + '\0' +
                               "gone-3@example.org (user_unknown)" + '\0');
  EXPECT_EQ(eom[2].first, SMFIR_CONTINUE);
}

TEST(MilterProtocol, SendmailMailWithOnlySuppressedRecipientsIsDiscarded) {
  SuppressByHand("gone-4@example.org");
  Mta mta;
  ASSERT_TRUE(mta.ok());
  mta.Negotiate();
  mta.Connect("localhost", "127.0.0.1", 0);
  mta.Mail("sender@e2e.test");
  mta.Rcpt("gone-4@example.org");
  mta.Eoh();
  auto eom = mta.Eom("QID4");
  ASSERT_FALSE(eom.empty());
  EXPECT_EQ(eom.back().first, SMFIR_DISCARD);
}

// The sendmail(1) message of the two tests below: from an application, auto-generated (so the
// milter captures it as a possible bounce, and parses it at end of message), to a suppressed
// recipient and a good one.
std::vector<std::pair<char, std::string>> SendAutoGeneratedMail(const std::string& gone,
                                                                const std::string& fine,
                                                                const std::string& queue_id) {
  Mta mta;
  EXPECT_TRUE(mta.ok());
  mta.Negotiate();
  mta.Connect("localhost", "127.0.0.1", 0);
  mta.Mail("app@example.com");
  EXPECT_EQ(mta.Rcpt(gone).first, SMFIR_CONTINUE);
  EXPECT_EQ(mta.Rcpt(fine).first, SMFIR_CONTINUE);
  mta.Header("Subject", "your report");
  mta.Header("Auto-Submitted", "auto-generated");
  EXPECT_EQ(mta.Eoh(), SMFIR_CONTINUE);
  EXPECT_EQ(mta.Body("The report is ready.\r\n"), SMFIR_CONTINUE);
  return mta.Eom(queue_id);
}

void ExpectRemoved(const std::vector<std::pair<char, std::string>>& eom, const std::string& gone) {
  ASSERT_EQ(eom.size(), 3u);
  EXPECT_EQ(eom[0].first, SMFIR_DELRCPT);
  EXPECT_EQ(eom[0].second, gone + '\0');
  EXPECT_EQ(eom[1].first, SMFIR_ADDHEADER);
  EXPECT_EQ(eom[1].second,
            std::string("X-Bounced-Suppressed") + '\0' + gone + " (user_unknown)" + '\0');
  EXPECT_EQ(eom[2].first, SMFIR_CONTINUE);
}

// Enforcement records wait for their commit; with the database locked, two of them wait until
// it is released. End-of-message bounce work does not queue behind them: the message is read
// as no bounce in time (no callback timeout) and its suppressed recipient is removed.
TEST(MilterProtocol, RecordsStuckOnALockedDatabaseDoNotHoldUpEndOfMessage) {
  SuppressByHand("gone-6@example.org");
  SuppressByHand("gone-6b@example.org");
  const uint64_t timeouts_before = GetMilterStats().callback_timeouts;
  {
    WriteLock lock;
    ASSERT_TRUE(lock.ok());
    for (const char* rcpt : {"<gone-6@example.org>", "<gone-6b@example.org>"}) {
      Mta smtp;
      ASSERT_TRUE(smtp.ok());
      smtp.Negotiate();
      smtp.Connect("[192.0.2.16]", "192.0.2.16", 40016);
      smtp.Mail("<sender@e2e.test>");
      EXPECT_EQ(smtp.Rcpt(rcpt).first, SMFIR_REPLYCODE);  // rejected; its record is queued
    }
    ExpectRemoved(SendAutoGeneratedMail("gone-6@example.org", "fine-6@example.org", "QID6"),
                  "gone-6@example.org");
    EXPECT_EQ(GetMilterStats().callback_timeouts, timeouts_before);
  }
  ASSERT_TRUE(g_store->Flush().ok());
}

// Bounce work that times out (here: behind a bounce whose recording waits for the locked
// database) says nothing about whether the message is a bounce. The message is kept and, as
// for any message of a non-null sender, its suppressed recipient is removed.
TEST(MilterProtocol, ABounceCheckThatTimesOutStillRemovesSuppressedRecipients) {
  SuppressByHand("gone-7@example.org");
  // The remote DSN of CapturesRemoteDsnRecordsItOnceAndKeepsIt, as another bounce (its own
  // Message-ID and recipient).
  std::string msg = RemoteDsn();
  for (auto [from, to] : {std::pair<std::string, std::string>{"dsn-remote-1@", "dsn-remote-7@"},
                          {"remote-gone@", "remote-gone-7@"}}) {
    for (size_t pos = msg.find(from); pos != std::string::npos; pos = msg.find(from, pos)) {
      msg.replace(pos, from.size(), to);
      pos += to.size();
    }
  }
  const uint64_t timeouts_before = GetMilterStats().callback_timeouts;
  {
    WriteLock lock;
    ASSERT_TRUE(lock.ok());
    // A DSN over SMTP: its recording cannot commit, so the bounce worker stays on it until the
    // lock is released (its own end of message times out, and it is kept).
    Mta dsn;
    ASSERT_TRUE(dsn.ok());
    dsn.Negotiate();
    dsn.Connect("[198.51.100.7]", "198.51.100.7", 41007);
    dsn.Mail("<>");
    EXPECT_EQ(dsn.Rcpt("<sender@e2e.test>").first, SMFIR_CONTINUE);
    SendMessage(dsn, msg);
    auto dsn_eom = dsn.Eom("QID7DSN");
    ASSERT_FALSE(dsn_eom.empty());
    EXPECT_EQ(dsn_eom.back().first, SMFIR_CONTINUE);
    ExpectRemoved(SendAutoGeneratedMail("gone-7@example.org", "fine-7@example.org", "QID7"),
                  "gone-7@example.org");
    EXPECT_EQ(GetMilterStats().callback_timeouts, timeouts_before + 2);
  }
  ASSERT_TRUE(g_store->Flush().ok());
}

TEST(MilterProtocol, CapturesRemoteDsnRecordsItOnceAndKeepsIt) {
  const std::string msg = RemoteDsn();
  for (int attempt = 0; attempt < 2; ++attempt) {  // a remote MTA retrying the same DSN
    Mta mta;
    ASSERT_TRUE(mta.ok());
    mta.Negotiate();
    mta.Connect("[198.51.100.7]", "198.51.100.7", 41000 + attempt);
    mta.Mail("<>");
    EXPECT_EQ(mta.Rcpt("<sender@e2e.test>").first, SMFIR_CONTINUE);
    SendMessage(mta, msg);
    auto eom = mta.Eom("QID5" + std::to_string(attempt));
    ASSERT_FALSE(eom.empty());
    EXPECT_EQ(eom.back().first, SMFIR_CONTINUE);  // bounces = keep
  }
  ASSERT_TRUE(g_store->Flush().ok());
  auto st = g_store->GetStatus("remote-gone@yahoo.com", 20);
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_TRUE(st->suppressed);
  int from_milter = 0;
  for (const auto& e : st->events) from_milter += e.event.source == EventSource::kMilter;
  EXPECT_EQ(from_milter, 1);
  MilterStats stats = GetMilterStats();
  EXPECT_GE(stats.bounces_seen, 2u);
  EXPECT_GE(stats.rcpt_checked, 1u);
}

// A bounce to a VERP return path ([verp] on) is about the recipient the path encodes: one that
// names no recipient is recorded (and suppressed) for it, one that names another address (the
// mail was forwarded) has it as its original recipient.
TEST(MilterProtocol, ABounceToAVerpReturnPathIsAboutTheRecipientItEncodes) {
  auto bounce = [](const std::string& verp, const std::string& text, const std::string& qid) {
    Mta mta;
    ASSERT_TRUE(mta.ok());
    mta.Negotiate();
    mta.Connect("[198.51.100.8]", "198.51.100.8", 42000);
    mta.Mail("<>");
    EXPECT_EQ(mta.Rcpt("<" + verp + ">").first, SMFIR_CONTINUE);
    SendMessage(mta, "From: MAILER-DAEMON@mx.example.net\r\nTo: " + verp +
                         "\r\nSubject: Undeliverable: news\r\nMessage-ID: <" + qid +
                         "@mx.example.net>\r\n\r\nYour message could not be delivered" + text +
                         ".\r\n\r\nThe remote server said: 550 5.1.1 User unknown\r\n");
    auto eom = mta.Eom(qid);
    ASSERT_FALSE(eom.empty());
    EXPECT_EQ(eom.back().first, SMFIR_CONTINUE);
  };
  const uint64_t verp_before = GetMilterStats().bounces_verp;
  bounce("bounces+verp-gone=example.com@e2e.test", "", "VERP1");
  bounce("bounces+alumni=example.edu@e2e.test", " to verp-fwd@example.net", "VERP2");
  ASSERT_TRUE(g_store->Flush().ok());
  auto gone = g_store->GetStatus("verp-gone@example.com", 20);
  ASSERT_TRUE(gone.ok()) << gone.error();
  EXPECT_TRUE(gone->suppressed);
  ASSERT_EQ(gone->events.size(), 1u);
  EXPECT_EQ(gone->events[0].event.result.category, Category::kUserUnknown);
  EXPECT_EQ(gone->events[0].event.source, EventSource::kMilter);
  auto fwd = g_store->GetStatus("verp-fwd@example.net", 20);
  ASSERT_TRUE(fwd.ok()) << fwd.error();
  ASSERT_EQ(fwd->events.size(), 1u);
  EXPECT_EQ(fwd->events[0].event.result.original_recipient, "alumni@example.edu");
  EXPECT_EQ(GetMilterStats().bounces_verp, verp_before + 2);
  // The return path itself is nobody's status.
  auto path = g_store->GetStatus("bounces+verp-gone=example.com@e2e.test", 20);
  ASSERT_TRUE(path.ok()) << path.error();
  EXPECT_TRUE(path->events.empty());
  EXPECT_FALSE(g_store->view().Lookup("alumni@example.edu").has_value());
  // With [policy] suppress_original_recipient, the address sent to is suppressed with the one it
  // forwarded to, and refused at the next RCPT.
  SuppressionPolicy policy;
  policy.suppress_original_recipient = true;
  g_store->SetPolicy(policy);
  bounce("bounces+alumni2=example.edu@e2e.test", " to verp-fwd2@example.net", "VERP3");
  ASSERT_TRUE(g_store->Flush().ok());
  g_store->SetPolicy(SuppressionPolicy());
  EXPECT_TRUE(g_store->view().Lookup("verp-fwd2@example.net").has_value());
  EXPECT_TRUE(g_store->view().Lookup("alumni2@example.edu").has_value());
  Mta mta;
  ASSERT_TRUE(mta.ok());
  mta.Negotiate();
  mta.Connect("[198.51.100.9]", "198.51.100.9", 42001);
  mta.Mail("<news@e2e.test>");
  EXPECT_EQ(mta.Rcpt("<alumni2@example.edu>").first, SMFIR_REPLYCODE);
}

// A reload's new [milter] keys reach the running milter (ReconfigureMilter): a message keeps the
// configuration of its MAIL FROM, the next one takes the new; an invalid one is refused and the
// running one kept; the socket file gets its new mode; the socket itself stays.
TEST(MilterProtocol, ANewConfigurationAppliesFromTheNextMessage) {
  const MilterConfig started = CurrentMilterConfig();
  struct Restore {
    MilterConfig c;
    ~Restore() { EXPECT_TRUE(ReconfigureMilter(c).ok()); }
  } restore{started};
  SuppressByHand("reconf-gone@example.org");
  Mta mta;
  ASSERT_TRUE(mta.ok());
  mta.Negotiate();
  mta.Connect("[192.0.2.30]", "192.0.2.30", 40030);
  mta.Mail("<sender@e2e.test>");
  // MAIL FROM has no reply: a first RCPT's reply says the milter has read it.
  EXPECT_EQ(mta.Rcpt("<reconf-fine@example.org>").first, SMFIR_CONTINUE);

  MilterConfig dry_run = started;
  dry_run.default_action = RcptAction::kLog;
  dry_run.socket = "unix:/nonexistent/other.sock";  // not taken: the socket stays
  dry_run.socket_mode = 0600;
  ASSERT_TRUE(ReconfigureMilter(dry_run).ok());
  EXPECT_EQ(CurrentMilterConfig().socket, started.socket);
  EXPECT_EQ(CurrentMilterConfig().default_action, RcptAction::kLog);
  struct stat st {};
  ASSERT_EQ(::stat(g_socket.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // The message begun before it is refused as before.
  EXPECT_EQ(mta.Rcpt("<reconf-gone@example.org>").first, SMFIR_REPLYCODE);
  // The next one is only logged.
  const uint64_t logged = GetMilterStats().rcpt_logged;
  mta.Mail("<sender@e2e.test>");
  EXPECT_EQ(mta.Rcpt("<reconf-gone@example.org>").first, SMFIR_CONTINUE);
  EXPECT_EQ(GetMilterStats().rcpt_logged, logged + 1);

  MilterConfig held = started;
  held.category_actions[static_cast<int>(Category::kUserUnknown)] = RcptAction::kTempfail;
  held.tempfail_reply = "451 4.7.1 <{addr}>: held since {since}";
  ASSERT_TRUE(ReconfigureMilter(held).ok());
  mta.Mail("<sender@e2e.test>");
  auto [cmd, text] = mta.Rcpt("<reconf-gone@example.org>");
  ASSERT_EQ(cmd, SMFIR_REPLYCODE);
  EXPECT_EQ(text.substr(0, 31), "451 4.7.1 <reconf-gone@example.");

  // Refused, and the running configuration stays.
  MilterConfig bad = started;
  bad.reject_reply = "450 4.1.1 <{addr}>: not a 5xx";
  Status refused = ReconfigureMilter(bad);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("milter.reject_reply"), std::string::npos) << refused.message();
  MilterConfig unwritable = started;
  unwritable.bounces = BounceDisposition::kQuarantine;
  unwritable.quarantine_dir = (g_dir / "no-such-dir").string();
  refused = ReconfigureMilter(unwritable);
  EXPECT_NE(refused.message().find("milter.quarantine_dir"), std::string::npos)
      << refused.message();
  EXPECT_EQ(CurrentMilterConfig().tempfail_reply, held.tempfail_reply);
  mta.Mail("<sender@e2e.test>");
  EXPECT_EQ(mta.Rcpt("<reconf-gone@example.org>").first, SMFIR_REPLYCODE);

  // bounces = discard: the next bounce is recorded, then leaves the mail stream.
  MilterConfig discard = started;
  discard.bounces = BounceDisposition::kDiscard;
  ASSERT_TRUE(ReconfigureMilter(discard).ok());
  mta.Mail("<>");
  EXPECT_EQ(mta.Rcpt("<news@e2e.test>").first, SMFIR_CONTINUE);
  SendMessage(mta,
              "From: MAILER-DAEMON@mx.example.net\r\nTo: news@e2e.test\r\nSubject: "
              "Undeliverable: news\r\nMessage-ID: <RECONF1@mx.example.net>\r\n\r\nYour message "
              "could not be delivered to reconf-bounce@example.com.\r\n\r\nThe remote server "
              "said: 550 5.1.1 User unknown\r\n");
  auto eom = mta.Eom("RECONF1");
  ASSERT_FALSE(eom.empty());
  EXPECT_EQ(eom.back().first, SMFIR_DISCARD);
  ASSERT_TRUE(g_store->Flush().ok());
  EXPECT_TRUE(g_store->view().Lookup("reconf-bounce@example.com").has_value());
}

// A DSN longer than max_bounce_bytes (1 MiB by default): Postfix's for 3,000 recipients, whose
// report part the cap cuts inside a recipient's group. Every recipient read whole is recorded
// (and suppressed), the one whose line the cap cut is not read at all, the message is kept and the
// cut is counted.
TEST(MilterProtocol, ABounceOverTheCaptureCapIsRecordedUpToItsLastWholeLine) {
  const size_t cap = MilterConfig{}.max_bounce_bytes;
  std::string dsn = testing::LargePostfixDsn(3000);
  ASSERT_GT(dsn.size(), cap);
  size_t split = dsn.find("\n\n");
  std::string body;
  for (char c : dsn.substr(split + 2)) {
    if (c == '\n') body += '\r';
    body += c;
  }
  // What the milter captures: "Name: value\r\n" a header, "\r\n", the body. A padding header
  // makes the cap fall inside an address ("Final-Recipient: rfc822; user1772@exa|mple.net").
  std::string captured;
  for (size_t pos = 0; pos < split;) {
    const size_t eol = dsn.find('\n', pos);
    captured += dsn.substr(pos, eol - pos) + "\r\n";
    pos = eol + 1;
  }
  captured += "\r\n" + body;
  const std::string field = "Final-Recipient: rfc822; ";
  const size_t line = captured.rfind(field, cap - 100);
  ASSERT_NE(line, std::string::npos);
  // Cut after "@exa": what is left of the address looks like one, but is no recipient.
  const size_t cut = captured.find('@', line) + 4;
  const std::string partial = captured.substr(line + field.size(), cut - line - field.size());
  const size_t padding = cap - cut;
  ASSERT_GT(padding, 20u);
  dsn.insert(0, "X-Pad: " + std::string(padding - 9, 'p') + "\n");
  split = dsn.find("\n\n");
  const size_t suppressed_before = g_store->view().size();
  const uint64_t truncated_before = GetMilterStats().bounces_truncated;
  Mta mta;
  ASSERT_TRUE(mta.ok());
  mta.Negotiate();
  mta.Connect("[198.51.100.7]", "198.51.100.7", 41100);
  mta.Mail("<>");
  EXPECT_EQ(mta.Rcpt("<news@example.com>").first, SMFIR_CONTINUE);
  for (size_t pos = 0; pos < split;) {
    const size_t eol = dsn.find('\n', pos);
    const std::string line = dsn.substr(pos, eol - pos);
    const size_t colon = line.find(':');
    mta.Header(line.substr(0, colon), line.substr(colon + 2));
    pos = eol + 1;
  }
  EXPECT_EQ(mta.Eoh(), SMFIR_CONTINUE);
  for (size_t pos = 0; pos < body.size(); pos += 60000) {
    const char reply = mta.Body(body.substr(pos, 60000));
    if (reply == SMFIR_SKIP) break;  // the milter has what it keeps; Postfix stops sending
    ASSERT_EQ(reply, SMFIR_CONTINUE);
  }
  auto eom = mta.Eom("QIDCAP1");
  ASSERT_FALSE(eom.empty());
  EXPECT_EQ(eom.back().first, SMFIR_CONTINUE);  // kept
  ASSERT_TRUE(g_store->Flush().ok());
  EXPECT_EQ(GetMilterStats().bounces_truncated, truncated_before + 1);
  // Recipients 0 .. read-1 are suppressed, in order, and nothing else: no address cut short.
  size_t read = 0;
  while (g_store->view().Lookup(testing::NumberedAddress(read))) ++read;
  EXPECT_GT(read, 1000u);
  EXPECT_LT(read, 3000u);
  EXPECT_EQ(g_store->view().size(), suppressed_before + read);
  auto cut_short = g_store->GetStatus(partial, 5);
  ASSERT_TRUE(cut_short.ok()) << cut_short.error();
  EXPECT_TRUE(cut_short->events.empty()) << partial << " was recorded";
}

}  // namespace
}  // namespace bounced
