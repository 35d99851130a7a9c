#include "tests/cluster/adapter/cluster_support.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace stsresize::cluster_test {
namespace fs = std::filesystem;

namespace {
std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}
std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string{} : std::string{value};
}
}  // namespace

std::optional<fs::path> fixture_kubeconfig_path() {
  if (const std::string file = env_or_empty("STSRESIZE_KUBECONFIG_PATH_FILE"); !file.empty()) {
    std::ifstream in(file);
    std::string path;
    std::getline(in, path);
    if (path.empty()) {
      ADD_FAILURE() << file << " holds no kubeconfig path: did the cluster_up fixture run?";
      return std::nullopt;
    }
    return fs::path{trimmed(path)};
  }
  if (const std::string path = env_or_empty("STSRESIZE_KUBECONFIG"); !path.empty()) return path;
  return std::nullopt;
}

std::optional<KubeConfig> load_config(const fs::path& kubeconfig) {
  auto config = load_kubeconfig(kubeconfig);
  if (!config) {
    ADD_FAILURE() << config.error();
    return std::nullopt;
  }
  return *config;
}

std::shared_ptr<HttpKubernetes> connect(const KubeConfig& config, HttpKubernetesOptions options) {
  auto kube = HttpKubernetes::create(config, std::move(options));
  if (!kube) {
    ADD_FAILURE() << kube.error();
    return nullptr;
  }
  return std::shared_ptr<HttpKubernetes>(std::move(*kube));
}

KubeConfig without_credentials(KubeConfig config) {
  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  config.token.clear();
  config.token_file.clear();
  return config;
}

CommandResult run_command(const std::vector<std::string>& argv) {
  CommandResult result;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return result;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return result;
  }
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    result.output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(interval);
  }
  return true;
}

PrivateControlPlane::PrivateControlPlane() {
  name_ = env_or_empty("STSRESIZE_PRIVATE_CLUSTER_NAME");
  if (name_.empty()) name_ = "adapter-" + std::to_string(::getpid());
  const CommandResult started =
      run_command({STSRESIZE_CLUSTER_SCRIPT, "up", "--name", name_, "--no-nodesim"});
  const std::string output = trimmed(started.output);
  const std::string last_line = output.substr(output.rfind('\n') + 1);
  if (started.exit_code != 0 || !fs::exists(last_line)) {
    error_ = "scripts/cluster up --name " + name_ + " failed (exit " +
             std::to_string(started.exit_code) + "), printed: " + output;
    return;
  }
  kubeconfig_ = last_line;
}

PrivateControlPlane::~PrivateControlPlane() {
  const CommandResult stopped = run_command({STSRESIZE_CLUSTER_SCRIPT, "down", "--name", name_});
  if (stopped.exit_code != 0) ADD_FAILURE() << "scripts/cluster down --name " << name_ << " failed";
}

int PrivateControlPlane::apiserver_port() const {
  std::ifstream ports(kubeconfig_.parent_path() / "ports");
  for (std::string line; std::getline(ports, line);) {
    constexpr std::string_view key = "apiserver_port=";
    if (line.starts_with(key)) return std::stoi(line.substr(key.size()));
  }
  return 0;
}

bool PrivateControlPlane::restart_apiserver() {
  return run_command({STSRESIZE_CLUSTER_SCRIPT, "restart-apiserver", "--name", name_}).exit_code ==
         0;
}

std::optional<std::int64_t> PrivateControlPlane::compact() {
  const CommandResult compacted =
      run_command({STSRESIZE_CLUSTER_SCRIPT, "compact", "--name", name_});
  if (compacted.exit_code != 0) return std::nullopt;
  try {
    return std::stoll(trimmed(compacted.output));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

Json config_map(const std::string& ns, const std::string& name, const Json& labels,
                const std::string& value) {
  return Json{{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
              {"data", {{"key", value}}}};
}

std::string name_of(const Json& object) {
  return object["metadata"]["name"].get<std::string>();
}
std::string resource_version_of(const Json& object) {
  return object["metadata"]["resourceVersion"].get<std::string>();
}

ScopedNamespace::ScopedNamespace(std::shared_ptr<HttpKubernetes> kube, const std::string& prefix)
    : kube_(std::move(kube)) {
  const Json request = {
      {"apiVersion", "v1"},
      {"kind", "Namespace"},
      {"metadata",
       {{"generateName", prefix + "-"}, {"labels", {{"stsresize.dev/test", "cluster-adapter"}}}}}};
  auto created = kube_->raw("POST", "/api/v1/namespaces", request);
  if (!created) {
    ADD_FAILURE() << "creating a test namespace: " << created.error().message;
    return;
  }
  name_ = name_of(*created);
}

ScopedNamespace::~ScopedNamespace() {
  if (name_.empty()) return;
  if (std::getenv("STSRESIZE_KEEP_NAMESPACE") != nullptr) return;
  auto remove = [&] {
    return kube_->raw(
        "DELETE", "/api/v1/namespaces/" + url_encode(name_),
        Json{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"}});
  };
  auto deleted = remove();
  if (!deleted) ADD_FAILURE() << "deleting namespace " << name_ << ": " << deleted.error().message;
}

}  // namespace stsresize::cluster_test
