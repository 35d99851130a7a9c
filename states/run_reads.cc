#include "states/run_reads.h"

namespace stsresize {

namespace {

std::string kind_prefix(Kind kind) {
  return std::string{to_string(kind)} + "/";
}

std::string list_key(Kind kind, const std::string& ns, const ListOptions& options) {
  // '\n' cannot occur in a namespace, a selector or a continue token.
  return kind_prefix(kind) + ns + "\n" + options.label_selector + "\n" + options.field_selector +
         "\n" + std::to_string(options.limit) + "\n" + options.continue_token;
}

// Only what the server said of the object itself is worth answering again: another error (a
// refusal of the request, no answer) is read again.
bool worth_keeping(const KubeResult<Json>& read) {
  return read || read.error().code == KubeErrorCode::NotFound;
}

}  // namespace

KubeResult<Json> RunReads::get(const ObjectRef& ref) {
  const std::string key = to_string(ref);
  if (auto found = objects_.find(key); found != objects_.end()) {
    ++answered_;
    return found->second;
  }
  ++made_;
  auto read = inner_.get(ref);
  if (worth_keeping(read)) objects_.insert_or_assign(key, read);
  return read;
}

KubeResult<ObjectList> RunReads::list(Kind kind, const std::string& ns,
                                      const ListOptions& options) {
  const std::string key = list_key(kind, ns, options);
  if (auto found = lists_.find(key); found != lists_.end()) {
    ++answered_;
    return found->second;
  }
  ++made_;
  auto listed = inner_.list(kind, ns, options);
  if (listed) lists_.insert_or_assign(key, listed);
  return listed;
}

void RunReads::forget(const ObjectRef& ref) {
  objects_.erase(to_string(ref));
  const std::string prefix = kind_prefix(ref.kind);
  for (auto it = lists_.lower_bound(prefix); it != lists_.end() && it->first.starts_with(prefix);) {
    it = lists_.erase(it);
  }
}

KubeResult<Json> RunReads::written(const ObjectRef& ref, KubeResult<Json> answer) {
  forget(ref);
  if (answer) objects_.insert_or_assign(to_string(ref), answer);
  return answer;
}

KubeResult<Json> RunReads::create(Kind kind, const Json& object) {
  return written(ref_of(kind, object), inner_.create(kind, object));
}

KubeResult<Json> RunReads::update(Kind kind, const Json& object) {
  return written(ref_of(kind, object), inner_.update(kind, object));
}

KubeResult<Json> RunReads::update_status(Kind kind, const Json& object) {
  return written(ref_of(kind, object), inner_.update_status(kind, object));
}

KubeResult<Json> RunReads::patch(const ObjectRef& ref, PatchType type, const Json& patch) {
  return written(ref, inner_.patch(ref, type, patch));
}

KubeResult<void> RunReads::remove(const ObjectRef& ref, const DeleteOptions& options) {
  forget(ref);
  return inner_.remove(ref, options);
}

KubeResult<void> RunReads::evict(const ObjectRef& pod, const EvictOptions& options) {
  if (!options.dry_run) forget(pod);
  return inner_.evict(pod, options);
}

KubeResult<Json> RunReads::update_scale(const ObjectRef& ref, std::int32_t replicas,
                                        const std::string& resource_version) {
  forget(ref);  // a Scale is not the object it scales
  return inner_.update_scale(ref, replicas, resource_version);
}

}  // namespace stsresize
