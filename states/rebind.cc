// The rebind path (states/rebind.h).
#include "states/rebind.h"

#include "engine/naming.h"
#include "states/step_support.h"

namespace stsresize::steps {

namespace {

constexpr std::string_view kRetain = "Retain";

ObjectRef volume_ref(const std::string& name) {
  return {Kind::PersistentVolume, "", name};
}

std::string text_at(const Json& object, std::initializer_list<const char*> path) {
  const Json* at = &object;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return {};
    at = &(*at)[key];
  }
  return at->is_string() ? at->get<std::string>() : std::string{};
}

std::string reclaim_policy(const Json& volume) {
  return text_at(volume, {"spec", "persistentVolumeReclaimPolicy"});
}

// The claim a volume is bound or pre-bound to: "<ns>/<name>", its uid ("" when pre-bound).
struct ClaimRefOf {
  std::string ns;
  std::string name;
  std::string uid;
};
ClaimRefOf claim_ref_of(const Json& volume) {
  return {text_at(volume, {"spec", "claimRef", "namespace"}),
          text_at(volume, {"spec", "claimRef", "name"}),
          text_at(volume, {"spec", "claimRef", "uid"})};
}

std::expected<Json, StepOutcome> get_volume(StepContext& ctx, const std::string& name,
                                            std::string_view whose) {
  auto volume = get_optional(ctx, volume_ref(name));
  if (!volume) return std::unexpected(volume.error());
  if (!volume->has_value()) {
    return std::unexpected(StepOutcome::critical("volume " + name + " (" + std::string{whose} +
                                                 ") is gone: it was deleted by someone else"));
  }
  return std::move(**volume);
}

// Journals the intent (`action`: "patch", or "retain" for a patch that only makes the volume
// outlive its claim), then patches the volume (a JSON merge patch).
std::optional<StepOutcome> patch_volume(StepContext& ctx, const std::string& name,
                                        const Json& patch, std::string_view detail,
                                        std::string_view action = "patch") {
  const ObjectRef ref = volume_ref(name);
  if (auto intended = ctx.journal.intend(action, ref, detail); !intended) {
    return StepOutcome::transient(intended.error());
  }
  if (auto patched = ctx.kube.patch(ref, PatchType::Merge, patch); !patched) {
    return from_error(patched.error(), "patching " + to_string(ref));
  }
  return StepOutcome::waiting(Duration{0});
}

std::optional<StepOutcome> set_policy(StepContext& ctx, const std::string& volume,
                                      std::string_view policy, std::string_view why) {
  // Retain loses nothing whatever the view it was decided on: the volume only outlives its
  // claim, for a person or this operation to reclaim. Any other policy lets a delete take it.
  return patch_volume(ctx, volume,
                      Json{{"spec", {{"persistentVolumeReclaimPolicy", std::string{policy}}}}},
                      "reclaim policy " + std::string{policy} + ": " + std::string{why},
                      policy == kRetain ? "retain" : "patch");
}

// A Released volume reserved for the claim `name` of the operation's namespace alone: the uid
// (and resourceVersion) of the claim it was bound to are cleared, which makes it Available to
// that claim name only.
std::optional<StepOutcome> pre_bind(StepContext& ctx, const std::string& volume,
                                    const std::string& claim, std::string_view why) {
  Json claim_ref{{"apiVersion", "v1"},     {"kind", "PersistentVolumeClaim"},
                 {"namespace", ctx.op.ns}, {"name", claim},
                 {"uid", nullptr},         {"resourceVersion", nullptr}};
  return patch_volume(ctx, volume, Json{{"spec", {{"claimRef", std::move(claim_ref)}}}},
                      "pre-bound to " + claim + ": " + std::string{why});
}

// The claim `claim.claim` on `volume`: the captured labels, access modes and volume mode, the
// source's annotations but the binder's, and the volume's own class (an unset class could be
// defaulted by admission to one the volume is not of).
Json claim_on_volume(const Operation& op, const ClaimPlan& claim, const Json& volume,
                     const Quantity& size) {
  Json spec = {{"accessModes", claim.access_modes},
               {"resources", {{"requests", {{"storage", size.to_string()}}}}},
               {"storageClassName", text_at(volume, {"spec", "storageClassName"})},
               {"volumeName", text_at(volume, {"metadata", "name"})}};
  if (!claim.volume_mode.empty()) spec["volumeMode"] = claim.volume_mode;
  Json annotations = claim.annotations;
  annotations[std::string{kRecreatedByAnnotation}] = op.id;
  Json metadata = {{"name", claim.claim}, {"namespace", op.ns}, {"annotations", annotations}};
  if (!claim.labels.empty()) metadata["labels"] = claim.labels;
  return Json{{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata", std::move(metadata)},
              {"spec", std::move(spec)}};
}

std::string recreated_by(const Json& claim) {
  auto value = k8s::annotation(claim, kRecreatedByAnnotation);
  return value && value->has_value() ? **value : std::string{};
}

// Creates `claim.claim` on `volume` once the volume is reserved for it; nullopt once the claim
// exists (the caller checks it).
std::optional<StepOutcome> create_on(StepContext& ctx, const ClaimPlan& claim,
                                     const std::string& volume_name, const Quantity& size,
                                     std::string_view whose) {
  auto volume = get_volume(ctx, volume_name, whose);
  if (!volume) return volume.error();
  const ClaimRefOf bound = claim_ref_of(*volume);
  const std::string phase = text_at(*volume, {"status", "phase"});
  if (reclaim_policy(*volume) != kRetain) {
    return StepOutcome::critical("volume " + volume_name + " (" + std::string{whose} +
                                 ") is no longer Retain: not giving it to " + claim.claim);
  }
  if (bound.ns != ctx.op.ns || bound.name != claim.claim) {
    // Still bound to the claim that was deleted: the binder has not released it yet.
    if (phase == "Bound") {
      return StepOutcome::waiting(ctx.settings.poll_interval, volume_name + " not released yet");
    }
    if (phase != "Released") {
      return StepOutcome::critical("volume " + volume_name + " (" + std::string{whose} + ") is " +
                                   phase + ", reserved for " + bound.ns + "/" + bound.name +
                                   ": not giving it to " + claim.claim);
    }
    return pre_bind(ctx, volume_name, claim.claim, whose);
  }
  if (!bound.uid.empty()) {
    // Bound, or Released from, an earlier claim of the same name: reserve it anew.
    auto live = get_optional(ctx, claim_ref(ctx.op, claim.claim));
    if (!live) return live.error();
    if (live->has_value()) return std::nullopt;
    if (phase == "Bound") {
      return StepOutcome::waiting(ctx.settings.poll_interval, volume_name + " not released yet");
    }
    return pre_bind(ctx, volume_name, claim.claim, whose);
  }
  if (auto created = create_intended(
          ctx, claim_ref(ctx.op, claim.claim), claim_on_volume(ctx.op, claim, *volume, size),
          "on volume " + volume_name + " (" + std::string{whose} + "), " + size.to_string());
      !created) {
    return created.error();
  }
  return StepOutcome::waiting(Duration{0});
}

}  // namespace

std::optional<StepOutcome> keep_volumes(StepContext& ctx, const ClaimPlan& claim) {
  if (claim.source_policy.empty()) {
    auto source = get_optional(ctx, claim_ref(ctx.op, claim.claim));
    if (!source) return source.error();
    const std::string uid = source->has_value() ? k8s::uid(**source).value_or("") : "";
    if (!source->has_value() || uid != claim.source_uid) {
      return StepOutcome::critical("source claim " + claim.claim +
                                   " is gone or another object than the one planned: its "
                                   "volume is not kept");
    }
    auto volume = get_volume(ctx, claim.source_volume, "the volume of " + claim.claim);
    if (!volume) return volume.error();
    const ClaimRefOf bound = claim_ref_of(*volume);
    if (bound.uid != claim.source_uid) {
      return StepOutcome::critical("volume " + claim.source_volume + " is not bound to " +
                                   claim.claim + " any more (bound to " + bound.ns + "/" +
                                   bound.name + ")");
    }
    return record_and_continue(
        ctx, entries::VolumeRetained{claim.claim, VolumeRole::Source, claim.source_volume,
                                     reclaim_policy(*volume)});
  }
  if (claim.copy_policy.empty()) {
    auto backup = get_optional(ctx, claim_ref(ctx.op, naming::backup_claim(claim.claim)));
    if (!backup) return backup.error();
    const std::string name = naming::backup_claim(claim.claim);
    if (!backup->has_value() || !created_by(**backup, ctx.op) || being_deleted(**backup)) {
      return StepOutcome::critical("backup claim " + name +
                                   " is gone, not ours or being deleted: its volume, the "
                                   "verified copy of " +
                                   claim.claim + ", cannot be kept");
    }
    const std::string volume_name = k8s::volume_name(**backup).value_or("");
    if (volume_name.empty()) {
      return StepOutcome::critical("backup claim " + name + " is not bound to a volume");
    }
    auto volume = get_volume(ctx, volume_name, "the copy of " + claim.claim);
    if (!volume) return volume.error();
    return record_and_continue(ctx, entries::VolumeRetained{claim.claim, VolumeRole::Copy,
                                                            volume_name, reclaim_policy(*volume)});
  }
  for (const auto& [name, whose] : {std::pair<const std::string&, std::string>{
                                        claim.source_volume, "the volume of " + claim.claim},
                                    {claim.copy_volume, "the copy of " + claim.claim}}) {
    auto volume = get_volume(ctx, name, whose);
    if (!volume) return volume.error();
    if (reclaim_policy(*volume) != kRetain) {
      return set_policy(ctx, name, kRetain, "kept until " + claim.claim + " runs on its copy");
    }
  }
  return std::nullopt;
}

StepOutcome rebind_claim(StepContext& ctx, const ClaimPlan& claim) {
  const std::string backup_name = naming::backup_claim(claim.claim);
  // The backup claim goes first: its volume is reserved for the claim's name only once it is
  // Released.
  bool acted = false;
  auto backup = delete_ours(ctx, claim_ref(ctx.op, backup_name), acted);
  if (!backup) return backup.error();
  if (acted) return StepOutcome::waiting(Duration{0});
  if (*backup) return StepOutcome::waiting(ctx.settings.poll_interval, backup_name + " finalizing");

  auto existing = get_optional(ctx, claim_ref(ctx.op, claim.claim));
  if (!existing) return existing.error();
  if (!existing->has_value()) {
    if (auto now =
            create_on(ctx, claim, claim.copy_volume, claim.to_size, "the copy of " + claim.claim)) {
      return *now;
    }
    return StepOutcome::waiting(Duration{0});
  }
  if (being_deleted(**existing)) {
    return StepOutcome::waiting(ctx.settings.poll_interval, claim.claim + " finalizing");
  }
  if (recreated_by(**existing) != ctx.op.id ||
      k8s::volume_name(**existing).value_or("") != claim.copy_volume) {
    return StepOutcome::critical(claim.claim +
                                 " was created again by someone else before stsresize could "
                                 "give it its copy's volume " +
                                 claim.copy_volume);
  }
  auto uid = k8s::uid(**existing);
  if (!uid) return malformed(uid.error());
  return record_and_continue(ctx, entries::ClaimRecreated{claim.claim, *uid});
}

std::optional<StepOutcome> check_rebound(StepContext& ctx, const ClaimPlan& claim) {
  auto rebound = get_optional(ctx, claim_ref(ctx.op, claim.claim));
  if (!rebound) return rebound.error();
  const std::string uid = rebound->has_value() ? k8s::uid(**rebound).value_or("") : "";
  if (!rebound->has_value() || uid != claim.recreated_uid || being_deleted(**rebound)) {
    return StepOutcome::critical("rebound claim " + claim.claim +
                                 " was deleted or replaced by someone else; its own volume " +
                                 claim.source_volume + " is kept");
  }
  auto phase = k8s::pvc_phase(**rebound);
  if (!phase) return malformed(phase.error());
  if (*phase != "Bound") {
    if (phase_timed_out(ctx, ctx.settings.pending_timeout)) {
      return StepOutcome::critical("rebound claim " + claim.claim + " is still " + *phase +
                                   " after the pending timeout");
    }
    return StepOutcome::waiting(ctx.settings.poll_interval, claim.claim + " binding");
  }
  if (k8s::volume_name(**rebound).value_or("") != claim.copy_volume) {
    return StepOutcome::critical("rebound claim " + claim.claim +
                                 " is bound to another volume than its copy " + claim.copy_volume);
  }
  auto volume = get_volume(ctx, claim.copy_volume, "the copy of " + claim.claim);
  if (!volume) return volume.error();
  if (claim_ref_of(*volume).uid != claim.recreated_uid) {
    return StepOutcome::waiting(ctx.settings.poll_interval, claim.copy_volume + " binding");
  }
  // The summary verified on this very volume, which nothing has mounted since (Retain,
  // then reserved for this claim alone).
  return record_and_continue(ctx, entries::RestoreVerified{claim.claim, *claim.backup_verified});
}

std::optional<StepOutcome> put_back(StepContext& ctx, const ClaimPlan& claim) {
  auto existing = get_optional(ctx, claim_ref(ctx.op, claim.claim));
  if (!existing) return existing.error();
  if (!existing->has_value()) {
    return create_on(ctx, claim, claim.source_volume, claim.from_size,
                     "the volume of " + claim.claim);
  }
  if (being_deleted(**existing)) {
    return StepOutcome::waiting(ctx.settings.poll_interval, claim.claim + " finalizing");
  }
  auto uid = k8s::uid(**existing);
  if (!uid) return malformed(uid.error());
  const std::string volume = k8s::volume_name(**existing).value_or("");
  const bool ours = recreated_by(**existing) == ctx.op.id;
  if (ours && volume == claim.source_volume) {
    auto phase = k8s::pvc_phase(**existing);
    if (!phase) return malformed(phase.error());
    if (*phase != "Bound") {
      return StepOutcome::waiting(ctx.settings.poll_interval, claim.claim + " binding");
    }
    return record_and_continue(ctx, entries::SourceRebound{claim.claim, *uid});
  }
  if (*uid == claim.recreated_uid || (ours && (volume.empty() || volume == claim.copy_volume))) {
    // The claim on the copy: its volume is Retain, nothing on it is lost.
    if (auto removed = delete_intended(
            ctx, claim_ref(ctx.op, claim.claim), *uid, Propagation::Default,
            "scaling back: " + claim.claim + " goes back to " + claim.source_volume);
        !removed) {
      return removed.error();
    }
    return StepOutcome::waiting(Duration{0});
  }
  return StepOutcome::critical(claim.claim + " was created by someone else: not putting its own " +
                               "volume " + claim.source_volume +
                               " back under it (the volume is kept, Retain)");
}

std::optional<StepOutcome> put_policies_back(StepContext& ctx, const ClaimPlan& claim) {
  struct Kept {
    VolumeRole role;
    const std::string& volume;
    const std::string& policy;
    bool restored;
  };
  for (const Kept& kept :
       {Kept{VolumeRole::Copy, claim.copy_volume, claim.copy_policy, claim.copy_policy_restored},
        Kept{VolumeRole::Source, claim.source_volume, claim.source_policy,
             claim.source_policy_restored}}) {
    if (kept.policy.empty() || kept.restored) continue;
    auto volume = get_optional(ctx, volume_ref(kept.volume));
    if (!volume) return volume.error();
    if (volume->has_value() && reclaim_policy(**volume) != kept.policy) {
      const ClaimRefOf bound = claim_ref_of(**volume);
      const std::string phase = text_at(**volume, {"status", "phase"});
      // The old volume is released only from the claim it was planned with; a volume someone
      // gave to another claim meanwhile is theirs now.
      if (kept.role == VolumeRole::Source && ctx.op.phase == Phase::CleaningUp &&
          !(phase == "Released" && bound.uid == claim.source_uid)) {
        return StepOutcome::critical("the old volume " + kept.volume + " of " + claim.claim +
                                     " is " + phase + " for " + bound.ns + "/" + bound.name +
                                     ": not putting its reclaim policy " + kept.policy +
                                     " back (it stays Retain)");
      }
      return set_policy(ctx, kept.volume, kept.policy,
                        kept.role == VolumeRole::Source && ctx.op.phase == Phase::CleaningUp
                            ? "its own policy; " + claim.claim + " runs on its copy"
                            : "its own policy");
    }
    // Put back (or, with Delete, already deleted by the PV controller).
    return record_and_continue(ctx, entries::ReclaimPolicyRestored{claim.claim, kept.role});
  }
  return std::nullopt;
}

}  // namespace stsresize::steps
