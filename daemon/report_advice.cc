// report_advice.cc: reads the advice file (see report_advice.h).
#include "daemon/report_advice.h"

#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "classifier/text.h"

namespace bounced {
namespace {

Status ReadStrings(const toml::node* node, std::vector<std::string>& out,
                   const std::string& where) {
  if (node == nullptr) return Status::Ok();
  const toml::array* arr = node->as_array();
  if (arr == nullptr) return Status::Error(where + ": must be an array of strings");
  for (const auto& item : *arr) {
    auto s = item.value<std::string>();
    if (!item.is_string() || !s) return Status::Error(where + ": must be an array of strings");
    out.push_back(*s);
  }
  return Status::Ok();
}

}  // namespace

Expected<AdviceBook> AdviceBook::Parse(std::string_view text, const std::string& name) {
  toml::table doc;
  try {
    doc = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    return Status::Error(name + ":" + std::to_string(e.source().begin.line) + ": " +
                         std::string(e.description()));
  }
  AdviceBook book;
  for (auto&& [key, node] : doc) {
    if (key.str() != "provider" && key.str() != "advice") {
      return Status::Error(name + ": unknown table '" + std::string(key.str()) + "'");
    }
    const toml::array* arr = node.as_array();
    if (arr == nullptr)
      return Status::Error(name + ": " + std::string(key.str()) + " must be [[" +
                           std::string(key.str()) + "]] tables");
    int n = 0;
    for (const auto& item : *arr) {
      ++n;
      const std::string where = name + ": " + std::string(key.str()) + " #" + std::to_string(n);
      const toml::table* t = item.as_table();
      if (t == nullptr) return Status::Error(where + ": not a table");
      auto str = [&](const char* k) { return (*t)[k].value_or(std::string()); };
      if (key.str() == "provider") {
        ProviderInfo p;
        p.id = str("id");
        p.name = str("name");
        if (p.id.empty() || p.name.empty()) return Status::Error(where + ": needs id and name");
        if (Status s = ReadStrings(t->get("members"), p.members, where + ": members"); !s) return s;
        if (Status s = ReadStrings(t->get("domains"), p.domains, where + ": domains"); !s) return s;
        if (p.members.empty()) p.members.push_back(p.id);
        for (const auto& m : p.members) book.group_of_[m] = p.id;
        book.providers_.push_back(std::move(p));
      } else {
        AdviceEntry a;
        a.provider = str("provider");
        a.code = str("code");
        a.status = str("status");
        a.category = str("category");
        a.title = str("title");
        a.why = str("why");
        if (Status s = ReadStrings(t->get("steps"), a.steps, where + ": steps"); !s) return s;
        if (a.title.empty() || a.why.empty() || a.steps.empty()) {
          return Status::Error(where + ": needs title, why and steps");
        }
        if (a.code.empty() && a.status.empty() && a.category.empty()) {
          return Status::Error(where + ": needs code, status or category");
        }
        for (auto&& [k, v] : *t) {
          const auto ks = k.str();
          if (ks != "provider" && ks != "code" && ks != "status" && ks != "category" &&
              ks != "title" && ks != "why" && ks != "steps") {
            return Status::Error(where + ": unknown key '" + std::string(ks) + "'");
          }
        }
        book.advice_.push_back(std::move(a));
      }
    }
  }
  return book;
}

Expected<AdviceBook> AdviceBook::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot read advice file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return Parse(ss.str(), path);
}

const AdviceEntry* AdviceBook::Find(std::string_view provider, std::string_view code,
                                    std::string_view status, std::string_view category) const {
  const std::string group = GroupOf(provider);
  auto same_provider = [&](const AdviceEntry& a) {
    return a.provider == provider || a.provider == group;
  };
  for (const auto& a : advice_) {
    if (!a.code.empty() && !code.empty() && same_provider(a) && EqualsNoCase(a.code, code))
      return &a;
  }
  for (const auto& a : advice_) {
    if (a.code.empty() && !a.status.empty() && a.status == status && same_provider(a)) return &a;
  }
  for (const auto& a : advice_) {
    if (a.provider.empty() && !a.code.empty() && !code.empty() && EqualsNoCase(a.code, code)) {
      return &a;
    }
  }
  for (const auto& a : advice_) {
    if (a.provider.empty() && a.code.empty() && a.status.empty() && a.category == category) {
      return &a;
    }
  }
  return nullptr;
}

std::string AdviceBook::GroupOf(std::string_view provider) const {
  if (provider.empty()) return "other";
  auto it = group_of_.find(provider);
  return it == group_of_.end() ? std::string(provider) : it->second;
}

std::string AdviceBook::NameOf(std::string_view group) const {
  if (const ProviderInfo* p = Provider(group)) return p->name;
  if (group == "other") return "Other";
  return std::string(group);
}

const ProviderInfo* AdviceBook::Provider(std::string_view group) const {
  for (const auto& p : providers_) {
    if (p.id == group) return &p;
  }
  return nullptr;
}

}  // namespace bounced
