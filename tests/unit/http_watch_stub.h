#pragma once
// A scripted watch endpoint on 127.0.0.1 for HttpKubernetes::watch: answers every GET with a
// status and then plays a script of body steps (bytes, silences, a clean end or a dropped
// connection) through chunked transfer encoding, as kube-apiserver streams a watch.
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace stsresize::testing {

struct StreamStep {
  enum class Type { Send, Silence, End, Drop };
  Type type = Type::End;
  std::string bytes;                     // Send
  std::chrono::milliseconds silence{0};  // Silence: at most this long
  static StreamStep send(std::string bytes) { return {Type::Send, std::move(bytes), {}}; }
  static StreamStep silence_for(std::chrono::milliseconds how_long) {
    return {Type::Silence, {}, how_long};
  }
  static StreamStep end() { return {Type::End, {}, {}}; }    // the terminating chunk
  static StreamStep drop() { return {Type::Drop, {}, {}}; }  // connection closed mid-stream
};

struct WatchScript {
  int status = 200;
  std::vector<StreamStep> steps;  // for a 200 answer
  std::string body;               // for any other status
};

class WatchStubServer {
 public:
  WatchStubServer() {
    server_.Get(".*", [this](const httplib::Request& request, httplib::Response& response) {
      WatchScript script;
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(request);
        script = script_;
      }
      response.status = script.status;
      if (script.status != 200) {
        response.set_content(script.body, "application/json");
        return;
      }
      auto next = std::make_shared<std::size_t>(0);
      response.set_chunked_content_provider(
          "application/json",
          [this, steps = script.steps, next](std::size_t, httplib::DataSink& sink) {
            if (*next >= steps.size()) {
              sink.done();
              return true;
            }
            const StreamStep& step = steps[(*next)++];
            switch (step.type) {
              case StreamStep::Type::Send:
                return sink.write(step.bytes.data(), step.bytes.size());
              case StreamStep::Type::Silence: {
                std::unique_lock lock(mutex_);
                closing_changed_.wait_for(lock, step.silence, [this] { return closing_; });
                return !closing_;
              }
              case StreamStep::Type::End:
                sink.done();
                return true;
              case StreamStep::Type::Drop:
                return false;
            }
            return false;
          });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("watch stub: cannot bind 127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }

  ~WatchStubServer() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;  // ends every silence, so the server's workers can be joined
    }
    closing_changed_.notify_all();
    server_.stop();
    thread_.join();
  }

  WatchStubServer(const WatchStubServer&) = delete;
  WatchStubServer& operator=(const WatchStubServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void play(WatchScript script) {
    std::lock_guard lock(mutex_);
    script_ = std::move(script);
  }

  std::vector<httplib::Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable closing_changed_;
  bool closing_ = false;
  WatchScript script_;
  std::vector<httplib::Request> requests_;
};

}  // namespace stsresize::testing
