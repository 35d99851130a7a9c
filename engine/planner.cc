#include "engine/planner.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "engine/k8s_objects.h"
#include "engine/naming.h"

namespace stsresize {

namespace {

// Ordinal of "<prefix><digits>", or nullopt.
std::optional<int> ordinal_of(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return std::nullopt;
  const std::string_view digits = name.substr(prefix.size());
  int ordinal = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
  if (error != std::errc{} || end != digits.data() + digits.size() || ordinal < 0) {
    return std::nullopt;
  }
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  return ordinal;
}

// `storage_classes` null: they could not be read (see StorageClassesUnknown).
std::expected<std::optional<ResizePlan>, std::string> plan_with(
    const Json& statefulset, const std::vector<Json>& claims_in_namespace,
    const std::vector<Json>* storage_classes) {
  const std::string what = k8s::describe(statefulset);
  auto sts_name = k8s::name(statefulset);
  if (!sts_name) return std::unexpected(sts_name.error());
  auto replicas = k8s::spec_replicas(statefulset);
  if (!replicas) return std::unexpected(replicas.error());
  auto templates = k8s::claim_templates(statefulset);
  if (!templates) return std::unexpected(templates.error());
  auto selector = k8s::selector_match_labels(statefulset);
  if (!selector) return std::unexpected(selector.error());

  std::map<std::string, const Json*> claims_by_name;
  for (const Json& claim : claims_in_namespace) {
    if (auto name = k8s::name(claim)) claims_by_name.emplace(*name, &claim);
  }
  std::map<std::string, const Json*> classes_by_name;
  if (storage_classes != nullptr) {
    for (const Json& storage_class : *storage_classes) {
      if (auto name = k8s::name(storage_class)) classes_by_name.emplace(*name, &storage_class);
    }
  }

  ResizePlan plan;
  bool expandable = true;
  std::map<std::string, std::string> grown;  // template -> "1Gi -> 2Gi"
  for (const k8s::ClaimTemplate& tmpl : *templates) {
    if (!tmpl.storage) {
      return std::unexpected(what + ": volumeClaimTemplate \"" + tmpl.name +
                             "\" has no storage request");
    }
    const std::string prefix = tmpl.name + "-" + *sts_name + "-";
    std::set<int> ordinals;
    for (int i = 0; i < *replicas; ++i) ordinals.insert(i);
    for (const auto& [name, claim] : claims_by_name) {
      if (auto ordinal = ordinal_of(name, prefix)) ordinals.insert(*ordinal);
    }
    for (int ordinal : ordinals) {
      const std::string claim_name = naming::claim_name(tmpl.name, *sts_name, ordinal);
      auto found = claims_by_name.find(claim_name);
      if (found == claims_by_name.end()) continue;  // the controller creates it at the new size
      const Json& pvc = *found->second;
      // Whoever deleted it chose to drop its data; once its Pod lets go, the StatefulSet
      // controller recreates it from the template, at the new size. A copy Job could not even
      // mount it.
      auto deleting = k8s::is_being_deleted(pvc);
      if (!deleting) return std::unexpected(deleting.error());
      if (*deleting) continue;
      // The StatefulSet controller labels the claims it creates with the set's selector. A claim
      // of this name whose labels say another selector belongs to another StatefulSet whose
      // name and template combine to the same claim name (web-db/data vs db/data-web).
      auto claim_labels = k8s::labels(pvc);
      if (!claim_labels) return std::unexpected(claim_labels.error());
      const auto foreign = std::ranges::find_if(*selector, [&](const auto& entry) {
        auto label = claim_labels->find(entry.first);
        return label != claim_labels->end() && label->second != entry.second;
      });
      if (foreign != selector->end()) {
        plan.left_alone.push_back(claim_name + " (label " + foreign->first + "=" +
                                  claim_labels->at(foreign->first) + "; the selector says " +
                                  foreign->first + "=" + foreign->second + ")");
        continue;
      }
      auto requested = k8s::requested_storage(pvc);
      if (!requested) return std::unexpected(requested.error());
      auto from_class = k8s::storage_class_name(pvc);
      if (!from_class) return std::unexpected(from_class.error());
      const std::string from = from_class->value_or("");
      // A template without a class leaves each claim the class it was provisioned with.
      const std::string to = tmpl.storage_class.value_or(from);
      // As the template asks: left alone. A new class alone is a copy to a claim of that class
      // (a volume never changes class in place), at the same size.
      if (*requested == *tmpl.storage && from == to) continue;
      // A shrink: copied into a smaller claim once Measuring found that its data fits.
      const bool shrink = *requested > *tmpl.storage;
      for (const std::string& class_name : {from, to}) {
        if (storage_classes != nullptr && !class_name.empty() &&
            !classes_by_name.contains(class_name)) {
          return std::unexpected("claim " + claim_name + ": StorageClass \"" + class_name +
                                 "\" does not exist");
        }
      }
      bool class_expands = false;
      if (storage_classes != nullptr && !from.empty() && from == to) {
        auto allows = k8s::allows_volume_expansion(*classes_by_name.at(from));
        if (!allows) return std::unexpected(allows.error());
        class_expands = *allows;
      }
      expandable = expandable && class_expands && !shrink;

      ClaimPlan claim;
      claim.claim = claim_name;
      claim.template_name = tmpl.name;
      claim.ordinal = ordinal;
      claim.from_size = *requested;
      claim.to_size = *tmpl.storage;
      claim.from_class = from;
      claim.to_class = to;
      auto uid = k8s::uid(pvc);
      auto labels = k8s::labels(pvc);
      auto modes = k8s::access_modes(pvc);
      if (!uid) return std::unexpected(uid.error());
      if (!labels) return std::unexpected(labels.error());
      if (!modes) return std::unexpected(modes.error());
      claim.source_uid = *uid;
      claim.labels = *labels;
      claim.access_modes = *modes;
      if (shrink &&
          std::ranges::find(claim.access_modes, "ReadWriteOncePod") != claim.access_modes.end()) {
        return std::unexpected(
            "claim " + claim_name + " is " + requested->to_string() + " and template \"" +
            tmpl.name + "\" asks for " + tmpl.storage->to_string() +
            ": a shrink first measures the data on the claim while its replica runs, which no "
            "second pod can do on a ReadWriteOncePod claim; shrinking one is not supported");
      }
      if (auto mode = pvc.find("spec");
          mode != pvc.end() && mode->contains("volumeMode") && mode->at("volumeMode").is_string()) {
        claim.volume_mode = mode->at("volumeMode").get<std::string>();
      }
      // "1Gi -> 2Gi", "class fixed -> fast", "1Gi -> 2Gi, class fixed -> fast"
      std::string change;
      if (*requested != *tmpl.storage) {
        change = requested->to_string() + " -> " + tmpl.storage->to_string();
      }
      if (from != to) {
        const auto spelled = [](const std::string& name) {
          return name.empty() ? std::string{"(none)"} : name;
        };
        change += (change.empty() ? "" : ", ") + std::string{"class "} + spelled(from) + " -> " +
                  spelled(to);
      }
      grown[tmpl.name] = change;
      plan.claims.push_back(std::move(claim));
    }
  }
  if (plan.claims.empty()) return std::nullopt;
  plan.path = expandable ? Path::Expand : Path::Copy;
  for (const auto& [tmpl, change] : grown) {
    if (!plan.trigger.empty()) plan.trigger += ", ";
    plan.trigger += tmpl + " " + change;
  }
  plan.trigger += " (" + std::to_string(plan.claims.size()) +
                  (plan.claims.size() == 1 ? " claim)" : " claims)");
  return plan;
}

}  // namespace

std::expected<std::optional<ResizePlan>, std::string> plan_resize(
    const Json& statefulset, const std::vector<Json>& claims_in_namespace,
    const std::vector<Json>& storage_classes) {
  return plan_with(statefulset, claims_in_namespace, &storage_classes);
}

std::expected<std::optional<ResizePlan>, std::string> plan_resize(
    const Json& statefulset, const std::vector<Json>& claims_in_namespace, StorageClassesUnknown) {
  return plan_with(statefulset, claims_in_namespace, nullptr);
}

}  // namespace stsresize
