// user_db_test.cc: common/user_db.h and the query socket's write check built on it, against
// this machine's own user and group database (root, nobody and nogroup are in every Debian's).
#include "common/user_db.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "daemon/query_handler.h"

namespace bounced::testing {
namespace {

TEST(UserDb, FindsGroupsAndUsers) {
  EXPECT_EQ(GroupId("root"), std::optional<gid_t>(0));
  EXPECT_EQ(GroupId("nogroup"), std::optional<gid_t>(65534));
  EXPECT_FALSE(GroupId("no-such-group-bounced-test").has_value());
  EXPECT_FALSE(GroupId("").has_value());

  std::optional<UserEntry> root = UserById(0);
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->name, "root");
  EXPECT_EQ(root->gid, 0u);
  std::optional<UserEntry> nobody = UserById(65534);
  ASSERT_TRUE(nobody.has_value());
  EXPECT_EQ(nobody->name, "nobody");
  EXPECT_FALSE(UserById(4000000001u).has_value());
}

TEST(UserDb, PeerMayWriteByUserAndGroup) {
  PeerCred nobody{1, 65534, 65534};
  EXPECT_FALSE(PeerMayWrite(nobody, ""));
  EXPECT_FALSE(PeerMayWrite(nobody, "root"));
  EXPECT_TRUE(PeerMayWrite(nobody, "nogroup"));  // its primary group
  EXPECT_FALSE(PeerMayWrite(nobody, "no-such-group-bounced-test"));
  EXPECT_TRUE(PeerMayWrite(PeerCred{1, 0, 0}, ""));  // root always
  // A uid the database does not know, in a group it is not in.
  EXPECT_FALSE(PeerMayWrite(PeerCred{1, 4000000001u, 4000000001u}, "nogroup"));
}

// Lookups on several threads at once, as the query server's I/O thread and a reload make them,
// each see their own entry (getgrnam's one static buffer could hand one thread another's).
TEST(UserDb, ThreadsLookUpAtOnce) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &wrong] {
      const std::string name = t % 2 == 0 ? "root" : "nogroup";
      const gid_t want = t % 2 == 0 ? 0 : 65534;
      for (int i = 0; i < 2000; ++i) {
        if (GroupId(name) != std::optional<gid_t>(want)) ++wrong;
        if (!PeerMayWrite(PeerCred{1, 65534, 65534}, "nogroup")) ++wrong;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace bounced::testing
