// spread_thread_test.cc: common/spread_thread.h, on this machine's real CPUs.
#include "common/spread_thread.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

namespace bounced {
namespace {

cpu_set_t ThisThreadAffinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(pthread_getaffinity_np(pthread_self(), sizeof set, &set), 0);
  return set;
}

TEST(SpreadThread, RunsTheFunctionAndJoins) {
  std::atomic<int> runs{0};
  SpreadThread t([&] { runs.fetch_add(1); });
  EXPECT_TRUE(t.joinable());
  t.join();
  EXPECT_FALSE(t.joinable());
  EXPECT_EQ(runs.load(), 1);
  t.join();  // a second join does nothing
}

TEST(SpreadThread, DestructorJoinsAndMovesKeepOneOwner) {
  std::atomic<int> runs{0};
  {
    std::vector<SpreadThread> threads;
    for (int i = 0; i < 8; ++i) threads.emplace_back([&] { runs.fetch_add(1); });  // reallocates
    SpreadThread moved = std::move(threads[0]);
    EXPECT_FALSE(threads[0].joinable());
    EXPECT_TRUE(moved.joinable());
    threads[1] = std::move(moved);  // joins the thread threads[1] held first
    EXPECT_FALSE(moved.joinable());
  }
  EXPECT_EQ(runs.load(), 8);
}

// The thread's function sees the creator's affinity, whatever the thread started with.
TEST(SpreadThread, TheThreadGetsItsCreatorsAffinity) {
  const cpu_set_t creator = ThisThreadAffinity();
  cpu_set_t seen;
  CPU_ZERO(&seen);
  SpreadThread([&] { seen = ThisThreadAffinity(); }).join();
  EXPECT_TRUE(CPU_EQUAL(&seen, &creator));
}

// A creator held to one CPU (taskset -c N) has no other CPU to give: the thread starts there.
TEST(SpreadThread, ACreatorOnOneCpuStartsTheThreadOnIt) {
  // On a thread of its own, so that the test process keeps its CPUs.
  std::thread([] {
    const cpu_set_t all = ThisThreadAffinity();
    int only = -1;
    for (int c = 0; c < CPU_SETSIZE && only < 0; ++c) {
      if (CPU_ISSET(c, &all)) only = c;
    }
    ASSERT_GE(only, 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(only, &one);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
    int ran_on = -2;
    cpu_set_t seen;
    CPU_ZERO(&seen);
    SpreadThread([&] {
      ran_on = sched_getcpu();
      seen = ThisThreadAffinity();
    }).join();
    EXPECT_EQ(ran_on, only);
    EXPECT_TRUE(CPU_EQUAL(&seen, &one));
  }).join();
}

}  // namespace
}  // namespace bounced
