#include "engine/cleanup_pod.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stsresize {
namespace {

// The StatefulSet Scale-Down Controller's own example template (its README), as users have it.
constexpr std::string_view kExampleTemplate = R"({
  "metadata": {"labels": {"app": "datastore-cleanup"}},
  "spec": {"containers": [{"name": "cleanup", "image": "my-cleanup-container",
                           "volumeMounts": [{"name": "data", "mountPath": "/var/data"}]}]}})";

// A StatefulSet shaped as the API server returns it, opted in with `cleanup_template` under the
// old controller's key ("" = no annotation), with one volumeClaimTemplate per name.
Json statefulset(const std::string& cleanup_template = std::string{kExampleTemplate},
                 const std::vector<std::string>& claim_templates = {"data"}) {
  Json sts = Json::parse(R"({
    "apiVersion": "apps/v1", "kind": "StatefulSet",
    "metadata": {"name": "web", "namespace": "shop", "uid": "5f0c2b5e-9a8e-4a43-b3f7-0d3c1c0f6a11",
                 "resourceVersion": "48213", "generation": 4, "labels": {"app": "web"},
                 "annotations": {}},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "serviceName": "web",
             "podManagementPolicy": "OrderedReady",
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"serviceAccountName": "web-app",
                                   "nodeSelector": {"disk": "ssd"},
                                   "containers": [{"name": "nginx", "image": "nginx:1.27"}]}},
             "volumeClaimTemplates": []},
    "status": {"observedGeneration": 4, "replicas": 2}})");
  if (!cleanup_template.empty()) {
    sts["metadata"]["annotations"]["statefulsets.kubernetes.io/scaledown-pod-template"] =
        cleanup_template;
  }
  for (const std::string& name : claim_templates) {
    Json claim_template = Json::parse(R"({"metadata": {}, "spec": {
      "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})");
    claim_template["metadata"]["name"] = name;
    sts["spec"]["volumeClaimTemplates"].push_back(std::move(claim_template));
  }
  return sts;
}

// `kExampleTemplate` with `change` applied to it.
template <class Change>
std::string example_with(Change change) {
  Json tmpl = Json::parse(kExampleTemplate);
  change(tmpl);
  return tmpl.dump();
}

Json pod_of(const Json& sts, int ordinal = 2, std::string_view operation = "web-drain-1a2b3c4d") {
  auto pod = cleanup_pod(sts, ordinal, operation);
  EXPECT_TRUE(pod.has_value()) << (pod ? std::string{} : explain(pod.error()));
  return pod ? *pod : Json{};
}

CleanupPodError error_of(const Json& sts, int ordinal = 2) {
  auto pod = cleanup_pod(sts, ordinal, "web-drain-1a2b3c4d");
  EXPECT_FALSE(pod.has_value()) << "expected an error, got " << (pod ? pod->dump() : "");
  return pod ? CleanupPodError{} : pod.error();
}

TEST(CleanupPod, CarriesTheRemovedReplicasIdentityAndTheCompatibilityMarkers) {
  const Json pod = pod_of(statefulset());
  EXPECT_EQ(pod["apiVersion"], "v1");
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["metadata"]["name"], "web-2");
  EXPECT_EQ(pod["metadata"]["namespace"], "shop");
  EXPECT_EQ(pod["metadata"]["labels"], Json::parse(R"({
    "app": "datastore-cleanup", "scaledown-pod": "web-2",
    "stsresize.dev/operation": "web-drain-1a2b3c4d", "stsresize.dev/statefulset": "web",
    "stsresize.dev/purpose": "drain"})"));
  EXPECT_EQ(pod["metadata"]["annotations"], Json::parse(R"({
    "statefulsets.kubernetes.io/scaledown-pod-owner": "web",
    "stsresize.dev/operation": "web-drain-1a2b3c4d"})"));
  EXPECT_FALSE(pod["metadata"].contains("ownerReferences"));
  EXPECT_EQ(pod["spec"]["hostname"], "web-2");
  EXPECT_EQ(pod["spec"]["subdomain"], "web");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "OnFailure");
  EXPECT_EQ(pod["spec"]["volumes"], Json::parse(R"([
    {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-2"}}])"));
  EXPECT_EQ(pod["spec"]["containers"], Json::parse(kExampleTemplate)["spec"]["containers"]);
  EXPECT_FALSE(pod.contains("status"));
  EXPECT_TRUE(is_cleanup_pod(pod, "web"));
}

