// policy_test.cc: the suppression policy table (storage/policy.h), event by event, and the same
// decisions through a real Store (allowlist and manual decisions win).
#include "storage/policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/storage/test_util.h"

namespace bounced {
namespace {

using testing::kDay;
using testing::kT0;
using testing::MakeEvent;

struct Step {
  Category category;
  const char* log_status;
  int64_t t;
  bool suppress;
};

// Runs events through one recipient's state; checks each decision.
void RunSteps(const std::vector<Step>& steps, const SuppressionPolicy& p = SuppressionPolicy()) {
  RecipientState s;
  s.address = "a@example.com";
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& st = steps[i];
    Event e = MakeEvent("a@example.com", st.category, st.log_status, st.t);
    PolicyDecision d = ApplyEvent(p, s, e, st.t);
    EXPECT_EQ(d.suppress, st.suppress)
        << "step " << i << " (" << ToString(st.category) << " " << st.log_status << ")";
  }
}

TEST(PolicyTest, HardBounceSuppressesAtFirstEvent) {
  for (Category c : {Category::kUserUnknown, Category::kDomainUnknown, Category::kMailboxMoved,
                     Category::kNotAccept}) {
    RecipientState s;
    PolicyDecision d =
        ApplyEvent(SuppressionPolicy(), s, MakeEvent("a@x.org", c, "bounced", kT0), kT0);
    EXPECT_TRUE(d.suppress) << ToString(c);
    EXPECT_EQ(d.reason, kReasonHardBounce);
    EXPECT_EQ(d.source, "bounce");
    EXPECT_EQ(d.expires, 0);
  }
}

TEST(PolicyTest, DeferredUserUnknownIsNotAHardBounceYet) {
  RunSteps({{Category::kUserUnknown, "deferred", kT0, false},
            {Category::kUserUnknown, "bounced", kT0 + 60, true}});
}

TEST(PolicyTest, HardBounceExpiryIsConfigurable) {
  SuppressionPolicy p;
  p.hard_bounce_expiry_seconds = 30 * kDay;
  RecipientState s;
  PolicyDecision d =
      ApplyEvent(p, s, MakeEvent("a@x.org", Category::kUserUnknown, "bounced", kT0), kT0);
  EXPECT_EQ(d.expires, kT0 + 30 * kDay);
}

TEST(PolicyTest, SenderFaultAndTransientNeverSuppress) {
  // iCloud CS01/CS02 (policy_rejection) and HM08 (auth_failure), among all sender and transient
  // categories: many permanent failures over many days never suppress the recipient.
  for (int i = 0; i < kCategoryCount; ++i) {
    auto c = static_cast<Category>(i);
    Fault f = Describe(c).fault;
    if (f != Fault::kSender && f != Fault::kTransient) continue;
    RecipientState s;
    for (int n = 0; n < 10; ++n) {
      int64_t t = kT0 + n * 2 * kDay;
      PolicyDecision d =
          ApplyEvent(SuppressionPolicy(), s, MakeEvent("a@icloud.com", c, "bounced", t), t);
      EXPECT_FALSE(d.suppress) << ToString(c);
    }
  }
}

TEST(PolicyTest, MailboxFullSuppressesAfterThreeIncidentsOverSevenDays) {
  RunSteps({{Category::kMailboxFull, "bounced", kT0, false},
            {Category::kMailboxFull, "bounced", kT0 + 3 * kDay, false},
            {Category::kMailboxFull, "bounced", kT0 + 7 * kDay, true}});
}

TEST(PolicyTest, ThreeIncidentsWithinLessThanSevenDaysDoNotSuppress) {
  RunSteps({{Category::kMailboxDisabled, "bounced", kT0, false},
            {Category::kMailboxDisabled, "bounced", kT0 + 2 * kDay, false},
            {Category::kMailboxDisabled, "bounced", kT0 + 4 * kDay, false},
            {Category::kMailboxDisabled, "bounced", kT0 + 6 * kDay, false},
            {Category::kMailboxDisabled, "bounced", kT0 + 7 * kDay, true}});
}

TEST(PolicyTest, BurstWithinAMinuteIsOneIncident) {
  RecipientState s;
  SuppressionPolicy p;
  for (int i = 0; i < 3; ++i) {
    int64_t t = kT0 + i * 20;
    ApplyEvent(p, s, MakeEvent("a@x.org", Category::kMailboxFull, "bounced", t), t);
  }
  EXPECT_EQ(s.incidents, 1);
  // Two more bursts, the last 7 days after the first: three incidents, suppressed.
  RunSteps({{Category::kMailboxFull, "bounced", kT0, false},
            {Category::kMailboxFull, "bounced", kT0 + 10, false},
            {Category::kMailboxFull, "bounced", kT0 + 50, false},
            {Category::kMailboxFull, "bounced", kT0 + 7 * kDay, false},
            {Category::kMailboxFull, "bounced", kT0 + 7 * kDay + 30, false},
            {Category::kMailboxFull, "bounced", kT0 + 8 * kDay, true}});
}

TEST(PolicyTest, DeliveryInBetweenResetsTheCount) {
  RunSteps({{Category::kMailboxFull, "bounced", kT0, false},
            {Category::kMailboxFull, "bounced", kT0 + 4 * kDay, false},
            {Category::kDelivered, "sent", kT0 + 5 * kDay, false},
            {Category::kMailboxFull, "bounced", kT0 + 8 * kDay, false},
            {Category::kMailboxFull, "bounced", kT0 + 12 * kDay, false},
            {Category::kMailboxFull, "bounced", kT0 + 15 * kDay, true}});
}

TEST(PolicyTest, DeferredMailboxFullCountsOnlyWhenConfigured) {
  RunSteps({{Category::kMailboxFull, "deferred", kT0, false},
            {Category::kMailboxFull, "deferred", kT0 + 4 * kDay, false},
            {Category::kMailboxFull, "deferred", kT0 + 8 * kDay, false}});
  SuppressionPolicy p;
  p.count_deferrals = true;
  RunSteps({{Category::kMailboxFull, "deferred", kT0, false},
            {Category::kMailboxFull, "deferred", kT0 + 4 * kDay, false},
            {Category::kMailboxFull, "deferred", kT0 + 8 * kDay, true}},
           p);
}

TEST(PolicyTest, ComplaintSuppressesWithItsOwnReason) {
  RecipientState s;
  PolicyDecision d = ApplyEvent(SuppressionPolicy(), s,
                                MakeEvent("a@x.org", Category::kComplaint, "complaint", kT0), kT0);
  EXPECT_TRUE(d.suppress);
  EXPECT_EQ(d.reason, kReasonComplaint);
  EXPECT_EQ(d.source, "complaint");
}

// Not-spam and auth-failure reports say nothing of what the recipient wants: recorded, never
// suppressing, unless the operator lists other feedback types.
TEST(PolicyTest, ReportOnlyFeedbackTypesDoNotSuppress) {
  auto complaint = [](const char* type) {
    Event e = MakeEvent("a@x.org", Category::kComplaint, "complaint", kT0);
    e.result.provider_code = type;
    return e;
  };
  SuppressionPolicy p;
  for (const char* type : {"not-spam", "auth-failure"}) {
    RecipientState s;
    EXPECT_FALSE(ApplyEvent(p, s, complaint(type), kT0).suppress) << type;
  }
  for (const char* type : {"abuse", "fraud", "opt-out", ""}) {
    RecipientState s;
    EXPECT_TRUE(ApplyEvent(p, s, complaint(type), kT0).suppress) << type;
  }
  p.complaint_report_only_types = {"abuse"};
  RecipientState s1, s2;
  EXPECT_FALSE(ApplyEvent(p, s1, complaint("abuse"), kT0).suppress);
  EXPECT_TRUE(ApplyEvent(p, s2, complaint("auth-failure"), kT0).suppress);
}

TEST(PolicyTest, EventsBeforeAManualUnsuppressDoNotResuppress) {
  RecipientState s;
  s.manual_unsuppressed = kT0 + 100;
  SuppressionPolicy p;
  EXPECT_FALSE(
      ApplyEvent(p, s, MakeEvent("a@x.org", Category::kUserUnknown, "bounced", kT0), kT0).suppress);
  EXPECT_TRUE(ApplyEvent(p, s, MakeEvent("a@x.org", Category::kUserUnknown, "bounced", kT0 + 200),
                         kT0 + 200)
                  .suppress);
}

// Failures from before an unsuppress, read after it (a log caught up late), are not counted:
// the same events give the same count whichever order they were read in.
TEST(PolicyTest, FailuresBeforeAManualUnsuppressDoNotCount) {
  RecipientState s;
  s.manual_unsuppressed = kT0 + 20 * kDay;
  SuppressionPolicy p;
  auto full = [](int64_t t) { return MakeEvent("a@x.org", Category::kMailboxFull, "bounced", t); };
  EXPECT_FALSE(ApplyEvent(p, s, full(kT0), kT0).suppress);
  EXPECT_FALSE(ApplyEvent(p, s, full(kT0 + 8 * kDay), kT0 + 8 * kDay).suppress);
  EXPECT_EQ(s.incidents, 0);
  EXPECT_FALSE(ApplyEvent(p, s, full(kT0 + 21 * kDay), kT0 + 21 * kDay).suppress);
  EXPECT_EQ(s.incidents, 1);
}

TEST(PolicyTest, BlockedByBouncedItselfIsIgnored) {
  RunSteps({{Category::kUserUnknown, "blocked", kT0, false}});
}

// --- deliveries and the count, by message ---

// A mailbox_full event of message `id` ("" = unknown), from the log (`status` sent/bounced) or,
// for a bounce with source kDsn, as EventsFromBounce makes it: the original's Message-ID
// without its angle brackets.
Event ForMessage(Category c, const char* status, int64_t t, const std::string& id,
                 EventSource source = EventSource::kLog) {
  Event e = MakeEvent("a@example.com", c, status, t, source);
  if (source == EventSource::kLog) {
    e.message_id = id.empty() ? "" : "<" + id + ">";
  } else {
    e.message_id = id;
    e.source_ref = "<dsn." + std::to_string(t) + "@relay.example>";
    e.result.dsn_action = "failed";
  }
  return e;
}
Event Sent(int64_t t, const std::string& id) {
  return ForMessage(Category::kDelivered, "sent", t, id);
}
Event FullLog(int64_t t, const std::string& id) {
  return ForMessage(Category::kMailboxFull, "bounced", t, id);
}
Event FullDsn(int64_t t, const std::string& id) {
  return ForMessage(Category::kMailboxFull, "bounced", t, id, EventSource::kDsn);
}

// A relay answers 250 (Postfix logs status=sent), then the remote sends a DSN: mailbox full.
// Each message's own delivery must not reset the count its own bounce then adds to.
TEST(PolicyTest, DeliveryOfTheMessageThatThenBouncesDoesNotResetTheCount) {
  RecipientState s;
  SuppressionPolicy p;
  for (int i = 0; i < 3; ++i) {
    const int64_t t = kT0 + i * 4 * kDay;  // the third 8 days after the first
    const std::string id = testing::Numbered("m", i, "@shop.example");
    EXPECT_FALSE(ApplyEvent(p, s, Sent(t, id), t).suppress);
    EXPECT_EQ(s.incidents, i);
    if (i > 0) {
      EXPECT_EQ(s.pending_delivery, t);
      EXPECT_EQ(s.pending_message_id, id);
    }
    PolicyDecision d = ApplyEvent(p, s, FullDsn(t + 3600, id), t + 3600);
    EXPECT_EQ(d.suppress, i == 2) << "message " << i;
    EXPECT_EQ(s.incidents, i + 1);
    EXPECT_EQ(s.pending_delivery, 0);
    EXPECT_EQ(s.pending_message_id, "");
    if (d.suppress) {
      EXPECT_EQ(d.reason, kReasonRepeatedFailure);
      EXPECT_EQ(d.first_event, kT0 + 3600);
    }
  }
}

// The synchronous case is unchanged: a delivery of another message after the incidents resets
// the count, at the next failure.
TEST(PolicyTest, DeliveryOfAnotherMessageResetsTheCountAtTheNextFailure) {
  RecipientState s;
  SuppressionPolicy p;
  ApplyEvent(p, s, FullLog(kT0, "m1@shop.example"), kT0);
  ApplyEvent(p, s, FullLog(kT0 + 4 * kDay, "m2@shop.example"), kT0 + 4 * kDay);
  ApplyEvent(p, s, Sent(kT0 + 5 * kDay, "m3@shop.example"), kT0 + 5 * kDay);
  EXPECT_EQ(s.incidents, 2);  // the delivery of m3 waits: m3 may bounce too
  EXPECT_EQ(s.pending_delivery, kT0 + 5 * kDay);
  PolicyDecision d = ApplyEvent(p, s, FullLog(kT0 + 8 * kDay, "m4@shop.example"), kT0 + 8 * kDay);
  EXPECT_FALSE(d.suppress);
  EXPECT_EQ(s.incidents, 1);
  EXPECT_EQ(s.incidents_since, kT0 + 8 * kDay);
  EXPECT_EQ(s.pending_delivery, 0);
  // A failure whose message is unknown (a DSN without the original's headers) may be of any
  // message: after a noted delivery it resets the count too.
  ApplyEvent(p, s, Sent(kT0 + 9 * kDay, "m5@shop.example"), kT0 + 9 * kDay);
  ApplyEvent(p, s, FullDsn(kT0 + 10 * kDay, ""), kT0 + 10 * kDay);
  EXPECT_EQ(s.incidents, 1);
  EXPECT_EQ(s.incidents_since, kT0 + 10 * kDay);
}

// A relay may hold several of the recipient's messages before the first one's DSN comes back
// (a receipt and a newsletter, or a relay that retries for days): every message's delivery
// waits, and each message's own DSN drops its own. Only a delivery of a message accepted before
// the failing one proves the mailbox took mail after the incidents.
TEST(PolicyTest, DeliveriesOfSeveralMessagesWaitForTheirOwnBounces) {
  SuppressionPolicy p;
  RecipientState s;
  ApplyEvent(p, s, FullLog(kT0, "m1@shop.example"), kT0);
  ApplyEvent(p, s, Sent(kT0 + 4 * kDay, "m2@shop.example"), kT0 + 4 * kDay);
  ApplyEvent(p, s, Sent(kT0 + 4 * kDay + 60, "m2@shop.example"), kT0 + 4 * kDay + 60);  // same
  ApplyEvent(p, s, Sent(kT0 + 4 * kDay + 600, "m3@shop.example"), kT0 + 4 * kDay + 600);
  EXPECT_EQ(s.incidents, 1);  // nothing reset: either message may bounce
  EXPECT_EQ(s.pending_delivery, kT0 + 4 * kDay + 600);
  EXPECT_EQ(s.pending_message_id, "m3@shop.example");
  EXPECT_EQ(s.pending_earlier, std::to_string(kT0 + 4 * kDay + 60) + " m2@shop.example\n");
  // m2's DSN: m3 was accepted after m2, so it proves nothing yet and waits on.
  EXPECT_FALSE(
      ApplyEvent(p, s, FullDsn(kT0 + 4 * kDay + 3600, "m2@shop.example"), kT0 + 4 * kDay + 3600)
          .suppress);
  EXPECT_EQ(s.incidents, 2);
  EXPECT_EQ(s.pending_delivery, kT0 + 4 * kDay + 600);
  EXPECT_EQ(s.pending_message_id, "m3@shop.example");
  EXPECT_EQ(s.pending_earlier, "");
  // m3's DSN days later (the relay retried): the third incident, 8 days after the first.
  PolicyDecision d = ApplyEvent(p, s, FullDsn(kT0 + 8 * kDay, "m3@shop.example"), kT0 + 8 * kDay);
  EXPECT_TRUE(d.suppress);
  EXPECT_EQ(d.reason, kReasonRepeatedFailure);
  EXPECT_EQ(s.incidents, 3);
  EXPECT_EQ(s.pending_delivery, 0);
}

// The other order: the later message bounces first. The earlier one, accepted before it and not
// bounced, got through, so the count starts over.
TEST(PolicyTest, ADeliveryBeforeTheFailingMessageResetsTheCount) {
  SuppressionPolicy p;
  RecipientState s;
  ApplyEvent(p, s, FullLog(kT0, "m1@shop.example"), kT0);
  ApplyEvent(p, s, FullLog(kT0 + 4 * kDay, "m2@shop.example"), kT0 + 4 * kDay);
  ApplyEvent(p, s, Sent(kT0 + 5 * kDay, "m3@shop.example"), kT0 + 5 * kDay);
  ApplyEvent(p, s, Sent(kT0 + 5 * kDay + 60, "m4@shop.example"), kT0 + 5 * kDay + 60);
  EXPECT_EQ(s.incidents, 2);
  EXPECT_FALSE(
      ApplyEvent(p, s, FullDsn(kT0 + 8 * kDay, "m4@shop.example"), kT0 + 8 * kDay).suppress);
  EXPECT_EQ(s.incidents, 1);
  EXPECT_EQ(s.incidents_since, kT0 + 8 * kDay);
  EXPECT_EQ(s.pending_delivery, 0);
  EXPECT_EQ(s.pending_earlier, "");
  // A failure whose own delivery was not seen (Postfix bounced it itself) is accepted when it
  // fails: every delivery before that resets, one in the same second waits on.
  ApplyEvent(p, s, Sent(kT0 + 9 * kDay, "m5@shop.example"), kT0 + 9 * kDay);
  ApplyEvent(p, s, Sent(kT0 + 10 * kDay, "m6@shop.example"), kT0 + 10 * kDay);
  ApplyEvent(p, s, FullLog(kT0 + 10 * kDay, "m7@shop.example"), kT0 + 10 * kDay);
  EXPECT_EQ(s.incidents, 1);  // m5 got through before m7 failed
  EXPECT_EQ(s.incidents_since, kT0 + 10 * kDay);
  EXPECT_EQ(s.pending_delivery, 0);  // the reset drops m6's as well
}

// A delivery whose Message-ID is not known may be of any message, and deliveries of more than
// kMaxPendingDeliveries messages waiting together mean the mailbox takes mail: both reset at
// once. A delivery while there is nothing to reset notes nothing.
TEST(PolicyTest, AnUnknownDeliveryOrTooManyWaitingResetAtOnce) {
  SuppressionPolicy p;
  {
    RecipientState s;
    ApplyEvent(p, s, FullLog(kT0, "m1@shop.example"), kT0);
    ApplyEvent(p, s, Sent(kT0 + kDay, "m2@shop.example"), kT0 + kDay);
    ApplyEvent(p, s, Sent(kT0 + kDay + 60, ""), kT0 + kDay + 60);  // e.g. read after a restart
    EXPECT_EQ(s.incidents, 0);
    EXPECT_EQ(s.pending_delivery, 0);
    EXPECT_EQ(s.pending_message_id, "");
  }
  {
    RecipientState s;
    ApplyEvent(p, s, FullLog(kT0, "m1@shop.example"), kT0);
    for (size_t i = 0; i < kMaxPendingDeliveries; ++i) {
      const int64_t t = kT0 + kDay + static_cast<int64_t>(i) * 60;
      ApplyEvent(p, s, Sent(t, testing::Numbered("n", static_cast<int64_t>(i), "@shop.example")),
                 t);
    }
    EXPECT_EQ(s.incidents, 1);
    EXPECT_EQ(PendingDeliveries(s.pending_delivery, s.pending_message_id, s.pending_earlier).size(),
              kMaxPendingDeliveries);
    ApplyEvent(p, s, Sent(kT0 + 2 * kDay, "one-more@shop.example"), kT0 + 2 * kDay);
    EXPECT_EQ(s.incidents, 0);
    EXPECT_EQ(s.pending_delivery, 0);
    EXPECT_EQ(s.pending_earlier, "");
  }
  {
    RecipientState s;
    ApplyEvent(p, s, Sent(kT0, "m1@shop.example"), kT0);
    EXPECT_EQ(s.pending_delivery, 0);
    EXPECT_EQ(s.pending_message_id, "");
  }
}

// What an edited database may hold in pending_earlier: lines that do not read as "TIME ID" are
// skipped, the rest kept in order.
TEST(PolicyTest, PendingDeliveriesSkipsLinesItCannotRead) {
  auto list = PendingDeliveries(kT0 + 90, "latest@x",
                                std::to_string(kT0) + " a@x\nnonsense\n12x b@x\n" +
                                    std::to_string(kT0 + 30) + " \n\n" + std::to_string(kT0 + 60) +
                                    " c d@x\n");
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].message_id, "a@x");
  EXPECT_EQ(list[1].time, kT0 + 60);
  EXPECT_EQ(list[1].message_id, "c d@x");
  EXPECT_EQ(list[2].message_id, "latest@x");
  EXPECT_TRUE(PendingDeliveries(0, "", "").empty());
}

