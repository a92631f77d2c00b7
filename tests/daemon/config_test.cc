// config_test.cc: bounced.toml parsing: defaults, exact key names, refusals with file:line.
#include "daemon/config.h"

#include <gtest/gtest.h>

namespace bounced {
namespace {

TEST(Config, EmptyFileMeansEveryDefault) {
  auto c = ParseConfig("", "bounced.toml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->storage.path, "/var/lib/bounced/bounced.db");
  EXPECT_EQ(c->input.path, "/var/log/mail.log");
  EXPECT_EQ(c->query.socket, "/run/bounced/query.sock");
  EXPECT_EQ(c->query.mode, 0660u);
  EXPECT_EQ(c->query.group, "bounced");
  EXPECT_EQ(c->socketmap.socket, "/run/bounced/socketmap.sock");
  EXPECT_EQ(c->rules.files.size(), 2u);
  EXPECT_EQ(c->policy.suppression.count_threshold, 3);
  EXPECT_EQ(c->policy.suppression.count_min_span_seconds, 7 * 86400);
  EXPECT_EQ(c->policy.suppression.hard_bounce_expiry_seconds, 0);
  EXPECT_EQ(c->policy.suppression.complaint_report_only_types,
            (std::vector<std::string>{"not-spam", "auth-failure"}));
  EXPECT_EQ(c->policy.Effective().recipient_delimiters, "+");
  EXPECT_TRUE(c->milter.socket.empty());
}

TEST(Config, MissingFileMeansEmbeddedDefaults) {
  auto c = LoadConfig("/nonexistent/bounced.toml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_NE(c->source.find("embedded defaults"), std::string::npos);
}

TEST(Config, ThePrintedDefaultConfigParsesToTheDefaults) {
  auto c = ParseConfig(DefaultConfigToml(), "default");
  ASSERT_TRUE(c.ok()) << c.error();
  Config d;
  EXPECT_EQ(c->query.max_request_bytes, d.query.max_request_bytes);
  EXPECT_EQ(c->query.max_import_bytes, d.query.max_import_bytes);
  EXPECT_EQ(d.query.max_import_bytes, size_t{1} << 30);
  EXPECT_EQ(c->socketmap.access_action, d.socketmap.access_action);
  EXPECT_EQ(c->milter.reject_reply, d.milter.reject_reply);
  EXPECT_EQ(c->policy.suppression.incident_merge_seconds,
            d.policy.suppression.incident_merge_seconds);
  EXPECT_EQ(c->input.poll_interval, d.input.poll_interval);
  EXPECT_EQ(c->verp.enabled, d.verp.enabled);
  EXPECT_EQ(c->policy.suppression.suppress_original_recipient,
            d.policy.suppression.suppress_original_recipient);
  EXPECT_EQ(c->verp.format.delimiters, d.verp.format.delimiters);
  EXPECT_EQ(c->storage.retention, d.storage.retention);
  EXPECT_EQ(d.storage.retention, RetentionPolicy{}) << "keeps everything unless told";
}

TEST(Config, ReadsEveryDocumentedKey) {
  auto c = ParseConfig(R"(
[storage]
path = "/tmp/b.db"
event_retention_days = 400
counter_retention_days = 3650
[input.log]
path = "journal"
journal_files = ["/tmp/a.journal"]
[query]
socket = "/tmp/q.sock"
group = "mailadm"
mode = "0600"
max_request_bytes = 4096
max_import_bytes = 2097152
[socketmap]
socket = ""
[rules]
files = ["/tmp/r.toml"]
[policy]
hard_bounce_expiry = "365d"
soft_threshold = 5
soft_window_days = 14
complaint_expiry = 86400
complaint_report_only_types = ["Not-Spam", "auth-failure", "virus"]
plus_extension = false
suppress_original_recipient = true
[milter]
socket = "inet:8895@127.0.0.1"
action = "log"
actions = { mailbox_full = "tempfail" }
bounces = "quarantine"
on_storage_error = "tempfail"
timeout = "500ms"
[verp]
enabled = true
delimiters = "-="
prefixes = ["bounces", "*-bounces"]
domains = ["*.example.org"]
)",
                       "t.toml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->input.journal_files, std::vector<std::string>{"/tmp/a.journal"});
  EXPECT_EQ(c->query.mode, 0600u);
  EXPECT_EQ(c->query.max_request_bytes, 4096u);
  EXPECT_EQ(c->query.max_import_bytes, 2097152u);
  EXPECT_TRUE(c->socketmap.socket.empty());
  EXPECT_EQ(c->policy.suppression.hard_bounce_expiry_seconds, 365 * 86400);
  EXPECT_EQ(c->policy.suppression.count_threshold, 5);
  EXPECT_EQ(c->policy.suppression.count_min_span_seconds, 14 * 86400);
  EXPECT_EQ(c->policy.suppression.complaint_expiry_seconds, 86400);
  EXPECT_EQ(c->policy.suppression.complaint_report_only_types,
            (std::vector<std::string>{"not-spam", "auth-failure", "virus"}));
  EXPECT_EQ(c->policy.Effective().recipient_delimiters, "");
  EXPECT_TRUE(c->policy.Effective().suppress_original_recipient);
  EXPECT_EQ(c->milter.default_action, RcptAction::kLog);
  EXPECT_EQ(c->milter.ActionFor(Category::kMailboxFull), RcptAction::kTempfail);
  EXPECT_EQ(c->milter.ActionFor(Category::kUserUnknown), RcptAction::kLog);
  EXPECT_EQ(c->milter.bounces, BounceDisposition::kQuarantine);
  EXPECT_EQ(c->milter.on_storage_error, StorageErrorPolicy::kTempfail);
  EXPECT_EQ(c->milter.callback_timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(c->storage.retention, (RetentionPolicy{.event_days = 400, .counter_days = 3650}));
  EXPECT_TRUE(c->verp.enabled);
  EXPECT_EQ(c->verp.format.delimiters, "-=");
  EXPECT_EQ(c->verp.format.prefixes, (std::vector<std::string>{"bounces", "*-bounces"}));
  EXPECT_EQ(c->verp.format.domains, std::vector<std::string>{"*.example.org"});
}

void ExpectRefused(const std::string& text, const std::string& expected) {
  auto c = ParseConfig(text, "b.toml");
  ASSERT_FALSE(c.ok()) << text;
  EXPECT_NE(c.error().find(expected), std::string::npos) << c.error();
}

TEST(Config, RefusesUnknownKeysAndBadValuesWithFileLineKeyAndReason) {
  ExpectRefused("[storage]\npaht = \"x\"\n", "b.toml:2: storage.paht: unknown key");
  ExpectRefused("[storgae]\n", "b.toml:1: storgae: unknown key");
  ExpectRefused("[policy]\nsoft_threshold = 0\n",
                "b.toml:2: policy.soft_threshold: must be between 1");
  ExpectRefused("[policy]\nsoft_threshold = \"3\"\n", "policy.soft_threshold: must be an integer");
  ExpectRefused("[policy]\nhard_bounce_expiry = \"soon\"\n",
                "policy.hard_bounce_expiry: bad duration");
  ExpectRefused("[query]\nmode = \"0999\"\n", "query.mode: must be a file mode");
  ExpectRefused("[policy]\nhard_bounce_expiry = \"500ms\"\n",
                "b.toml:2: policy.hard_bounce_expiry: must be whole seconds");
  ExpectRefused("[policy]\nsoft_incident_gap = \"1500ms\"\n",
                "b.toml:2: policy.soft_incident_gap: must be whole seconds");
  ExpectRefused("[policy]\ncomplaint_report_only_types = [\"not spam\"]\n",
                "policy.complaint_report_only_types: must be feedback types");
  ExpectRefused("[milter]\nsocket = \"/run/m.sock\"\n", "milter.socket: must be");
  ExpectRefused("[milter]\nactions = { no_such_category = \"reject\" }\n",
                "milter.actions.no_such_category: unknown category");
  ExpectRefused("[milter]\nreject_reply = \"450 4.1.1 x\"\n",
                "milter.reject_reply: must start with a 5xx");
  // What the milter itself would refuse at start is refused here, on its line.
  ExpectRefused("[milter]\nsocket = \"unix:\"\n",
                "b.toml:2: milter.socket: unix socket path must be absolute");
  ExpectRefused("[milter]\nsocket = \"inet:port@127.0.0.1\"\n",
                "b.toml:2: milter.socket: bad port");
  ExpectRefused(
      "[milter]\nsocket = \"unix:/run/m.sock\"\n"
      "reject_reply = \"550 5.1.1 <{address}>: suppressed\"\n",
      "b.toml:3: milter.reject_reply: unknown placeholder");
  ExpectRefused("[milter]\ntempfail_reply = \"450 try later\"\n",
                "b.toml:2: milter.tempfail_reply: second word must be an enhanced status code");
  ExpectRefused("[milter]\nremoved_header = \"\"\n", "b.toml:2: milter.removed_header");
  ExpectRefused("[milter]\nmax_bounce_bytes = 67108864\n",
                "b.toml:2: milter.max_bounce_bytes: must be between 4096 and 16777216");
  ExpectRefused("[input.log]\npath = \"\"\n", "input.log.path");
  ExpectRefused("[input.log]\nmax_line_bytes = 10\n", "input.log.max_line_bytes");
  ExpectRefused("[query]\nmax_import_bytes = 10\n",
                "b.toml:2: query.max_import_bytes: must be between 1024");
  ExpectRefused("[query]\nmax_import_bytes = \"1G\"\n",
                "query.max_import_bytes: must be an integer");
  ExpectRefused("[log]\nlevel = \"loud\"\n", "log.level");
  ExpectRefused("[verp]\nenabled = true\ndelimiters = \"+\"\n",
                "b.toml:3: verp.delimiters: must be two different characters");
  ExpectRefused("[verp]\ndelimiters = \"+@\"\n",
                "b.toml:2: verp.delimiters: '@' cannot stand in an address's local part");
  ExpectRefused("[verp]\nprefixes = [\"bounces\"]\ndomains = [\"\"]\n",
                "b.toml:3: verp.domains: an empty pattern matches nothing");
  ExpectRefused("[verp]\nenable = true\n", "b.toml:2: verp.enable: unknown key");
  ExpectRefused("[storage]\nevent_retention_days = 7\n",
                "b.toml:2: storage.event_retention_days: must be 0 (keep for ever) or at least 30");
  ExpectRefused("[storage]\ncounter_retention_days = -1\n",
                "b.toml:2: storage.counter_retention_days: must be between 0 and 36500");
  ExpectRefused("[storage]\nevent_retention_days = \"90d\"\n",
                "b.toml:2: storage.event_retention_days: must be an integer");
  ExpectRefused("[storage]\nevent_retention_days = 60\n[alerts]\nbaseline_days = 60\n",
                "b.toml:2: storage.event_retention_days: must be more than [alerts] baseline_days "
                "(60)");
  ExpectRefused("[storage\n", "b.toml:1:");
}

// [alerts] and [report] are read by the reports code; their errors say where, as the others do.
TEST(Config, RefusesBadAlertsAndReportKeysWithFileLineKeyAndReason) {
  ExpectRefused("[alerts]\nenabled = true\nthreshold = 3\n",
                "b.toml:3: alerts.threshold: unknown key");
  ExpectRefused("[alerts]\n\nfactor = 0.5\n",
                "b.toml:3: alerts.factor: must be a number from 1 to 1000");
  ExpectRefused("[alerts]\nmin_count = -1\n",
                "b.toml:2: alerts.min_count: must be an integer from 1 to 1000000");
  ExpectRefused("[alerts]\ncommand = 1\n", "b.toml:2: alerts.command: must be a string");
  ExpectRefused("[report]\ntop = 5\ntrend_days = 3\n",
                "b.toml:3: report.trend_days: must be an integer from 7 to 30");
  ExpectRefused("[report]\nsendmail = \"sendmail\"\n",
                "b.toml:2: report.sendmail: must be an absolute path");
  ExpectRefused("[report]\nsubject = \"a\\nBcc: x@example.com\"\n",
                "b.toml:2: report.subject: control characters");
  ExpectRefused("[report]\ncolour = \"red\"\n", "b.toml:2: report.colour: unknown key");
  ExpectRefused("alerts = 1\n", "b.toml:1: alerts: must be a table");
  ExpectRefused("\nreport = \"x\"\n", "b.toml:2: report: must be a table");
}

// The socketmap answers "OK " + the filled template: a template that makes an empty or
// malformed access(5)/transport(5) answer is refused when the file is read, on its line.
TEST(Config, RefusesSocketmapTemplatesThatMakeNoProperAnswer) {
  for (const char* good :
       {"REJECT", "REJECT suppressed {address} ({category})", "DEFER try later", "DISCARD",
        "WARN {address} is suppressed", "HOLD", "450 4.2.1 <{address}>: suppressed since {date}",
        "554 5.7.1 suppressed after {reason}"}) {
    auto c = ParseConfig(std::string("[socketmap]\naccess_action = \"") + good + "\"\n", "b.toml");
    ASSERT_TRUE(c.ok()) << good << ": " << c.error();
    EXPECT_EQ(c->socketmap.access_action, good);
  }
  ASSERT_TRUE(
      ParseConfig("[socketmap]\ntransport_action = \"discard:suppressed\"\n", "b.toml").ok());
  ASSERT_TRUE(
      ParseConfig("[socketmap]\ntransport_action = \":[relay.example.com]\"\n", "b.toml").ok());

  // Postfix reads an empty result, and an all-numeric one, as OK: the suppressed recipient
  // would be accepted (and relayed: postfix-config lists the map first).
  ExpectRefused("[socketmap]\naccess_action = \"\"\n",
                "b.toml:2: socketmap.access_action: must not be empty");
  ExpectRefused("[socketmap]\nsocket = \"\"\naccess_action = \"   \"\n",
                "b.toml:3: socketmap.access_action: must not be empty");
  ExpectRefused("[socketmap]\naccess_action = \"550\"\n",
                "b.toml:2: socketmap.access_action: needs a text after the reply code");
  ExpectRefused("[socketmap]\naccess_action = \"550   \"\n",
                "b.toml:2: socketmap.access_action: needs a text after the reply code");
  ExpectRefused("[socketmap]\naccess_action = \"250 2.0.0 fine\"\n",
                "b.toml:2: socketmap.access_action: reply code must be 4xx or 5xx");
  ExpectRefused("[socketmap]\naccess_action = \"5501 no\"\n",
                "socketmap.access_action: reply code must be 4xx or 5xx");
  ExpectRefused("[socketmap]\naccess_action = \"OK\"\n",
                "b.toml:2: socketmap.access_action: 'OK' would accept suppressed recipients");
  ExpectRefused("[socketmap]\naccess_action = \"relay\"\n", "'relay' would accept");
  ExpectRefused("[socketmap]\naccess_action = \"permit_mynetworks\"\n",
                "'permit_mynetworks' would accept");
  ExpectRefused("[socketmap]\naccess_action = \" 550 5.1.1 x\"\n",
                "b.toml:2: socketmap.access_action: must not start with a blank");
  ExpectRefused("[socketmap]\naccess_action = \"550 5.1.1 x\\r\\n250 ok\"\n",
                "b.toml:2: socketmap.access_action: must be one line of printable ASCII");
  ExpectRefused("[socketmap]\naccess_action = \"550 5.1.1 <{addr}>: suppressed\"\n",
                "b.toml:2: socketmap.access_action: unknown placeholder at '{addr}>: sup'");
  ExpectRefused("[socketmap]\naccess_action = \"{address} REJECT\"\n",
                "socketmap.access_action: must start with the action, not a placeholder");

  ExpectRefused("[socketmap]\ntransport_action = \"\"\n",
                "b.toml:2: socketmap.transport_action: must not be empty");
  ExpectRefused("[socketmap]\ntransport_action = \"error 5.1.1 suppressed\"\n",
                "b.toml:2: socketmap.transport_action: must be a transport(5) result");
  ExpectRefused("[socketmap]\ntransport_action = \":\"\n",
                "b.toml:2: socketmap.transport_action: \":\" alone would route");
  ExpectRefused("[socketmap]\ntransport_action = \"my error:5.1.1 x\"\n",
                "socketmap.transport_action: the transport before ':' must be a master.cf");
  ExpectRefused("[socketmap]\ntransport_action = \"error:5.1.1 {when}\"\n",
                "socketmap.transport_action: unknown placeholder");
}

// FILTER and REDIRECT keep the recipient and send the message elsewhere; smtpd skips either
// when its argument is unusable (access(5): FILTER needs transport:destination, REDIRECT an
// address), so a suppressed recipient would get through: refused when the file is read.
TEST(Config, RefusesSocketmapFilterAndRedirectWithoutAUsableArgument) {
  for (const char* good : {"FILTER smtp:[127.0.0.1]:10025", "filter quarantine:",
                           "FILTER lmtp:unix:private/quarantine", "REDIRECT postmaster@example.com",
                           "Redirect suppressed+bounced@example.com"}) {
    auto c = ParseConfig(std::string("[socketmap]\naccess_action = \"") + good + "\"\n", "b.toml");
    ASSERT_TRUE(c.ok()) << good << ": " << c.error();
    EXPECT_EQ(c->socketmap.access_action, good);
  }

  ExpectRefused("[socketmap]\naccess_action = \"FILTER\"\n",
                "b.toml:2: socketmap.access_action: FILTER needs transport:destination after it");
  ExpectRefused("[socketmap]\nsocket = \"\"\naccess_action = \"Filter   \"\n",
                "b.toml:3: socketmap.access_action: FILTER needs transport:destination after it");
  ExpectRefused("[socketmap]\naccess_action = \"FILTER quarantine\"\n",
                "b.toml:2: socketmap.access_action: FILTER needs transport:destination, with a "
                "':', not 'quarantine' (Postfix would skip the FILTER and let the suppressed "
                "recipient through)");
  ExpectRefused("[socketmap]\naccess_action = \"FILTER :[127.0.0.1]:10025\"\n",
                "b.toml:2: socketmap.access_action: FILTER's transport before ':' must be a "
                "master.cf service name");
  ExpectRefused("[socketmap]\naccess_action = \"FILTER my/filter:x\"\n",
                "FILTER's transport before ':' must be a master.cf service name");
  ExpectRefused("[socketmap]\naccess_action = \"FILTER smtp:[127.0.0.1]:10025 suppressed\"\n",
                "b.toml:2: socketmap.access_action: FILTER's transport:destination must be one "
                "word");
  ExpectRefused("[socketmap]\naccess_action = \"FILTER smtp:{category}\"\n",
                "b.toml:2: socketmap.access_action: FILTER's transport:destination must be fixed "
                "text, without placeholders");

  // PREPEND tags the message and lets it through (a monitoring setup); smtpd skips it unless
  // its argument is a header.
  for (const char* good : {"PREPEND X-Suppressed: {address} since {date} ({reason})",
                           "prepend X-Bounced-Suppressed : yes"}) {
    auto c = ParseConfig(std::string("[socketmap]\naccess_action = \"") + good + "\"\n", "b.toml");
    ASSERT_TRUE(c.ok()) << good << ": " << c.error();
  }
  ExpectRefused("[socketmap]\naccess_action = \"PREPEND\"\n",
                "b.toml:2: socketmap.access_action: PREPEND needs a header after it");
  ExpectRefused("[socketmap]\naccess_action = \"PREPEND suppressed {address}\"\n",
                "PREPEND needs a header after it, \"Name: value\"");
  ExpectRefused("[socketmap]\naccess_action = \"PREPEND : suppressed\"\n",
                "PREPEND needs a header after it");
  ExpectRefused("[socketmap]\naccess_action = \"PREPEND X Suppressed: yes\"\n",
                "PREPEND's header name must be one word, not 'X Suppressed'");
  ExpectRefused("[socketmap]\naccess_action = \"PREPEND X-{category}: yes\"\n",
                "PREPEND's header name must be fixed text");

  ExpectRefused("[socketmap]\naccess_action = \"REDIRECT\"\n",
                "b.toml:2: socketmap.access_action: REDIRECT needs a user@domain address after it "
                "(Postfix would skip the REDIRECT and let the suppressed recipient through)");
  ExpectRefused("[socketmap]\naccess_action = \"REDIRECT postmaster\"\n",
                "b.toml:2: socketmap.access_action: REDIRECT needs a user@domain address, not "
                "'postmaster'");
  ExpectRefused("[socketmap]\naccess_action = \"redirect @example.com\"\n",
                "REDIRECT needs a user@domain address, not '@example.com'");
  ExpectRefused("[socketmap]\naccess_action = \"REDIRECT postmaster@\"\n",
                "REDIRECT needs a user@domain address, not 'postmaster@'");
  ExpectRefused("[socketmap]\naccess_action = \"REDIRECT <postmaster@example.com>\"\n",
                "b.toml:2: socketmap.access_action: REDIRECT's address must be written without "
                "angle brackets");
  ExpectRefused("[socketmap]\naccess_action = \"REDIRECT a@example.com b@example.com\"\n",
                "REDIRECT's address must be one word");
  ExpectRefused("[socketmap]\naccess_action = \"REDIRECT {address}\"\n",
                "b.toml:2: socketmap.access_action: REDIRECT's address must be fixed text, "
                "without placeholders");
}

// mail_to ends up on sendmail's command line and in the To: header: what is not an address is
// refused when the file is read, not when the report timer first mails at night.
TEST(Config, RefusesReportMailToEntriesThatAreNotAddresses) {
  auto c = ParseConfig(
      "[report]\nmail_to = \"postmaster@example.com, ops+bounces@mail.example.com\"\n"
      "mail_from = \"bounced@mx.example.com\"\n",
      "b.toml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->report.mail_to, "postmaster@example.com, ops+bounces@mail.example.com");
  ASSERT_TRUE(ParseConfig("[report]\nmail_to = \"\"\n", "b.toml").ok());  // "" = no mail

  ExpectRefused("[report]\nmail_to = \"not an address\"\n",
                "b.toml:2: report.mail_to: not a mail address: 'not': no @domain");
  ExpectRefused("[report]\ntop = 3\nmail_to = \"ops@example.com, nobody\"\n",
                "b.toml:3: report.mail_to: not a mail address: 'nobody': no @domain");
  ExpectRefused("[report]\nmail_to = \"Ops <ops@example.com>\"\n",
                "b.toml:2: report.mail_to: not a mail address: 'Ops'");
  ExpectRefused("[report]\nmail_to = \"<ops@example.com>\"\n",
                "report.mail_to: not a mail address: '<ops@example.com>': '<' in the local part");
  ExpectRefused("[report]\nmail_to = \"ops@example.com>\"\n", "'>' in the domain");
  ExpectRefused(
      "[report]\nmail_to = \"-oQ/tmp@example.com\"\n",
      "b.toml:2: report.mail_to: not a mail address: '-oQ/tmp@example.com': starts with '-'");
  ExpectRefused("[report]\nmail_to = \"ops@example.com\\r\\nBcc: x@example.net\"\n",
                "b.toml:2: report.mail_to: control characters");
  ExpectRefused("[report]\nmail_to = \"ops@\"\n", "b.toml:2: report.mail_to: not a mail address");
  ExpectRefused("[report]\nmail_to = \"@example.com\"\n", "empty local part");
  ExpectRefused("[report]\nmail_to = \"ops@example..com\"\n", "an empty label in the domain");
  ExpectRefused("[report]\nmail_to = \"ops;rm@example.com\"\n", "';' in the local part");
  ExpectRefused("[report]\nmail_to = \" , \"\n", "b.toml:2: report.mail_to: no mail address given");
  ExpectRefused("[report]\nmail_from = \"Bounced <bounced@example.com>\"\n",
                "b.toml:2: report.mail_from: not a mail address");
  ExpectRefused("[report]\nmail_from = \"a@example.com,b@example.com\"\n",
                "b.toml:2: report.mail_from: not a mail address: 'a@example.com,b@example.com': a "
                "comma in the address");
}

}  // namespace
}  // namespace bounced
