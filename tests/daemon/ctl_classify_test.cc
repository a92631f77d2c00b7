// ctl_classify_test.cc: the offline commands' options as bouncectl takes them: a --rules path
// that is a folder is a usage error for parse, parse-log and classify (not a run without the
// extra rules); classify's --status and --reply-code are refused when the classifier would drop
// them, and used when given. A mistyped command is named as such.
#include <gtest/gtest.h>

#include <string>

#include "tests/daemon/daemon_harness.h"

namespace bounced::testing {
namespace {

TEST(CtlClassify, RulesFolderIsAUsageError) {
  TempDir dir;
  const std::string folder = dir / "rules.d";
  fs::create_directory(folder);
  const std::string log = kTestData + "/postfix/cs01.log";
  for (const std::string& cmd :
       {"parse " + Quote(kTestData + "/milter/remote_dsn.eml"), "parse-log " + Quote(log),
        std::string("classify '550 5.1.1 x'")}) {
    int rc = -1;
    const std::string err = dir / "err";
    std::string out = Shell(kBouncectl + " " + cmd.substr(0, cmd.find(' ')) + " --rules " +
                                Quote(folder) + cmd.substr(cmd.find(' ')) + " 2>" + Quote(err),
                            &rc);
    EXPECT_EQ(rc, 2) << cmd;
    EXPECT_EQ(out, "") << cmd;
    EXPECT_NE(ReadFile(err).find("cannot read rules file " + folder + ": Is a directory"),
              std::string::npos)
        << cmd << ": " << ReadFile(err);
  }
}

TEST(CtlClassify, RulesFromAPipeStillLoad) {
  int rc = -1;
  std::string out = Shell("echo '' | " + kBouncectl +
                              " classify --rules /dev/stdin '550 5.1.1 <a@b.example> user unknown'",
                          &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"category\":\"user_unknown\""), std::string::npos) << out;
}

TEST(CtlClassify, RefusesAStatusOrReplyCodeItWouldIgnore) {
  for (const char* args : {"--status 9.9.9", "--status 5.1", "--status x", "--status ''",
                           "--reply-code 99999999999999999999", "--reply-code 650",
                           "--reply-code 55", "--reply-code -550"}) {
    int rc = -1;
    std::string out = Shell(kBouncectl + " classify " + args + " 'mailbox unavailable' 2>&1", &rc);
    EXPECT_EQ(rc, 2) << args << ": " << out;
    EXPECT_EQ(out.find("\"category\""), std::string::npos) << args << ": " << out;
  }
}

TEST(CtlClassify, UsesTheStatusAndReplyCodeGiven) {
  int rc = -1;
  std::string out = Shell(
      kBouncectl + " classify --status 5.1.1 --reply-code 550 'mailbox unavailable' 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"status\":\"5.1.1\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"reply_code\":\"550\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"category\":\"user_unknown\""), std::string::npos) << out;
}

TEST(CtlClassify, MistypedCommandIsNamed) {
  int rc = -1;
  std::string out =
      Shell(kBouncectl + " --socket /nonexistent.sock stauts someone@example.com 2>&1", &rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("unknown command 'stauts'"), std::string::npos) << out;
  // A known command missing its argument still gets CLI11's own message.
  out = Shell(kBouncectl + " status 2>&1", &rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("address is required"), std::string::npos) << out;
  out = Shell(kBouncectl + " --version 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
}

}  // namespace
}  // namespace bounced::testing
