#include "states/volume_memo.h"

#include "engine/k8s_objects.h"

namespace stsresize {

KubeResult<Json> VolumeMemo::get(const ObjectRef& ref) {
  if (ref.kind != Kind::PersistentVolume) return inner_.get(ref);
  if (mode_ == Mode::Answer) {
    if (auto known = volumes_.find(ref.name); known != volumes_.end()) return known->second;
  }
  auto read = inner_.get(ref);
  if (read) {
    volumes_.insert_or_assign(ref.name, *read);
  } else {
    volumes_.erase(ref.name);
  }
  return read;
}

KubeResult<Json> VolumeMemo::kept(const std::string& name, KubeResult<Json> answer) {
  if (answer) {
    volumes_.insert_or_assign(name, *answer);
  } else {
    volumes_.erase(name);  // refused, or lost on the way: read it again
  }
  return answer;
}

KubeResult<Json> VolumeMemo::create(Kind kind, const Json& object) {
  if (kind != Kind::PersistentVolume) return inner_.create(kind, object);
  return kept(k8s::name(object).value_or(""), inner_.create(kind, object));
}

KubeResult<Json> VolumeMemo::update(Kind kind, const Json& object) {
  if (kind != Kind::PersistentVolume) return inner_.update(kind, object);
  return kept(k8s::name(object).value_or(""), inner_.update(kind, object));
}

KubeResult<Json> VolumeMemo::patch(const ObjectRef& ref, PatchType type, const Json& patch) {
  if (ref.kind != Kind::PersistentVolume) return inner_.patch(ref, type, patch);
  return kept(ref.name, inner_.patch(ref, type, patch));
}

KubeResult<void> VolumeMemo::remove(const ObjectRef& ref, const DeleteOptions& options) {
  if (ref.kind == Kind::PersistentVolume) volumes_.erase(ref.name);
  return inner_.remove(ref, options);
}

}  // namespace stsresize