// The existing rule holds for noted deliveries: one older than the latest incident (a log read
// late) is not noted and resets nothing.
TEST(PolicyTest, DeliveryOlderThanTheLatestIncidentIsNotNoted) {
  RecipientState s;
  SuppressionPolicy p;
  ApplyEvent(p, s, FullDsn(kT0, "m1@shop.example"), kT0);
  ApplyEvent(p, s, FullDsn(kT0 + 4 * kDay, "m2@shop.example"), kT0 + 4 * kDay);
  ApplyEvent(p, s, Sent(kT0 + 2 * kDay, "m9@shop.example"), kT0 + 2 * kDay);
  EXPECT_EQ(s.incidents, 2);
  EXPECT_EQ(s.pending_delivery, 0);
  ApplyEvent(p, s, Sent(kT0 + 3 * kDay, ""), kT0 + 3 * kDay);  // unknown, but older too
  EXPECT_EQ(s.incidents, 2);
  EXPECT_TRUE(
      ApplyEvent(p, s, FullDsn(kT0 + 8 * kDay, "m3@shop.example"), kT0 + 8 * kDay).suppress);
}

TEST(PolicyTest, MessageIdKeyDropsBlanksAndAngleBrackets) {
  EXPECT_EQ(MessageIdKey("<a.b@host.example>"), "a.b@host.example");
  EXPECT_EQ(MessageIdKey(" <a.b@host.example> "), "a.b@host.example");
  EXPECT_EQ(MessageIdKey("a.b@host.example"), "a.b@host.example");
  EXPECT_EQ(MessageIdKey("<>"), "");
  EXPECT_EQ(MessageIdKey(""), "");
}

