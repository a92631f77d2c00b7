// mbox.h: splits a Unix mailbox (mbox in its mboxo, mboxrd and mboxcl forms) into messages.
// Pure code over bytes, fed in pieces of any size, so a mailbox of any size streams through in
// bounded memory: one message (at most max_message_bytes of it) and a few bytes of a line.
//
// A message starts at a "From " line that opens the mailbox or follows an empty line (mbox
// writers quote a body line starting with "From " as ">From "). That "From " line, and the empty
// lines just before the next one, are not part of the message. ">From " quoting is left as it is
// (it changes no classification), and a Content-Length header (mboxcl) is not trusted: the
// separator lines decide. A mailbox that does not open with a "From " line has its first message
// start at its first byte. Line ends may be LF or CRLF. What comes out does not depend on where
// the pieces break.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace bounced {

class MboxSplitter {
 public:
  // One message: its bytes (the first max_message_bytes of it) and whether it was longer.
  using OnMessage = std::function<void(std::string_view message, bool truncated)>;

  explicit MboxSplitter(size_t max_message_bytes) : max_(max_message_bytes) {}

  // Feeds the next bytes of the mailbox; every message they complete goes to on_message.
  void Push(std::string_view bytes, const OnMessage& on_message);
  // The mailbox ended: hands out its last message, if it has one.
  void Finish(const OnMessage& on_message);

  // Messages handed out so far.
  uint64_t messages() const { return messages_; }

 private:
  size_t Run(std::string_view bytes, const OnMessage& on_message);
  void Append(std::string_view bytes);
  void FlushBlankLines();
  void StartLine(std::string_view head, bool complete, const OnMessage& on_message);
  void EndMessage(const OnMessage& on_message);

  size_t max_;
  std::string message_;      // the current message so far (at most max_ bytes)
  bool in_message_ = false;  // a message has started
  bool truncated_ = false;   // the current message passed max_
  bool prev_empty_ = true;   // the previous line was empty (true at the start)
  std::string blank_;        // empty lines held back: they end the message if "From " follows
  std::string head_;         // the first bytes of a line, until it is known what line it is
  enum class Line { kStart, kContent, kSeparator } line_ = Line::kStart;
  uint64_t messages_ = 0;
};

}  // namespace bounced