TEST(CleanupPod, OverridesTheTemplatesNameAndNamespaceAndDropsWhatWouldTieItToAnOwner) {
  const std::string tmpl = example_with([](Json& t) {
    t["apiVersion"] = "v1";
    t["kind"] = "Pod";
    t["metadata"]["name"] = "cleanup";
    t["metadata"]["generateName"] = "cleanup-";
    t["metadata"]["namespace"] = "elsewhere";
    t["metadata"]["uid"] = "0000";
    t["metadata"]["resourceVersion"] = "12";
    t["metadata"]["creationTimestamp"] = "2026-11-20T09:14:02Z";
    t["metadata"]["ownerReferences"] = Json::parse(
        R"([{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "5f0c"}])");
    t["metadata"]["annotations"] = {{"team", "storage"}};
    t["status"] = {{"phase", "Succeeded"}};
  });
  const Json pod = pod_of(statefulset(tmpl), 3);
  EXPECT_EQ(pod["metadata"]["name"], "web-3");
  EXPECT_EQ(pod["metadata"]["namespace"], "shop");
  for (const char* dropped :
       {"generateName", "uid", "resourceVersion", "creationTimestamp", "ownerReferences"}) {
    EXPECT_FALSE(pod["metadata"].contains(dropped)) << dropped;
  }
  EXPECT_EQ(pod["metadata"]["annotations"]["team"], "storage");
  EXPECT_FALSE(pod.contains("status"));
}

TEST(CleanupPod, OurLabelsAndOwnerAnnotationWinOverTheTemplates) {
  const std::string tmpl = example_with([](Json& t) {
    t["metadata"]["labels"]["scaledown-pod"] = "other";
    t["metadata"]["labels"]["stsresize.dev/purpose"] = "backup";
    t["metadata"]["annotations"] = {{"statefulsets.kubernetes.io/scaledown-pod-owner", "db"}};
  });
  const Json pod = pod_of(statefulset(tmpl));
  EXPECT_EQ(pod["metadata"]["labels"]["scaledown-pod"], "web-2");
  EXPECT_EQ(pod["metadata"]["labels"]["stsresize.dev/purpose"], "drain");
  EXPECT_EQ(pod["metadata"]["annotations"]["statefulsets.kubernetes.io/scaledown-pod-owner"],
            "web");
}

TEST(CleanupPod, ALongOperationIdIsBoundedInTheLabelAndWholeInTheAnnotation) {
  const std::string id(80, 'a');
  const Json pod = pod_of(statefulset(), 2, id);
  const std::string label = pod["metadata"]["labels"]["stsresize.dev/operation"];
  EXPECT_LE(label.size(), 63u);
  EXPECT_NE(label, id);
  EXPECT_EQ(pod["metadata"]["annotations"]["stsresize.dev/operation"], id);
}

TEST(CleanupPod, ReadsTheStsresizeAliasWhenTheOldKeyIsAbsent) {
  Json sts = statefulset("");
  sts["metadata"]["annotations"]["stsresize.dev/scaledown-pod-template"] =
      std::string{kExampleTemplate};
  EXPECT_EQ(pod_of(sts)["metadata"]["labels"]["app"], "datastore-cleanup");
  EXPECT_EQ(scaledown_pod_template(sts), std::string{kExampleTemplate});
}

TEST(CleanupPod, BothKeysWithTheSamePodWrittenDifferentlyAgree) {
  Json sts = statefulset();
  sts["metadata"]["annotations"]["stsresize.dev/scaledown-pod-template"] =
      Json::parse(kExampleTemplate).dump();
  EXPECT_EQ(pod_of(sts)["metadata"]["name"], "web-2");
}

