// spread_thread.h: starting a worker thread on another CPU than its creator's, at once.
//
// A new thread is queued on its creator's CPU. When the creator goes on working there (as
// `bouncectl parse` does: it loads the rules while the workers start), the new thread waits
// for the scheduler's load balancing to move it to an idle CPU, which on the machines measured
// here takes one to three scheduler ticks (1-4 ms; bench/RESULTS.md, "Twenty-second session"),
// a tenth of a whole parse run of the bench. Created with an affinity that leaves the creator's
// CPU out, it is woken on another CPU at once; its first act is to take back the affinity the
// creator had, so the scheduler is as free to move it as if nothing had been done.
//
// Where no other CPU may be used (one CPU, or a cpuset of one), or the affinity cannot be set,
// the thread starts as a std::thread would. Linux only (pthread_attr_setaffinity_np).
#pragma once

#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <functional>
#include <memory>
#include <system_error>
#include <utility>

namespace bounced {

class SpreadThread {
 public:
  SpreadThread() = default;
  // Starts `fn` on a new thread; throws std::system_error when no thread can be made (as
  // std::thread does).
  explicit SpreadThread(std::function<void()> fn) {
    auto start = std::make_unique<Start>();
    start->fn = std::move(fn);
    start->restore = sched_getaffinity(0, sizeof start->allowed, &start->allowed) == 0;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) throw std::system_error(ENOMEM, std::generic_category());
    int err = EINVAL;
    if (start->restore) {
      cpu_set_t elsewhere = start->allowed;
      const int here = sched_getcpu();
      if (here >= 0 && here < CPU_SETSIZE) CPU_CLR(here, &elsewhere);
      if (CPU_COUNT(&elsewhere) > 0 &&
          pthread_attr_setaffinity_np(&attr, sizeof elsewhere, &elsewhere) == 0) {
        err = pthread_create(&thread_, &attr, &Run, start.get());
      }
    }
    pthread_attr_destroy(&attr);
    if (err != 0) {
      start->restore = false;  // started without an affinity of its own: nothing to undo
      err = pthread_create(&thread_, nullptr, &Run, start.get());
    }
    if (err != 0) throw std::system_error(err, std::generic_category(), "cannot start a thread");
    start.release();  // the thread owns it now
    joinable_ = true;
  }
  SpreadThread(SpreadThread&& other) noexcept
      : thread_(other.thread_), joinable_(std::exchange(other.joinable_, false)) {}
  SpreadThread& operator=(SpreadThread&& other) noexcept {
    if (this != &other) {
      join();
      thread_ = other.thread_;
      joinable_ = std::exchange(other.joinable_, false);
    }
    return *this;
  }
  SpreadThread(const SpreadThread&) = delete;
  SpreadThread& operator=(const SpreadThread&) = delete;
  // Joins: a SpreadThread never outlives its thread (unlike std::thread, which would abort).
  ~SpreadThread() { join(); }

  bool joinable() const { return joinable_; }
  void join() {
    if (joinable_) {
      pthread_join(thread_, nullptr);
      joinable_ = false;
    }
  }

 private:
  struct Start {
    std::function<void()> fn;
    cpu_set_t allowed;     // the creator's affinity, given back to the new thread
    bool restore = false;  // whether the thread started with another affinity
  };
  static void* Run(void* arg) {
    std::unique_ptr<Start> start(static_cast<Start*>(arg));
    if (start->restore)
      pthread_setaffinity_np(pthread_self(), sizeof start->allowed, &start->allowed);
    start->fn();
    return nullptr;
  }

  pthread_t thread_{};
  bool joinable_ = false;
};

}  // namespace bounced
