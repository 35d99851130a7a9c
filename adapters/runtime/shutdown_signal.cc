#include "adapters/runtime/shutdown_signal.h"

#include <csignal>

#include <boost/asio/post.hpp>

namespace stsresize::runtime {

ShutdownSignal::ShutdownSignal(std::function<void(int)> on_signal)
    : on_signal_(std::move(on_signal)),
      keep_running_(boost::asio::make_work_guard(io_)),
      signals_(io_, SIGTERM, SIGINT) {
  wait_for_signal();
  thread_ = std::thread([this] { io_.run(); });
}

void ShutdownSignal::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& error, int signal_number) {
    if (error) return;  // cancelled: shutting down
    fire(signal_number);
    wait_for_signal();
  });
}

ShutdownSignal::~ShutdownSignal() {
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  keep_running_.reset();
  io_.stop();
  thread_.join();
}

void ShutdownSignal::trigger() {
  boost::asio::post(io_, [this] { fire(0); });
}

void ShutdownSignal::fire(int signal_number) {
  // Runs on the io_context thread only, so that no second fire() can interleave.
  {
    std::lock_guard lock(mutex_);
    if (triggered_) return;
  }
  if (on_signal_) on_signal_(signal_number);
  {
    std::lock_guard lock(mutex_);
    triggered_ = true;
    signal_number_ = signal_number;
  }
  fired_.notify_all();
}

bool ShutdownSignal::triggered() const {
  std::lock_guard lock(mutex_);
  return triggered_;
}

int ShutdownSignal::wait() {
  std::unique_lock lock(mutex_);
  fired_.wait(lock, [this] { return triggered_; });
  return signal_number_;
}

bool ShutdownSignal::wait_for(Duration limit) {
  std::unique_lock lock(mutex_);
  return fired_.wait_for(lock, limit, [this] { return triggered_; });
}

}  // namespace stsresize::runtime