TEST(CleanupPod, BothKeysWithDifferentPodsIsAnErrorNamingBoth) {
  Json sts = statefulset();
  sts["metadata"]["annotations"]["stsresize.dev/scaledown-pod-template"] =
      example_with([](Json& t) { t["spec"]["containers"][0]["image"] = "other"; });
  const CleanupPodError error = error_of(sts);
  EXPECT_EQ(error.problem, CleanupPodProblem::TemplatesDiffer);
  EXPECT_EQ(explain(error),
            "StatefulSet shop/web: annotations statefulsets.kubernetes.io/scaledown-pod-template "
            "and stsresize.dev/scaledown-pod-template both give a cleanup pod template, and they "
            "differ: keep one of them");
  // The old key still decides opting in.
  EXPECT_EQ(scaledown_pod_template(sts), std::string{kExampleTemplate});
  // Both unparsable and different: still the same error, not NotJson.
  sts["metadata"]["annotations"]["statefulsets.kubernetes.io/scaledown-pod-template"] = "{";
  sts["metadata"]["annotations"]["stsresize.dev/scaledown-pod-template"] = "[";
  EXPECT_EQ(error_of(sts).problem, CleanupPodProblem::TemplatesDiffer);
}

TEST(CleanupPod, WithoutATemplateThereIsNoPodAndNoOptIn) {
  const Json sts = statefulset("");
  EXPECT_EQ(scaledown_pod_template(sts), std::nullopt);
  const CleanupPodError error = error_of(sts);
  EXPECT_EQ(error.problem, CleanupPodProblem::NoTemplate);
  EXPECT_EQ(explain(error),
            "StatefulSet shop/web: no cleanup pod template: neither annotation "
            "statefulsets.kubernetes.io/scaledown-pod-template nor "
            "stsresize.dev/scaledown-pod-template is set");
}

TEST(CleanupPod, AnEmptyAnnotationIsNotAnOptIn) {
  Json sts = statefulset("");
  sts["metadata"]["annotations"]["statefulsets.kubernetes.io/scaledown-pod-template"] = "";
  EXPECT_EQ(scaledown_pod_template(sts), std::nullopt);
  EXPECT_EQ(error_of(sts).problem, CleanupPodProblem::NoTemplate);
  // An empty old key does not hide the alias.
  sts["metadata"]["annotations"]["stsresize.dev/scaledown-pod-template"] =
      std::string{kExampleTemplate};
  EXPECT_EQ(scaledown_pod_template(sts), std::string{kExampleTemplate});
  EXPECT_EQ(pod_of(sts)["metadata"]["name"], "web-2");
}

TEST(CleanupPod, UnreadableAnnotationsAreNoOptIn) {
  Json sts = statefulset();
  sts["metadata"]["annotations"] = "not an object";
  EXPECT_EQ(scaledown_pod_template(sts), std::nullopt);
  EXPECT_EQ(error_of(sts).problem, CleanupPodProblem::StatefulSetUnreadable);
}

TEST(CleanupPod, InvalidJsonIsQuotedBounded) {
  const CleanupPodError short_error = error_of(statefulset("{\"spec\": "));
  EXPECT_EQ(short_error.problem, CleanupPodProblem::NotJson);
  EXPECT_EQ(short_error.key, "statefulsets.kubernetes.io/scaledown-pod-template");
  EXPECT_EQ(
      explain(short_error),
      "StatefulSet shop/web: the cleanup pod template (annotation "
      "statefulsets.kubernetes.io/scaledown-pod-template) is not valid JSON: \"{\"spec\": \"");

  const std::string long_text = "{\"spec\": " + std::string(300, 'x');
  const std::string text = explain(error_of(statefulset(long_text)));
  EXPECT_NE(text.find("(309 bytes)"), std::string::npos) << text;
  EXPECT_EQ(text.find(std::string(100, 'x')), std::string::npos) << text;
  EXPECT_LT(text.size(), 250u);
}

TEST(CleanupPod, ATemplateThatIsNotAnObjectIsRefused) {
  for (const char* text : {"[]", "\"pod\"", "42", "null"}) {
    const CleanupPodError error = error_of(statefulset(text));
    EXPECT_EQ(error.problem, CleanupPodProblem::NotAnObject) << text;
    EXPECT_EQ(error.value, text);
  }
}

