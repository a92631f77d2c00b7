// ctl_parse_log_test.cc: `bouncectl parse-log` as a process: the two-thread pipeline (--jobs 2:
// one thread reads blocks and parses lines, the main thread correlates them) prints exactly what
// one thread (--jobs 1) prints, in every format, on inputs built to hit the pipeline's edges:
// lines across read and block boundaries, lines longer than kMaxLogLineBytes across blocks,
// CRLF ends, NUL bytes, no final newline, empty input, megabytes of garbage, stdin from a pipe
// and a read error; several files, compressed ones among them, read as one log. Inputs are built
// from the repository's Postfix logs in tests/data.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "classifier/log_parser.h"
#include "tests/daemon/daemon_harness.h"

namespace bounced::testing {
namespace {

// Every Postfix log in tests/data, one after the other (sorted, so the input is the same on
// every run).
std::string TestLogs() {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(kTestData)) {
    if (e.is_regular_file() && e.path().extension() == ".log") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string all;
  for (const std::string& f : files) all += ReadFile(f);
  return all;
}

// The summary's classifier counters depend on the cache's random hash seed, even between two
// runs of one thread; everything else must match.
std::string WithoutClassifierCounts(std::string s) {
  size_t pos = s.find("\nclassifier: ");
  if (pos != std::string::npos) s.erase(pos + 1, s.find('\n', pos + 1) - pos);
  pos = s.find(",\"classifier\":{");
  if (pos != std::string::npos) s.erase(pos, s.find('}', pos) + 1 - pos);
  return s;
}

struct Output {
  std::string out;
  std::string err;
  int rc = -1;
};

// Runs a shell command (a bouncectl parse-log run, perhaps fed by a pipe) and keeps its stdout
// (without the classifier counters), stderr and exit code.
Output ParseLog(const TempDir& dir, const std::string& command) {
  Output o;
  o.out = WithoutClassifierCounts(Shell(command + " 2>" + Quote(dir / "err"), &o.rc));
  o.err = ReadFile(dir / "err");
  return o;
}

const char* const kFormats[] = {"--format=jsonl", "--format=text", "--summary",
                                "--summary --format=jsonl"};

// Checks that one thread and the pipeline print the same for `path` in every format; returns the
// one-thread JSON summary for further checks.
std::string ExpectSameOutputBothWays(const TempDir& dir, const std::string& path) {
  std::string summary;
  for (const char* format : kFormats) {
    const std::string base = kBouncectl + " parse-log --year 2026 " + format;
    Output one = ParseLog(dir, base + " --jobs 1 " + Quote(path));
    Output two = ParseLog(dir, base + " --jobs 2 " + Quote(path));
    Output fallback = ParseLog(dir, base + " " + Quote(path));  // the default: as many as CPUs
    EXPECT_EQ(one.rc, 0) << format << " " << one.err;
    EXPECT_EQ(two.rc, one.rc) << format;
    EXPECT_EQ(two.err, one.err) << format;
    if (std::string(format).find("--summary") != std::string::npos) {
      EXPECT_FALSE(one.out.empty()) << format;
    }
    EXPECT_TRUE(two.out == one.out) << format << ": the pipeline's output differs";
    EXPECT_TRUE(fallback.out == one.out) << format << ": the default's output differs";
    if (std::string(format) == "--summary --format=jsonl") summary = one.out;
  }
  return summary;
}

json SummaryJson(const std::string& s) { return json::parse(s); }

TEST(CtlParseLog, PipelinePrintsWhatOneThreadPrintsOnRealLogs) {
  TempDir dir;
  // Several megabytes, so blocks and reads break inside lines many times over.
  std::string logs = TestLogs();
  ASSERT_GT(logs.size(), 100000u);
  std::string input;
  while (input.size() < (6u << 20)) input += logs;
  AppendFile(dir / "mail.log", input);
  json j = SummaryJson(ExpectSameOutputBothWays(dir, dir / "mail.log"));
  EXPECT_GT(j["events"].get<uint64_t>(), 1000u);
  EXPECT_EQ(j["lines"]["skipped_too_long"], 0);
}

// Lines of every length around the limit, with and without "\r" just at it, each several times
// in a row so that block and read boundaries (every 64 KiB or more) fall inside some of them, and
// real lines around them.
// The global --json makes the summary JSON, as --format=jsonl does; an explicit --format wins.
TEST(CtlParseLog, GlobalJsonMakesTheSummaryJson) {
  TempDir dir;
  const std::string log = kTestData + "/sample/mail.log";
  Output flag = ParseLog(dir, kBouncectl + " --json parse-log --year 2026 --summary " + Quote(log));
  Output format =
      ParseLog(dir, kBouncectl + " parse-log --year 2026 --summary --format=jsonl " + Quote(log));
  EXPECT_EQ(flag.rc, 0) << flag.err;
  EXPECT_EQ(flag.out, format.out);
  EXPECT_EQ(SummaryJson(flag.out)["events"], 128) << flag.out;
  Output text = ParseLog(
      dir, kBouncectl + " --json parse-log --year 2026 --summary --format=text " + Quote(log));
  EXPECT_EQ(text.out.rfind("events: 128", 0), 0u) << text.out;
}

TEST(CtlParseLog, PipelineCountsLongLinesAcrossBlocksAsOneThreadDoes) {
  TempDir dir;
  const std::string logs = TestLogs();
  const std::string real = logs.substr(0, logs.find('\n', 50000) + 1);
  std::string input = real;
  const size_t max = kMaxLogLineBytes;
  uint64_t too_long = 0;
  uint64_t lines = 0;
  for (size_t len : {max - 1, max, max + 1, max + 2, max + 3, 5 * max}) {
    for (bool cr_at_limit : {false, true}) {
      std::string line = "Nov 29 17:09:54 mta postfix/smtp[1]: 1BA89A74A14: to=<a@b.c>, ";
      line.resize(len, 'x');
      if (cr_at_limit && len > max) line[max] = '\r';
      // A "\r" that ends the line is not part of it.
      const size_t counted = line.back() == '\r' ? len - 1 : len;
      for (int i = 0; i < 6; ++i) {
        input += line + "\n";
        ++lines;
        too_long += counted > max ? 1 : 0;
      }
      // A few real lines between the runs, cut at different places in each round.
      input += real.substr(0, real.find('\n', 1000 + len % 7919) + 1);
    }
  }
  // One longer than a whole block, with "\r\n" and a NUL in it.
  std::string huge(3u << 20, 'y');
  huge[12345] = '\0';
  input += huge + "\r\n" + real;
  AppendFile(dir / "long.log", input);
  json j = SummaryJson(ExpectSameOutputBothWays(dir, dir / "long.log"));
  EXPECT_EQ(j["lines"]["skipped_too_long"].get<uint64_t>(), too_long + 1);
  EXPECT_GT(j["lines"]["total"].get<uint64_t>(), lines);
}

TEST(CtlParseLog, PipelineHandlesCrlfNulAndNoFinalNewline) {
  TempDir dir;
  const std::string logs = TestLogs();
  std::string crlf;
  for (char c : logs) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  // NUL bytes inside lines, a bare "\r" line, and a last line without its newline.
  std::string input = crlf + crlf.substr(0, 30000);
  for (size_t at = 777; at < input.size(); at += 65521) input[at] = '\0';
  input += "\r\n\r\n" + logs.substr(0, logs.find('\n', 5000));
  ASSERT_NE(input.back(), '\n');
  AppendFile(dir / "crlf.log", input);
  json j = SummaryJson(ExpectSameOutputBothWays(dir, dir / "crlf.log"));
  EXPECT_GT(j["events"].get<uint64_t>(), 100u);
}

TEST(CtlParseLog, PipelineReadsEmptyInputAndGarbage) {
  TempDir dir;
  AppendFile(dir / "empty.log", "");
  json empty = SummaryJson(ExpectSameOutputBothWays(dir, dir / "empty.log"));
  EXPECT_EQ(empty["lines"]["total"], 0);
  // Megabytes of random bytes: rare newlines (some lines far too long), NULs, high bytes.
  std::mt19937 rng(7);
  std::string garbage(12u << 20, '\0');
  for (char& c : garbage) {
    uint32_t r = rng();
    const bool newline = (r & 0xffff) < 3;  // lines of 22 KB on average, 5 % over the limit
    c = newline ? '\n' : static_cast<char>(r >> 24);
    if (!newline && c == '\n') c = ' ';
  }
  AppendFile(dir / "garbage.log", garbage);
  json j = SummaryJson(ExpectSameOutputBothWays(dir, dir / "garbage.log"));
  EXPECT_GT(j["lines"]["skipped_too_long"].get<uint64_t>(), 0u);
  EXPECT_GT(j["lines"]["skipped_garbage"].get<uint64_t>(), 0u);
}

// Short lines fill a block's line budget long before its bytes: the lines left over move to the
// next block whole, between real log lines.
TEST(CtlParseLog, PipelineKeepsEveryLineOfAFileOfShortLines) {
  TempDir dir;
  const std::string logs = TestLogs();
  std::string input;
  uint64_t lines = 0;
  for (int round = 0; round < 6; ++round) {
    input += std::string(500000 + 4099 * round, '\n');
    lines += 500000 + 4099 * round;
    for (int i = 0; i < 100000; ++i) input += i % 3 == 0 ? "x\r\n" : "x\n";
    lines += 100000;
    input += logs;
    lines += static_cast<uint64_t>(std::count(logs.begin(), logs.end(), '\n'));
  }
  AppendFile(dir / "short.log", input);
  json j = SummaryJson(ExpectSameOutputBothWays(dir, dir / "short.log"));
  EXPECT_EQ(j["lines"]["total"].get<uint64_t>(), lines);
  EXPECT_GT(j["events"].get<uint64_t>(), 100u);
}

// "-" reads stdin: from a pipe (reads shorter than asked for) and from a redirected file.
TEST(CtlParseLog, PipelineReadsStdinFromAPipe) {
  TempDir dir;
  std::string logs = TestLogs();
  AppendFile(dir / "mail.log", logs + logs + logs);
  for (const char* format : kFormats) {
    const std::string base = kBouncectl + " parse-log --year 2026 " + format;
    Output file = ParseLog(dir, base + " --jobs 1 " + Quote(dir / "mail.log"));
    Output piped = ParseLog(dir, "cat " + Quote(dir / "mail.log") + " | " + base + " --jobs 2 -");
    Output redirected = ParseLog(dir, base + " --jobs 2 < " + Quote(dir / "mail.log"));
    EXPECT_EQ(piped.rc, 0) << format;
    EXPECT_FALSE(file.out.empty()) << format;
    EXPECT_TRUE(piped.out == file.out) << format;
    EXPECT_TRUE(redirected.out == file.out) << format;
  }
}

// A read error (a directory opens but cannot be read) ends the input: the message names the
// file, the exit code is 1, and what was read is still reported; the same with one thread.
TEST(CtlParseLog, ReadErrorFailsTheRunWithEitherThreadCount) {
  TempDir dir;
  for (const char* jobs : {"1", "2"}) {
    Output o =
        ParseLog(dir, kBouncectl + " parse-log --summary --jobs " + jobs + " " + Quote(dir.path()));
    EXPECT_EQ(o.rc, 1) << jobs;
    EXPECT_NE(o.err.find("cannot read " + dir.path() + ":"), std::string::npos) << o.err;
    EXPECT_NE(o.out.find("events: 0 (lines 0"), std::string::npos) << o.out;
  }
}

// Several files are one log: rotated parts (the first without its final newline, the others
// compressed as logrotate leaves them) print what the whole log prints, in every format and with
// either thread count. A file that cannot be read is named, the others are still read, and the
// run fails; compressed data on stdin is refused with what to do instead.
TEST(CtlParseLog, RotatedAndCompressedFilesReadAsOneLog) {
  TempDir dir;
  const std::string logs = TestLogs();
  const size_t a = logs.find('\n', logs.size() / 3) + 1,
               b = logs.find('\n', 2 * logs.size() / 3) + 1;
  AppendFile(dir / "mail.log", logs);
  AppendFile(dir / "mail.log.3", logs.substr(0, a - 1));  // its last line not ended
  AppendFile(dir / "part2", logs.substr(a, b - a));
  AppendFile(dir / "part3", logs.substr(b));
  int rc = -1;
  Shell("gzip -c " + Quote(dir / "part2") + " > " + Quote(dir / "mail.log.2.gz"), &rc);
  ASSERT_EQ(rc, 0);
  std::vector<std::string> third;  // the third part compressed by each tool this machine has
  for (const char* tool : {"gzip", "bzip2", "xz", "zstd"}) {
    const std::string out = dir / (std::string("mail.log.1.") + tool);
    Shell("command -v " + std::string(tool) + " >/dev/null && " + tool + " -c < " +
              Quote(dir / "part3") + " > " + Quote(out),
          &rc);
    if (rc == 0) third.push_back(out);
  }
  ASSERT_FALSE(third.empty());
  for (const std::string& last : third) {
    for (const char* format : kFormats) {
      for (const char* jobs : {" --jobs 1 ", " --jobs 2 "}) {
        const std::string base = kBouncectl + " parse-log --year 2026 " + format + jobs;
        Output whole = ParseLog(dir, base + Quote(dir / "mail.log"));
        Output parts = ParseLog(dir, base + Quote(dir / "mail.log.3") + " " +
                                         Quote(dir / "mail.log.2.gz") + " " + Quote(last));
        EXPECT_EQ(parts.rc, 0) << last << " " << parts.err;
        EXPECT_FALSE(whole.out.empty());
        EXPECT_TRUE(parts.out == whole.out) << last << " " << format << jobs;
      }
    }
  }
  // The files of a rotated log are read oldest first whatever order they come in (a shell's
  // mail.log* gives the newest first), numbered or dated; another log's keep their place.
  AppendFile(dir / "mail.log.1", logs.substr(b));
  fs::create_directories(dir / "dated");
  fs::copy_file(dir / "mail.log.3", dir / "dated/mail.log-20261101");
  Shell("gzip -c " + Quote(dir / "part2") + " > " + Quote(dir / "dated/mail.log-20261108.gz"));
  AppendFile(dir / "dated/mail.log", logs.substr(b));
  for (const std::string& files :
       {Quote(dir / "mail.log.1") + " " + Quote(dir / "mail.log.2.gz") + " " +
            Quote(dir / "mail.log.3"),
        Quote(dir / "dated/mail.log") + " " + Quote(dir / "dated/mail.log-20261108.gz") + " " +
            Quote(dir / "dated/mail.log-20261101")}) {
    const std::string base = kBouncectl + " parse-log --year 2026 ";
    Output whole = ParseLog(dir, base + Quote(dir / "mail.log"));
    Output given = ParseLog(dir, base + files);
    EXPECT_EQ(given.rc, 0) << given.err;
    EXPECT_TRUE(given.out == whole.out) << files;
  }

  // A missing file, a cut gzip file: named, the rest read, exit 1.
  const std::string gz = ReadFile(dir / "mail.log.2.gz");
  AppendFile(dir / "cut.gz", gz.substr(0, gz.size() / 2));
  Output alone = ParseLog(dir, kBouncectl + " parse-log --summary " + Quote(dir / "mail.log.3"));
  Output missing = ParseLog(dir, kBouncectl + " parse-log --summary " + Quote(dir / "missing") +
                                     " " + Quote(dir / "mail.log.3"));
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("cannot open " + (dir / "missing")), std::string::npos) << missing.err;
  EXPECT_TRUE(missing.out == alone.out);
  Output cut = ParseLog(dir, kBouncectl + " parse-log --summary " + Quote(dir / "cut.gz") + " " +
                                 Quote(dir / "mail.log.3"));
  EXPECT_EQ(cut.rc, 1);
  EXPECT_NE(cut.err.find("cannot read " + (dir / "cut.gz") + ": 'gzip -dc' failed"),
            std::string::npos)
      << cut.err;
  // Stdin redirected from a compressed file reads as the file; from a pipe (or a FIFO, here
  // bash's <(...)) it cannot be read again from its start: refused, saying what to do.
  Output part2 = ParseLog(dir, kBouncectl + " parse-log --summary " + Quote(dir / "part2"));
  Output redirected =
      ParseLog(dir, kBouncectl + " parse-log --summary - < " + Quote(dir / "mail.log.2.gz"));
  EXPECT_EQ(redirected.rc, 0) << redirected.err;
  EXPECT_TRUE(redirected.out == part2.out);
  Output piped = ParseLog(
      dir, "cat " + Quote(dir / "mail.log.2.gz") + " | " + kBouncectl + " parse-log --summary -");
  EXPECT_EQ(piped.rc, 1);
  EXPECT_NE(piped.err.find("stdin is gzip-compressed and a pipe"), std::string::npos) << piped.err;
  Output fifo = ParseLog(dir, "bash -c '" + kBouncectl + " parse-log --summary <(cat " +
                                  Quote(dir / "mail.log.2.gz") + ")'");
  EXPECT_EQ(fifo.rc, 1);
  EXPECT_NE(fifo.err.find("is gzip-compressed and a pipe"), std::string::npos) << fifo.err;
}

}  // namespace
}  // namespace bounced::testing
