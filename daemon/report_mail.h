// report_mail.h: the daily report as a mail (multipart/alternative: text, then HTML) and its
// hand-over to sendmail(1).
//
// BuildReportMail is pure (headers, MIME structure, base64 bodies wrapped at 76 columns, UTF-8).
// SendReportMail runs `SENDMAIL -oi [-f FROM] -- TO...` (posix_spawn, no shell) with the message
// on its standard input and waits for it: Postfix's sendmail queues it through postdrop.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace bounced {

struct ReportMail {
  std::string from;  // "" = no From: header (sendmail adds the local user)
  std::vector<std::string> to;
  std::string subject;        // printable; encoded as RFC 2047 when not ASCII
  std::string text;           // text/plain body
  std::string html;           // text/html body
  int64_t date = 0;           // Date: header (unix time)
  std::string boundary_seed;  // makes the MIME boundary unique (e.g. date + pid)
};

// The whole RFC 5322 message, CRLF-free (sendmail wants local line ends).
std::string BuildReportMail(const ReportMail& mail);
// Splits "a@x, b@y c@z" into addresses (commas and blanks separate them), each checked by
// CheckMailAddress; an empty list is an error.
Expected<std::vector<std::string>> ParseRecipients(const std::string& list);
// One bare address, as sendmail's argument and a To:/From: header take it: local@domain, the
// local part RFC 5321's dot-atom (letters, digits, !#$%&'*+-/=?^_`{|}~ and inner dots), the
// domain dot-separated labels of letters, digits and '-' or an address literal ("[192.0.2.1]").
// So nothing that would be a sendmail option (a leading '-'), end or fold a header (CR, LF, any
// control character), or list or name another address (',', blanks, '<', '"', '(' ...). Quoted
// local parts and non-ASCII addresses are refused too. The error says why, without the address.
Status CheckMailAddress(std::string_view address);
Status SendReportMail(const std::string& sendmail_path, const ReportMail& mail);

}  // namespace bounced