TEST(CleanupPod, ATemplateWithoutSpecOrContainersIsRefused) {
  EXPECT_EQ(error_of(statefulset(R"({"metadata": {}})")).problem, CleanupPodProblem::NoSpec);
  EXPECT_EQ(error_of(statefulset(R"({"spec": null})")).problem, CleanupPodProblem::NoSpec);
  EXPECT_EQ(error_of(statefulset(R"({"spec": {}})")).problem, CleanupPodProblem::NoContainers);
  EXPECT_EQ(error_of(statefulset(R"({"spec": {"containers": []}})")).problem,
            CleanupPodProblem::NoContainers);
  EXPECT_EQ(explain(error_of(statefulset(R"({"spec": {"containers": []}})"))),
            "StatefulSet shop/web: the cleanup pod template (annotation "
            "statefulsets.kubernetes.io/scaledown-pod-template) has no containers "
            "(spec.containers)");
  const CleanupPodError wrong_spec = error_of(statefulset(R"({"spec": []})"));
  EXPECT_EQ(wrong_spec.problem, CleanupPodProblem::TemplateMalformed);
  EXPECT_EQ(wrong_spec.field, "spec");
  const CleanupPodError wrong_containers = error_of(statefulset(R"({"spec": {"containers": {}}})"));
  EXPECT_EQ(wrong_containers.problem, CleanupPodProblem::TemplateMalformed);
  EXPECT_EQ(explain(wrong_containers),
            "StatefulSet shop/web: the cleanup pod template (annotation "
            "statefulsets.kubernetes.io/scaledown-pod-template): spec.containers must be an array");
}

TEST(CleanupPod, MalformedTemplateFieldsAreNamed) {
  struct Case {
    std::string tmpl;
    std::string field;
  };
  const std::vector<Case> cases = {
      {example_with([](Json& t) { t["metadata"] = "x"; }), "metadata"},
      {example_with([](Json& t) { t["metadata"]["labels"]["n"] = 1; }), "metadata.labels"},
      {example_with([](Json& t) { t["metadata"]["annotations"] = Json::array(); }),
       "metadata.annotations"},
      {example_with([](Json& t) { t["spec"]["restartPolicy"] = 1; }), "spec.restartPolicy"},
      {example_with([](Json& t) { t["spec"]["hostname"] = true; }), "spec.hostname"},
      {example_with([](Json& t) { t["spec"]["volumes"] = Json::object(); }), "spec.volumes"},
      {example_with([](Json& t) { t["spec"]["volumes"] = Json::parse(R"([{"emptyDir": {}}])"); }),
       "spec.volumes[0].name"},
  };
  for (const Case& c : cases) {
    const CleanupPodError error = error_of(statefulset(c.tmpl));
    EXPECT_EQ(error.problem, CleanupPodProblem::TemplateMalformed) << c.tmpl;
    EXPECT_EQ(error.field, c.field) << c.tmpl;
  }
}

TEST(CleanupPod, RestartPolicyIsOnFailureWhenUnsetAndNothingElseIsAccepted) {
  EXPECT_EQ(pod_of(statefulset())["spec"]["restartPolicy"], "OnFailure");
  EXPECT_EQ(pod_of(statefulset(example_with([](Json& t) {
              t["spec"]["restartPolicy"] = "OnFailure";
            })))["spec"]["restartPolicy"],
            "OnFailure");
  EXPECT_EQ(pod_of(statefulset(example_with(
                [](Json& t) { t["spec"]["restartPolicy"] = ""; })))["spec"]["restartPolicy"],
            "OnFailure");
  for (const char* policy : {"Always", "Never"}) {
    const CleanupPodError error =
        error_of(statefulset(example_with([&](Json& t) { t["spec"]["restartPolicy"] = policy; })));
    EXPECT_EQ(error.problem, CleanupPodProblem::RestartPolicy) << policy;
    EXPECT_EQ(error.value, policy);
  }
  EXPECT_EQ(explain(error_of(
                statefulset(example_with([](Json& t) { t["spec"]["restartPolicy"] = "Never"; })))),
            "StatefulSet shop/web: the cleanup pod template (annotation "
            "statefulsets.kubernetes.io/scaledown-pod-template) has spec.restartPolicy \"Never\": "
            "a cleanup pod must restart OnFailure (leave restartPolicy unset or set OnFailure)");
}

TEST(CleanupPod, HostnameAndSubdomainAreTheTemplatesWhenItSetsThem) {
  const Json pod = pod_of(statefulset(example_with([](Json& t) {
    t["spec"]["hostname"] = "cleaner";
    t["spec"]["subdomain"] = "cleaners";
  })));
  EXPECT_EQ(pod["spec"]["hostname"], "cleaner");
  EXPECT_EQ(pod["spec"]["subdomain"], "cleaners");
}

