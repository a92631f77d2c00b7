// ctl_parse_test.cc: `bouncectl parse` as a process over the repository's test bounces: the
// output of several threads is the sequential output, line for line, in the order the files
// were given, and an unreadable file in the middle keeps its place and sets exit code 1. GMime
// is loaded only by commands that parse messages. Folders (Maildir or plain) and mailboxes
// (--mbox) give a line per message; compressed files read as the plain ones.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/daemon/daemon_harness.h"

namespace bounced::testing {
namespace {

std::vector<std::string> TestBounces() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kTestData)) {
    if (e.is_regular_file() && e.path().extension() == ".eml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string Args(const std::vector<std::string>& files) {
  std::string out;
  for (const std::string& f : files) {
    out += ' ';
    out += Quote(f);
  }
  return out;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

TEST(CtlParse, ThreadsGiveTheSequentialOutputInFileOrder) {
  std::vector<std::string> files = TestBounces();
  ASSERT_GT(files.size(), 50u);
  // Twice over, so chunks hold repeated files and the per-thread caches get hits.
  std::vector<std::string> twice = files;
  twice.insert(twice.end(), files.begin(), files.end());
  for (const char* format : {"jsonl", "text"}) {
    int rc_seq = -1;
    int rc_par = -1;
    std::string seq = Shell(
        kBouncectl + " parse --jobs 1 --format=" + format + Args(twice) + " 2>/dev/null", &rc_seq);
    std::string par = Shell(
        kBouncectl + " parse --jobs 4 --format=" + format + Args(twice) + " 2>/dev/null", &rc_par);
    EXPECT_EQ(rc_seq, rc_par) << format;
    ASSERT_FALSE(seq.empty()) << format;
    EXPECT_EQ(seq, par) << format;
  }
  std::vector<std::string> lines =
      Lines(Shell(kBouncectl + " parse --jobs 3" + Args(twice) + " 2>/dev/null"));
  ASSERT_EQ(lines.size(), twice.size());
  for (size_t i = 0; i < twice.size(); ++i) {
    EXPECT_NE(lines[i].find("\"file\":\"" + twice[i] + "\""), std::string::npos) << i;
  }
}

TEST(CtlParse, UnreadableFileKeepsItsPlaceAndFailsTheRun) {
  std::vector<std::string> files = TestBounces();
  files.resize(std::min<size_t>(files.size(), 40));
  files.insert(files.begin() + 17, "/nonexistent/bounce.eml");
  int rc = -1;
  std::vector<std::string> lines =
      Lines(Shell(kBouncectl + " parse --jobs 2" + Args(files) + " 2>/dev/null", &rc));
  EXPECT_EQ(rc, 1);
  ASSERT_EQ(lines.size(), files.size());
  EXPECT_NE(lines[17].find("\"error\":\"cannot open /nonexistent/bounce.eml"), std::string::npos)
      << lines[17];
  EXPECT_NE(lines[17].find("\"recipients\":[]"), std::string::npos) << lines[17];
}

// With several threads the rules load while the first bounces are read: a bad rules file must
// still end the run with its error alone (exit 2, nothing on stdout), with one thread or many.
TEST(CtlParse, BadRulesFileStopsTheRunBeforeAnyOutput) {
  TempDir dir;
  std::string rules = dir.path() + "/bad.toml";
  AppendFile(rules, "[[rule]]\ncategory = \"user_unknown\"\n");
  std::vector<std::string> files = TestBounces();
  files.resize(std::min<size_t>(files.size(), 60));
  for (const char* jobs : {"1", "2", "4"}) {
    int rc = -1;
    std::string out = Shell(kBouncectl + " parse --jobs " + jobs + " --rules " + Quote(rules) +
                                Args(files) + " 2>" + Quote(dir.path() + "/err"),
                            &rc);
    EXPECT_EQ(rc, 2) << jobs;
    EXPECT_EQ(out, "") << jobs;
    EXPECT_NE(ReadFile(dir.path() + "/err").find("bad.toml:1:"), std::string::npos) << jobs;
  }
}

// Chunks of files that are all unreadable classify nothing, so their workers finish before the
// rules have loaded: their lines still come out in order with good rules, and not at all with
// bad ones.
TEST(CtlParse, ChunksOfUnreadableFilesWaitForTheRules) {
  TempDir dir;
  std::vector<std::string> files;
  for (int i = 0; i < 100; ++i) files.push_back(dir.path() + "/missing-" + std::to_string(i));
  for (const char* jobs : {"2", "4"}) {
    int rc = -1;
    std::vector<std::string> lines =
        Lines(Shell(kBouncectl + " parse --jobs " + jobs + Args(files) + " 2>/dev/null", &rc));
    EXPECT_EQ(rc, 1) << jobs;
    ASSERT_EQ(lines.size(), files.size()) << jobs;
    for (size_t i = 0; i < files.size(); ++i) {
      EXPECT_NE(lines[i].find("\"file\":\"" + files[i] + "\""), std::string::npos) << i;
    }
  }
  std::string rules = dir.path() + "/bad.toml";
  AppendFile(rules, "[[rule]]\ncategory = \"user_unknown\"\n");
  for (const char* jobs : {"2", "4"}) {
    int rc = -1;
    std::string out = Shell(kBouncectl + " parse --jobs " + jobs + " --rules " + Quote(rules) +
                                Args(files) + " 2>/dev/null",
                            &rc);
    EXPECT_EQ(rc, 2) << jobs;
    EXPECT_EQ(out, "") << jobs;
  }
}

// GMime is opened when a message first needs it (classifier/gmime_loader.h): a command that
// decodes no message never loads its libraries, nor does a plain-text bounce (Postfix's own
// DSN); a base64 part loads them. The dynamic loader says which libraries it opens
// (LD_DEBUG=files).
const std::string kPlainBounce = kTestData + "/dsn/postfix/cs01-04.eml";
const std::string kBase64Bounce = kTestData + "/dsn/autoreply/arf-base64-01.eml";

TEST(CtlParse, GMimeLoadsOnlyWhenAMessageNeedsIt) {
  int rc = -1;
  std::string classify = Shell(
      "LD_DEBUG=files " + kBouncectl + " classify '550 5.1.1 <a@b.example> user unknown' 2>&1",
      &rc);
  EXPECT_EQ(rc, 0) << classify;
  EXPECT_NE(classify.find("user_unknown"), std::string::npos) << classify;
  EXPECT_NE(classify.find("libstdc++"), std::string::npos) << "LD_DEBUG said nothing";
  EXPECT_EQ(classify.find("libgmime"), std::string::npos) << classify;

  std::string plain = Shell(
      "LD_DEBUG=files " + kBouncectl + " parse --jobs 1 " + Quote(kPlainBounce) + " 2>&1", &rc);
  EXPECT_EQ(rc, 0) << plain;
  EXPECT_EQ(plain.find("libgmime"), std::string::npos) << plain;
  EXPECT_NE(plain.find("\"category\":\"policy_rejection\""), std::string::npos) << plain;

  std::string base64 = Shell(
      "LD_DEBUG=files " + kBouncectl + " parse --jobs 1 " + Quote(kBase64Bounce) + " 2>&1", &rc);
  EXPECT_EQ(rc, 0) << base64;
  EXPECT_NE(base64.find("libgmime-3.0.so.0"), std::string::npos) << base64;
  EXPECT_NE(base64.find("\"category\":\"complaint\""), std::string::npos) << base64;
}

// A GMime that cannot be loaded (here: a broken file found first on the library path) is the
// error of each message that needs it, and the run fails; a plain-text bounce is still read, and
// nothing crashes.
TEST(CtlParse, AGMimeThatCannotBeLoadedIsTheErrorOfMessagesThatNeedIt) {
  TempDir dir;
  {
    std::ofstream broken(dir.path() + "/libgmime-3.0.so.0");
    broken << "not a shared library\n";
  }
  for (const char* jobs : {"1", "2"}) {
    int rc = -1;
    // Enough files for two threads (a chunk is 32 files): base64, plain, base64, plain, ...
    std::vector<std::string> files;
    for (int i = 0; i < 40; ++i) files.push_back(i % 2 == 0 ? kBase64Bounce : kPlainBounce);
    std::string out = Shell("LD_LIBRARY_PATH=" + Quote(dir.path()) + " " + kBouncectl +
                                " parse --jobs " + jobs + Args(files) + " 2>&1",
                            &rc);
    EXPECT_EQ(rc, 1) << out;
    std::vector<std::string> lines = Lines(out);
    ASSERT_EQ(lines.size(), files.size()) << out;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i % 2 == 0) {
        EXPECT_NE(lines[i].find("\"error\":\"cannot load GMime (libgmime-3.0.so.0)"),
                  std::string::npos)
            << lines[i];
        EXPECT_NE(lines[i].find("\"recipients\":[]"), std::string::npos) << lines[i];
      } else {
        EXPECT_EQ(lines[i].find("\"error\""), std::string::npos) << lines[i];
        EXPECT_NE(lines[i].find("\"category\":\"policy_rejection\""), std::string::npos)
            << lines[i];
      }
    }
  }
}

