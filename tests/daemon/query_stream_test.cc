// query_stream_test.cc: the query socket's streamed export and import in parts, on the real
// bounced process (temp paths, real socket, real SQLite) through the real bouncectl and raw
// socket clients: an import far larger than max_request_bytes goes through in parts and
// round-trips with export; a bad line in a late part refuses everything with its line number
// in the file; a client gone mid-import imports nothing; parts out of order and parts without
// write permission are refused; an export of many entries streams completely, answers the
// requests pipelined after it in order, and a client that stops reading is cut after the idle
// timeout while the daemon keeps serving; SIGTERM in the middle of both stops cleanly.
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/daemon_harness.h"

namespace bounced::testing {
namespace {

constexpr int kMany = 3000;

// A CSV suppression list of `n` entries (line i + 2 holds entry i); entry `bad` (if >= 0) has
// an invalid address.
std::string CsvList(int n, int bad = -1) {
  std::string out = "address,reason,category,detail\n";
  for (int i = 0; i < n; ++i) {
    if (i == bad) {
      out += "not-an-address,old list,user_unknown,\n";
      continue;
    }
    out += "User" + std::to_string(i) + "@Example" + std::to_string(i % 7) +
           ".com,old list from the previous MTA,user_unknown,\"550 5.1.1 \"\"no\"\", user " +
           std::to_string(i) + "\"\n";
  }
  return out;
}

// Imports CsvList(n) into the running `d` through bouncectl (the setup of the export tests).
void ImportList(BouncedProcess& d, const TempDir& dir, int n) {
  std::ofstream(dir / "list.csv") << CsvList(n);
  int rc = -1;
  std::string out = d.Ctl("import " + dir / "list.csv", &rc);
  ASSERT_EQ(rc, 0) << out;
}

// Reads reply lines from `fd` until `n` lines or EOF.
std::vector<json> ReadReplies(int fd, size_t n) {
  std::string in = RecvUntil(fd, [n](const std::string& s) {
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')) >= n;
  });
  std::vector<json> out;
  size_t start = 0;
  for (size_t nl; (nl = in.find('\n', start)) != std::string::npos; start = nl + 1) {
    out.push_back(json::parse(in.substr(start, nl - start)));
  }
  return out;
}

std::set<std::string> Column0(const std::string& csv) {
  std::set<std::string> out;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) out.insert(line.substr(0, line.find(',')));
  return out;
}

// The peak resident memory (VmHWM) of `pid` so far, in KiB; -1 when unreadable.
int64_t PeakRssKiB(pid_t pid) {
  std::istringstream status(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

int64_t Suppressions(const BouncedProcess& d) {
  json h = d.Health();
  return h.contains("storage") ? h["storage"].value("suppressions", int64_t{-1}) : -1;
}

TEST(QueryStream, ImportFarLargerThanMaxRequestBytesGoesInPartsAndRoundTripsWithExport) {
  TempDir dir;
  BouncedProcess d(dir);
  d.SetQueryConfig("max_request_bytes = 4096\n");
  d.Start();
  std::string csv = CsvList(kMany);
  ASSERT_GT(csv.size(), 40u * 4096);
  std::ofstream(dir / "list.csv") << csv;

  // The single-request form cannot carry it (the reason for parts) ...
  json r = d.Query({{"cmd", "import"}, {"format", "csv"}, {"data", csv}});
  EXPECT_FALSE(r["ok"]);
  EXPECT_NE(r["error"].get<std::string>().find("request too large"), std::string::npos) << r;
  // ... but still works for what fits in one request.
  r = d.Query({{"cmd", "import"}, {"format", "csv"}, {"data", "address\nsmall@example.net\n"}});
  EXPECT_TRUE(r["ok"]) << r;
  EXPECT_EQ(r["result"]["added"], 1);

  int rc = -1;
  std::string out = d.Ctl("import --reason 'from the old MTA' " + dir / "list.csv", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("imported: " + std::to_string(kMany) + " added, 0 updated"), std::string::npos)
      << out;
  EXPECT_EQ(Suppressions(d), kMany + 1);
  json s = json::parse(d.Ctl("--json status user42@example0.com", &rc));
  EXPECT_TRUE(s["suppressed"]) << s;

  // Export to a file and to stdout; the same data, every entry once.
  out = d.Ctl("export -o " + dir / "export1.csv", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(std::to_string(kMany + 1) + " suppressions written"), std::string::npos)
      << out;
  std::string export1 = ReadFile(dir / "export1.csv");
  EXPECT_EQ(d.Ctl("export", &rc), export1);
  std::set<std::string> addresses = Column0(export1);
  EXPECT_EQ(addresses.size(), static_cast<size_t>(kMany + 1));
  EXPECT_EQ(addresses.count("User2999@Example3.com"), 1u);
  EXPECT_NE(export1.find("\"550 5.1.1 \"\"no\"\", user 17\""), std::string::npos);

  // Into a fresh daemon with the same small limit, as CSV and as JSONL: the same list back.
  TempDir dir2;
  BouncedProcess d2(dir2);
  d2.SetQueryConfig("max_request_bytes = 4096\n");
  d2.Start();
  out = d2.Ctl("import " + dir / "export1.csv", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(d2.Ctl("export", &rc), export1);
  out = d.Ctl("export --format jsonl -o " + dir / "export1.jsonl", &rc);
  EXPECT_EQ(rc, 0) << out;
  out = d2.Ctl("import " + dir / "export1.jsonl", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("0 added, " + std::to_string(kMany + 1) + " updated"), std::string::npos)
      << out;
  EXPECT_EQ(d2.Ctl("export", &rc), export1);
  // From standard input too.
  out = Shell(kBouncectl + " --socket " + Quote(d2.query_socket()) + " import --format csv - < " +
                  dir / "list.csv" + " 2>&1",
              &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("0 added, " + std::to_string(kMany) + " updated"), std::string::npos) << out;
}

TEST(QueryStream, BadLineInALatePartRefusesTheWholeImportWithItsLineInTheFile) {
  TempDir dir;
  BouncedProcess d(dir);
  d.SetQueryConfig("max_request_bytes = 4096\n");
  d.Start();
  std::ofstream(dir / "bad.csv") << CsvList(kMany, kMany - 10);  // line kMany - 8
  int rc = -1;
  std::string out = d.Ctl("import " + dir / "bad.csv", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("nothing imported"), std::string::npos) << out;
  EXPECT_NE(out.find("line " + std::to_string(kMany - 8) + ": invalid address 'not-an-address'"),
            std::string::npos)
      << out;
  EXPECT_EQ(Suppressions(d), 0);
  EXPECT_EQ(d.Ctl("--json list", &rc), "[]\n");
  // JSONL counts lines the same way.
  std::string jsonl;
  for (int i = 0; i < kMany; ++i) {
    jsonl += i == 2500 ? "{\"address\": 42}\n"
                       : "{\"address\":\"u" + std::to_string(i) + "@example.com\"}\n";
  }
  std::ofstream(dir / "bad.jsonl") << jsonl;
  out = d.Ctl("import " + dir / "bad.jsonl", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("line 2501: field 'address' must be a string"), std::string::npos) << out;
  EXPECT_EQ(Suppressions(d), 0);
}

TEST(QueryStream, ClientGoneMidImportImportsNothingAndTheDaemonKeepsServing) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  std::string csv = CsvList(100);
  int fd = ConnectUnix(d.query_socket());
  ASSERT_GE(fd, 0);
  SendAll(fd, json{{"cmd", "import"}, {"part", 0}, {"more", true}, {"data", ""}}.dump() + "\n");
  SendAll(fd, json{{"cmd", "import"}, {"part", 1}, {"more", true}, {"data", csv}}.dump() + "\n");
  std::vector<json> r = ReadReplies(fd, 2);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0]["ok"]) << r[0];
  EXPECT_EQ(r[0]["result"]["received"], 0);
  EXPECT_EQ(r[0]["result"]["max_request_bytes"], 64 * 1024 * 1024);
  EXPECT_EQ(r[0]["result"]["max_import_bytes"], int64_t{1} << 30);
  EXPECT_TRUE(r[1]["ok"]) << r[1];
  EXPECT_EQ(r[1]["result"]["received"], csv.size());
  ::close(fd);  // before the last part
  EXPECT_TRUE(WaitUntil([&] {
    return ReadFile(d.stderr_path()).find("in the middle of an import") != std::string::npos;
  })) << ReadFile(d.stderr_path());
  EXPECT_EQ(Suppressions(d), 0);

  // Parts out of order, or after a refused part, are refused; nothing is imported.
  fd = ConnectUnix(d.query_socket());
  SendAll(
      fd,
      json{{"cmd", "import"}, {"part", 0}, {"more", true}, {"data", "address\n"}}.dump() + "\n" +
          json{{"cmd", "import"}, {"part", 2}, {"more", true}, {"data", "a@b.example\n"}}.dump() +
          "\n" + json{{"cmd", "import"}, {"part", 1}, {"data", "c@d.example\n"}}.dump() + "\n");
  r = ReadReplies(fd, 3);
  ::close(fd);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[0]["ok"]);
  EXPECT_FALSE(r[1]["ok"]);
  EXPECT_NE(r[1]["error"].get<std::string>().find("import part 2 out of order (expected part 1)"),
            std::string::npos)
      << r[1];
  EXPECT_FALSE(r[2]["ok"]);
  EXPECT_NE(r[2]["error"].get<std::string>().find("expected part 0"), std::string::npos) << r[2];
  EXPECT_EQ(Suppressions(d), 0);

