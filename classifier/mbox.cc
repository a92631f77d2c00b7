// mbox.cc: MboxSplitter (see mbox.h).
#include "classifier/mbox.h"

#include <algorithm>

#include "classifier/text.h"

namespace bounced {

namespace {

constexpr std::string_view kFrom = "From ";
constexpr size_t kNpos = std::string_view::npos;

// Where the line that `b[end]` ('\n') ends starts, if it is empty ("\n" or "\r\n"); kNpos if it
// is not. b[0] starts a line.
size_t EmptyLineStart(std::string_view b, size_t end) {
  if (end == 0 || b[end - 1] == '\n') return end;
  if (b[end - 1] == '\r' && (end == 1 || b[end - 2] == '\n')) return end - 1;
  return kNpos;
}

// The start of the run of empty lines that ends where the line starting at `at` starts (`at`
// itself when the line before it is not empty). b[0] starts a line.
size_t BlankRunStart(std::string_view b, size_t at) {
  while (at > 0) {
    size_t start = EmptyLineStart(b, at - 1);
    if (start == kNpos) break;
    at = start;
  }
  return at;
}

}  // namespace

// Inside a message, after a content line and with no empty line held back: everything up to
// the next separator goes into the message at once. A separator ("From " after an empty line)
// is found by its "\nFrom " (FindString skips sixteen bytes a step), not line by line. Returns
// the bytes consumed: up to the end of the separator's "From ", or, when this piece holds
// none, up to the start of its last line (empty lines before it held back, as the line-by-line
// reading holds them). 0: the piece holds no whole line, for the line-by-line reading.
size_t MboxSplitter::Run(std::string_view bytes, const OnMessage& on_message) {
  for (size_t q = FindString(bytes, "\nFrom "); q != kNpos;
       q = FindString(bytes, "\nFrom ", q + 1)) {
    size_t empty = EmptyLineStart(bytes, q);
    if (empty == kNpos) continue;  // "From " after a content line: content
    Append(bytes.substr(0, BlankRunStart(bytes, empty)));
    EndMessage(on_message);
    in_message_ = true;
    line_ = Line::kSeparator;
    return q + 1 + kFrom.size();
  }
  const size_t last = bytes.rfind('\n');
  if (last == kNpos) return 0;
  const size_t next = last + 1;  // the last line's start
  const size_t blank = BlankRunStart(bytes, next);
  Append(bytes.substr(0, blank));
  blank_.assign(bytes.substr(blank, next - blank));
  prev_empty_ = blank != next;
  return next;
}

void MboxSplitter::Push(std::string_view bytes, const OnMessage& on_message) {
  while (!bytes.empty()) {
    if (line_ == Line::kStart && head_.empty() && in_message_ && !prev_empty_ && blank_.empty()) {
      const size_t used = Run(bytes, on_message);
      if (used != 0) {
        bytes.remove_prefix(used);
        continue;
      }
    }
    if (line_ == Line::kStart) {
      // A line's first bytes decide what it is: five of them ("From "), or all of a shorter
      // line (an empty one ends a message if "From " follows).
      const size_t want = kFrom.size() - head_.size();
      const std::string_view look = bytes.substr(0, want);
      const size_t nl = look.find('\n');
      if (nl != std::string_view::npos) {
        head_.append(look.substr(0, nl + 1));
        bytes.remove_prefix(nl + 1);
        StartLine(head_, true, on_message);
        head_.clear();
        continue;
      }
      head_.append(look);
      bytes.remove_prefix(look.size());
      if (head_.size() == kFrom.size()) {
        StartLine(head_, false, on_message);
        head_.clear();
      }
      continue;
    }
    const size_t nl = bytes.find('\n');
    const size_t take = nl == std::string_view::npos ? bytes.size() : nl + 1;
    if (line_ == Line::kContent) Append(bytes.substr(0, take));  // a separator's rest is skipped
    bytes.remove_prefix(take);
    if (nl != std::string_view::npos) line_ = Line::kStart;
  }
}

void MboxSplitter::Finish(const OnMessage& on_message) {
  // A last line without a line end, too short to be a separator.
  if (line_ == Line::kStart && !head_.empty()) StartLine(head_, true, on_message);
  head_.clear();
  blank_.clear();  // empty lines at the very end belong to no message
  EndMessage(on_message);
  line_ = Line::kStart;
  prev_empty_ = true;
}

void MboxSplitter::StartLine(std::string_view head, bool complete, const OnMessage& on_message) {
  if (complete && (head == "\n" || head == "\r\n")) {
    if (in_message_) blank_.append(head);  // leading empty lines are dropped
    prev_empty_ = true;
    line_ = Line::kStart;
    return;
  }
  if (!complete && head == kFrom && prev_empty_) {
    EndMessage(on_message);
    blank_.clear();
    in_message_ = true;
    prev_empty_ = false;
    line_ = Line::kSeparator;
    return;
  }
  in_message_ = true;
  FlushBlankLines();
  Append(head);
  prev_empty_ = false;
  line_ = complete ? Line::kStart : Line::kContent;
}

void MboxSplitter::FlushBlankLines() {
  if (blank_.empty()) return;
  Append(blank_);
  blank_.clear();
}

void MboxSplitter::Append(std::string_view bytes) {
  if (truncated_) return;
  const size_t room = max_ - std::min(max_, message_.size());
  if (bytes.size() > room) {
    message_.append(bytes.substr(0, room));
    truncated_ = true;
    return;
  }
  message_.append(bytes);
}

void MboxSplitter::EndMessage(const OnMessage& on_message) {
  if (!in_message_) return;
  ++messages_;
  on_message(message_, truncated_);
  message_.clear();
  truncated_ = false;
  in_message_ = false;
}

}  // namespace bounced
