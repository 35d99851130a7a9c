#include "adapters/controller/controller.h"

#include <algorithm>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "adapters/controller/attention.h"
#include "adapters/runtime/informer.h"
#include "adapters/runtime/work_queue.h"
#include "adapters/runtime/worker_pool.h"
#include "engine/annotations.h"
#include "engine/cached_fields.h"
#include "engine/k8s_objects.h"
#include "engine/resize_request.h"
#include "states/reconciler.h"

namespace stsresize {

namespace {

std::string key_of(const std::string& ns, const std::string& name) {
  return ns + "/" + name;
}

std::string key_of(const Json& object) {
  const Json& metadata = object.value("metadata", Json::object());
  return key_of(metadata.value("namespace", ""), metadata.value("name", ""));
}

std::pair<std::string, std::string> split_key(const std::string& key) {
  const auto slash = key.find('/');
  return {key.substr(0, slash), key.substr(slash + 1)};
}

std::string_view result_label(ReconcileResult::Kind kind) {
  switch (kind) {
    case ReconcileResult::Kind::Idle:
      return "idle";
    case ReconcileResult::Kind::RequeueAfter:
      return "requeue";
    case ReconcileResult::Kind::Retry:
      return "retry";
    case ReconcileResult::Kind::Terminal:
      return "terminal";
  }
  return "unknown";
}

std::vector<Json> values(const std::vector<std::shared_ptr<const Json>>& objects) {
  std::vector<Json> out;
  out.reserve(objects.size());
  for (const auto& object : objects) out.push_back(*object);
  return out;
}

}  // namespace

struct Controller::Informers {
  std::unique_ptr<runtime::Informer> statefulsets;
  std::unique_ptr<runtime::Informer> claims;
  std::unique_ptr<runtime::Informer> jobs;
  std::unique_ptr<runtime::Informer> pods;
  std::unique_ptr<runtime::Informer> configmaps;
  std::unique_ptr<runtime::Informer> storage_classes;  // null when not watched
  std::unique_ptr<runtime::Informer> volumes;          // null when not watched