TEST(CleanupPod, NoSubdomainWithoutAServiceName) {
  Json sts = statefulset();
  sts["spec"].erase("serviceName");
  const Json pod = pod_of(sts);
  EXPECT_EQ(pod["spec"]["hostname"], "web-2");
  EXPECT_FALSE(pod["spec"].contains("subdomain"));
  sts["spec"]["serviceName"] = "";
  EXPECT_FALSE(pod_of(sts)["spec"].contains("subdomain"));
  sts["spec"]["serviceName"] = 7;
  EXPECT_EQ(error_of(sts).problem, CleanupPodProblem::StatefulSetUnreadable);
}

TEST(CleanupPod, OneVolumePerClaimTemplateOnThisOrdinalsClaims) {
  const Json pod = pod_of(statefulset(std::string{kExampleTemplate}, {"data", "logs"}), 0);
  EXPECT_EQ(pod["spec"]["volumes"], Json::parse(R"([
    {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
    {"name": "logs", "persistentVolumeClaim": {"claimName": "logs-web-0"}}])"));
}

TEST(CleanupPod, ATemplatesVolumeOfAClaimTemplatesNameIsReplacedNotDuplicated) {
  const std::string tmpl = example_with([](Json& t) {
    t["spec"]["volumes"] = Json::parse(R"([
      {"name": "scratch", "emptyDir": {}},
      {"name": "data", "emptyDir": {}},
      {"name": "config", "configMap": {"name": "cleanup"}},
      {"name": "data", "hostPath": {"path": "/tmp"}}])");
  });
  const Json pod = pod_of(statefulset(tmpl, {"data", "logs"}));
  EXPECT_EQ(pod["spec"]["volumes"], Json::parse(R"([
    {"name": "scratch", "emptyDir": {}},
    {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-2"}},
    {"name": "config", "configMap": {"name": "cleanup"}},
    {"name": "logs", "persistentVolumeClaim": {"claimName": "logs-web-2"}}])"));
}

TEST(CleanupPod, NothingOfTheStatefulSetsPodTemplateIsCopied) {
  Json pod = pod_of(statefulset());
  EXPECT_FALSE(pod["spec"].contains("serviceAccountName"));
  EXPECT_FALSE(pod["spec"].contains("nodeSelector"));
  pod = pod_of(
      statefulset(example_with([](Json& t) { t["spec"]["serviceAccountName"] = "cleaner"; })));
  EXPECT_EQ(pod["spec"]["serviceAccountName"], "cleaner");
}

TEST(CleanupPod, LabelsMatchingTheSelectorAreRefusedTheStatefulSetWouldAdoptThePod) {
  const std::string tmpl = example_with([](Json& t) { t["metadata"]["labels"]["app"] = "web"; });
  const CleanupPodError error = error_of(statefulset(tmpl));
  EXPECT_EQ(error.problem, CleanupPodProblem::MatchesSelector);
  EXPECT_EQ(explain(error),
            "StatefulSet shop/web: the cleanup pod's labels match the StatefulSet's selector "
            "(app=web), so the StatefulSet controller would adopt the pod: give the cleanup pod "
            "template (annotation statefulsets.kubernetes.io/scaledown-pod-template) labels the "
            "selector does not match");
  // One of two selector labels is not enough to match.
  Json sts = statefulset(tmpl);
  sts["spec"]["selector"]["matchLabels"]["tier"] = "front";
  EXPECT_EQ(pod_of(sts)["metadata"]["labels"]["app"], "web");
}

TEST(CleanupPod, TheSelectorsExpressionsCountToo) {
  Json sts = statefulset();
  sts["spec"]["selector"] = Json::parse(R"({"matchExpressions": [
    {"key": "app", "operator": "In", "values": ["web", "datastore-cleanup"]}]})");
  EXPECT_EQ(error_of(sts).problem, CleanupPodProblem::MatchesSelector);
  // A selector that leaves out cleanup pods by our label: fine.
  sts["spec"]["selector"]["matchExpressions"].push_back(
      {{"key", "scaledown-pod"}, {"operator", "DoesNotExist"}});
  EXPECT_EQ(pod_of(sts)["metadata"]["name"], "web-2");
  sts["spec"]["selector"]["matchExpressions"][1] = {{"key", "app"}, {"operator", "Bogus"}};
  EXPECT_EQ(error_of(sts).problem, CleanupPodProblem::StatefulSetUnreadable);
}

