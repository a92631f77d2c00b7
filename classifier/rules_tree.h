// rules_tree.h: a rules file's parsed TOML tree as compact bytes, and back. The build encodes
// the built-in rules (rules/default.toml) with it, so a process that loads them rebuilds the tree
// from these bytes instead of parsing 70 KB of TOML text at every start (parsing was two-thirds
// of the rules' load time; see bench/RESULTS.md, DSN parsing). Only that build step encodes; the
// text stays the one source of the rules, and files given at run time are parsed as TOML.
//
// Format (version 1): "BRT1", then one node. A node is a tag byte and its value:
//   'T' table:   count, then count times (key length, key bytes, node)
//   'A' array:   count, then count nodes
//   'S' string:  length, bytes;  'I' integer: 8 bytes;  'F' float: 8 bytes;  'B' bool: 1 byte
// Counts and lengths are LEB128 varints; numbers are little-endian. Dates and times are not
// encoded (the rules format has none). Source positions are not kept: errors found in a decoded
// tree are reported at line 0, which for the built-in rules is a build defect the tests catch.
#pragma once

#include <string>
#include <string_view>

#include <toml++/toml.h>

namespace bounced {

// Encodes `root`. Returns false (and sets *error) for a value the format has no tag for.
bool EncodeRulesTree(const toml::table& root, std::string* out, std::string* error);

// Decodes bytes written by EncodeRulesTree into *root. Returns false for anything else
// (wrong magic, truncated or malformed bytes, trailing bytes, nesting deeper than 64).
bool DecodeRulesTree(std::string_view bytes, toml::table* root);

}  // namespace bounced