// --- the same policy through a real Store ---

class StorePolicyTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = testing::OpenStore(dir_.File("p.db")); }
  void Write(std::vector<Event> events) {
    Batch b;
    b.events = std::move(events);
    ASSERT_TRUE(store_->Write(std::move(b)).ok());
  }
  bool Suppressed(const std::string& a) { return store_->view().Lookup(a).has_value(); }
  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(StorePolicyTest, HardBounceSuppressesAndCs01Hm08DoNot) {
  Event cs01 = MakeEvent("x@icloud.com", Category::kPolicyRejection, "bounced", kT0);
  cs01.result.provider = "icloud";
  cs01.result.provider_code = "CS01";
  Event hm08 = MakeEvent("y@icloud.com", Category::kAuthFailure, "bounced", kT0);
  hm08.result.provider_code = "HM08";
  Write({cs01, hm08, MakeEvent("z@icloud.com", Category::kUserUnknown, "bounced", kT0)});
  EXPECT_FALSE(Suppressed("x@icloud.com"));
  EXPECT_FALSE(Suppressed("y@icloud.com"));
  auto hit = store_->view().Lookup("z@icloud.com");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->category, Category::kUserUnknown);
  EXPECT_EQ(hit->since, kT0);
  EXPECT_FALSE(hit->manual);
}

