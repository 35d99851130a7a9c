#pragma once
// A shutdown signal fed by SIGTERM/SIGINT through Boost.Asio.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "engine/time.h"

namespace stsresize::runtime {

// Turns the first SIGTERM or SIGINT into a shutdown request. The handlers are installed on
// construction (Boost.Asio signal_set on an io_context run by its own thread) and removed on
// destruction, when the default action applies again; later signals are swallowed meanwhile
// (the shutdown is already under way).
class ShutdownSignal {
 public:
  // `on_signal` runs once, on the signal thread, with the signal number (0 for trigger()).
  explicit ShutdownSignal(std::function<void(int)> on_signal = {});
  ~ShutdownSignal();

  // Requests shutdown as a signal would (e.g. after leadership was lost).
  void trigger();
  bool triggered() const;
  // Blocks until shutdown was requested and on_signal has returned; the signal number, 0 for
  // trigger().
  int wait();
  // false when `limit` passed first.
  bool wait_for(Duration limit);

 private:
  void fire(int signal_number);
  void wait_for_signal();

  std::function<void(int)> on_signal_;
  boost::asio::io_context io_;
  // Keeps io_.run() going after the first signal, for trigger() and later signals.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> keep_running_;
  boost::asio::signal_set signals_;
  mutable std::mutex mutex_;
  std::condition_variable fired_;
  bool triggered_ = false;
  int signal_number_ = 0;
  std::thread thread_;
};

}  // namespace stsresize::runtime
