// provider_codes_test.cc: provider codes ([[code]] tables of rules/default.toml) as they come out
// of Postfix log lines: Exchange Online / Outlook.com S-codes of every length and AS codes
// ((AS3130), AS(201806281)), preferred over the x.7.nnn status next to them.
#include <gtest/gtest.h>

#include <string>

#include "tests/classifier/log_test_util.h"

namespace bounced {
namespace {

using testing_log::Correlate;
using testing_log::For;
using testing_log::LogRun;

std::string Line(std::string_view queue_id, std::string_view rcpt, std::string_view relay,
                 std::string_view dsn, std::string_view status, std::string_view reply) {
  return "Nov 29 16:40:01 mail01 postfix/smtp[31861]: " + std::string(queue_id) + ": to=<" +
         std::string(rcpt) + ">, relay=" + std::string(relay) +
         "[52.101.10.37]:25, delay=0.09, delays=0.03/0/0.01/0.04, dsn=" + std::string(dsn) +
         ", status=" + std::string(status) + " (host " + std::string(relay) +
         "[52.101.10.37] said: " + std::string(reply) + ")\n";
}

TEST(MicrosoftProviderCodes, ComeFromTheReplyNotTheStatus) {
  const std::string log =
      Line("A9B413D9F21", "a@hotmail.com", "hotmail-com.olc.protection.outlook.com", "4.7.500",
           "deferred",
           "451 4.7.500 Server busy. Please try again later from [198.51.100.23]. (S77719) "
           "[Name=Protocol Filter Agent][AGT=PFA][MxId=11B5E6E22C4731FE] "
           "[DU2PEPF0000C192.eurprd09.prod.outlook.com 2026-11-29T16:40:01.692Z "
           "08DE887E3B5045D6] (in reply to MAIL FROM command)") +
      Line("B9B413D9F22", "b@hotmail.com", "hotmail-com.olc.protection.outlook.com", "5.5.0",
           "bounced",
           "550 5.5.0 Requested action not taken: mailbox unavailable (S2017062302). "
           "[BN8NAM11FT066.eop-nam11.prod.protection.outlook.com] (in reply to RCPT TO command)") +
      Line("C9B413D9F23", "c@contoso.com", "contoso-com.mail.protection.outlook.com", "5.4.1",
           "bounced",
           "550 5.4.1 Recipient address rejected: Access denied. AS(201806281) "
           "[SN1PEPF000252A1.namprd05.prod.outlook.com 2026-11-29T16:40:03.000Z 08DE887E3B5045D6] "
           "(in reply to RCPT TO command)") +
      Line("D9B413D9F24", "d@contoso.com", "contoso-com.mail.protection.outlook.com", "5.7.1",
           "bounced",
           "550 5.7.1 Service unavailable, Client host [198.51.100.23] blocked using Spamhaus. To "
           "request removal from this list see https://www.spamhaus.org/query/ip/198.51.100.23 "
           "(AS3130). [BN1PEPF00004680.namprd03.prod.outlook.com 2026-11-29T16:40:04.000Z "
           "08DE887E3B5045D6] (in reply to MAIL FROM command)") +
      // Same wording, another code: a cached classification must not carry the first one over.
      Line("E9B413D9F25", "e@hotmail.com", "hotmail-com.olc.protection.outlook.com", "4.7.500",
           "deferred",
           "451 4.7.500 Server busy. Please try again later from [198.51.100.23]. (S77720) "
           "[Name=Protocol Filter Agent][AGT=PFA][MxId=22B5E6E22C4731FE] "
           "[DU2PEPF0000C193.eurprd09.prod.outlook.com 2026-11-29T16:40:05.692Z "
           "08DE887E3B5045D7] (in reply to MAIL FROM command)");
  LogRun run = Correlate(log);
  struct Want {
    const char* recipient;
    Category category;
    const char* code;
  };
  for (const Want& w : {Want{"a@hotmail.com", Category::kRateLimited, "S77719"},
                        Want{"b@hotmail.com", Category::kUserUnknown, "S2017062302"},
                        Want{"c@contoso.com", Category::kUserUnknown, "AS(201806281)"},
                        Want{"d@contoso.com", Category::kReputationBlock, "AS3130"},
                        Want{"e@hotmail.com", Category::kRateLimited, "S77720"}}) {
    SCOPED_TRACE(w.recipient);
    auto events = For(run, w.recipient);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0]->result.provider, "microsoft");
    EXPECT_EQ(events[0]->result.category, w.category);
    EXPECT_EQ(events[0]->result.provider_code, w.code);
  }
}

}  // namespace
}  // namespace bounced
