// rules_tree_test.cc: the built-in rules' encoded tree (classifier/rules_tree.h) is exactly
// rules/default.toml parsed, rules compiled from it classify as rules compiled from the text,
// every value type round-trips, and damaged bytes are refused (never read past their end).
#include "classifier/rules_tree.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "classifier/result_json.h"
#include "classifier/rules.h"

namespace bounced {
namespace {

using namespace std::string_literals;

std::string ShippedRulesText() {
  std::ifstream in(BOUNCED_SOURCE_DIR "/rules/default.toml", std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(RulesTree, BuiltInTreeIsTheShippedFileParsed) {
  const std::string text = ShippedRulesText();
  ASSERT_FALSE(text.empty());
  RulesSource builtin = RuleSet::DefaultSource();
  EXPECT_EQ(builtin.text, text);
  toml::table decoded;
  ASSERT_TRUE(DecodeRulesTree(RuleSet::BuiltinTreeFor(builtin.text), &decoded));
  EXPECT_EQ(decoded, toml::parse(text));
}

TEST(RulesTree, TreeOnlyForAnUnchangedCopy) {
  std::string text = ShippedRulesText();
  EXPECT_EQ(RuleSet::BuiltinTreeFor(text), RuleSet::BuiltinTreeFor(RuleSet::DefaultSource().text));
  EXPECT_FALSE(RuleSet::BuiltinTreeFor(text).empty());
  text += "\n# edited\n";
  EXPECT_TRUE(RuleSet::BuiltinTreeFor(text).empty());
  EXPECT_TRUE(RuleSet::BuiltinTreeFor("").empty());
}

TEST(RulesTree, CompiledFromTreeClassifiesAsFromText) {
  // One more byte at the end: the same rules, no longer byte for byte the built-in file, so
  // they are parsed as TOML.
  RulesSource from_text = RuleSet::DefaultSource();
  from_text.text += "\n";
  ASSERT_TRUE(RuleSet::BuiltinTreeFor(from_text.text).empty());
  auto parsed = RuleSet::Compile({from_text});
  auto decoded = RuleSet::Compile({RuleSet::DefaultSource()});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  const char* replies[][3] = {
      {"554 5.7.1 [CS01] Message rejected due to local policy", "5.7.1", "u@icloud.com"},
      {"550 5.7.1 [HM08] Message rejected", "5.7.1", "u@me.com"},
      {"550-5.1.1 The email account that you tried to reach does not exist", "5.1.1",
       "u@gmail.com"},
      {"421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred", "4.7.0", "u@yahoo.com"},
      {"550 5.4.1 Recipient address rejected: Access denied", "5.4.1", "u@outlook.com"},
      {"452 4.2.2 The email account that you tried to reach is over quota", "4.2.2",
       "u@example.org"},
      {"connect to mx.example.org[192.0.2.1]:25: Connection timed out", "4.4.1", "u@example.org"},
      {"something nobody has ever written", "", "u@example.org"},
  };
  for (const auto& r : replies) {
    ReplyInput in;
    in.diagnostic = r[0];
    in.status = r[1];
    in.recipient = r[2];
    std::string a, b;
    AppendJson((*parsed)->Classify(in), &a);
    AppendJson((*decoded)->Classify(in), &b);
    EXPECT_EQ(a, b) << r[0];
  }
}

TEST(RulesTree, EveryValueTypeRoundTrips) {
  toml::table root = toml::parse(R"(
title = "a\u0000b é"
count = -9223372036854775807
ratio = 2.5
on = true
off = false
empty = []
list = ["x", 1, 2.0, false, ["nested"], { k = "v" }]
[[rule]]
id = "one"
patterns = ['\bfoo\b', "bar"]
[deep.er.still]
x = 1
)");
  std::string bytes, error;
  ASSERT_TRUE(EncodeRulesTree(root, &bytes, &error)) << error;
  toml::table back;
  ASSERT_TRUE(DecodeRulesTree(bytes, &back));
  EXPECT_EQ(back, root);
}

TEST(RulesTree, DatesAreNotEncoded) {
  toml::table root = toml::parse("when = 2026-11-30\n");
  std::string bytes, error;
  EXPECT_FALSE(EncodeRulesTree(root, &bytes, &error));
  EXPECT_NE(error.find("line 1"), std::string::npos) << error;
}

TEST(RulesTree, DamagedBytesAreRefused) {
  const std::string_view good = RuleSet::BuiltinTreeFor(RuleSet::DefaultSource().text);
  toml::table t;
  ASSERT_TRUE(DecodeRulesTree(good, &t));
  // Every cut short copy (the first few thousand lengths, then a sample) is refused.
  for (size_t n = 0; n < good.size(); n += n < 4096 ? 1 : 97) {
    std::string cut(good.substr(0, n));  // its own allocation, so a read past it is caught
    EXPECT_FALSE(DecodeRulesTree(cut, &t)) << n;
  }
  EXPECT_FALSE(DecodeRulesTree(std::string(good) + "x", &t));               // trailing bytes
  EXPECT_FALSE(DecodeRulesTree("BRT2" + std::string(good.substr(4)), &t));  // unknown version
  EXPECT_FALSE(DecodeRulesTree("BRT1S\x01x", &t));                          // root is not a table
  EXPECT_FALSE(DecodeRulesTree(std::string("BRT1T\x01\x01k?", 9), &t));     // unknown tag
  EXPECT_FALSE(DecodeRulesTree("BRT1T\x01\x01kS\x7f", &t));  // string longer than the rest
  EXPECT_FALSE(DecodeRulesTree("BRT1T\x02\x01kB\x01\x01kB\x00"s, &t));  // key given twice
  EXPECT_FALSE(DecodeRulesTree("BRT1T\x01\x01kB\x02", &t));             // bool neither 0 nor 1
  EXPECT_FALSE(DecodeRulesTree("BRT1T\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", &t));
  // Nesting deeper than the limit: arrays inside arrays.
  std::string deep = "BRT1T\x01\x01k";
  for (int i = 0; i < 100; ++i) deep += "A\x01";
  deep += "B\x01";
  EXPECT_FALSE(DecodeRulesTree(deep, &t));
}

}  // namespace
}  // namespace bounced