TEST_F(StorePolicyTest, AllowlistWinsOverAutomaticSuppression) {
  ASSERT_TRUE(store_->Allow("vip@example.com", {0, "customer"}).ok());
  ASSERT_TRUE(store_->Allow("@partner.example", {0, "partner"}).ok());
  Write({MakeEvent("vip@example.com", Category::kUserUnknown, "bounced", kT0),
         MakeEvent("anyone@partner.example", Category::kUserUnknown, "bounced", kT0),
         MakeEvent("x@mx.partner.example", Category::kUserUnknown, "bounced", kT0),
         MakeEvent("other@example.com", Category::kUserUnknown, "bounced", kT0)});
  EXPECT_FALSE(Suppressed("vip@example.com"));
  EXPECT_FALSE(Suppressed("anyone@partner.example"));
  EXPECT_FALSE(Suppressed("x@mx.partner.example"));
  EXPECT_TRUE(Suppressed("other@example.com"));
  // The allowlist also wins over an entry made before it.
  ASSERT_TRUE(store_->Allow("example.com", {0, "whole domain"}).ok());
  EXPECT_FALSE(Suppressed("other@example.com"));
  auto st = store_->GetStatus("other@example.com");
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(st->suppressed);
  ASSERT_TRUE(st->allowed_by.has_value());
  EXPECT_EQ(st->allowed_by->entry, "example.com");
  ASSERT_TRUE(store_->Disallow("example.com", {0, "done"}).ok());
  EXPECT_TRUE(Suppressed("other@example.com"));
  // Manual suppression of an allowlisted address is refused with a reason.
  auto r = store_->Suppress({"vip@example.com", "", 0}, {0, "test"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("allowlist"), std::string::npos);
}

TEST_F(StorePolicyTest, ManualSuppressWinsOverDelivery) {
  ASSERT_TRUE(store_->Suppress({"Boss@Example.com", "", 0}, {1000, "asked to stop"}).ok());
  EXPECT_TRUE(Suppressed("boss@example.com"));
  Write({MakeEvent("boss@example.com", Category::kDelivered, "sent", testing::kT0 + 40 * kDay)});
  EXPECT_TRUE(Suppressed("boss@example.com"));
  auto st = store_->GetStatus("boss@example.com");
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st->suppression.has_value());
  EXPECT_EQ(st->suppression->source, "manual");
  EXPECT_EQ(st->suppression->display, "Boss@Example.com");
}

TEST_F(StorePolicyTest, DeliveryAfterAutomaticSuppressionIsRecordedButDoesNotLift) {
  Write({MakeEvent("a@example.com", Category::kUserUnknown, "bounced", kT0)});
  Write({MakeEvent("a@example.com", Category::kDelivered, "sent", kT0 + 3600)});
  EXPECT_TRUE(Suppressed("a@example.com"));
  auto st = store_->GetStatus("a@example.com");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->suppression->delivered_after, kT0 + 3600);
  EXPECT_EQ(st->events.size(), 2u);
  EXPECT_EQ(st->events[0].event.log_status, "sent");  // newest first
}