  std::vector<std::pair<Kind, runtime::Informer*>> all() const {
    std::vector<std::pair<Kind, runtime::Informer*>> list{
        {Kind::StatefulSet, statefulsets.get()},
        {Kind::PersistentVolumeClaim, claims.get()},
        {Kind::Job, jobs.get()},
        {Kind::Pod, pods.get()},
        {Kind::ConfigMap, configmaps.get()}};
    if (storage_classes) list.emplace_back(Kind::StorageClass, storage_classes.get());
    if (volumes) list.emplace_back(Kind::PersistentVolume, volumes.get());
    return list;
  }
};

Controller::Controller(Kubernetes& kube, Journal& journal, const Clock& clock,
                       EventRecorder& events, ControllerOptions options)
    : kube_(kube),
      cached_reads_(std::make_unique<CachedReads>(kube)),
      journal_(journal),
      clock_(clock),
      events_(events),
      options_(std::move(options)),
      queue_(std::make_unique<runtime::WorkQueue>(clock)),
      informers_(std::make_unique<Informers>()) {
  auto informer = [&](Kind kind, std::string ns, std::string selector) {
    runtime::InformerOptions informer_options;
    informer_options.kind = kind;
    informer_options.ns = std::move(ns);
    informer_options.label_selector = std::move(selector);
    // Only the fields the controller reads are cached (engine/cached_fields.h): most of an
    // object is never read, and at thousands of StatefulSets the cache is most of the memory.
    // Pages of 100, not client-go's 500: a page is parsed whole as Json trees (a StatefulSet's
    // is ten times its cached size) in the informer's malloc arena, and the cached objects made
    // from it settle in its holes, so the arena stays as large as the largest page made it:
    // at 2,000 StatefulSets, 500 left 16 MB of arena for 2 MB of objects (README.md, "Memory
    // at scale"). The cost: a first list of 20,000 objects takes 200 requests instead of 40.
    informer_options.page_size = 100;
    informer_options.transform = [kind](Json object) {
      return trim_for_cache(kind, std::move(object));
    };
    informer_options.on_error = options_.on_informer_error;
    informer_options.on_recovered = options_.on_informer_recovered;
    return std::make_unique<runtime::Informer>(kube_, std::move(informer_options));
  };
  const std::string ours{kStatefulSetLabel};
  informers_->statefulsets = informer(Kind::StatefulSet, options_.ns, "");
  informers_->claims = informer(Kind::PersistentVolumeClaim, options_.ns, "");
  informers_->jobs = informer(Kind::Job, options_.ns, ours);
  // Every pod, not only stsresize's: the fence and the drain list the namespace's pods at each
  // step, and a pod of any owner may mount a claim (states/fence.h). Trimmed to what they read.
  informers_->pods = informer(Kind::Pod, options_.ns, "");
  informers_->configmaps = informer(Kind::ConfigMap, options_.ns, ours);
  if (options_.watch_storage_classes) {
    informers_->storage_classes = informer(Kind::StorageClass, "", "");
  }
  if (options_.watch_volumes) informers_->volumes = informer(Kind::PersistentVolume, "", "");
  // The steps' reads of these kinds. A StatefulSet's cached copy lacks the pod template, and an
  // update starts from the object read: it is answered from the whole object this port last
  // read or wrote, while the informer shows it unchanged since.
  auto serve = [&](Kind kind, runtime::Informer* informer, bool whole) {
    cached_reads_->serve(
        kind, informer->store(), [informer] { return informer->has_synced(); }, whole);
  };
  serve(Kind::PersistentVolumeClaim, informers_->claims.get(), /*whole=*/true);
  serve(Kind::Job, informers_->jobs.get(), /*whole=*/false);
  serve(Kind::Pod, informers_->pods.get(), /*whole=*/true);
  cached_reads_->serve_whole_copies(
      Kind::StatefulSet, informers_->statefulsets->store(),
      [informer = informers_->statefulsets.get()] { return informer->has_synced(); });
  serve(Kind::ConfigMap, informers_->configmaps.get(), /*whole=*/false);
  if (informers_->storage_classes) {
    serve(Kind::StorageClass, informers_->storage_classes.get(), /*whole=*/true);
  }
  if (informers_->volumes) serve(Kind::PersistentVolume, informers_->volumes.get(), true);

  informers_->statefulsets->add_handler(
      [this](WatchEventType type, const std::shared_ptr<const Json>& sts) {
        handle_statefulset(key_of(*sts), *sts, type == WatchEventType::Deleted);
      });
  informers_->claims->add_handler(
      [this](WatchEventType, const std::shared_ptr<const Json>& claim) { handle_claim(*claim); });
  for (runtime::Informer* owned :
       {informers_->jobs.get(), informers_->pods.get(), informers_->configmaps.get()}) {
    owned->add_handler([this](WatchEventType, const std::shared_ptr<const Json>& object) {
      handle_owned(*object);
    });
  }
}

Kubernetes& Controller::reads() {
  return *cached_reads_;
}

Controller::~Controller() {
  stop();
}

void Controller::start_caches() {
  for (const auto& [kind, informer] : informers_->all()) informer->start();
}

bool Controller::caches_synced() const {
  for (const auto& [kind, informer] : informers_->all()) {
    if (!informer->has_synced()) return false;
  }
  return true;
}

std::string Controller::sync_detail() const {
  int synced = 0;
  std::string waiting;
  const auto all = informers_->all();
  for (const auto& [kind, informer] : all) {
    if (informer->has_synced()) {
      ++synced;
    } else {
      waiting += (waiting.empty() ? "" : ", ") + std::string{to_string(kind)};
    }
  }
  std::string detail =
      "informers: " + std::to_string(synced) + "/" + std::to_string(all.size()) + " synced";
  if (!waiting.empty()) detail += " (waiting for " + waiting + ")";
  return detail;
}

Attention Controller::attention_of(const Json& sts) const {
  const Json& metadata = sts.value("metadata", Json::object());
  const std::string ns = metadata.value("namespace", "");
  const std::string name = metadata.value("name", "");
  // Only claims named like this StatefulSet's ("<template>-<sts>-<ordinal>") are copied for
  // the planner: copying every claim of the namespace for every StatefulSet made the first
  // scan quadratic (5,000 StatefulSets x 1,500 claims each took half a minute of CPU).
  std::vector<std::string> prefixes;
  if (const auto templates = k8s::claim_templates(sts)) {
    for (const auto& tmpl : *templates) prefixes.push_back(tmpl.name + "-" + name + "-");
  }
  // The cache decodes only the claims selected (adapters/runtime/informer.h: Store).
  const auto selected = informers_->claims->store().list(ns, [&](std::string_view claim_name) {
    return std::ranges::any_of(
        prefixes, [&](const std::string& prefix) { return claim_name.starts_with(prefix); });
  });
  std::vector<Json> claims;
  claims.reserve(selected.size());
  for (const auto& claim : selected) claims.push_back(*claim);
  std::vector<Json> classes;
  if (informers_->storage_classes) classes = values(informers_->storage_classes->store().list(""));
  return needs_attention(sts, claims, classes);
}

void Controller::handle_statefulset(const std::string& key, const Json& sts, bool deleted) {
  if (!scanned_) return;  // before every cache has synced the filter would decide on half a view
  std::lock_guard lock(mutex_);
  if (deleted) {
    active_.erase(key);
    refused_.erase(key);
    last_reconciled_.erase(key);
    return;
  }
  const Attention attention = attention_of(sts);
  if (attention == Attention::None) {
    active_.erase(key);
    refused_.erase(key);
    return;
  }
  if (attention == Attention::Operation || attention == Attention::Request) {
    active_.insert(key);
  }
  if (auto refused = refused_.find(key);
      refused != refused_.end() && refused->second == refusal_fingerprint(sts)) {
    return;  // refused as it stands; a person must change it first
  }
  enqueue_locked(key);
}

void Controller::handle_claim(const Json& claim) {
  if (!scanned_) return;
  // A claim changing matters to an operation under way (bound, resized, deleted); to nothing
  // else: detection follows the StatefulSet's templates.
  const std::string ns = claim.value("metadata", Json::object()).value("namespace", "");
  const std::string prefix = ns + "/";
  std::lock_guard lock(mutex_);
  for (auto it = active_.lower_bound(prefix); it != active_.end() && it->starts_with(prefix);
       ++it) {
    enqueue_locked(*it);
  }
}

void Controller::handle_owned(const Json& object) {
  if (!scanned_) return;
  // What stsresize creates carries the StatefulSet's name in a label (shortened when long) and,
  // on Jobs and the definition ConfigMap, in full in an annotation of the same key.
  auto full = k8s::annotation(object, kStatefulSetLabel);
  auto label = k8s::label(object, kStatefulSetLabel);
  std::string name;
  if (full && full->has_value()) {
    name = **full;
  } else if (label && label->has_value()) {
    name = **label;
  } else {
    return;
  }
  const std::string ns = object.value("metadata", Json::object()).value("namespace", "");
  std::lock_guard lock(mutex_);
  enqueue_locked(key_of(ns, name));
}

void Controller::enqueue_locked(const std::string& key) {
  const Duration window = options_.event_batching_window;
  if (window > Duration{0}) {
    if (reconciling_.contains(key)) {
      queue_->add_after(key, window);
      return;
    }
    if (auto last = last_reconciled_.find(key); last != last_reconciled_.end()) {
      const Duration since = std::chrono::duration_cast<Duration>(clock_.now() - last->second);
      if (since < window) {
        queue_->add_after(key, window - since);
        return;
      }
    }
  }
  queue_->add(key);
}

void Controller::enqueue_all() {
  scanned_ = true;
  // One decoded object at a time (adapters/runtime/informer.h: Store::visit).
  informers_->statefulsets->store().visit(
      "", [this](const Json& sts) { handle_statefulset(key_of(sts), sts, false); });
  // A definition ConfigMap without its StatefulSet: a re-create interrupted by a crash.
  informers_->configmaps->store().visit("",
                                        [this](const Json& configmap) { handle_owned(configmap); });
}

void Controller::on_reconciled(
    std::function<void(const std::string&, std::string_view, Duration, const std::string&)>
        callback) {
  on_reconciled_ = std::move(callback);
}

// Reconcilers are not thread-safe (each keeps folded journals); workers borrow one per
// reconcile. The queue never hands one key to two workers, so no operation is driven twice at
// once; a Reconciler that last saw an operation long ago refolds it from the journal.
class Controller::ReconcilerPool {
 public:
  explicit ReconcilerPool(Controller& owner) : owner_(owner) {}