  // A part over max_import_bytes ends the import.
  d.Stop();
  d.SetQueryConfig("max_import_bytes = 2048\n");
  d.Start();
  std::ofstream(dir / "list.csv") << csv;
  int rc = -1;
  // From a file its size is known: refused before any data is sent.
  std::string out = d.Ctl("import " + dir / "list.csv", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("import too large: " + std::to_string(csv.size()) +
                     " bytes, more than 2048 ([query] max_import_bytes)"),
            std::string::npos)
      << out;
  // From a pipe, when the parts add up to too much.
  out = Shell("cat " + dir / "list.csv" + " | " + kBouncectl + " --socket " +
                  Quote(d.query_socket()) + " import - 2>&1",
              &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("import too large: more than 2048 bytes ([query] max_import_bytes)"),
            std::string::npos)
      << out;
  EXPECT_EQ(Suppressions(d), 0);

  // The daemon still serves, and a whole import goes through.
  std::ofstream(dir / "small.csv") << CsvList(10);
  out = d.Ctl("import " + dir / "small.csv", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(Suppressions(d), 10);
  EXPECT_TRUE(d.Alive());
}

TEST(QueryStream, EveryImportPartNeedsWritePermission) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as nobody";
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  std::ofstream(dir / "list.csv") << CsvList(10);
  ::chmod((dir / "list.csv").c_str(), 0644);
  int rc = -1;
  std::string out = d.Ctl("import " + dir / "list.csv", &rc, /*as_nobody=*/true);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("permission denied: 'import'"), std::string::npos) << out;
  // A raw client skipping part 0 is refused for permission, not for the order.
  std::string script =
      "import socket, sys\n"
      "s = socket.socket(socket.AF_UNIX)\n"
      "s.connect(sys.argv[1])\n"
      "s.sendall(b'{\"cmd\":\"import\",\"part\":0,\"more\":true,\"data\":\"\"}\\n'\n"
      "          b'{\"cmd\":\"import\",\"part\":1,\"data\":\"address\\\\na@b.example\"}\\n')\n"
      "f = s.makefile('r')\n"
      "print(f.readline(), end='')\n"
      "print(f.readline(), end='')\n";
  std::ofstream(dir / "client.py") << script;
  out = Shell("setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 " +
                  dir / "client.py" + " " + Quote(d.query_socket()) + " 2>&1",
              &rc);
  EXPECT_EQ(rc, 0) << out;
  std::istringstream lines(out);
  std::string line;
  int denied = 0;
  while (std::getline(lines, line)) {
    json j = json::parse(line);
    EXPECT_FALSE(j["ok"]) << line;
    if (j["error"].get<std::string>().find("permission denied: 'import'") != std::string::npos) {
      ++denied;
    }
  }
  EXPECT_EQ(denied, 2) << out;
  EXPECT_EQ(Suppressions(d), 0);
}

