// fuzz_services.h: the daemon's Services over a real Store for the fuzz targets that answer
// requests (socketmap_fuzz, query_fuzz): SQLite in a new temporary directory, opened once per
// process and kept across inputs, with the default rules.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "classifier/rules.h"
#include "daemon/services.h"
#include "storage/store.h"

namespace bounced::fuzz {

inline void Check(bool ok) {
  if (!ok) abort();
}

// `name` names the temporary directory; `seed` runs once on the open store.
template <class Seed>
Services& ServicesOverRealStore(const char* name, Seed seed) {
  static Services* services = [&] {
    auto* s = new Services();
    std::string dir = std::string("/tmp/") + name + ".XXXXXX";
    Check(::mkdtemp(dir.data()) != nullptr);
    StoreOptions o;
    o.path = dir + "/fuzz.db";
    o.synchronous_full = false;
    auto store = Store::Open(o);
    Check(store.ok());
    std::shared_ptr<Store> shared = std::move(*store);
    seed(*shared);
    s->SetStore(std::move(shared));
    s->SetRules(RuleSet::Default(), {"(embedded default)"});
    return s;
  }();
  return *services;
}

}  // namespace bounced::fuzz
