// dsn_mime.h: the MIME layer of the DSN parser (internal to classifier/). Reads one message's
// bytes, decodes it with GMime 3 (transfer encodings, charsets, RFC 2047 headers, broken
// structure) and returns a flat view: top-level headers, the decoded leaf parts in document
// order, the headers of the returned (original) message, and where the messages attached at the
// top level lie (message/rfc822 parts, a digest's parts, saved .eml files: a forwarded bounce is
// read from there). A byte-order mark or blank lines before the headers are skipped. Never
// fails: unparseable input yields a view whose only part is the raw text.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bounced::dsn {

// Limits that keep hostile messages cheap. A part is read whole up to the message's own limit
// (kMaxMessageBytes, dsn_parser.h): a report part that lists thousands of recipients is as long
// as the message, and no part decodes to more bytes than its message has.
inline constexpr int kMaxMimeDepth = 8;
inline constexpr size_t kMaxMimeParts = 512;
inline constexpr size_t kMaxPartTextBytes = 16 * 1024 * 1024;
inline constexpr size_t kMaxAttachedMessages = 64;

// A header as views: into the message's own bytes (a plain value, as most are), into static
// memory (a name the parser reads), or into the storage of the MimeView or HeaderBlock that
// holds it (a decoded value). Copying each one cost an allocation per header.
struct Header {
  std::string_view name;   // lower-case
  std::string_view value;  // unfolded, RFC 2047-decoded, UTF-8
};

// Decoded values and names a Header views. Each string is allocated on its own, so moving the
// holder leaves the views valid.
using HeaderStorage = std::vector<std::unique_ptr<std::string>>;

// Holds bytes that views point into: a copy of the message the decoder made (other line ends
// than LF), a decoded message/rfc822 body, a glued-on report.
using Owner = std::shared_ptr<const void>;

// How a body is transfer-encoded; kUnknown (uuencode, x-...) is left to GMime's parser.
enum class TransferEncoding { kIdentity, kBase64, kQuotedPrintable, kUnknown };

struct MimeLeaf {
  std::string type;       // "text/plain": lower-case type/subtype ("text/plain" when absent)
  bool attached = false;  // inside an attached message/rfc822 (the returned message)

  // Not decoded yet: the raw body and how it is encoded. The body views `owner` when the
  // decoder had to copy the message (other line ends than LF, an encoded message/rfc822), else
  // the caller's message (owner null).
  struct Pending {
    Owner owner;
    std::string_view body;
    TransferEncoding encoding = TransferEncoding::kIdentity;
    std::string charset;
    bool cut = false;  // the body runs to the end of a message cut short (see cut_at_end)
  };

  MimeLeaf(std::string type, std::string text, bool attached)
      : type(std::move(type)), attached(attached), text_(std::move(text)) {}
  // A leaf decoded on first use (see text()); built in place in the view's list of parts.
  MimeLeaf(std::string type, Pending pending, bool attached)
      : type(std::move(type)),
        attached(attached),
        cut_at_end_(pending.cut),
        pending_(std::move(pending)) {}

  // The content after transfer decoding, as UTF-8 with '\n' line ends. Parts split without
  // GMime's parser are decoded on first use (most bounces never read the returned message's
  // parts, which are most of the bytes, nor an HTML alternative); the result is the same
  // either way. A body that is its own decoding (7-bit, or valid UTF-8 as labelled, not
  // transfer-encoded) is viewed where it is, as the Pending body was, not copied. Not safe to
  // call from two threads at once on the same leaf.
  std::string_view text() const;

  // Whether the part runs to the end of a message that was cut short (DecodeMime's cut_short):
  // then its text stops after its last whole line (after transfer decoding: a base64 or
  // quoted-printable body cut at a line of its own can still end inside a line of text).
  bool cut_at_end() const { return cut_at_end_; }

 private:
  bool cut_at_end_ = false;
  mutable std::string text_;
  mutable std::optional<Pending> pending_;
  // A body read in place: its bytes, and what holds them (null: the caller's message).
  mutable std::string_view in_place_;
  mutable Owner in_place_owner_;
  mutable bool is_in_place_ = false;
};