TEST(SelectorMatches, FollowsLabelSelectorSemantics) {
  const Json labels = {{"app", "web"}, {"tier", "front"}};
  const auto matches = [&](std::string_view selector) {
    auto result = selector_matches(Json::parse(selector), labels);
    EXPECT_TRUE(result.has_value()) << selector;
    return result.value_or(false);
  };
  EXPECT_TRUE(matches("{}"));                              // empty: everything
  EXPECT_FALSE(selector_matches(Json{}, labels).value());  // null: nothing
  EXPECT_TRUE(matches(R"({"matchLabels": {"app": "web"}})"));
  EXPECT_FALSE(matches(R"({"matchLabels": {"app": "web", "x": "y"}})"));
  EXPECT_FALSE(matches(R"({"matchLabels": {"app": "db"}})"));
  EXPECT_TRUE(matches(R"({"matchExpressions": [{"key": "app", "operator": "In",
                                                "values": ["db", "web"]}]})"));
  EXPECT_FALSE(matches(R"({"matchExpressions": [{"key": "app", "operator": "NotIn",
                                                 "values": ["web"]}]})"));
  EXPECT_TRUE(matches(R"({"matchExpressions": [{"key": "zone", "operator": "NotIn",
                                                "values": ["a"]}]})"));
  EXPECT_TRUE(matches(R"({"matchExpressions": [{"key": "tier", "operator": "Exists"}]})"));
  EXPECT_FALSE(matches(R"({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]})"));
  EXPECT_FALSE(matches(R"({"matchLabels": {"app": "web"},
                           "matchExpressions": [{"key": "zone", "operator": "Exists"}]})"));
  EXPECT_FALSE(
      selector_matches(Json::parse(R"({"matchExpressions": [{"key": "a"}]})"), labels).has_value());
  EXPECT_FALSE(selector_matches(Json::parse(R"({"matchLabels": []})"), labels).has_value());
}

TEST(CleanupPod, ANegativeOrdinalIsRefused) {
  const CleanupPodError error = error_of(statefulset(), -1);
  EXPECT_EQ(error.problem, CleanupPodProblem::NegativeOrdinal);
  EXPECT_EQ(explain(error),
            "StatefulSet shop/web: no cleanup pod for ordinal -1: ordinals are 0 or more");
}

TEST(CleanupPod, AMalformedStatefulSetIsAnErrorNotAGuess) {
  Json sts = statefulset();
  sts["spec"]["volumeClaimTemplates"] = "data";
  const CleanupPodError error = error_of(sts);
  EXPECT_EQ(error.problem, CleanupPodProblem::StatefulSetUnreadable);
  EXPECT_TRUE(explain(error).starts_with("cannot build a cleanup pod: StatefulSet shop/web: "))
      << explain(error);
}

TEST(IsCleanupPod, TheOwnerAnnotationDecides) {
  // One the StatefulSet Scale-Down Controller made: no stsresize.dev label.
  const Json old = Json::parse(R"({"metadata": {"name": "web-2", "namespace": "shop",
    "labels": {"app": "datastore-cleanup", "scaledown-pod": "web-2"},
    "annotations": {"statefulsets.kubernetes.io/scaledown-pod-owner": "web"}}})");
  EXPECT_TRUE(is_cleanup_pod(old, "web"));
  EXPECT_FALSE(is_cleanup_pod(old, "web-db"));
  // The replica of that name, even with the label.
  const Json replica = Json::parse(R"({"metadata": {"name": "web-2", "namespace": "shop",
    "labels": {"app": "web", "scaledown-pod": "web-2"}}})");
  EXPECT_FALSE(is_cleanup_pod(replica, "web"));
  EXPECT_FALSE(is_cleanup_pod(Json::parse(R"({"metadata": {"annotations": 3}})"), "web"));
}

// ---- The re-seed pod of a lost-volume recovery: the same rules, its own key, name and policy --