TEST_F(StorePolicyTest, ManualUnsuppressWinsOverOlderEventsNotNewerOnes) {
  Write({MakeEvent("a@example.com", Category::kUserUnknown, "bounced", kT0)});
  ASSERT_TRUE(Suppressed("a@example.com"));
  ASSERT_TRUE(store_->Unsuppress("A@example.com", {0, "user fixed the mailbox"}).ok());
  EXPECT_FALSE(Suppressed("a@example.com"));
  // Log catch-up replays a bounce from before the unsuppress: stays lifted.
  Write({MakeEvent("a@example.com", Category::kUserUnknown, "bounced", kT0 + 10)});
  EXPECT_FALSE(Suppressed("a@example.com"));
  // A new hard bounce after it suppresses again.
  int64_t later = static_cast<int64_t>(time(nullptr)) + 10;
  Write({MakeEvent("a@example.com", Category::kUserUnknown, "bounced", later)});
  EXPECT_TRUE(Suppressed("a@example.com"));
  EXPECT_FALSE(store_->Unsuppress("nobody@example.com", {0, "x"}).ok());
  EXPECT_FALSE(store_->Unsuppress("a@example.com", {0, ""}).ok());  // a reason is required
}

// A misfire undone at once: the addresses a recipient domain's outage made "unknown" on one day
// are lifted together, and only they; the log's replay of the same bounces does not put them back.
TEST_F(StorePolicyTest, UnsuppressMatchingLiftsOnlyTheSelectionAndRemembersIt) {
  const int64_t outage = kT0 + 10 * kDay;
  std::vector<Event> events;
  for (int i = 0; i < 30; ++i) {
    events.push_back(MakeEvent(testing::Numbered("u", i, "@broken.example"),
                               Category::kDomainUnknown, "bounced", outage + i * 60));
  }
  // Same domain, another day; same day, another domain; same domain and day, another category.
  events.push_back(MakeEvent("early@broken.example", Category::kDomainUnknown, "bounced", kT0));
  events.push_back(MakeEvent("x@fine.example", Category::kDomainUnknown, "bounced", outage));
  events.push_back(MakeEvent("gone@broken.example", Category::kUserUnknown, "bounced", outage));
  Write(events);
  ASSERT_TRUE(store_->Suppress({"vip@broken.example", "domain_unknown", 0}, {0, "by hand"}).ok());

  ListFilter f;
  f.domain = "Broken.Example";
  f.category = "domain_unknown";
  f.since = outage;
  f.until = outage + kDay;
  // A dry run says what, changes nothing, needs no reason.
  auto dry = store_->UnsuppressMatching(f, {0, ""}, true);
  ASSERT_TRUE(dry.ok()) << dry.error();
  EXPECT_EQ(dry->count, 30u);
  ASSERT_EQ(dry->sample.size(), BulkUnsuppressResult::kBulkSample);
  EXPECT_EQ(dry->sample.front(), "u0@broken.example");  // key order
  EXPECT_TRUE(Suppressed("u0@broken.example"));
  EXPECT_FALSE(store_->UnsuppressMatching(f, {0, ""}, false).ok());  // a reason is required

  auto lifted = store_->UnsuppressMatching(f, {1000, "their DNS outage"}, false);
  ASSERT_TRUE(lifted.ok()) << lifted.error();
  EXPECT_EQ(lifted->count, 30u);
  for (int i = 0; i < 30; ++i)
    EXPECT_FALSE(Suppressed("u" + std::to_string(i) + "@broken.example"));
  for (const char* kept : {"early@broken.example", "x@fine.example", "gone@broken.example"}) {
    EXPECT_TRUE(Suppressed(kept)) << kept;
  }
  // The manual entry was created now, after `until`.
  EXPECT_TRUE(Suppressed("vip@broken.example"));
  const std::string db = dir_.File("p.db");
  EXPECT_EQ(testing::Scalar(db,
                            "SELECT count(*) FROM suppression_log WHERE action = 'remove' "
                            "AND actor_uid = 1000"),
            30);
  EXPECT_EQ(testing::Scalar(db,
                            "SELECT count(*) FROM audit WHERE action = 'unsuppress' AND "
                            "reason = 'their DNS outage'"),
            30);
  auto st = store_->GetStatus("u7@broken.example");
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_FALSE(st->suppression.has_value());
  // The log read again from the start (a restart's catch-up): the lifted stay lifted.
  Write(events);
  EXPECT_FALSE(Suppressed("u3@broken.example"));
  // Nothing left to lift: a count of 0 is no error.
  auto again = store_->UnsuppressMatching(f, {0, "again"}, false);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->count, 0u);
  // The whole list (an empty filter), and a bad selection refused.
  ListFilter bad;
  bad.category = "no_such_category";
  EXPECT_FALSE(store_->UnsuppressMatching(bad, {0, "x"}, false).ok());
  auto everything = store_->UnsuppressMatching(ListFilter{}, {0, "start over"}, false);
  ASSERT_TRUE(everything.ok()) << everything.error();
  EXPECT_EQ(everything->count, 4u);
  EXPECT_EQ(store_->view().size(), 0u);
}

TEST_F(StorePolicyTest, ExtensionAndCaseMapToTheBaseAddress) {
  Write({MakeEvent("John.Doe+News@Example.COM", Category::kUserUnknown, "bounced", kT0)});
  EXPECT_TRUE(Suppressed("john.doe@example.com"));
  EXPECT_TRUE(Suppressed("JOHN.DOE+other@EXAMPLE.com"));
  EXPECT_TRUE(Suppressed("<john.doe@example.com>"));
  EXPECT_FALSE(Suppressed("john.doe2@example.com"));
  auto st = store_->GetStatus("john.doe@example.com");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->suppression->display, "John.Doe+News@Example.COM");
}

TEST_F(StorePolicyTest, ExtensionFoldingCanBeDisabled) {
  SuppressionPolicy p;
  p.recipient_delimiters = "";
  store_->SetPolicy(p);
  Write({MakeEvent("a+x@example.com", Category::kUserUnknown, "bounced", kT0)});
  EXPECT_TRUE(Suppressed("A+X@example.com"));
  EXPECT_FALSE(Suppressed("a@example.com"));
}

// An entry stored while folding was off stays under its own key when folding is turned on
// (lookups then ask for a@example.com and no longer reach it); unsuppress still lifts it by the
// spelling list shows, once the folded key is not suppressed.
TEST_F(StorePolicyTest, AnEntryStoredBeforeFoldingWasTurnedOnCanStillBeLifted) {
  SuppressionPolicy p;
  p.recipient_delimiters = "";
  store_->SetPolicy(p);
  Write({MakeEvent("a+x@example.com", Category::kUserUnknown, "bounced", kT0),
         MakeEvent("a@example.com", Category::kUserUnknown, "bounced", kT0)});
  store_->SetPolicy(SuppressionPolicy());  // plus_extension on
  auto keys = [&] {
    std::vector<std::string> out;
    EXPECT_TRUE(store_
                    ->List(ListFilter{},
                           [&](const Suppression& s) {
                             out.push_back(s.address);
                             return true;
                           })
                    .ok());
    return out;
  };
  EXPECT_EQ(keys(), (std::vector<std::string>{"a+x@example.com", "a@example.com"}));
  // a+x@example.com names the folded key first, while that one is suppressed ...
  ASSERT_TRUE(store_->Unsuppress("A+x@example.com", {0, "mailbox works again"}).ok());
  EXPECT_EQ(keys(), std::vector<std::string>{"a+x@example.com"});
  // ... and then the entry stored under its own spelling.
  ASSERT_TRUE(store_->Unsuppress("a+x@example.com", {0, "that one too"}).ok());
  EXPECT_TRUE(keys().empty());
  EXPECT_FALSE(store_->Unsuppress("a+x@example.com", {0, "a third time"}).ok());
}

