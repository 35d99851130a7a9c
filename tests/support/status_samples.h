#pragma once
// Cluster objects for the status and describe tests (tests/unit/status_*_test.cc): StatefulSets
// whose annotations are written by the engine's own with_operation(), and the copy Jobs,
// backup claims and Events stsresize leaves around an operation.
#include <chrono>
#include <string>

#include "engine/annotations.h"
#include "engine/naming.h"
#include "engine/operation.h"
#include "engine/resize_request.h"
#include "engine/timestamp.h"
#include "tests/support/operation_samples.h"

namespace stsresize::testing {

// Operations start at kStatusStart; the tests look at them from kStatusNow.
inline const TimePoint kStatusStart{std::chrono::seconds{1'800'000'000}};
inline const TimePoint kStatusNow =
    kStatusStart + std::chrono::minutes{7} + std::chrono::seconds{5};

inline Json sample_statefulset(const std::string& name, const std::string& ns = "shop") {
  return Json{{"apiVersion", "apps/v1"},
              {"kind", "StatefulSet"},
              {"metadata",
               {{"name", name},
                {"namespace", ns},
                {"uid", "uid-" + ns + "-" + name},
                {"creationTimestamp", format_timestamp(kStatusStart - std::chrono::hours{30})}}},
              {"spec", {{"replicas", 3}}}};
}

// The operation on StatefulSet `name` in `phase`, as far along as that phase implies: three
// claims data-<name>-0..2 from 1Gi to 2Gi; the phase began `in_phase` before kStatusNow.
inline Operation sample_operation(const std::string& name, Phase phase,
                                  Duration in_phase = std::chrono::seconds{42},
                                  const std::string& ns = "shop") {
  Operation op;
  op.id = name + "-5f0c2a91";
  op.ns = ns;
  op.statefulset = name;
  op.sts_uid = "uid-" + ns + "-" + name;
  op.phase = phase;
  op.original_replicas = 3;
  op.started = kStatusStart;
  op.phase_since = kStatusNow - in_phase;
  // A recovery's phases: ordinal 1, whose node is gone.
  if (testing::recovery_phase(phase)) {
    Operation recovery = testing::sample_recovery(phase);
    recovery.id = op.id;
    recovery.ns = op.ns;
    recovery.statefulset = op.statefulset;
    recovery.sts_uid = op.sts_uid;
    recovery.started = op.started;
    recovery.phase_since = op.phase_since;
    for (LostClaim& c : recovery.lost->claims) {
      c.claim = naming::claim_name("data", name, 1);
      c.uid = "uid-" + c.claim;
    }
    return recovery;
  }
  // A drain's phases: ordinals 3 and 4 left by a scale-down from 5 to 3, their data claims.
  if (phase == Phase::Draining || phase == Phase::DeletingClaims || phase == Phase::StoppingDrain) {
    op.kind = OperationKind::Drain;
    for (int ordinal : {4, 3}) {
      OrdinalDrain drain;
      drain.ordinal = ordinal;
      const std::string claim = naming::claim_name("data", name, ordinal);
      drain.claims.push_back({claim, "uid-" + claim, false});
      drain.pod_uid = "uid-" + name + "-" + std::to_string(ordinal);
      drain.succeeded = phase == Phase::DeletingClaims || ordinal == 4;
      op.drains.push_back(drain);
    }
    if (phase == Phase::DeletingClaims) op.drains[0].claims[0].deleted = true;
    if (phase == Phase::StoppingDrain) {
      op.failure = "cleanup pod " + name + "-3 restarted 6 times (limit 5)";
    }
    return op;
  }
  const bool planned = phase != Phase::Pending && phase != Phase::Measuring &&
                       phase != Phase::UpdatingTemplate && phase != Phase::Planning;
  if (planned) op.path = phase == Phase::Expanding ? Path::Expand : Path::Copy;
  if (planned) {
    for (int i = 0; i < 3; ++i) {
      ClaimPlan claim = sample_claim("data", i);
      claim.claim = naming::claim_name("data", name, i);
      claim.source_uid = "uid-" + claim.claim;
      op.claims.push_back(claim);
    }
  }
  auto backed_up = [&](int n) {
    for (int i = 0; i < n; ++i) op.claims[i].backup_verified = sample_summary(i);
  };
  auto recreated = [&](int n) {
    for (int i = 0; i < n; ++i) {
      op.claims[i].source_deleted = true;
      op.claims[i].recreated_uid = "uid-new-" + std::to_string(i);
    }
  };
  auto restored = [&](int n) {
    for (int i = 0; i < n; ++i) op.claims[i].restore_verified = sample_summary(i);
  };
  switch (phase) {
    case Phase::Measuring:
      op.measured = {MeasuredClaim{naming::claim_name("data", name, 0), "uid-data-0",
                                   VolumeUsage{201, 1412345, 2203648}}};
      break;
    case Phase::UpdatingTemplate:
      op.template_changes = {TemplateChange{"data", *Quantity::parse("2Gi"), ""}};
      break;
    case Phase::BackingUp:
      backed_up(1);
      break;
    case Phase::Recreating:
      backed_up(3);
      recreated(2);
      break;
    case Phase::Restoring:
      backed_up(3);
      recreated(3);
      restored(1);
      break;
    case Phase::ScalingUp:
    case Phase::CleaningUp:
      backed_up(3);
      recreated(3);
      restored(3);
      if (phase == Phase::ScalingUp) {
        op.warning = "2 of 3 pods Ready after 30m0s; still waiting (the data is restored)";
      }
      break;
    case Phase::Expanding:
      op.claims[0].expanded = true;
      break;
    case Phase::ScalingBack:
      backed_up(1);
      op.failure = "copy Job data-" + name + "-1-stsresize-backup failed: BackoffLimitExceeded";
      break;
    case Phase::Failed:
      backed_up(3);
      recreated(3);
      restored(1);
      op.failure = "copy Job data-" + name + "-1-stsresize-restore failed: BackoffLimitExceeded";
      break;
    default:
      break;
  }
  return op;
}

inline Json statefulset_in(const std::string& name, Phase phase,
                           Duration in_phase = std::chrono::seconds{42},
                           const std::string& ns = "shop") {
  return with_operation(sample_statefulset(name, ns), sample_operation(name, phase, in_phase, ns));
}

// The ConfigMap an explicit request keeps while it re-creates StatefulSet `name` (absent then).
inline Json definition_config_map_of(const std::string& name, const std::string& ns = "shop") {
  Json live = sample_statefulset(name, ns);
  live["spec"]["volumeClaimTemplates"] =
      Json::array({{{"metadata", {{"name", "data"}}},
                    {"spec", {{"resources", {{"requests", {{"storage", "1Gi"}}}}}}}}});
  const Operation op = sample_operation(name, Phase::UpdatingTemplate, std::chrono::seconds{3}, ns);
  return definition_config_map(op, *statefulset_definition(live, op));
}

inline Json completed_statefulset(const std::string& name, const std::string& ns = "shop") {
  Operation op = sample_operation(name, Phase::Completed, std::chrono::minutes{5}, ns);
  return with_operation(sample_statefulset(name, ns), op);
}

inline Json refused_statefulset(const std::string& name, const std::string& ns = "shop") {
  Json sts = sample_statefulset(name, ns);
  sts["metadata"]["annotations"] = {
      {std::string{kResizeRequestAnnotation}, R"({"data":{"storage":"512Mi"}})"},
      {std::string{kResizeStatusAnnotation},
       "rejected: template \"data\": StorageClass \"gold\" does not exist"}};
  return sts;
}

inline Json invalid_statefulset(const std::string& name, const std::string& ns = "shop") {
  Json sts = sample_statefulset(name, ns);
  sts["metadata"]["annotations"] = {{std::string{kStateAnnotation}, "{\"v\":1,"}};
  return sts;
}

// A copy Job of `op` for claim ordinal `ordinal`; `state` "running" (1 active, `failed` failed
// attempts), "succeeded" or "failed" (BackoffLimitExceeded).
inline Json sample_job(const Operation& op, int ordinal, const std::string& purpose,
                       const std::string& state, int failed = 0) {
  const std::string claim = naming::claim_name("data", op.statefulset, ordinal);
  Json status = Json::object();
  if (state == "running") status["active"] = 1;
  if (state == "succeeded") {
    status["succeeded"] = 1;
    status["conditions"] = Json::array({{{"type", "Complete"}, {"status", "True"}}});
  }
  if (state == "failed") {
    status["conditions"] =
        Json::array({{{"type", "Failed"}, {"status", "True"}, {"reason", "BackoffLimitExceeded"}}});
  }
  if (failed > 0) status["failed"] = failed;
  return Json{
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata",
       {{"name", purpose == "backup" ? naming::backup_job(claim) : naming::restore_job(claim)},
        {"namespace", op.ns},
        {"creationTimestamp", format_timestamp(op.phase_since + std::chrono::seconds{2})},
        {"labels",
         {{"stsresize.dev/operation", naming::label_value(op.id)},
          {"stsresize.dev/statefulset", naming::label_value(op.statefulset)},
          {"stsresize.dev/purpose", purpose}}}}},
      {"status", status}};
}

inline Json sample_backup_claim(const Operation& op, int ordinal, bool bound) {
  const std::string claim = naming::claim_name("data", op.statefulset, ordinal);
  Json pvc{{"apiVersion", "v1"},
           {"kind", "PersistentVolumeClaim"},
           {"metadata",
            {{"name", naming::backup_claim(claim)},
             {"namespace", op.ns},
             {"creationTimestamp", format_timestamp(op.started + std::chrono::seconds{20})},
             {"labels",
              {{"stsresize.dev/operation", naming::label_value(op.id)},
               {"stsresize.dev/statefulset", naming::label_value(op.statefulset)},
               {"stsresize.dev/purpose", "backup"}}},
             {"annotations", {{"stsresize.dev/source-claim", claim}}}}},
           {"spec", {{"resources", {{"requests", {{"storage", "1Gi"}}}}}}},
           {"status", {{"phase", bound ? "Bound" : "Pending"}}}};
  if (bound) pvc["status"]["capacity"] = {{"storage", "1Gi"}};
  return pvc;
}

inline Json sample_event(const std::string& sts, const std::string& type, const std::string& reason,
                         const std::string& message, TimePoint last, int count = 1,
                         const std::string& ns = "shop") {
  return Json{
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", sts + "." + reason + "." + std::to_string(count)}, {"namespace", ns}}},
      {"involvedObject", {{"kind", "StatefulSet"}, {"name", sts}, {"namespace", ns}}},
      {"type", type},
      {"reason", reason},
      {"message", message},
      {"count", count},
      {"firstTimestamp", format_timestamp(last - std::chrono::minutes{count - 1})},
      {"lastTimestamp", format_timestamp(last)}};
}

}  // namespace stsresize::testing
