// large_bounce.h: bounces with many recipients, made up for tests (classifier and daemon): a
// Postfix DSN and an Exim prose bounce naming user0@example.net, user1@example.net ... each
// refused with 550 5.1.1.
#pragma once

#include <string>

namespace bounced::testing {

inline std::string NumberedAddress(size_t i) { return "user" + std::to_string(i) + "@example.net"; }

// A Postfix DSN for `n` recipients: the text part names each with its reply, the report part has
// a full group for each (~450 bytes a recipient).
inline std::string LargePostfixDsn(size_t n) {
  std::string m =
      "From: MAILER-DAEMON@mx.example.org (Mail Delivery System)\n"
      "To: news@example.com\nSubject: Undelivered Mail Returned to Sender\nMIME-Version: 1.0\n"
      "Content-Type: multipart/report; report-type=delivery-status; boundary=\"B\"\n\n"
      "--B\nContent-Type: text/plain\n\nThis is the mail system at host mx.example.org.\n\n"
      "I'm sorry to have to inform you that your message could not\n"
      "be delivered to one or more recipients.\n\n";
  for (size_t i = 0; i < n; ++i) {
    const std::string a = NumberedAddress(i);
    m += "<" + a + ">: host mx.example.net[192.0.2.1] said: 550 5.1.1\n    <" + a +
         ">: Recipient address rejected: User unknown (in reply to RCPT TO command)\n\n";
  }
  m += "--B\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.org\n"
       "X-Postfix-Queue-ID: 4ZQ1Xk2Jr5z9sWB\n\n";
  for (size_t i = 0; i < n; ++i) {
    const std::string a = NumberedAddress(i);
    m += "Final-Recipient: rfc822; " + a + "\nOriginal-Recipient: rfc822;" + a +
         "\nAction: failed\nStatus: 5.1.1\nRemote-MTA: dns; mx.example.net\n"
         "Diagnostic-Code: smtp; 550 5.1.1 <" +
         a + ">: Recipient address rejected: User unknown\n\n";
  }
  return m + "--B--\n";
}

// An Exim bounce for `n` recipients, in prose (~150 bytes a recipient).
inline std::string LargeEximBounce(size_t n) {
  std::string m =
      "From: Mail Delivery System <Mailer-Daemon@mx.example.org>\nTo: news@example.com\n"
      "Subject: Mail delivery failed: returning message to sender\n\n"
      "This message was created automatically by mail delivery software.\n\n"
      "A message that you sent could not be delivered to one or more of its\n"
      "recipients. This is a permanent error. The following address(es) failed:\n\n";
  for (size_t i = 0; i < n; ++i) {
    const std::string a = NumberedAddress(i);
    m += "  " + a +
         "\n    host mx.example.net [192.0.2.1]\n"
         "    SMTP error from remote mail server after RCPT TO:<" +
         a + ">:\n    550 5.1.1 User unknown\n";
  }
  return m;
}

}  // namespace bounced::testing