TEST(QueryStream, ExportOfManyEntriesStreamsCompletelyInBoundedPieces) {
  TempDir dir;
  BouncedProcess d(dir);
  d.SetQueryConfig("max_request_bytes = 4096\n");
  d.Start();
  const int n = 20000;
  ASSERT_NO_FATAL_FAILURE(ImportList(d, dir, n));
  int rc = -1;
  std::string out;

  // Raw: many pieces, none much over 64 KiB, then the count; a request sent right after the
  // export on the same connection is answered after it.
  int fd = ConnectUnix(d.query_socket());
  SendAll(fd, json{{"cmd", "export"}, {"stream", true}, {"format", "jsonl"}}.dump() + "\n" +
                  json{{"cmd", "lookup"}, {"address", "user7@example0.com"}}.dump() + "\n");
  std::string in = RecvUntil(fd, [](const std::string& s) {
    return s.find("\"suppressed\"") != std::string::npos && s.back() == '\n';
  });
  ::close(fd);
  std::istringstream replies(in);
  std::string line, data;
  size_t pieces = 0, largest = 0;
  json end, lookup;
  while (std::getline(replies, line)) {
    json j = json::parse(line);
    ASSERT_TRUE(j["ok"]) << line;
    if (j.value("more", false)) {
      ++pieces;
      largest = std::max(largest, line.size());
      data += j["data"].get<std::string>();
    } else if (end.is_null()) {
      end = j;
    } else {
      lookup = j;
    }
  }
  EXPECT_GT(pieces, 20u);
  EXPECT_LT(largest, 160u * 1024);
  EXPECT_EQ(end["result"]["count"], n);
  EXPECT_EQ(end["result"]["format"], "jsonl");
  EXPECT_FALSE(end["result"].contains("data"));
  EXPECT_EQ(std::count(data.begin(), data.end(), '\n'), n);
  EXPECT_TRUE(lookup["result"]["suppressed"]) << lookup;

  // The single-reply export is still there.
  json single = d.Query({{"cmd", "export"}, {"format", "jsonl"}});
  EXPECT_EQ(single["result"]["count"], n);
  EXPECT_EQ(single["result"]["data"], data);

  // bouncectl: every entry, once.
  out = d.Ctl("export --format csv -o " + dir / "out.csv", &rc);
  EXPECT_EQ(rc, 0) << out;
  std::set<std::string> addresses = Column0(ReadFile(dir / "out.csv"));
  EXPECT_EQ(addresses.size(), static_cast<size_t>(n));
  EXPECT_EQ(addresses.count("User19999@Example0.com"), 1u);
  out = d.Ctl("export --domain example3.com --format jsonl", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), (n + 3) / 7);

  // A refused export (here a bad --since) writes nothing: the earlier out.csv stays as it was
  // and no temporary file is left beside it.
  std::string before = ReadFile(dir / "out.csv");
  out = d.Ctl("export --since not-a-time -o " + dir / "out.csv", &rc);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("not written"), std::string::npos) << out;
  EXPECT_EQ(ReadFile(dir / "out.csv"), before);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".partial-"), std::string::npos)
        << entry.path();
  }
}