// Files are read to their end, not to the size fstat would give: a bounce far larger than the
// read buffer's first size (its report after 200 KiB of text), a named pipe, and files from
// several folders in turn all parse as the plain file does.
TEST(CtlParse, ReadsEveryKindOfFileToItsEnd) {
  TempDir dir;
  const std::string original = kTestData + "/dsn/postfix/cs01-04.eml";
  const std::string text = ReadFile(original);
  size_t report =
      text.find("--8D0E3A74992.1795972193/mta.testbed.local\nContent-Description: Delivery report");
  ASSERT_NE(report, std::string::npos);
  std::string padding;
  for (int i = 0; padding.size() < 200 * 1024; ++i) {
    padding.append("padding line ").append(std::to_string(i));
    padding.append(" of the notification, to make it large\n");
  }
  AppendFile(dir / "large.eml", text.substr(0, report) + padding + "\n" + text.substr(report));
  std::filesystem::create_directory(dir / "other");
  AppendFile(dir / "other/copy.eml", text);
  ASSERT_EQ(::mkfifo((dir / "pipe.eml").c_str(), 0600), 0);

  // The recipients' part of each line (after "file"), which must be the original's.
  auto results = [](const std::string& line) {
    size_t at = line.find("\"kind\"");
    return at == std::string::npos ? std::string() : line.substr(at);
  };
  std::vector<std::string> want =
      Lines(Shell(kBouncectl + " parse --jobs 1 " + Quote(original) + " 2>/dev/null"));
  ASSERT_EQ(want.size(), 1u);
  ASSERT_NE(want[0].find("\"provider_code\":\"CS01\""), std::string::npos) << want[0];
  int rc = -1;
  std::vector<std::string> lines =
      Lines(Shell("(cat " + Quote(original) + " > " + Quote(dir / "pipe.eml") + " &) ; " +
                      kBouncectl + " parse --jobs 1 " + Quote(dir / "large.eml") + " " +
                      Quote(dir / "pipe.eml") + " " + Quote(dir / "other/copy.eml") + " " +
                      Quote(original) + " " + Quote(dir / "large.eml") + " 2>/dev/null",
                  &rc));
  EXPECT_EQ(rc, 0);
  ASSERT_EQ(lines.size(), 5u);
  for (const std::string& line : lines) EXPECT_EQ(results(line), results(want[0])) << line;
}