// A failure at an address the mail was forwarded or rewritten to (its original recipient is the
// address as the sender gave it: a VERP return path's, a DSN's Original-Recipient, Postfix's
// orig_to=) suppresses only the address that failed, unless suppress_original_recipient is on:
// then the original counts the failure too, under its own policy fields.
TEST_F(StorePolicyTest, AnOriginalRecipientCountsTheFailureWhenAskedTo) {
  auto forwarded = [](const std::string& to, const std::string& original, Category c, int64_t t) {
    Event e = MakeEvent(to, c, "bounced", t);
    e.result.original_recipient = original;
    return e;
  };
  Write({forwarded("bob@gmail.com", "alumni@school.example", Category::kUserUnknown, kT0)});
  EXPECT_TRUE(Suppressed("bob@gmail.com"));
  EXPECT_FALSE(Suppressed("alumni@school.example"));

  SuppressionPolicy p;
  p.suppress_original_recipient = true;
  store_->SetPolicy(p);
  Write({forwarded("carol@gmail.com", "Old.Carol@School.example", Category::kUserUnknown, kT0)});
  EXPECT_TRUE(Suppressed("carol@gmail.com"));
  auto st = store_->GetStatus("old.carol@school.example");
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_TRUE(st->suppression.has_value());
  EXPECT_EQ(st->suppression->display, "Old.Carol@School.example");
  EXPECT_EQ(st->suppression->category, "user_unknown");
  EXPECT_EQ(st->suppression->reason, kReasonHardBounce);
  EXPECT_EQ(st->suppression->source, "bounce");
  // The same address but for its extension and case: one entry, added once.
  Write({forwarded("dave+news@example.com", "Dave@example.com", Category::kUserUnknown, kT0)});
  EXPECT_EQ(testing::Scalar(dir_.File("p.db"),
                            "SELECT count(*) FROM suppression_log WHERE address LIKE 'dave%'"),
            1);
  // A count category: the original's own incidents reach the threshold with the final one's.
  for (int64_t t : {kT0, kT0 + 4 * kDay, kT0 + 7 * kDay}) {
    EXPECT_FALSE(Suppressed("list@school.example"));
    Write({forwarded("full@gmail.com", "list@school.example", Category::kMailboxFull, t)});
  }
  EXPECT_TRUE(Suppressed("full@gmail.com"));
  EXPECT_TRUE(Suppressed("list@school.example"));
  // Sender-side rejections suppress neither.
  Write({forwarded("x@icloud.com", "y@school.example", Category::kPolicyRejection, kT0)});
  EXPECT_FALSE(Suppressed("y@school.example"));
  // The allowlist wins for the original as for any address.
  ASSERT_TRUE(store_->Allow("vip@school.example", {0, "customer"}).ok());
  Write({forwarded("vip@gmail.com", "vip@school.example", Category::kUserUnknown, kT0)});
  EXPECT_FALSE(Suppressed("vip@school.example"));
}

TEST_F(StorePolicyTest, MailboxFullThroughStore) {
  Write({MakeEvent("f@example.com", Category::kMailboxFull, "bounced", kT0),
         MakeEvent("f@example.com", Category::kMailboxFull, "bounced", kT0 + 30),
         MakeEvent("f@example.com", Category::kMailboxFull, "bounced", kT0 + 59)});
  EXPECT_FALSE(Suppressed("f@example.com"));
  Write({MakeEvent("f@example.com", Category::kMailboxFull, "bounced", kT0 + 4 * kDay)});
  EXPECT_FALSE(Suppressed("f@example.com"));
  Write({MakeEvent("f@example.com", Category::kMailboxFull, "bounced", kT0 + 7 * kDay)});
  auto hit = store_->view().Lookup("f@example.com");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->category, Category::kMailboxFull);
  auto st = store_->GetStatus("f@example.com");
  EXPECT_EQ(st->suppression->reason, kReasonRepeatedFailure);
  EXPECT_EQ(st->suppression->first_event, kT0);
}

TEST_F(StorePolicyTest, ExpiredEntryNoLongerSuppresses) {
  auto r = store_->Suppress({"t@example.com", "", kT0 + 60}, {0, "temporary"});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(store_->view().Lookup("t@example.com", kT0).has_value());
  EXPECT_FALSE(store_->view().Lookup("t@example.com", kT0 + 61).has_value());
  EXPECT_FALSE(store_->view().Lookup("t@example.com").has_value());  // now is after kT0
}

// A suppression for repeated failures that ran out gives the address a fresh start: the next
// failure is its first incident again, not a fourth that suppresses at once. It ends either
// when a failure finds it expired (g@: in the batch that made it, before any purge) or when the
// writer purges it at its expiry (h@: already past, so at once).
TEST_F(StorePolicyTest, AnExpiredRepeatedFailureEntryStartsTheCountAgain) {
  SuppressionPolicy p;
  p.count_expiry_seconds = 7 * kDay;
  store_->SetPolicy(p);
  auto full = [](const char* address, int64_t t) {
    return MakeEvent(address, Category::kMailboxFull, "bounced", t);
  };
  Write({full("g@example.com", kT0), full("g@example.com", kT0 + 4 * kDay),
         full("g@example.com", kT0 + 8 * kDay), full("g@example.com", kT0 + 20 * kDay)});
  Write({full("h@example.com", kT0), full("h@example.com", kT0 + 4 * kDay),
         full("h@example.com", kT0 + 8 * kDay)});
  const std::string path = dir_.File("p.db");
  // Both were suppressed for repeated failures until kT0 + 15 days (a month back).
  EXPECT_EQ(testing::Scalar(path,
                            "SELECT count(*) FROM suppression_log WHERE action = 'add' AND "
                            "reason = 'repeated_failure'"),
            2);
  for (int i = 0; i < 200 && testing::Scalar(path,
                                             "SELECT count(*) FROM suppression_log WHERE "
                                             "address = 'h@example.com' AND note = 'expired'") == 0;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Write({full("h@example.com", kT0 + 20 * kDay)});
  for (const char* address : {"g@example.com", "h@example.com"}) {
    auto st = store_->GetStatus(address);
    ASSERT_TRUE(st.ok());
    EXPECT_FALSE(st->suppression.has_value()) << address;
    EXPECT_FALSE(store_->view().Lookup(address, kT0 + 21 * kDay).has_value()) << address;
    ASSERT_TRUE(st->state.has_value()) << address;
    EXPECT_EQ(st->state->incidents, 1) << address;
  }
  EXPECT_EQ(testing::Scalar(path,
                            "SELECT count(*) FROM suppression_log WHERE action = 'remove' AND "
                            "note = 'expired'"),
            2);
}

// A hard bounce read after a later delivery to the same address (an old log caught up)
// suppresses with the delivery noted, as it would have read in order.
TEST_F(StorePolicyTest, ASuppressionFromAnEventOlderThanAStoredDeliveryNotesTheDelivery) {
  Write({MakeEvent("h@example.com", Category::kDelivered, "sent", kT0 + 10 * kDay)});
  Write({MakeEvent("h@example.com", Category::kUserUnknown, "bounced", kT0)});
  auto st = store_->GetStatus("h@example.com");
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st->suppression.has_value());
  EXPECT_EQ(st->suppression->delivered_after, kT0 + 10 * kDay);
  // In one batch too (the delivery's row is not written yet when the bounce suppresses).
  Write({MakeEvent("i@example.com", Category::kDelivered, "sent", kT0 + 10 * kDay),
         MakeEvent("i@example.com", Category::kUserUnknown, "bounced", kT0)});
  st = store_->GetStatus("i@example.com");
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st->suppression.has_value());
  EXPECT_EQ(st->suppression->delivered_after, kT0 + 10 * kDay);
  // A delivery before the bounce is no delivery after it.
  Write({MakeEvent("j@example.com", Category::kDelivered, "sent", kT0),
         MakeEvent("j@example.com", Category::kUserUnknown, "bounced", kT0 + kDay)});
  st = store_->GetStatus("j@example.com");
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st->suppression.has_value());
  EXPECT_EQ(st->suppression->delivered_after, 0);
}