TEST(QueryStream, ClientThatStopsReadingAnExportIsCutAfterTheIdleTimeout) {
  TempDir dir;
  BouncedProcess d(dir);
  d.SetQueryConfig("idle_timeout = \"1s\"\n");
  d.Start();
  const int n = 20000;
  ASSERT_NO_FATAL_FAILURE(ImportList(d, dir, n));
  int rc = -1;
  std::string out;
  uint64_t whole = d.Ctl("export", &rc).size();

  int fd = ConnectUnix(d.query_socket());
  int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  SendAll(fd, json{{"cmd", "export"}, {"stream", true}}.dump() + "\n");
  // Not reading: the daemon's writes stop at the socket buffers, then the idle timeout ends it.
  EXPECT_TRUE(WaitUntil([&] {
    json h = d.Health();
    return h.contains("query_socket") && h["query_socket"].value("idle_closed", 0) >= 1;
  }));
  std::string got = RecvUntil(fd, [](const std::string&) { return false; });  // until EOF
  ::close(fd);
  EXPECT_LT(got.size(), whole);
  EXPECT_EQ(got.find("\"result\""), std::string::npos);
  // A client that leaves mid-export does not disturb the next ones.
  fd = ConnectUnix(d.query_socket());
  SendAll(fd, json{{"cmd", "export"}, {"stream", true}}.dump() + "\n");
  char buf[1000];
  EXPECT_GT(::recv(fd, buf, sizeof(buf), 0), 0);
  ::close(fd);
  EXPECT_EQ(d.Ctl("export", &rc).size(), whole);
  EXPECT_TRUE(d.Query({{"cmd", "health"}})["ok"]);
}

