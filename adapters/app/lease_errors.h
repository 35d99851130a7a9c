#pragma once
// What `stsresize run --leader-elect` says when it cannot read or write its Lease. The elector
// retries every retry period for ever (runtime/leader_election.h); without a word, a replica
// whose ServiceAccount may not touch leases stood by in silence (/readyz: "no lease seen yet").
// A cause (what was done to the Lease, and the error's code) is logged at error level once when
// it appears, with what to grant for a 401 or 403; each repeat at debug; the first attempt that
// works after it at info.
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include "adapters/app/logging.h"
#include "engine/ports/kubernetes.h"

namespace stsresize::cli {

class LeaseErrorLog {
 public:
  using Sink = std::function<void(logging::Level, std::string_view message,
                                  std::initializer_list<logging::Field> fields)>;
  LeaseErrorLog(std::string lease_namespace, std::string lease_name, Sink sink = logging::log);

  // Called from the elector's thread only.
  void failed(std::string_view doing, const KubeError& error);
  void recovered();

 private:
  std::string ns_;
  std::string name_;
  Sink sink_;
  std::string open_;  // the cause being reported ("update Forbidden"); empty: none
};

}  // namespace stsresize::cli