// --- deliveries and the count through a real Store: relays that accept and bounce later ---

// What the log input and the milter record for one message to `rcpt` through a relay that
// accepts it and bounces it later: the log's status=sent (Message-ID as Postfix logs it, with
// <>), then the remote's DSN, read by the milter an hour later (the original's Message-ID as the
// DSN parser gives it, without).
Event RelaySent(const std::string& rcpt, int64_t t, const std::string& id) {
  Event e = MakeEvent(rcpt, Category::kDelivered, "sent", t);
  e.queue_id = "4F9D2C" + std::to_string(t % 100000);
  e.message_id = "<" + id + ">";
  e.relay = "smarthost.example.net[192.0.2.25]:587";
  e.program = "postfix/smtp";
  e.result.diagnostic = "250 2.0.0 Ok: queued as 7A1B2C3D";
  return e;
}
Event RemoteDsn(const std::string& rcpt, int64_t t, const std::string& id,
                Category c = Category::kMailboxFull) {
  Event e = MakeEvent(rcpt, c, "bounced", t, EventSource::kMilter);
  e.source_ref = "dsn." + id;
  e.message_id = id;
  e.program = "exim";
  e.result.dsn_action = "failed";
  e.result.status = "5.2.2";
  e.result.diagnostic = "552 5.2.2 <" + rcpt + ">: mailbox full";
  return e;
}

TEST_F(StorePolicyTest, RelayAcceptedMessagesThatBounceLaterReachTheThreshold) {
  const std::string rcpt = "full@example.com";
  for (int i = 0; i < 3; ++i) {
    const int64_t t = kT0 + i * 4 * kDay;
    const std::string id = "news" + std::to_string(i) + "@shop.example";
    Write({RelaySent(rcpt, t, id)});
    if (i > 0) {
      auto st = store_->GetStatus(rcpt);
      ASSERT_TRUE(st.ok()) << st.error();
      ASSERT_TRUE(st->state.has_value());
      EXPECT_EQ(st->state->incidents, i);  // the delivery waits for the next failure
      EXPECT_EQ(st->state->pending_delivery, t);
      EXPECT_EQ(st->state->pending_message_id, id);
    }
    Write({RemoteDsn(rcpt, t + 3600, id)});
    EXPECT_EQ(Suppressed(rcpt), i == 2) << "message " << i;
  }
  auto st = store_->GetStatus(rcpt);
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_TRUE(st->suppression.has_value());
  EXPECT_EQ(st->suppression->reason, kReasonRepeatedFailure);
  EXPECT_EQ(st->suppression->category, "mailbox_full");
  EXPECT_EQ(st->suppression->first_event, kT0 + 3600);
  ASSERT_TRUE(st->state.has_value());
  EXPECT_EQ(st->state->incidents, 3);
  EXPECT_EQ(st->state->pending_delivery, 0);
  // The same with mailbox_disabled, each message's two events in one batch.
  for (int i = 0; i < 3; ++i) {
    const int64_t t = kT0 + i * 4 * kDay;
    const std::string id = "bill" + std::to_string(i) + "@shop.example";
    Write({RelaySent("off@example.com", t, id),
           RemoteDsn("off@example.com", t + 600, id, Category::kMailboxDisabled)});
  }
  EXPECT_TRUE(Suppressed("off@example.com"));
}

TEST_F(StorePolicyTest, DeliveryOfAnotherMessageStillResetsTheCount) {
  const std::string rcpt = "sync@example.com";
  auto bounced = [&](int64_t t, const std::string& id) {
    Event e = RelaySent(rcpt, t, id);
    e.log_status = "bounced";
    e.result.category = Category::kMailboxFull;
    e.result.diagnostic = "552 5.2.2 <" + rcpt + ">: mailbox full";
    return e;
  };
  Write({bounced(kT0, "a@shop.example")});
  Write({bounced(kT0 + 4 * kDay, "b@shop.example")});
  Write({RelaySent(rcpt, kT0 + 5 * kDay, "c@shop.example")});
  Write({bounced(kT0 + 8 * kDay, "d@shop.example")});
  EXPECT_FALSE(Suppressed(rcpt));
  auto st = store_->GetStatus(rcpt);
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_TRUE(st->state.has_value());
  EXPECT_EQ(st->state->incidents, 1);
  EXPECT_EQ(st->state->incidents_since, kT0 + 8 * kDay);
  EXPECT_EQ(st->state->pending_delivery, 0);
  // Two more failures reach three incidents over 7 days only from the one after the delivery.
  Write({bounced(kT0 + 12 * kDay, "e@shop.example")});
  EXPECT_FALSE(Suppressed(rcpt));
  Write({bounced(kT0 + 15 * kDay, "f@shop.example")});
  EXPECT_TRUE(Suppressed(rcpt));
}