TEST(QueryStream, PipelinedListsFromClientsThatDoNotReadKeepTheDaemonsMemoryBounded) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  const int n = 20000;
  ASSERT_NO_FATAL_FAILURE(ImportList(d, dir, n));
  const int64_t peak_before = PeakRssKiB(d.pid());
  ASSERT_GT(peak_before, 0);

  // Two clients each pipeline 16 lists of the whole list (megabytes each) and read nothing.
  const int lists = 16;
  std::string requests;
  for (int i = 0; i < lists; ++i) requests += json{{"cmd", "list"}}.dump() + "\n";
  std::vector<int> clients;
  for (int c = 0; c < 2; ++c) {
    clients.push_back(ConnectUnix(d.query_socket()));
    ASSERT_TRUE(SendAll(clients.back(), requests));
  }
  // Postfix's lookups and other query clients are answered meanwhile.
  EXPECT_EQ(SocketmapAsk(d.socketmap_socket(), "recipient_access user7@example0.com",
                         std::chrono::seconds(2))
                .rfind("OK ", 0),
            0u);
  EXPECT_TRUE(d.Query({{"cmd", "lookup"}, {"address", "user7@example0.com"}})["result"].value(
      "suppressed", false));

  // Every list arrives whole and in order, one line each. Both clients are read at once: one
  // left waiting while the other is read for longer than [query] idle_timeout (a slow build,
  // with sanitizers) would be cut off, as a client that stopped reading is.
  std::vector<std::string> received(clients.size());
  std::vector<std::thread> readers;
  for (size_t c = 0; c < clients.size(); ++c) {
    readers.emplace_back([&, c] {
      // Newlines counted as they come (the replies are large).
      size_t counted = 0;
      int newlines = 0;
      received[c] = RecvUntil(clients[c], [&](const std::string& s) {
        newlines += static_cast<int>(std::count(s.begin() + counted, s.end(), '\n'));
        counted = s.size();
        return newlines >= lists;
      });
      ::close(clients[c]);
    });
  }
  for (std::thread& t : readers) t.join();
  size_t list_bytes = 0;
  for (const std::string& in : received) {
    std::istringstream replies(in);
    std::string line;
    int complete = 0;
    while (std::getline(replies, line)) {
      // The same list each time: the first and the last read in full, the others by size.
      if (complete == 0 || complete == lists - 1) {
        json list = json::parse(line);
        ASSERT_TRUE(list["ok"]) << line.substr(0, 300);
        ASSERT_EQ(list["result"].size(), static_cast<size_t>(n));
        EXPECT_EQ(list["result"][0]["address"], "user0@example0.com");
        if (complete == 0) list_bytes = line.size();
      }
      EXPECT_EQ(line.size(), list_bytes);
      ++complete;
    }
    EXPECT_EQ(complete, lists);
  }
  // The daemon never held those replies at once: its peak memory grew by a few pieces and the
  // readers' caches (about 2 MiB), not by 16 lists of 6 MB per client.
  ASSERT_GT(list_bytes * lists, 64u << 20);
  const int64_t grew_kib = PeakRssKiB(d.pid()) - peak_before;
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer keeps freed memory in quarantine (256 MiB): the peak says nothing there.
  (void)grew_kib;
#else
  EXPECT_LT(grew_kib, 48 * 1024) << "peak memory grew by " << grew_kib << " KiB";
#endif
  EXPECT_TRUE(d.Query({{"cmd", "health"}})["ok"]);
}

TEST(QueryStream, SigtermDuringAStalledExportAndAnUnfinishedImportStopsCleanly) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  ASSERT_NO_FATAL_FAILURE(ImportList(d, dir, 20000));
  int rc = -1;
  std::string out;
  // An export whose reader stopped after the first bytes: its producer waits for room.
  int exporter = ConnectUnix(d.query_socket());
  SendAll(exporter, json{{"cmd", "export"}, {"stream", true}}.dump() + "\n");
  char buf[1000];
  EXPECT_GT(::recv(exporter, buf, sizeof(buf), 0), 0);
  // An import with parts sent but not the last.
  int importer = ConnectUnix(d.query_socket());
  SendAll(importer,
          json{{"cmd", "import"}, {"part", 0}, {"more", true}, {"data", "address\n"}}.dump() +
              "\n" +
              json{{"cmd", "import"}, {"part", 1}, {"more", true}, {"data", "late@example.org\n"}}
                  .dump() +
              "\n");
  EXPECT_EQ(ReadReplies(importer, 2).size(), 2u);
  EXPECT_EQ(d.Stop(), 0) << ReadFile(d.stderr_path());
  ::close(exporter);
  ::close(importer);
  EXPECT_NE(ReadFile(d.stderr_path()).find("bounced stopped"), std::string::npos);
  d.Start();
  json s = json::parse(d.Ctl("--json status late@example.org", &rc));
  EXPECT_FALSE(s["suppressed"]) << s;
  EXPECT_EQ(Suppressions(d), 20000);
}

}  // namespace
}  // namespace bounced::testing
