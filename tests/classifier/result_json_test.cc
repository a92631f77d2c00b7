// result_json_test.cc: the direct JSON writer (AppendJson, AppendJsonString in
// classifier/result_json.h) must give exactly the bytes nlohmann's dump gives for the same
// Result, for every category and for strings with quotes, control characters, non-ASCII text
// and invalid UTF-8.
#include "classifier/result_json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

namespace bounced {
namespace {

std::string Dumped(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

TEST(ResultJson, SameBytesAsNlohmannForEveryCategory) {
  for (int c = 0; c <= static_cast<int>(Category::kUndetermined); ++c) {
    Result r;
    r.category = static_cast<Category>(c);
    r.recipient = "user@example.com";
    r.original_recipient = "rfc822;User@Example.com";
    r.status = "5.1.1";
    r.reply_code = "550";
    r.stage = "rcpt";
    r.provider = "icloud";
    r.provider_code = "CS01";
    r.diagnostic = "554 5.7.1 [CS01] Message rejected \"due\" to local\\policy\ttab";
    r.remote_mta = "mx01.mail.icloud.com";
    r.dsn_action = "failed";
    r.rule = "icloud-cs01";
    std::string out;
    AppendJson(r, &out);
    EXPECT_EQ(out, Dumped(ToJson(r))) << c;
    // Plain ASCII everywhere (the common case, written in one piece), after other output.
    r.diagnostic = "550 5.1.1 user unknown";
    std::string prefix = "x";
    AppendJson(r, &prefix);
    EXPECT_EQ(prefix, "x" + Dumped(ToJson(r))) << c;
  }
}

// Plain fields of every size up to past two 16-byte moves, each byte different, in every field
// at once: the plain writer copies short values in overlapping moves, which must land each byte
// in its place.
TEST(ResultJson, PlainFieldsOfEverySizeMatchNlohmann) {
  for (size_t size = 0; size <= 40; ++size) {
    std::string s;
    for (size_t i = 0; i < size; ++i) s += static_cast<char>('0' + i % 75);
    Result r;
    r.category = Category::kUserUnknown;
    for (std::string* field :
         {&r.recipient, &r.original_recipient, &r.status, &r.reply_code, &r.stage, &r.provider,
          &r.provider_code, &r.diagnostic, &r.remote_mta, &r.dsn_action, &r.rule})
      *field = s;
    std::string out = "x";
    AppendJson(r, &out);
    ASSERT_EQ(out, "x" + Dumped(ToJson(r))) << size;
  }
}

TEST(ResultJson, StringsWithAnyBytesMatchNlohmann) {
  const std::string fixed[] = {
      "",
      "plain",
      "quote \" backslash \\ slash /",
      std::string("nul \0 byte", 10),
      "\x01\x02\x1f\x7f controls",
      "\b\f\n\r\t",
      "Empf\xc3\xa4nger unbekannt \xe2\x80\x99 \xf0\x9f\x93\xa7",
      "bad \xff byte",
      "cut \xe2\x80",
      "overlong \xc0\xaf",
      "surrogate \xed\xa0\x80",
      "too high \xf4\x90\x80\x80",
      "\xc3",
  };
  for (const std::string& s : fixed) {
    std::string out;
    AppendJsonString(s, &out);
    EXPECT_EQ(out, Dumped(nlohmann::json(s))) << s;
  }
  std::mt19937 rng(42);
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 70, '\0');  // past several 16-byte blocks
    for (char& ch : s) {
      uint32_t v = rng();
      // Mostly text, some high bytes and controls, so that valid multi-byte sequences occur.
      ch = static_cast<char>(v % 4 == 0   ? 0x80 + (v >> 8) % 0x80
                             : v % 4 == 1 ? 0xC0 + (v >> 8) % 0x40
                                          : (v >> 8) % 0x80);
    }
    std::string out;
    AppendJsonString(s, &out);
    ASSERT_EQ(out, Dumped(nlohmann::json(s))) << i;
  }
}

// Plain text with one byte to escape (or a non-ASCII character) at each place, in strings of
// every length up to past two blocks: the writer checks the bytes after the last 16-byte block
// in overlapping words, which must still see that byte.
TEST(AppendJsonString, FindsOneByteToEscapeAtAnyPlace) {
  const std::string odd[] = {"\"",   "\\", std::string(1, '\0'), "\x01",
                             "\x1f", "\n", "\xc3\xa4",           "\xff"};
  for (size_t size = 1; size <= 40; ++size) {
    for (size_t at = 0; at < size; ++at) {
      for (const std::string& o : odd) {
        std::string s(size, 'a');
        s.replace(at, 1, o);
        std::string out;
        AppendJsonString(s, &out);
        ASSERT_EQ(out, Dumped(nlohmann::json(s))) << size << " " << at;
      }
    }
    std::string plain(size, '~');  // 0x7E: plain, next to DEL
    std::string out;
    AppendJsonString(plain, &out);
    ASSERT_EQ(out, '"' + plain + '"');
  }
}

}  // namespace
}  // namespace bounced