// The part of a line after "file" (and after "message", for a mailbox's): what was found.
std::string Findings(const std::string& line) {
  size_t at = line.find("\"kind\"");
  if (at == std::string::npos) return std::string();
  std::string rest = line.substr(at);
  size_t message = rest.find(",\"message\":");
  if (message != std::string::npos) {
    size_t end = rest.find_first_not_of("0123456789", message + 11);
    rest.erase(message, end - message);
  }
  return rest;
}

// A folder is its messages: a Maildir's cur/ then new/ (each in name order; tmp/, dot files and
// sub-folders skipped), or a plain folder's files; each message its own line, as if named.
TEST(CtlParse, AFolderIsParsedMessageByMessage) {
  std::vector<std::string> files = TestBounces();
  ASSERT_GT(files.size(), 70u);
  TempDir dir;
  const std::string md = dir / "Maildir";
  for (const char* sub : {"cur", "new", "tmp", "cur/.sub"})
    std::filesystem::create_directories(md + "/" + sub);
  // Named so that name order differs from the order they are written in.
  const std::vector<std::pair<std::string, size_t>> placed = {
      {"cur/1700000003.M3.mx:2,S", 3},  {"cur/1700000001.M1.mx:2,S", 1},
      {"cur/1700000002.M2.mx:2,RS", 2}, {"new/1700000005.M5.mx", 5},
      {"new/1700000004.M4.mx", 4},      {"tmp/1700000006.M6.mx", 6},
      {"cur/.1700000000.hidden", 0}};
  for (const auto& [name, k] : placed) AppendFile(md + "/" + name, ReadFile(files[k * 7]));
  const std::vector<std::string> want_files = {
      md + "/cur/1700000001.M1.mx:2,S", md + "/cur/1700000002.M2.mx:2,RS",
      md + "/cur/1700000003.M3.mx:2,S", md + "/new/1700000004.M4.mx", md + "/new/1700000005.M5.mx"};
  std::vector<std::string> direct =
      Lines(Shell(kBouncectl + " parse --jobs 1" + Args(want_files) + " 2>/dev/null"));
  ASSERT_EQ(direct.size(), 5u);
  for (const char* jobs : {"1", "2"}) {
    int rc = -1;
    std::vector<std::string> lines =
        Lines(Shell(kBouncectl + " parse --jobs " + jobs + " " + Quote(md) + " 2>/dev/null", &rc));
    EXPECT_EQ(lines, direct) << jobs;
    EXPECT_EQ(rc, 0) << jobs;
  }
  // A plain folder: its files in name order; an empty folder prints nothing.
  const std::string plain = dir / "plain";
  std::filesystem::create_directories(plain + "/empty");
  AppendFile(plain + "/b.eml", ReadFile(files[11]));
  AppendFile(plain + "/a.eml", ReadFile(files[12]));
  std::vector<std::string> lines = Lines(Shell(kBouncectl + " parse " + Quote(plain) + " " +
                                               Quote(plain + "/empty") + " 2>/dev/null"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("\"file\":\"" + plain + "/a.eml\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"file\":\"" + plain + "/b.eml\""), std::string::npos) << lines[1];

  // In a long list (more than the arguments looked at before parsing), a folder is found when
  // it is read, by whichever thread reads it: same lines, same places.
  std::vector<std::string> list(files.begin(), files.begin() + 70);
  list.insert(list.begin() + 35, md);
  std::vector<std::string> expect(files.begin(), files.begin() + 35);
  expect.insert(expect.end(), want_files.begin(), want_files.end());
  expect.insert(expect.end(), files.begin() + 35, files.begin() + 70);
  std::string want = Shell(kBouncectl + " parse --jobs 1" + Args(expect) + " 2>/dev/null");
  for (const char* jobs : {"1", "3"}) {
    EXPECT_EQ(Shell(kBouncectl + " parse --jobs " + jobs + Args(list) + " 2>/dev/null"), want)
        << jobs;
  }
}

// --mbox: each message of a mailbox gets its line, with "message": its position, and the
// findings of the same message given as a file; in the same order with any number of threads
// (batches of 32 messages), from a file or stdin, with LF or CRLF line ends.
TEST(CtlParse, EveryMessageOfAMailboxGetsItsLine) {
  std::vector<std::string> files;
  for (const std::string& f : TestBounces()) {
    // Messages with a body line starting "From " would be written quoted (">From ").
    const std::string text = ReadFile(f);
    if (text.rfind("From ", 0) != 0 && text.find("\nFrom ") == std::string::npos &&
        text.find("\r") == std::string::npos)
      files.push_back(f);
  }
  ASSERT_GT(files.size(), 70u);
  files.resize(70);
  TempDir dir;
  std::string mbox;
  for (const std::string& f : files) {
    mbox += "From MAILER-DAEMON Sun Nov 29 17:09:53 2026\n";
    mbox += ReadFile(f);
    if (mbox.back() != '\n') mbox += '\n';
    mbox += '\n';
  }
  AppendFile(dir / "bounces.mbox", mbox);
  std::string crlf;
  for (char c : mbox) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  AppendFile(dir / "crlf.mbox", crlf);

  const std::vector<std::string> direct =
      Lines(Shell(kBouncectl + " parse --jobs 1" + Args(files) + " 2>/dev/null"));
  ASSERT_EQ(direct.size(), files.size());
  auto check = [&](const std::string& args, const std::string& name) {
    int rc = -1;
    std::vector<std::string> lines =
        Lines(Shell(kBouncectl + " parse --mbox " + args + " 2>/dev/null", &rc));
    ASSERT_EQ(lines.size(), files.size()) << args;
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i].rfind("{\"file\":\"" + name + "\",", 0), 0u) << lines[i];
      EXPECT_NE(lines[i].find(",\"message\":" + std::to_string(i + 1) + ","), std::string::npos)
          << lines[i];
      EXPECT_EQ(Findings(lines[i]), Findings(direct[i])) << args << " message " << i + 1;
    }
  };
  check("--jobs 1 " + Quote(dir / "bounces.mbox"), dir / "bounces.mbox");
  check("--jobs 3 " + Quote(dir / "bounces.mbox"), dir / "bounces.mbox");
  check("--jobs 2 - < " + Quote(dir / "bounces.mbox"), "-");
  // CRLF: the same findings (the parser reads either line end alike).
  check("--jobs 2 " + Quote(dir / "crlf.mbox"), dir / "crlf.mbox");
  // The text format names each message FILE#N.
  std::vector<std::string> text = Lines(Shell(kBouncectl + " parse --mbox --format=text " +
                                              Quote(dir / "bounces.mbox") + " 2>/dev/null"));
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text[0].rfind(dir / "bounces.mbox#1: ", 0), 0u) << text[0];

  // A mailbox that cannot be opened gets an error line in its place, and fails the run.
  int rc = -1;
  std::vector<std::string> lines =
      Lines(Shell(kBouncectl + " parse --mbox " + Quote(dir / "missing.mbox") + " " +
                      Quote(dir / "bounces.mbox") + " 2>/dev/null",
                  &rc));
  ASSERT_EQ(lines.size(), files.size() + 1);
  EXPECT_NE(lines[0].find("\"error\":\"cannot open"), std::string::npos) << lines[0];
  EXPECT_EQ(rc, 1);
}