// Only the headers the parser reads are kept (From, To, Subject, Message-ID, Return-Path,
// X-Failed-Recipients, Auto-Submitted and the other auto-reply markers ...).
struct MimeView {
  std::vector<Header> headers;  // top-level headers in order
  std::string content_type;     // top-level type/subtype, lower-case
  std::string report_type;      // report-type parameter of a multipart/report
  // The top-level body's Content-Transfer-Encoding (a single-part message's text may be base64).
  TransferEncoding body_encoding = TransferEncoding::kIdentity;
  std::vector<MimeLeaf> parts;           // leaves in document order
  bool parts_cut = false;                // a textual part was left out: kMaxMimeParts were there
  std::vector<Header> original_headers;  // headers of the returned message, when attached
  // The messages attached at the top level (message/rfc822 or message/global parts of the
  // top-level multipart or multipart/digest, saved .eml files attached as
  // application/octet-stream, or the whole body), the first
  // kMaxAttachedMessages in order: each one's bytes after transfer decoding, headers and all,
  // so that a bounce forwarded as an attachment (or several in one forward or digest) can be
  // read as a message of its own. The bytes view `owner` (null: the caller's message): the
  // decoder's own split views them where they are; only after GMime's parser, which keeps no
  // bytes to view, are they a copy (the message as GMime writes it out).
  struct Attached {
    std::string_view bytes;
    Owner owner;
  };
  std::vector<Attached> attached_messages;
  size_t attached_skipped = 0;  // attached messages beyond kMaxAttachedMessages, not kept
  // Adds one to attached_messages unless kMaxAttachedMessages are there already (then counts
  // it in attached_skipped).
  void AddAttached(std::string_view bytes, Owner owner);
  // Appends the parts of another view (a second report glued onto the message) while there is
  // room, and what that view left out.
  void TakeParts(MimeView&& other);
  // What the headers view besides the caller's message: decoded values, and the copies of the
  // message the decoder made (other line ends than LF, an encoded message/rfc822).
  HeaderStorage storage;
  std::vector<Owner> owners;

  // Whether `parts` is full (kMaxMimeParts); notes in parts_cut that a part is left out (call it
  // only for a text part about to be added).
  bool PartsFull() {
    if (parts.size() < kMaxMimeParts) return false;
    parts_cut = true;
    return true;
  }

  // First value of a header (name lower-case), or "" when absent. Inline: callers name the
  // header by a literal, whose size then makes each comparison a few word compares, not a
  // memcmp call per header.
  std::string_view Get(std::string_view name) const { return Find(headers, name); }
  static std::string_view Find(const std::vector<Header>& headers, std::string_view name) {
    for (const Header& h : headers) {
      if (h.name == name) return h.value;
    }
    return {};
  }
};

// Parses a bare header block ("Name: value" lines with folded continuations) up to the first
// blank line: text/rfc822-headers parts and original messages quoted inline in the text.
struct HeaderBlock {
  std::vector<Header> headers;
  HeaderStorage storage;  // what `headers` view
};
HeaderBlock ParseHeaderBlock(std::string_view text);

// Converts bytes in `charset` (any name iconv knows, or "" when unknown) to valid UTF-8; bytes
// that are not valid in the charset are replaced. Used for parts and for undeclared 8-bit text.
std::string ToUtf8(std::string_view bytes, std::string_view charset);

// ISO-8859-1 and Windows-1252 (iconv names "ISO-8859-1", "CP1252", "WINDOWS-1252", any case)
// converted to UTF-8 by table, as iconv converts them (bytes Windows-1252 leaves undefined become
// U+FFFD, counted in *invalid): the charsets most bounces that are not ASCII use. False, and
// nothing written, for any other charset.
bool SingleByteToUtf8(std::string_view bytes, std::string_view charset, std::string* out,
                      size_t* invalid);

// kAuto splits well-formed messages itself (GMime's decoders, our boundary scan) and hands
// anything unusual to GMime's parser; kGMime always uses GMime's parser (tests compare both).
enum class MimeDecoder { kAuto, kGMime };

// Decodes a message. `message` is cut at the caller's size cap already; `cut_short` says it was
// (it is the start of a longer message), and marks the part that runs to its end (cut_at_end;
// with the built-in reader only: GMime's parser, for unusual structure, does not tell).
// Headers may view `message`, and parts until first read: keep its bytes alive while the view,
// or a leaf copied from it, is used.
MimeView DecodeMime(std::string_view message, MimeDecoder decoder = MimeDecoder::kAuto,
                    bool cut_short = false);

}  // namespace bounced::dsn