  ReconcileResult reconcile(const std::string& ns, const std::string& name) {
    std::unique_ptr<Reconciler> reconciler;
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        reconciler = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    if (!reconciler) {
      reconciler = std::make_unique<Reconciler>(
          owner_.cached_reads_->live(), owner_.journal_, owner_.clock_, owner_.events_,
          owner_.options_.engine, owner_.options_.operation_listener, owner_.cached_reads_.get());
    }
    ReconcileResult result = reconciler->reconcile(ns, name);
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(reconciler));
    return result;
  }

 private:
  Controller& owner_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Reconciler>> idle_;
};

void Controller::start_workers() {
  if (working_.exchange(true)) return;
  while (!caches_synced()) {
    if (stopped_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  std::lock_guard lifecycle(lifecycle_mutex_);
  if (stopped_) return;
  enqueue_all();
#ifdef __GLIBC__
  // The first lists and the scan above decoded every object once, in the informers' threads,
  // each with its own malloc arena; glibc keeps what they freed unless asked. Given back once
  // here, the process holds what the caches hold (README.md, "Memory at scale").
  malloc_trim(0);
#endif
  reconcilers_ = std::make_unique<ReconcilerPool>(*this);
  workers_ = std::make_unique<runtime::WorkerPool>(
      *queue_,
      [this](const std::string& key) {
        const auto [ns, name] = split_key(key);
        const auto cached = informers_->statefulsets->store().get(ns, name);
        {
          std::lock_guard lock(mutex_);
          reconciling_.insert(key);
          // Enqueued by an event that came while the reconcile that refused it ran (before
          // observe() recorded the refusal): refused as it stands, it would only say so again.
          if (auto refused = refused_.find(key); cached && refused != refused_.end() &&
                                                 refused->second == refusal_fingerprint(*cached)) {
            return ReconcileResult{ReconcileResult::Kind::Idle, Duration{0},
                                   "refused as it stands"};
          }
        }
        return reconcilers_->reconcile(ns, name);
      },
      options_.workers,
      [this](const std::string& key, const ReconcileResult& result, Duration took) {
        observe(key, result, took);
      });
}

void Controller::observe(const std::string& key, const ReconcileResult& result, Duration took) {
  {
    std::lock_guard lock(mutex_);
    reconciling_.erase(key);
    last_reconciled_[key] = clock_.now();
  }
  if (result.is(ReconcileResult::Kind::Terminal)) {
    const auto [ns, name] = split_key(key);
    if (auto cached = informers_->statefulsets->store().get(ns, name)) {
      std::lock_guard lock(mutex_);
      refused_[key] = refusal_fingerprint(*cached);
    }
  }
  if (on_reconciled_) on_reconciled_(key, result_label(result.kind), took, result.message);
}

void Controller::stop() {
  std::unique_ptr<runtime::WorkerPool> workers;
  {
    std::lock_guard lifecycle(lifecycle_mutex_);
    if (stopped_.exchange(true)) return;
    queue_->shut_down();
    workers = std::move(workers_);
  }
  workers.reset();  // waits for the reconciles in flight
  for (const auto& [kind, informer] : informers_->all()) informer->stop();
}

void Controller::export_metrics(ControllerMetrics& metrics) {
  metrics.add_sampled(
      "stsresize_workqueue_depth", "StatefulSets waiting for a worker.", MetricType::Gauge, [this] {
        return std::vector<MetricSample>{{{}, static_cast<double>(queue_->depth())}};
      });
  metrics.add_sampled(
      "stsresize_workqueue_waiting", "StatefulSets waiting for a requeue delay or backoff to pass.",
      MetricType::Gauge, [this] {
        return std::vector<MetricSample>{{{}, static_cast<double>(queue_->waiting())}};
      });
  metrics.add_sampled(
      "stsresize_workqueue_in_flight", "StatefulSets being reconciled now.", MetricType::Gauge,
      [this] {
        return std::vector<MetricSample>{{{}, static_cast<double>(queue_->in_flight())}};
      });
  auto per_informer = [this](auto read) {
    return [this, read] {
      std::vector<MetricSample> samples;
      for (const auto& [kind, informer] : informers_->all()) {
        samples.push_back({{{"kind", std::string{to_string(kind)}}}, read(*informer)});
      }
      return samples;
    };
  };
  metrics.add_sampled(
      "stsresize_informer_synced", "1 once the informer's cache has synced.", MetricType::Gauge,
      per_informer([](const runtime::Informer& i) { return i.has_synced() ? 1.0 : 0.0; }));
  metrics.add_sampled("stsresize_informer_objects", "Objects in the informer's cache.",
                      MetricType::Gauge, per_informer([](const runtime::Informer& i) {
                        return static_cast<double>(i.store().size());
                      }));
  metrics.add_sampled("stsresize_watch_restarts_total",
                      "Watches started again after one ended (timeout, error, apiserver restart).",
                      MetricType::Counter, per_informer([](const runtime::Informer& i) {
                        return static_cast<double>(i.stats().watch_restarts);
                      }));
  metrics.add_sampled("stsresize_relists_total",
                      "Full lists after the watch's resourceVersion expired (410 Gone).",
                      MetricType::Counter, per_informer([](const runtime::Informer& i) {
                        return static_cast<double>(i.stats().relists_after_gone);
                      }));
  metrics.add_sampled("stsresize_watch_events_total", "Watch events received.", MetricType::Counter,
                      per_informer([](const runtime::Informer& i) {
                        return static_cast<double>(i.stats().events);
                      }));
  // One series per operation under way, from its state annotation (decoded one StatefulSet at
  // a time: only those with a phase annotation): for alerts on a phase that lasts, or an approval
  // that nobody gives.
  const auto per_operation = [this](auto value) {
    return [this, value] {
      std::vector<MetricSample> samples;
      informers_->statefulsets->store().visit("", [&](const Json& sts) {
        auto phase = k8s::annotation(sts, kPhaseAnnotation);
        if (!phase || !phase->has_value()) return;
        auto op = read_operation(sts);
        if (!op || !op->has_value() || is_terminal((*op)->phase)) return;
        samples.push_back({{{"namespace", (*op)->ns},
                            {"statefulset", (*op)->statefulset},
                            {"kind", kind_label((*op)->kind)},
                            {"phase", std::string{to_string((*op)->phase)}}},
                           value(**op)});
      });
      return samples;
    };
  };
  metrics.add_sampled(
      "stsresize_operation_phase_start_seconds",
      "When the current phase of each operation under way began (seconds since "
      "the epoch): time() minus it is how long the phase has lasted.",
      MetricType::Gauge, per_operation([](const Operation& op) {
        return std::chrono::duration<double>(op.phase_since.time_since_epoch()).count();
      }));
  metrics.add_sampled("stsresize_operation_awaiting_approval",
                      "1 while an operation waits for `stsresize advance --approve` "
                      "(stsresize.dev/mode manual or step), else 0.",
                      MetricType::Gauge,
                      per_operation([](const Operation& op) { return op.awaiting ? 1.0 : 0.0; }));
  metrics.add_sampled("stsresize_operations",
                      "StatefulSets by the phase of their resize (annotation).", MetricType::Gauge,
                      [this] {
                        std::map<std::string, double> by_phase;
                        informers_->statefulsets->store().visit("", [&](const Json& sts) {
                          auto phase = k8s::annotation(sts, kPhaseAnnotation);
                          if (phase && phase->has_value()) by_phase[**phase] += 1;
                        });
                        std::vector<MetricSample> samples;
                        for (const auto& [phase, count] : by_phase)
                          samples.push_back({{{"phase", phase}}, count});
                        return samples;
                      });
}

}  // namespace stsresize
