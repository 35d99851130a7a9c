#pragma once
// The reads of one run of a step on live reads, each object read from the API server once. A
// step that acts destructively runs again on live reads before it acts
// (Reconciler::Session::intend), and what it decides rests on the objects it reads in that run;
// its helpers read some of them more than once (the fence, the claims it deletes, their
// volumes): on the rebind path a claim was read three times in one such run. Two reads a
// millisecond apart are no more current than one, and neither is atomic with the act, which
// carries a uid or resourceVersion precondition; so within the run a second read is answered
// with the first's outcome (NotFound included), a list likewise. A write through it is the
// key's answer from then on when it returned the object, and forgets the key otherwise (a
// delete, an eviction, a Scale, a refusal), as it does every list of the kind written. One per
// run: a next run reads everything again.
#include <map>
#include <string>

#include "engine/ports/kubernetes.h"

namespace stsresize {

class RunReads final : public Kubernetes {
 public:
  explicit RunReads(Kubernetes& inner) : inner_(inner) {}

  // Reads that reached `inner`, and reads answered from this run's earlier ones (for tests).
  int reads_made() const { return made_; }
  int reads_answered() const { return answered_; }

  KubeResult<Json> get(const ObjectRef& ref) override;
  KubeResult<ObjectList> list(Kind kind, const std::string& ns,
                              const ListOptions& options = {}) override;
  KubeResult<Json> create(Kind kind, const Json& object) override;
  KubeResult<Json> update(Kind kind, const Json& object) override;
  KubeResult<Json> update_status(Kind kind, const Json& object) override;
  KubeResult<Json> patch(const ObjectRef& ref, PatchType type, const Json& patch) override;
  KubeResult<void> remove(const ObjectRef& ref, const DeleteOptions& options = {}) override;
  KubeResult<void> evict(const ObjectRef& pod, const EvictOptions& options = {}) override;
  KubeResult<Json> get_scale(const ObjectRef& ref) override { return inner_.get_scale(ref); }
  KubeResult<Json> update_scale(const ObjectRef& ref, std::int32_t replicas,
                                const std::string& resource_version) override;
  KubeResult<void> watch(Kind kind, const std::string& ns, const WatchOptions& options,
                         std::stop_token stop, const WatchHandler& handler) override {
    return inner_.watch(kind, ns, options, std::move(stop), handler);
  }

 private:
  // A write to `ref`: its answer kept when it is the object, the key forgotten otherwise, and
  // every list of the kind forgotten.
  KubeResult<Json> written(const ObjectRef& ref, KubeResult<Json> answer);
  void forget(const ObjectRef& ref);

  Kubernetes& inner_;
  std::map<std::string, KubeResult<Json>> objects_;      // by to_string(ref)
  std::map<std::string, KubeResult<ObjectList>> lists_;  // by kind/ns/options
  int made_ = 0;
  int answered_ = 0;
};

}  // namespace stsresize