// `statefulset()` without a cleanup template, with `reseed` as stsresize.dev/recovery-pod-template.
Json reseeding(const std::string& reseed, const std::vector<std::string>& claims = {"data"}) {
  Json sts = statefulset("", claims);
  sts["metadata"]["annotations"]["stsresize.dev/recovery-pod-template"] = reseed;
  return sts;
}

TEST(ReseedPod, RunsOnceBesideTheReplicasNameWithItsIdentityAndOnItsNewClaims) {
  auto pod = reseed_pod(reseeding(std::string{kExampleTemplate}, {"data", "logs"}), 1,
                        "web-recovery-1a2b3c4d");
  ASSERT_TRUE(pod) << explain(pod.error());
  EXPECT_EQ((*pod)["metadata"]["name"], "web-1-stsresize-reseed");
  EXPECT_EQ((*pod)["metadata"]["labels"], Json::parse(R"({
    "app": "datastore-cleanup", "stsresize.dev/operation": "web-recovery-1a2b3c4d",
    "stsresize.dev/statefulset": "web", "stsresize.dev/purpose": "reseed"})"));
  EXPECT_EQ((*pod)["metadata"]["annotations"],
            Json::parse(R"({"stsresize.dev/operation": "web-recovery-1a2b3c4d"})"));
  EXPECT_FALSE(is_cleanup_pod(*pod, "web"));
  EXPECT_EQ((*pod)["spec"]["hostname"], "web-1");
  EXPECT_EQ((*pod)["spec"]["subdomain"], "web");
  EXPECT_EQ((*pod)["spec"]["restartPolicy"], "Never");
  EXPECT_EQ((*pod)["spec"]["volumes"], Json::parse(R"([
    {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}},
    {"name": "logs", "persistentVolumeClaim": {"claimName": "logs-web-1"}}])"));
  EXPECT_TRUE(has_reseed_template(reseeding(std::string{kExampleTemplate})));
  // The cleanup pod template is not the re-seed's, nor the other way round.
  EXPECT_FALSE(has_reseed_template(statefulset()));
  EXPECT_FALSE(has_reseed_template(reseeding("")));
  EXPECT_EQ(reseed_pod(statefulset(), 1, "x").error().problem, CleanupPodProblem::NoTemplate);
  EXPECT_EQ(cleanup_pod(reseeding(std::string{kExampleTemplate}), 1, "x").error().problem,
            CleanupPodProblem::NoTemplate);
}

TEST(ReseedPod, RestartPolicyNeverOrOnFailureNotAlways) {
  for (const char* policy : {"Never", "OnFailure"}) {
    auto pod = reseed_pod(
        reseeding(example_with([&](Json& t) { t["spec"]["restartPolicy"] = policy; })), 0, "x");
    ASSERT_TRUE(pod) << policy;
    EXPECT_EQ((*pod)["spec"]["restartPolicy"], policy);
  }
  auto always = reseed_pod(
      reseeding(example_with([](Json& t) { t["spec"]["restartPolicy"] = "Always"; })), 0, "x");
  ASSERT_FALSE(always);
  EXPECT_EQ(explain(always.error()),
            "StatefulSet shop/web: the re-seed pod template (annotation "
            "stsresize.dev/recovery-pod-template) has spec.restartPolicy \"Always\": a re-seed pod "
            "runs once (leave restartPolicy unset, or set Never or OnFailure)");
}

TEST(ReseedPod, ProblemsNameTheReseedTemplate) {
  auto bad = reseed_pod(reseeding("{not json"), 0, "x");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().problem, CleanupPodProblem::NotJson);
  EXPECT_NE(explain(bad.error())
                .find("the re-seed pod template (annotation "
                      "stsresize.dev/recovery-pod-template) is not valid JSON"),
            std::string::npos);
  auto adopted = reseed_pod(
      reseeding(example_with([](Json& t) { t["metadata"]["labels"]["app"] = "web"; })), 0, "x");
  ASSERT_FALSE(adopted);
  EXPECT_EQ(adopted.error().problem, CleanupPodProblem::MatchesSelector);
  EXPECT_NE(explain(adopted.error()).find("the re-seed pod's labels match"), std::string::npos);
}

}  // namespace
}  // namespace stsresize