// A message longer than the parser reads (16 MiB) is read up to there: its findings come out,
// with a "warnings" entry that says so, whether it is a file (one thread or several) or a
// mailbox's message; the text format prints the warning under the file's line.
TEST(CtlParse, AMessageOverTheSizeLimitIsReadUpToItWithAWarning) {
  TempDir dir;
  const std::string original = kTestData + "/dsn/postfix/cs01-04.eml";
  std::string text = ReadFile(original);
  if (text.back() != '\n') text += '\n';
  const std::string padding(99, 'x');
  std::string big = text;
  while (big.size() <= (size_t{17} << 20)) big += padding + '\n';  // after the last boundary
  AppendFile(dir / "big.eml", big);
  AppendFile(dir / "big.mbox", "From MAILER-DAEMON Sun Nov 29 17:09:53 2026\n" + big);
  const std::vector<std::string> want =
      Lines(Shell(kBouncectl + " parse --jobs 1 " + Quote(original) + " 2>/dev/null"));
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(want[0].find("\"warnings\""), std::string::npos) << want[0];
  const std::string warning =
      ",\"warnings\":[\"the message is longer than 16 MiB; only its first 16 MiB were read\"]}";
  for (const std::string& args : {"--jobs 1 " + Quote(dir / "big.eml"),
                                  "--jobs 2 " + Quote(dir / "big.eml") + " " + Quote(original),
                                  "--mbox " + Quote(dir / "big.mbox")}) {
    int rc = -1;
    std::vector<std::string> lines = Lines(Shell(kBouncectl + " parse " + args + " 2>&1", &rc));
    ASSERT_FALSE(lines.empty()) << args;
    EXPECT_EQ(rc, 0) << args;
    std::string findings = Findings(lines[0]);
    ASSERT_TRUE(findings.ends_with(warning)) << lines[0];
    findings.resize(findings.size() - warning.size());
    EXPECT_EQ(findings + "}", Findings(want[0])) << args;
  }
  std::vector<std::string> printed =
      Lines(Shell(kBouncectl + " parse --format=text " + Quote(dir / "big.eml") + " 2>&1"));
  ASSERT_GE(printed.size(), 2u);
  EXPECT_EQ(printed[1],
            "  warning: the message is longer than 16 MiB; only its first 16 MiB were read");
}

