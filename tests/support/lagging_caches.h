#pragma once
// The controller's caches for engine tests: CachedReads over the simulated cluster's API, its
// stores filled only when the test says (what the informers would hold, trimmed as they trim
// it, filtered as they filter it), so that a test decides how far behind the cluster they are.
#include <map>
#include <string>

#include "adapters/controller/cached_reads.h"
#include "adapters/fake/fake_kubernetes.h"
#include "adapters/runtime/informer.h"
#include "engine/annotations.h"
#include "engine/cached_fields.h"
#include "engine/k8s_objects.h"
#include "engine/vocabulary.h"

namespace stsresize::testing {

struct LaggingCaches {
  explicit LaggingCaches(FakeKubernetes& kube) : kube(kube), reads(kube) {
    reads.serve(
        Kind::PersistentVolumeClaim, claims, [] { return true; }, true);
    reads.serve(
        Kind::Job, jobs, [] { return true; }, false);
    reads.serve(
        Kind::ConfigMap, config_maps, [] { return true; }, false);
    reads.serve(
        Kind::StorageClass, classes, [] { return true; }, true);
    reads.serve(
        Kind::Pod, pods, [] { return true; }, true);
    // As a cluster-scoped controller that may list them (run: may_list_volumes).
    reads.serve(
        Kind::PersistentVolume, volumes, [] { return true; }, true);
    reads.serve_whole_copies(Kind::StatefulSet, statefulsets, [] { return true; });
    refresh();
  }

  void refresh() {
    fill(claims, Kind::PersistentVolumeClaim, false);
    fill(jobs, Kind::Job, true);
    fill(config_maps, Kind::ConfigMap, true);
    fill(classes, Kind::StorageClass, false);
    fill(pods, Kind::Pod, false);
    fill(volumes, Kind::PersistentVolume, false);
    fill(statefulsets, Kind::StatefulSet, false);
  }
  // Only the StatefulSet cache: the event of a change to it, which wakes its reconcile.
  void refresh_statefulsets() { fill(statefulsets, Kind::StatefulSet, false); }

  FakeKubernetes& kube;
  runtime::Store claims, jobs, config_maps, classes, pods, volumes, statefulsets;
  CachedReads reads;

 private:
  void fill(runtime::Store& store, Kind kind, bool labelled) {
    std::map<std::string, runtime::Store::Entry> entries;
    for (const Json& object : kube.list_raw(kind)) {
      if (labelled && !k8s::label(object, kStatefulSetLabel).value_or(std::nullopt)) continue;
      const std::string ns = k8s::namespace_of(object).value_or("");
      const std::string name = k8s::name(object).value_or("");
      entries[ns.empty() ? name : ns + "/" + name] =
          runtime::Store::pack(trim_for_cache(kind, object));
    }
    store.replace(std::move(entries));
  }
};

}  // namespace stsresize::testing
