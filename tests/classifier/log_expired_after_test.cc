// log_expired_after_test.cc: ExpiredResultAfter gives, from a recipient's last deferral as the
// correlator reported it, the same `expired` result the correlator gives when it read the
// deferral itself (every fixture with an expiry; the field-by-field comparison is the point).
#include <gtest/gtest.h>

#include <string>

#include "classifier/log_parser.h"
#include "classifier/rules.h"
#include "tests/classifier/log_test_util.h"

namespace bounced {
namespace {

using testing_log::Correlate;
using testing_log::ReadTestFile;

TEST(ExpiredResultAfter, MatchesTheCorrelatorsExpiryForEveryFixture) {
  const char* fixtures[] = {"postfix/down.log",       "postfix/down-2.log",
                            "postfix/gmail-full.log", "postfix/gmail-rate.log",
                            "postfix/greet421.log",   "postfix/greet421-2.log",
                            "postfix/tss04.log",      "postfix/postfix.scenarios.log",
                            "sample/mail.log"};
  std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  int checked = 0;
  for (const char* fixture : fixtures) {
    SCOPED_TRACE(fixture);
    testing_log::LogRun run = Correlate(ReadTestFile(fixture));
    for (size_t i = 0; i < run.events.size(); ++i) {
      const DeliveryEvent& expired = run.events[i];
      if (expired.log_status != "expired" || expired.recipient.empty()) continue;
      const DeliveryEvent* deferral = nullptr;
      for (size_t j = i; j-- > 0;) {
        const DeliveryEvent& e = run.events[j];
        if (e.queue_id == expired.queue_id && e.recipient == expired.recipient &&
            e.orig_recipient == expired.orig_recipient) {
          deferral = &e;
          break;
        }
      }
      ASSERT_NE(deferral, nullptr) << expired.queue_id << " " << expired.recipient;
      ASSERT_EQ(deferral->log_status, "deferred");
      SCOPED_TRACE(expired.queue_id + " " + expired.recipient);
      Result got = ExpiredResultAfter(*rules, deferral->result);
      const Result& want = expired.result;
      EXPECT_EQ(got.recipient, want.recipient);
      EXPECT_EQ(got.original_recipient, want.original_recipient);
      EXPECT_EQ(ToString(got.category), ToString(want.category));
      EXPECT_EQ(got.status, want.status);
      EXPECT_EQ(got.reply_code, want.reply_code);
      EXPECT_EQ(got.stage, want.stage);
      EXPECT_EQ(got.provider, want.provider);
      EXPECT_EQ(got.provider_code, want.provider_code);
      EXPECT_EQ(got.diagnostic, want.diagnostic);
      EXPECT_EQ(got.remote_mta, want.remote_mta);
      EXPECT_EQ(got.dsn_action, want.dsn_action);
      EXPECT_EQ(got.rule, want.rule);
      ++checked;
    }
  }
  // down, down-2, gmail-full, gmail-rate, greet421 (x2), tss04 and more in the scenarios.
  EXPECT_GE(checked, 8);
}

}  // namespace
}  // namespace bounced