// A compressed message or mailbox (gzip, or any other compressor this machine has) reads as the
// plain one: the same findings; a cut one is an error that names the file; compressed data on
// stdin is refused with what to do instead.
TEST(CtlParse, CompressedMessagesAndMailboxesReadAsThePlainOnes) {
  TempDir dir;
  const std::string original = kTestData + "/dsn/postfix/cs01-04.eml";
  std::string text = ReadFile(original);
  if (text.back() != '\n') text += '\n';
  AppendFile(dir / "two.mbox", "From MAILER-DAEMON Sun Nov 29 17:09:53 2026\n" + text +
                                   "\nFrom MAILER-DAEMON Sun Nov 29 17:09:54 2026\n" + text);
  const std::vector<std::string> want =
      Lines(Shell(kBouncectl + " parse --jobs 1 " + Quote(original) + " 2>/dev/null"));
  ASSERT_EQ(want.size(), 1u);
  int compressed = 0;
  for (const char* tool : {"gzip", "bzip2", "xz", "zstd"}) {
    int rc = -1;
    const std::string eml = dir / (std::string("one.eml.") + tool);
    const std::string mbox = dir / (std::string("two.mbox.") + tool);
    Shell("command -v " + std::string(tool) + " >/dev/null && " + tool + " -c < " +
              Quote(original) + " > " + Quote(eml) + " && " + tool + " -c < " +
              Quote(dir / "two.mbox") + " > " + Quote(mbox),
          &rc);
    if (rc != 0) continue;
    ++compressed;
    std::vector<std::string> lines =
        Lines(Shell(kBouncectl + " parse " + Quote(eml) + " 2>&1", &rc));
    EXPECT_EQ(rc, 0) << tool;
    ASSERT_EQ(lines.size(), 1u) << tool;
    EXPECT_EQ(Findings(lines[0]), Findings(want[0])) << tool;
    lines = Lines(Shell(kBouncectl + " parse --mbox " + Quote(mbox) + " 2>&1", &rc));
    EXPECT_EQ(rc, 0) << tool;
    ASSERT_EQ(lines.size(), 2u) << tool;
    for (const std::string& line : lines) EXPECT_EQ(Findings(line), Findings(want[0])) << tool;
  }
  EXPECT_GE(compressed, 1);  // gzip is always there

  const std::string gz = ReadFile(dir / "two.mbox.gzip");
  AppendFile(dir / "cut.gz", gz.substr(0, gz.size() / 2));
  int rc = -1;
  std::vector<std::string> lines =
      Lines(Shell(kBouncectl + " parse --mbox " + Quote(dir / "cut.gz") + " 2>/dev/null", &rc));
  EXPECT_EQ(rc, 1);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(
      lines.back().find("\"error\":\"cannot read " + (dir / "cut.gz") + ": 'gzip -dc' failed"),
      std::string::npos)
      << lines.back();
  // Stdin redirected from a compressed file reads as the file; from a pipe it is refused.
  for (const std::string& args : {std::string(" -"), std::string(" --mbox -")}) {
    lines = Lines(Shell(
        kBouncectl + " parse" + args + " < " + Quote(dir / "one.eml.gzip") + " 2>/dev/null", &rc));
    EXPECT_EQ(rc, 0) << args;
    ASSERT_EQ(lines.size(), 1u) << args;
    EXPECT_EQ(Findings(lines[0]), Findings(want[0])) << args;
    lines = Lines(Shell("cat " + Quote(dir / "one.eml.gzip") + " | " + kBouncectl + " parse" +
                            args + " 2>/dev/null",
                        &rc));
    EXPECT_EQ(rc, 1) << args;
    ASSERT_EQ(lines.size(), 1u) << args;
    EXPECT_NE(lines[0].find("stdin is gzip-compressed and a pipe"), std::string::npos) << lines[0];
  }
}

