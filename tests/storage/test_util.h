// test_util.h: shared helpers for the storage tests: a temporary directory per test and
// builders for events as the classifier would return them.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "storage/store.h"

namespace bounced::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "bounced-storage-XXXXXX").string();
    char* p = mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline Event MakeEvent(const std::string& rcpt, Category c, const std::string& log_status,
                       int64_t t, EventSource source = EventSource::kLog) {
  Event e;
  e.source = source;
  e.unix_time = t;
  e.log_status = log_status;
  e.queue_id = "";
  e.result.recipient = rcpt;
  e.result.category = c;
  e.result.diagnostic = "550 5.1.1 <" + rcpt + ">: test reply";
  return e;
}

inline std::unique_ptr<Store> OpenStore(const std::string& path,
                                        SuppressionPolicy policy = SuppressionPolicy()) {
  StoreOptions o;
  o.path = path;
  o.policy = policy;
  auto s = Store::Open(o);
  EXPECT_TRUE(s.ok()) << s.error();
  return s.ok() ? std::move(*s) : nullptr;
}

// 2026-11-01T00:00:00Z: a fixed base for event times.
inline constexpr int64_t kT0 = 1793491200;
inline constexpr int64_t kDay = 86400;

}  // namespace bounced::testing