// Out of order: the DSN of a message read before its status=sent line (the log caught up after
// a restart). That delivery is older than the incident it precedes and resets nothing, and the
// next message through the relay counts on.
TEST_F(StorePolicyTest, ALateDeliveryOlderThanTheLatestIncidentResetsNothing) {
  const std::string rcpt = "late@example.com";
  Write({RelaySent(rcpt, kT0, "n1@shop.example")});
  Write({RemoteDsn(rcpt, kT0 + 3600, "n1@shop.example")});
  Write({RemoteDsn(rcpt, kT0 + 4 * kDay + 3600, "n2@shop.example")});
  Write({RelaySent(rcpt, kT0 + 4 * kDay, "n2@shop.example")});  // read late
  auto st = store_->GetStatus(rcpt);
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_EQ(st->state->incidents, 2);
  EXPECT_EQ(st->state->pending_delivery, 0);
  // A delivery of another message, older than the latest incident, resets nothing either.
  Write({RelaySent(rcpt, kT0 + 2 * kDay, "other@shop.example")});
  Write({RelaySent(rcpt, kT0 + 8 * kDay, "n3@shop.example")});
  EXPECT_FALSE(Suppressed(rcpt));
  Write({RemoteDsn(rcpt, kT0 + 8 * kDay + 3600, "n3@shop.example")});
  EXPECT_TRUE(Suppressed(rcpt));
}

// What the policy waits on is in the database: a store closed and opened again between every
// event decides as one that stayed open, for the relay case and the reset alike.
TEST(StorePolicyRestartTest, ANotedDeliverySurvivesARestart) {
  testing::TempDir dir;
  const std::string path = dir.File("r.db");
  auto write = [&](Event e) {
    auto store = testing::OpenStore(path);
    ASSERT_NE(store, nullptr);
    Batch b;
    b.events = {std::move(e)};
    ASSERT_TRUE(store->Write(std::move(b)).ok());
  };
  auto suppressed = [&](const std::string& a) {
    auto store = testing::OpenStore(path);
    return store && store->view().Lookup(a).has_value();
  };
  for (int i = 0; i < 3; ++i) {
    const int64_t t = kT0 + i * 4 * kDay;
    const std::string id = "news" + std::to_string(i) + "@shop.example";
    write(RelaySent("full@example.com", t, id));
    if (i == 1) {
      EXPECT_EQ(testing::Scalar(path,
                                "SELECT pending_delivery FROM recipient_policy "
                                "WHERE address = 'full@example.com' AND incidents = 1 AND "
                                "pending_message_id = 'news1@shop.example'"),
                t);
    }
    write(RemoteDsn("full@example.com", t + 3600, id));
    EXPECT_EQ(suppressed("full@example.com"), i == 2) << "message " << i;
  }
  // Two messages in the relay's hands at once: both deliveries wait across restarts, each DSN
  // drops its own, and the third incident suppresses.
  write(RemoteDsn("two@example.com", kT0, "t1@shop.example"));
  write(RelaySent("two@example.com", kT0 + 4 * kDay, "t2@shop.example"));
  write(RelaySent("two@example.com", kT0 + 4 * kDay + 600, "t3@shop.example"));
  EXPECT_EQ(testing::Scalar(path,
                            "SELECT count(*) FROM recipient_policy WHERE address = "
                            "'two@example.com' AND pending_message_id = 't3@shop.example' AND "
                            "pending_earlier = '" +
                                std::to_string(kT0 + 4 * kDay) + " t2@shop.example' || char(10)"),
            1);
  write(RemoteDsn("two@example.com", kT0 + 4 * kDay + 3600, "t2@shop.example"));
  EXPECT_FALSE(suppressed("two@example.com"));
  write(RemoteDsn("two@example.com", kT0 + 8 * kDay, "t3@shop.example"));
  EXPECT_TRUE(suppressed("two@example.com"));
  // The delivery of another message, noted before the restart, resets the count after it.
  write(RemoteDsn("sync@example.com", kT0, "s1@shop.example"));
  write(RemoteDsn("sync@example.com", kT0 + 4 * kDay, "s2@shop.example"));
  write(RelaySent("sync@example.com", kT0 + 5 * kDay, "s3@shop.example"));
  write(RemoteDsn("sync@example.com", kT0 + 8 * kDay, "s4@shop.example"));
  EXPECT_FALSE(suppressed("sync@example.com"));
  EXPECT_EQ(testing::Scalar(path,
                            "SELECT incidents FROM recipient_policy WHERE address = "
                            "'sync@example.com' AND pending_delivery = 0"),
            1);
}

TEST(PolicyTest, EventsThePolicyIgnoresNeitherReadNorChangeItsFields) {
  // The writer skips the recipient's policy row when PolicyConcerns says no: for every category
  // and status, that must mean ApplyPolicy leaves any state as it was and never suppresses.
  const PolicyFields states[] = {
      {},
      {2, kT0 - 5 * kDay, kT0 - kDay, 0, 0, "", ""},
      {1, kT0 - kDay, kT0 - kDay, kT0 + kDay, 0, "", ""},  // unsuppressed after the event
      {3, kT0 - 8 * kDay, kT0 + 60, kT0 - 2 * kDay, 0, "", ""},
      {2, kT0 - 5 * kDay, kT0 - kDay, 0, kT0 - 60, "m1@shop.example", ""},  // a noted delivery
      {2, kT0 - 5 * kDay, kT0 - kDay, 0, kT0 - 60, "m2@shop.example",
       std::to_string(kT0 - 120) + " m1@shop.example\n"}};  // two noted deliveries
  int ignored = 0;
  for (bool count_deferrals : {false, true}) {
    SuppressionPolicy p;
    p.count_deferrals = count_deferrals;
    for (int c = 0; c < kCategoryCount; ++c) {
      for (const char* status :
           {"sent", "deferred", "bounced", "expired", "complaint", "auto_reply", "blocked"}) {
        Event e = MakeEvent("a@x.org", static_cast<Category>(c), status, kT0);
        if (PolicyConcerns(p, e)) continue;
        ++ignored;
        for (const PolicyFields& before : states) {
          PolicyFields after = before;
          PolicyDecision d = ApplyPolicy(p, after, e, kT0);
          EXPECT_FALSE(d.suppress) << ToString(e.result.category) << " " << status;
          EXPECT_EQ(after.incidents, before.incidents) << ToString(e.result.category) << status;
          EXPECT_EQ(after.incidents_since, before.incidents_since);
          EXPECT_EQ(after.last_incident, before.last_incident);
          EXPECT_EQ(after.manual_unsuppressed, before.manual_unsuppressed);
          EXPECT_EQ(after.pending_delivery, before.pending_delivery);
          EXPECT_EQ(after.pending_message_id, before.pending_message_id);
          EXPECT_EQ(after.pending_earlier, before.pending_earlier);
        }
      }
    }
  }
  EXPECT_GT(ignored, 0);
  // And the cases the writer relies on being skipped are: a rate-limit deferral, iCloud CS01.
  EXPECT_FALSE(PolicyConcerns(SuppressionPolicy(),
                              MakeEvent("a@x.org", Category::kRateLimited, "deferred", kT0)));
  EXPECT_FALSE(PolicyConcerns(SuppressionPolicy(),
                              MakeEvent("a@x.org", Category::kPolicyRejection, "bounced", kT0)));
  EXPECT_TRUE(
      PolicyConcerns(SuppressionPolicy(), MakeEvent("a@x.org", Category::kDelivered, "sent", kT0)));
}

}  // namespace
}  // namespace bounced