// --verp: each message's return path, from its header, says whom a bounce is about; with one
// thread or several, and from a mailbox, alike. A bad format is a usage error.
TEST(CtlParse, VerpReadsTheReturnPathFromTheMessageHeader) {
  TempDir dir;
  auto bounce = [](const std::string& header, const std::string& named) {
    return header +
           "From: MAILER-DAEMON@mx.example.net\nSubject: Undeliverable: news\n\n"
           "Your message could not be delivered" +
           named + ".\n\nThe remote server said: 550 5.1.1 User unknown\n";
  };
  const std::string a = bounce("X-Original-To: bounces+alice=Example.com@news.example.org\n", "");
  const std::string b =
      bounce("To: bounces+bob=example.com@news.example.org\n", " to bob@fwd.example");
  const std::string c = bounce("To: other+carol=example.com@news.example.org\n", "");
  std::vector<std::string> files;
  for (int i = 0; i < 40; ++i) {  // more than a chunk: threads get work
    files.push_back(dir / ("m" + std::to_string(i) + ".eml"));
    std::ofstream(files.back()) << (i % 3 == 0 ? a : i % 3 == 1 ? b : c);
  }
  std::ofstream(dir / "box") << "From x Tue Dec  1 10:00:00 2026\n"
                             << a << "\nFrom x Tue Dec  1 10:00:01 2026\n"
                             << b;
  int rc = -1;
  const std::string cmd = kBouncectl + " parse --verp --verp-prefix bounces";
  const std::string one = Shell(cmd + " --jobs 1" + Args(files), &rc);
  EXPECT_EQ(rc, 0) << one;
  EXPECT_EQ(Shell(cmd + " --jobs 2" + Args(files), &rc), one);
  std::vector<std::string> lines = Lines(one);
  ASSERT_EQ(lines.size(), 40u) << one;
  json first = json::parse(lines[0]);
  EXPECT_EQ(first["verp_recipient"], "alice@example.com");
  EXPECT_EQ(first["recipients"][0]["recipient"], "alice@example.com");
  json second = json::parse(lines[1]);
  EXPECT_EQ(second["verp_recipient"], "bob@example.com");
  EXPECT_EQ(second["recipients"][0]["recipient"], "bob@fwd.example");
  EXPECT_EQ(second["recipients"][0]["original_recipient"], "bob@example.com");
  json third = json::parse(lines[2]);  // another prefix: no VERP
  EXPECT_FALSE(third.contains("verp_recipient")) << lines[2];
  EXPECT_EQ(third["recipients"][0]["recipient"], "");
  // Without --verp, nothing of it.
  EXPECT_EQ(json::parse(Lines(Shell(kBouncectl + " parse" + Args({files[0]}), &rc))[0])
                .contains("verp_recipient"),
            false);
  const std::string box = Shell(cmd + " --mbox --format=text " + Quote(dir / "box"), &rc);
  EXPECT_EQ(rc, 0) << box;
  EXPECT_NE(box.find("#1: non_standard_bounce (text) for alice@example.com (VERP)\n"
                     "  alice@example.com  user_unknown"),
            std::string::npos)
      << box;
  EXPECT_NE(box.find("original=bob@example.com"), std::string::npos) << box;
  const std::string bad =
      Shell(kBouncectl + " parse --verp --verp-delimiters @= " + Quote(files[0]) + " 2>&1", &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(bad.find("--verp-delimiters: '@' cannot stand"), std::string::npos) << bad;
}

TEST(CtlParse, RejectsANegativeJobCount) {
  int rc = -1;
  Shell(kBouncectl + " parse --jobs -1 " + Quote(TestBounces().front()) + " >/dev/null 2>&1", &rc);
  EXPECT_EQ(rc, 2);
}

}  // namespace
}  // namespace bounced::testing
