#pragma once
// The PersistentVolumes one reconcile has read or written, answered again to the steps' runs on
// cached reads. Volumes are watched only by a cluster-scoped controller whose ClusterRole lets
// it list them (adapters/app/run_command.h: may_list_volumes); otherwise each run of a step
// would read each of its volumes live again: the rebind path's Recreating reads a claim's two
// volumes at every invocation, several times a reconcile. A volume read or written earlier in the
// same reconcile is no older than an informer's copy of it would be, and what a run on cached reads
// decides is never destructive: a delete or a volume change (but Retain) runs again on live reads
// (Reconciler::Session::intend). Those runs read every volume live (Mode::Record: never
// answered from here) and leave what they read and wrote here for the cached runs after them.
// Not thread-safe: one per reconcile.
#include <map>
#include <string>

#include "engine/ports/kubernetes.h"

namespace stsresize {

class VolumeMemo final : public Kubernetes {
 public:
  using Volumes = std::map<std::string, Json>;  // by name
  enum class Mode {
    Answer,  // a volume in `volumes` is answered from there; the rest is read and kept
    Record,  // every call goes to `inner`; what it reads or writes is kept
  };
  VolumeMemo(Kubernetes& inner, Volumes& volumes, Mode mode)
      : inner_(inner), volumes_(volumes), mode_(mode) {}

  KubeResult<Json> get(const ObjectRef& ref) override;
  KubeResult<ObjectList> list(Kind kind, const std::string& ns,
                              const ListOptions& options = {}) override {
    return inner_.list(kind, ns, options);
  }
  KubeResult<Json> create(Kind kind, const Json& object) override;
  KubeResult<Json> update(Kind kind, const Json& object) override;
  KubeResult<Json> update_status(Kind kind, const Json& object) override {
    return inner_.update_status(kind, object);
  }
  KubeResult<Json> patch(const ObjectRef& ref, PatchType type, const Json& patch) override;
  KubeResult<void> remove(const ObjectRef& ref, const DeleteOptions& options = {}) override;
  KubeResult<void> evict(const ObjectRef& pod, const EvictOptions& options = {}) override {
    return inner_.evict(pod, options);
  }
  KubeResult<Json> get_scale(const ObjectRef& ref) override { return inner_.get_scale(ref); }
  KubeResult<Json> update_scale(const ObjectRef& ref, std::int32_t replicas,
                                const std::string& resource_version) override {
    return inner_.update_scale(ref, replicas, resource_version);
  }
  KubeResult<void> watch(Kind kind, const std::string& ns, const WatchOptions& options,
                         std::stop_token stop, const WatchHandler& handler) override {
    return inner_.watch(kind, ns, options, std::move(stop), handler);
  }

 private:
  // The answer of a write: kept when it is the volume as it now is, forgotten otherwise.
  KubeResult<Json> kept(const std::string& name, KubeResult<Json> answer);

  Kubernetes& inner_;
  Volumes& volumes_;
  Mode mode_;
};

}  // namespace stsresize
