// rules_tree.cc: see rules_tree.h.
#include "classifier/rules_tree.h"

#include <cstdint>
#include <cstring>
#include <utility>

namespace bounced {
namespace {

constexpr std::string_view kMagic = "BRT1";
constexpr int kMaxDepth = 64;

void PutCount(uint64_t n, std::string* out) {
  while (n >= 0x80) {
    out->push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out->push_back(static_cast<char>(n));
}

void PutBytes(std::string_view s, std::string* out) {
  PutCount(s.size(), out);
  out->append(s);
}

template <typename T>
void PutFixed(T v, std::string* out) {
  unsigned char b[8];
  static_assert(sizeof(T) == 8);
  uint64_t u;
  std::memcpy(&u, &v, 8);
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(u >> (8 * i));
  out->append(reinterpret_cast<const char*>(b), 8);
}

bool EncodeNode(const toml::node& node, std::string* out, std::string* error) {
  switch (node.type()) {
    case toml::node_type::table: {
      const toml::table& t = *node.as_table();
      out->push_back('T');
      PutCount(t.size(), out);
      for (const auto& [key, value] : t) {
        PutBytes(key.str(), out);
        if (!EncodeNode(value, out, error)) return false;
      }
      return true;
    }
    case toml::node_type::array: {
      const toml::array& a = *node.as_array();
      out->push_back('A');
      PutCount(a.size(), out);
      for (const toml::node& item : a) {
        if (!EncodeNode(item, out, error)) return false;
      }
      return true;
    }
    case toml::node_type::string:
      out->push_back('S');
      PutBytes(node.as_string()->get(), out);
      return true;
    case toml::node_type::integer:
      out->push_back('I');
      PutFixed<int64_t>(node.as_integer()->get(), out);
      return true;
    case toml::node_type::floating_point:
      out->push_back('F');
      PutFixed<double>(node.as_floating_point()->get(), out);
      return true;
    case toml::node_type::boolean:
      out->push_back('B');
      out->push_back(node.as_boolean()->get() ? 1 : 0);
      return true;
    default:
      *error = "line " + std::to_string(node.source().begin.line) +
               ": dates and times have no encoding in the rules tree";
      return false;
  }
}

// Reads nodes from a byte range; every read checks what is left.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  bool AtEnd() const { return p_ == end_; }

  bool Count(uint64_t* n) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      auto b = static_cast<unsigned char>(*p_++);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *n = v;
        return true;
      }
    }
    return false;
  }

  bool Bytes(std::string_view* s) {
    uint64_t n;
    if (!Count(&n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    *s = std::string_view(p_, n);
    p_ += n;
    return true;
  }

  template <typename T>
  bool Fixed(T* v) {
    if (end_ - p_ < 8) return false;
    uint64_t u = 0;
    for (int i = 0; i < 8; ++i)
      u |= static_cast<uint64_t>(static_cast<unsigned char>(p_[i])) << (8 * i);
    p_ += 8;
    std::memcpy(v, &u, 8);
    return true;
  }

  bool Table(toml::table* t, int depth) {
    uint64_t n;
    if (depth > kMaxDepth || !Count(&n)) return false;
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view key;
      if (!Bytes(&key)) return false;
      if (!Value(depth,
                 [&](auto&& v) { return t->insert(key, std::forward<decltype(v)>(v)).second; })) {
        return false;
      }
    }
    return true;
  }

  bool Array(toml::array* a, int depth) {
    uint64_t n;
    if (depth > kMaxDepth || !Count(&n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    a->reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      if (!Value(depth, [&](auto&& v) {
            a->push_back(std::forward<decltype(v)>(v));
            return true;
          })) {
        return false;
      }
    }
    return true;
  }

 private:
  // Reads one node and hands it to `put` (which returns false to refuse it, e.g. a repeated key).
  template <typename Put>
  bool Value(int depth, Put&& put) {
    if (p_ == end_) return false;
    switch (*p_++) {
      case 'T': {
        toml::table t;
        return Table(&t, depth + 1) && put(std::move(t));
      }
      case 'A': {
        toml::array a;
        return Array(&a, depth + 1) && put(std::move(a));
      }
      case 'S': {
        std::string_view s;
        return Bytes(&s) && put(std::string(s));
      }
      case 'I': {
        int64_t v;
        return Fixed(&v) && put(v);
      }
      case 'F': {
        double v;
        return Fixed(&v) && put(v);
      }
      case 'B': {
        if (p_ == end_ || static_cast<unsigned char>(*p_) > 1) return false;
        return put(*p_++ == 1);
      }
      default:
        return false;
    }
  }

  const char* p_;
  const char* end_;
};

}  // namespace

bool EncodeRulesTree(const toml::table& root, std::string* out, std::string* error) {
  out->assign(kMagic);
  return EncodeNode(root, out, error);
}

bool DecodeRulesTree(std::string_view bytes, toml::table* root) {
  if (bytes.substr(0, kMagic.size()) != kMagic) return false;
  toml::table t;
  std::string_view rest = bytes.substr(kMagic.size());
  if (rest.empty() || rest[0] != 'T') return false;
  Reader body(rest.substr(1));
  if (!body.Table(&t, 0) || !body.AtEnd()) return false;
  *root = std::move(t);
  return true;
}

}  // namespace bounced
