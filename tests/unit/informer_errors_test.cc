#include "adapters/app/informer_errors.h"

#include <gtest/gtest.h>

#include <vector>

namespace stsresize::cli {
namespace {

struct Line {
  logging::Level level;
  std::string message;
  std::map<std::string, std::string> fields;
};

class Recorded {
 public:
  InformerErrorLog::Sink sink() {
    return [this](logging::Level level, std::string_view message,
                  std::initializer_list<logging::Field> fields) {
      Line line{level, std::string{message}, {}};
      for (const logging::Field& field : fields) line.fields[std::string{field.key}] = field.value;
      lines.push_back(std::move(line));
    };
  }
  std::vector<Line> at(logging::Level level) const {
    std::vector<Line> out;
    for (const Line& line : lines) {
      if (line.level == level) out.push_back(line);
    }
    return out;
  }

  std::vector<Line> lines;
};

runtime::InformerError failure(Kind kind, KubeErrorCode code, std::string verb = "list",
                               std::string ns = "") {
  return {.kind = kind,
          .ns = std::move(ns),
          .verb = std::move(verb),
          .error = KubeError{code, "server says no", Duration{0}}};
}

TEST(InformerErrorLog, RejectedCredentialsAreOneErrorLineHoweverManyInformersAndRetries) {
  Recorded log;
  InformerErrorLog errors(log.sink());
  for (int retry = 0; retry < 3; ++retry) {
    for (Kind kind : {Kind::StatefulSet, Kind::PersistentVolumeClaim, Kind::Job}) {
      errors.failed(failure(kind, KubeErrorCode::Unauthorized));
    }
  }
  const auto errors_logged = log.at(logging::Level::Error);
  ASSERT_EQ(errors_logged.size(), 1u);
  EXPECT_EQ(errors_logged[0].message,
            "the API server rejected the credentials (401 Unauthorized): check --kubeconfig and "
            "--context, or in a pod its ServiceAccount token; retrying with backoff");
  EXPECT_EQ(errors_logged[0].fields.at("kind"), "StatefulSet");
  EXPECT_EQ(errors_logged[0].fields.at("verb"), "list");
  EXPECT_EQ(errors_logged[0].fields.at("namespace"), "(all)");
  EXPECT_EQ(errors_logged[0].fields.at("error"), "Unauthorized");
  EXPECT_EQ(errors_logged[0].fields.at("message"), "server says no");
  EXPECT_EQ(log.at(logging::Level::Debug).size(), 8u) << "every repeat, at debug";

  // Ended only once every informer that met it works again; then a new rejection is new.
  errors.recovered(Kind::StatefulSet);
  errors.recovered(Kind::PersistentVolumeClaim);
  EXPECT_TRUE(log.at(logging::Level::Info).empty());
  errors.recovered(Kind::Job);
  ASSERT_EQ(log.at(logging::Level::Info).size(), 1u);
  EXPECT_EQ(log.at(logging::Level::Info)[0].message,
            "the API server accepts the credentials again");
  errors.failed(failure(Kind::Job, KubeErrorCode::Unauthorized));
  EXPECT_EQ(log.at(logging::Level::Error).size(), 2u);
}

TEST(InformerErrorLog, EachForbiddenResourceIsItsOwnCauseNamingTheRuleToGrant) {
  Recorded log;
  InformerErrorLog errors(log.sink());
  errors.failed(failure(Kind::StatefulSet, KubeErrorCode::Forbidden));
  errors.failed(failure(Kind::StatefulSet, KubeErrorCode::Forbidden));
  errors.failed(failure(Kind::Job, KubeErrorCode::Forbidden, "watch", "shop"));
  errors.failed(failure(Kind::StorageClass, KubeErrorCode::Forbidden));
  const auto lines = log.at(logging::Level::Error);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].message,
            "listing statefulsets in every namespace is forbidden (403): grant verbs "
            "[\"list\",\"watch\"] on resources [\"statefulsets\"] in apiGroups [\"apps\"] to these "
            "credentials (a ClusterRole and ClusterRoleBinding; README.md, RBAC); retrying with "
            "backoff");
  EXPECT_EQ(lines[1].message,
            "watching jobs in namespace shop is forbidden (403): grant verbs [\"list\",\"watch\"] "
            "on resources [\"jobs\"] in apiGroups [\"batch\"] to these credentials (a Role and "
            "RoleBinding in namespace shop; README.md, RBAC); retrying with backoff");
  EXPECT_EQ(lines[2].message,
            "listing storageclasses is forbidden (403): grant verbs [\"list\",\"watch\"] on "
            "resources [\"storageclasses\"] in apiGroups [\"storage.k8s.io\"] to these credentials "
            "(a ClusterRole and ClusterRoleBinding; README.md, RBAC); retrying with backoff");

  // Granting one rule ends that cause only.
  errors.recovered(Kind::Job);
  ASSERT_EQ(log.at(logging::Level::Info).size(), 1u);
  EXPECT_EQ(log.at(logging::Level::Info)[0].message, "listing and watching jobs is allowed again");
  errors.failed(failure(Kind::StatefulSet, KubeErrorCode::Forbidden));
  EXPECT_EQ(log.at(logging::Level::Error).size(), 3u);
}

TEST(InformerErrorLog, AServerThatCannotBeReachedIsAWarningOnce) {
  Recorded log;
  InformerErrorLog errors(log.sink());
  errors.failed(failure(Kind::Pod, KubeErrorCode::Unreachable, "watch", "shop"));
  errors.failed(failure(Kind::ConfigMap, KubeErrorCode::Unreachable, "watch", "shop"));
  ASSERT_EQ(log.at(logging::Level::Warn).size(), 1u);
  EXPECT_EQ(log.at(logging::Level::Warn)[0].message,
            "no answer from the API server while watching pods in namespace shop; retrying with "
            "backoff");
  EXPECT_TRUE(log.at(logging::Level::Error).empty());
  // A different cause meanwhile is said too.
  errors.failed(failure(Kind::Pod, KubeErrorCode::NotFound));
  ASSERT_EQ(log.at(logging::Level::Error).size(), 1u);
  EXPECT_EQ(log.at(logging::Level::Error)[0].message,
            "the API server does not serve pods (v1, 404 Not Found): do --kubeconfig and "
            "--context name a Kubernetes API server?; retrying with backoff");
}

}  // namespace
}  // namespace stsresize::cli
