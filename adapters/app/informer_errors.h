#pragma once
// What `stsresize run` says about its informers' failed lists and watches. An informer retries
// a failed call for ever (runtime/informer.h): right for a server that restarts, but a cause
// that only a person can remove (credentials rejected, a missing RBAC rule) showed nowhere but
// in /readyz's 503. Each distinct cause is logged once when it appears, with what to do: at
// error level when a person must act (401, 403, 404), at warn otherwise; each repeat at debug;
// its end at info.
//
// A cause is the error code, and for 403 and 404 also the verb and the resource (each missing
// rule or resource is its own fix). Any other code is one cause whichever informer meets it:
// six informers rejected for one token make one line, not six. A cause ends when every informer
// that met it has succeeded again (a complete list, or a watch that delivered something).
#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "adapters/app/logging.h"
#include "adapters/runtime/informer.h"

namespace stsresize::cli {

// For people: what failed and what to do about it (the server's own message is a log field).
std::string explain(const runtime::InformerError& error);

class InformerErrorLog {
 public:
  using Sink = std::function<void(logging::Level, std::string_view message,
                                  std::initializer_list<logging::Field> fields)>;
  explicit InformerErrorLog(Sink sink = logging::log);

  // Thread-safe: each informer calls them from its own thread.
  void failed(const runtime::InformerError& error);
  void recovered(Kind kind);

 private:
  struct Cause {
    KubeErrorCode code;
    Kind kind;               // the first informer that met it
    std::set<Kind> failing;  // informers not recovered since
  };

  Sink sink_;
  std::mutex mutex_;
  std::map<std::string, Cause> open_;  // by cause key
};

}  // namespace stsresize::cli
