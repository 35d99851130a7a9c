// stsresize_populate: fills a cluster with StatefulSets and their claims for the scale
// benchmark (tests/bench/cluster_scale.sh), fast: parallel creates through one HttpKubernetes.
// StatefulSets have replicas 0 and one volumeClaimTemplate "data"; the claims are named as the
// StatefulSet controller would name them (data-<sts>-<ordinal>) and use a storage class (default
// sim-fixed, WaitForFirstConsumer) that leaves them Pending without any pod. Objects that exist
// already are counted, not errors, so a rerun tops a cluster up.
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/kube/config.h"
#include "adapters/kube/http_kubernetes.h"

namespace {
using namespace stsresize;

struct Options {
  std::string kubeconfig;
  std::string prefix = "bench";
  int namespaces = 10;
  int statefulsets = 5000;
  int claims_per_statefulset = 3;
  int threads = 8;
  std::string storage_class = "sim-fixed";
};

Json statefulset(const std::string& ns, const std::string& name, const Options& options) {
  const Json labels = {{"app", name}};
  return Json{
      {"apiVersion", "apps/v1"},
      {"kind", "StatefulSet"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"stsresize.dev/bench", "1"}}}}},
      {"spec",
       {{"replicas", 0},
        {"serviceName", name},
        {"selector", {{"matchLabels", labels}}},
        {"template",
         {{"metadata", {{"labels", labels}}},
          {"spec",
           {{"containers",
             Json::array({{{"name", "main"},
                           {"image", "registry.k8s.io/pause:3.10"},
                           {"volumeMounts",
                            Json::array({{{"name", "data"}, {"mountPath", "/data"}}})}}})}}}}},
        {"volumeClaimTemplates",
         Json::array({{{"metadata", {{"name", "data"}}},
                       {"spec",
                        {{"accessModes", {"ReadWriteOnce"}},
                         {"storageClassName", options.storage_class},
                         {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}}})}}}};
}

Json claim(const std::string& ns, const std::string& sts, int ordinal, const Options& options) {
  return Json{{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata",
               {{"name", "data-" + sts + "-" + std::to_string(ordinal)},
                {"namespace", ns},
                {"labels", {{"app", sts}, {"stsresize.dev/bench", "1"}}}}},
              {"spec",
               {{"accessModes", {"ReadWriteOnce"}},
                {"storageClassName", options.storage_class},
                {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
}

struct Tally {
  std::atomic<long> created{0};
  std::atomic<long> existing{0};
  std::atomic<long> failed{0};
  std::mutex mutex;
  std::string first_error;

  void count(const KubeResult<Json>& result) {
    if (result) {
      ++created;
    } else if (result.error().code == KubeErrorCode::AlreadyExists) {
      ++existing;
    } else {
      ++failed;
      std::lock_guard lock(mutex);
      if (first_error.empty()) first_error = result.error().message;
    }
  }
};

int run(const Options& options) {
  auto config = load_kubeconfig(options.kubeconfig);
  if (!config) {
    std::fprintf(stderr, "stsresize_populate: %s\n", config.error().c_str());
    return 1;
  }
  HttpKubernetesOptions http;
  http.max_idle_connections = static_cast<std::size_t>(options.threads);
  http.user_agent = "stsresize-populate/0.1";
  auto created_client = HttpKubernetes::create(*config, http);
  if (!created_client) {
    std::fprintf(stderr, "stsresize_populate: %s\n", created_client.error().c_str());
    return 1;
  }
  HttpKubernetes& kube = **created_client;

  auto namespace_name = [&](int i) { return options.prefix + "-" + std::to_string(i); };
  for (int i = 0; i < options.namespaces; ++i) {
    auto made =
        kube.raw("POST", "/api/v1/namespaces", Json{{"metadata", {{"name", namespace_name(i)}}}});
    if (!made && made.error().code != KubeErrorCode::AlreadyExists) {
      std::fprintf(stderr, "stsresize_populate: namespace %s: %s\n", namespace_name(i).c_str(),
                   made.error().message.c_str());
      return 1;
    }
  }

  Tally statefulsets;
  Tally claims;
  std::atomic<int> next{0};
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; ++t) {
    threads.emplace_back([&] {
      for (int i; (i = next++) < options.statefulsets;) {
        const std::string ns = namespace_name(i % options.namespaces);
        char name[32];
        std::snprintf(name, sizeof name, "sts-%05d", i);
        statefulsets.count(kube.create(Kind::StatefulSet, statefulset(ns, name, options)));
        for (int ordinal = 0; ordinal < options.claims_per_statefulset; ++ordinal)
          claims.count(kube.create(Kind::PersistentVolumeClaim, claim(ns, name, ordinal, options)));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const long made = statefulsets.created + claims.created;
  std::printf("statefulsets created=%ld existing=%ld failed=%ld\n", statefulsets.created.load(),
              statefulsets.existing.load(), statefulsets.failed.load());
  std::printf("claims       created=%ld existing=%ld failed=%ld\n", claims.created.load(),
              claims.existing.load(), claims.failed.load());
  std::printf("populate_seconds=%.1f objects_per_second=%.0f threads=%d\n", seconds,
              seconds > 0 ? static_cast<double>(made) / seconds : 0.0, options.threads);
  for (Tally* tally : {&statefulsets, &claims})
    if (tally->failed > 0) std::fprintf(stderr, "first error: %s\n", tally->first_error.c_str());
  return statefulsets.failed + claims.failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Creates StatefulSets (replicas 0) and Pending claims for the scale benchmark.",
               "stsresize_populate"};
  app.add_option("--kubeconfig", options.kubeconfig, "kubeconfig of the target cluster")
      ->required();
  app.add_option("--prefix", options.prefix, "namespaces are <prefix>-0 .. <prefix>-(N-1)")
      ->capture_default_str();
  app.add_option("--namespaces", options.namespaces, "namespaces to spread over")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--statefulsets", options.statefulsets, "StatefulSets to create")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--claims-per-statefulset", options.claims_per_statefulset,
                 "claims data-<sts>-0.. per StatefulSet")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", options.threads, "parallel writers")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--storage-class", options.storage_class, "storageClassName of every claim")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return run(options);
}
