#include "engine/operation_codec.h"

#include "engine/strict_json.h"
#include "engine/timestamp.h"

namespace stsresize {

namespace {

Json optional_summary(const std::optional<TreeSummary>& summary) {
  return summary ? encode_tree_summary(*summary) : Json(nullptr);
}

std::optional<TreeSummary> read_optional_summary(StrictObject& in, std::string_view key) {
  if (!in.non_null(key)) return std::nullopt;
  auto summary = decode_tree_summary(in.object(key), in.where() + "." + std::string{key});
  if (!summary) {
    in.fail(summary.error());
    return std::nullopt;
  }
  return *summary;
}

Quantity read_quantity(StrictObject& in, std::string_view key) {
  const std::string text = in.string(key);
  if (!in.ok()) return Quantity::from_bytes(0);
  auto quantity = Quantity::parse(text);
  if (!quantity) {
    in.fail(in.where() + ": field \"" + std::string{key} + "\": " + quantity.error());
    return Quantity::from_bytes(0);
  }
  return *quantity;
}

TimePoint read_time(StrictObject& in, std::string_view key) {
  const std::string text = in.string(key);
  if (!in.ok()) return {};
  auto time = parse_timestamp(text);
  if (!time) {
    in.fail(in.where() + ": field \"" + std::string{key} + "\": " + time.error());
    return {};
  }
  return *time;
}

}  // namespace

Json encode_claim_plan(const ClaimPlan& claim) {
  Json document{
      {"claim", claim.claim},
      {"template", claim.template_name},
      {"ordinal", claim.ordinal},
      {"fromSize", claim.from_size.to_string()},
      {"toSize", claim.to_size.to_string()},
      {"fromClass", claim.from_class},
      {"toClass", claim.to_class},
      {"sourceUid", claim.source_uid},
      {"labels", claim.labels},
      {"accessModes", claim.access_modes},
      {"volumeMode", claim.volume_mode},
      {"backupVerified", optional_summary(claim.backup_verified)},
      {"sourceDeleted", claim.source_deleted},
      {"recreatedUid", claim.recreated_uid},
      {"restoreVerified", optional_summary(claim.restore_verified)},
      {"expanded", claim.expanded},
  };
  // Only when recorded, so that a state without it reads as it did before it existed.
  if (claim.backup_generation != 0) document["backupGeneration"] = claim.backup_generation;
  if (claim.pre_copied) document["preCopied"] = true;
  if (claim.rolled) document["rolled"] = true;
  // The rebind path's, only there (a two-copy state reads as before the rebind path existed).
  if (!claim.source_volume.empty()) {
    Json volumes{{"source", claim.source_volume},
                 {"annotations", claim.annotations},
                 {"sourcePolicy", claim.source_policy},
                 {"copy", claim.copy_volume},
                 {"copyPolicy", claim.copy_policy},
                 {"sourcePolicyRestored", claim.source_policy_restored},
                 {"copyPolicyRestored", claim.copy_policy_restored}};
    document["volumes"] = std::move(volumes);
  }
  return document;
}

std::expected<ClaimPlan, std::string> decode_claim_plan(const Json& document,
                                                        const std::string& where) {
  StrictObject in{document, where};
  ClaimPlan claim;
  claim.claim = in.string("claim");
  claim.template_name = in.string("template");
  const std::int64_t ordinal = in.integer("ordinal");
  if (in.ok() && (ordinal < 0 || ordinal > INT32_MAX)) in.fail(where + ": ordinal out of range");
  claim.ordinal = static_cast<int>(ordinal);
  claim.from_size = read_quantity(in, "fromSize");
  claim.to_size = read_quantity(in, "toSize");
  claim.from_class = in.string("fromClass");
  claim.to_class = in.string("toClass");
  claim.source_uid = in.string("sourceUid");
  const Json& labels = in.object("labels");
  if (in.ok()) {
    for (const auto& [key, value] : labels.items()) {
      if (!value.is_string()) {
        in.fail(where + ": label \"" + key + "\" must be a string");
        break;
      }
      claim.labels.emplace(key, value.get<std::string>());
    }
  }
  const Json& modes = in.array("accessModes");
  if (in.ok()) {
    for (const Json& mode : modes) {
      if (!mode.is_string()) {
        in.fail(where + ": accessModes must hold strings");
        break;
      }
      claim.access_modes.push_back(mode.get<std::string>());
    }
  }
  claim.volume_mode = in.string("volumeMode");
  if (in.ok() && document.contains("preCopied")) claim.pre_copied = in.boolean("preCopied");
  if (in.ok() && document.contains("rolled")) claim.rolled = in.boolean("rolled");
  claim.backup_verified = read_optional_summary(in, "backupVerified");
  if (in.ok() && document.contains("backupGeneration")) {
    claim.backup_generation = in.integer("backupGeneration");
    if (in.ok() && claim.backup_generation < 0) in.fail(where + ": backupGeneration is negative");
  }
  if (in.ok() && document.contains("volumes")) {
    StrictObject volumes{in.object("volumes"), where + ".volumes"};
    claim.source_volume = volumes.string("source");
    const Json& annotations = volumes.object("annotations");
    if (volumes.ok()) {
      for (const auto& [key, value] : annotations.items()) {
        if (!value.is_string()) {
          volumes.fail(where + ": annotation \"" + key + "\" must be a string");
          break;
        }
        claim.annotations.emplace(key, value.get<std::string>());
      }
    }
    claim.source_policy = volumes.string("sourcePolicy");
    claim.copy_volume = volumes.string("copy");
    claim.copy_policy = volumes.string("copyPolicy");
    claim.source_policy_restored = volumes.boolean("sourcePolicyRestored");
    claim.copy_policy_restored = volumes.boolean("copyPolicyRestored");
    if (auto done = volumes.finish(); !done) in.fail(done.error());
    if (in.ok() && claim.source_volume.empty()) in.fail(where + ".volumes: source is empty");
  }
  claim.source_deleted = in.boolean("sourceDeleted");
  claim.recreated_uid = in.string("recreatedUid");
  claim.restore_verified = read_optional_summary(in, "restoreVerified");
  claim.expanded = in.boolean("expanded");
  if (auto done = in.finish(); !done) return std::unexpected(done.error());
  if (claim.claim.empty()) return std::unexpected(where + ": claim name is empty");
  return claim;
}

Json encode_ordinal_drain(const OrdinalDrain& drain) {
  Json claims = Json::array();
  for (const OrdinalClaim& c : drain.claims) {
    claims.push_back(Json{{"claim", c.claim}, {"uid", c.uid}, {"deleted", c.deleted}});
  }
  return Json{{"ordinal", drain.ordinal},
              {"claims", std::move(claims)},
              {"podUid", drain.pod_uid},
              {"succeeded", drain.succeeded},
              {"cancelled", drain.cancelled}};
}

Json encode_lost_replica(const LostReplica& lost) {
  Json claims = Json::array();
  for (const LostClaim& c : lost.claims) {
    claims.push_back(Json{{"claim", c.claim},
                          {"uid", c.uid},
                          {"volume", c.volume},
                          {"policy", c.policy},
                          {"deleted", c.deleted},
                          {"newUid", c.new_uid}});
  }
  return Json{{"ordinal", lost.ordinal},
              {"node", lost.node},
              {"gone", lost.gone},
              {"podUid", lost.pod_uid},
              {"claims", std::move(claims)},
              {"graceMs", static_cast<std::int64_t>(lost.grace.count())},
              {"podDeleted", lost.pod_deleted},
              {"newPodUid", lost.new_pod_uid},
              {"cancelled", lost.cancelled},
              {"reseed", lost.reseed},
              {"reseedPodUid", lost.reseed_pod_uid},
              {"reseedEnded", lost.reseed_ended},
              {"reseedFailure", lost.reseed_failure}};
}

std::expected<LostReplica, std::string> decode_lost_replica(const Json& document,
                                                            const std::string& where) {
  StrictObject in{document, where};
  LostReplica lost;
  const std::int64_t ordinal = in.integer("ordinal");
  if (in.ok() && (ordinal < 0 || ordinal > INT32_MAX)) in.fail(where + ": ordinal out of range");
  lost.ordinal = static_cast<int>(ordinal);
  lost.node = in.string("node");
  lost.gone = in.string("gone");
  if (in.ok() && lost.node.empty()) in.fail(where + ": node is empty");
  if (in.ok() && lost.gone != "deleted" && lost.gone != "out-of-service") {
    in.fail(where + ": gone must be \"deleted\" or \"out-of-service\"");
  }
  lost.pod_uid = in.string("podUid");
  const Json& claims = in.array("claims");
  if (in.ok()) {
    for (std::size_t i = 0; i < claims.size(); ++i) {
      StrictObject claim{claims[i], where + ".claims[" + std::to_string(i) + "]"};
      LostClaim c;
      c.claim = claim.string("claim");
      c.uid = claim.string("uid");
      c.volume = claim.string("volume");
      c.policy = claim.string("policy");
      c.deleted = claim.boolean("deleted");
      c.new_uid = claim.string("newUid");
      if (auto done = claim.finish(); !done) {
        in.fail(done.error());
        break;
      }
      if (c.claim.empty() || c.uid.empty() || c.volume.empty()) {
        in.fail(claim.where() + ": claim, uid and volume must not be empty");
        break;
      }
      lost.claims.push_back(std::move(c));
    }
    if (in.ok() && lost.claims.empty()) in.fail(where + ": no claims");
  }
  lost.grace = Duration{in.integer("graceMs")};
  if (in.ok() && lost.grace.count() < 0) in.fail(where + ": graceMs is negative");
  lost.pod_deleted = in.boolean("podDeleted");
  lost.new_pod_uid = in.string("newPodUid");
  lost.cancelled = in.string("cancelled");
  // Added with the re-seed: absent in a state written before it.
  if (in.has("reseed")) {
    lost.reseed = in.boolean("reseed");
    lost.reseed_pod_uid = in.string("reseedPodUid");
    lost.reseed_ended = in.boolean("reseedEnded");
    lost.reseed_failure = in.string("reseedFailure");
  }
  if (auto done = in.finish(); !done) return std::unexpected(done.error());
  return lost;
}

std::expected<OrdinalDrain, std::string> decode_ordinal_drain(const Json& document,
                                                              const std::string& where) {
  StrictObject in{document, where};
  OrdinalDrain drain;
  const std::int64_t ordinal = in.integer("ordinal");
  if (in.ok() && (ordinal < 0 || ordinal > INT32_MAX)) in.fail(where + ": ordinal out of range");
  drain.ordinal = static_cast<int>(ordinal);
  const Json& claims = in.array("claims");
  if (in.ok()) {
    for (std::size_t i = 0; i < claims.size(); ++i) {
      StrictObject claim{claims[i], where + ".claims[" + std::to_string(i) + "]"};
      OrdinalClaim c;
      c.claim = claim.string("claim");
      c.uid = claim.string("uid");
      c.deleted = claim.boolean("deleted");
      if (auto done = claim.finish(); !done) {
        in.fail(done.error());
        break;
      }
      if (c.claim.empty()) {
        in.fail(claim.where() + ": claim name is empty");
        break;
      }
      drain.claims.push_back(std::move(c));
    }
  }
  drain.pod_uid = in.string("podUid");
  drain.succeeded = in.boolean("succeeded");
  drain.cancelled = in.string("cancelled");
  if (auto done = in.finish(); !done) return std::unexpected(done.error());
  return drain;
}

Json encode_template_change(const TemplateChange& change) {
  return Json{{"template", change.template_name},
              {"storage", change.storage ? change.storage->to_string() : ""},
              {"storageClassName", change.storage_class}};
}

std::expected<TemplateChange, std::string> decode_template_change(const Json& document,
                                                                  const std::string& where) {
  StrictObject in{document, where};
  TemplateChange change;
  change.template_name = in.string("template");
  const std::string storage = in.string("storage");
  if (in.ok() && !storage.empty()) {
    auto quantity = Quantity::parse(storage);
    if (quantity) {
      change.storage = *quantity;
    } else {
      in.fail(where + ": field \"storage\": " + quantity.error());
    }
  }
  change.storage_class = in.string("storageClassName");
  if (auto done = in.finish(); !done) return std::unexpected(done.error());
  if (change.template_name.empty()) return std::unexpected(where + ": template name is empty");
  if (!change.storage && change.storage_class.empty()) {
    return std::unexpected(where + ": changes neither storage nor storageClassName");
  }
  return change;
}

Json encode_template_changes(const std::vector<TemplateChange>& changes) {
  Json out = Json::array();
  for (const TemplateChange& change : changes) out.push_back(encode_template_change(change));
  return out;
}

std::expected<std::vector<TemplateChange>, std::string> decode_template_changes(
    const Json& array, const std::string& where) {
  if (!array.is_array()) return std::unexpected(where + ": expected an array");
  std::vector<TemplateChange> changes;
  for (std::size_t i = 0; i < array.size(); ++i) {
    auto change = decode_template_change(array[i], where + "[" + std::to_string(i) + "]");
    if (!change) return std::unexpected(change.error());
    changes.push_back(std::move(*change));
  }
  return changes;
}

Json encode_tree_summary(const TreeSummary& summary) {
  return Json{{"files", summary.files}, {"bytes", summary.bytes}, {"digest", summary.digest}};
}

std::expected<TreeSummary, std::string> decode_tree_summary(const Json& document,
                                                            const std::string& where) {
  StrictObject in{document, where};
  TreeSummary summary;
  summary.files = in.integer("files");
  summary.bytes = in.integer("bytes");
  summary.digest = in.string("digest");
  if (auto done = in.finish(); !done) return std::unexpected(done.error());
  return summary;
}

Json encode_operation(const Operation& operation) {
  Json claims = Json::array();
  for (const ClaimPlan& claim : operation.claims) claims.push_back(encode_claim_plan(claim));
  Json document{
      {"v", kOperationFormatVersion},
      {"id", operation.id},
      {"namespace", operation.ns},
      {"statefulset", operation.statefulset},
      {"stsUid", operation.sts_uid},
      {"phase", to_string(operation.phase)},
      {"path", to_string(operation.path)},
      {"originalReplicas", operation.original_replicas},
      {"claims", std::move(claims)},
      {"failure", operation.failure},
      {"started", format_timestamp(operation.started)},
      {"phaseSince", format_timestamp(operation.phase_since)},
      {"lastSequence", operation.last_sequence},
  };
  // A resize's state reads as it did before there were other kinds.
  if (operation.kind != OperationKind::Resize) document["kind"] = to_string(operation.kind);
  if (!operation.drains.empty()) {
    Json drains = Json::array();
    for (const OrdinalDrain& drain : operation.drains) {
      drains.push_back(encode_ordinal_drain(drain));
    }
    document["drains"] = std::move(drains);
  }
  if (operation.lost) document["lost"] = encode_lost_replica(*operation.lost);
  if (operation.delete_after.count() > 0) {
    document["deleteAfterMs"] = static_cast<std::int64_t>(operation.delete_after.count());
  }
  if (!operation.warning.empty()) document["warning"] = operation.warning;
  // Only a shrink measures: every other state reads as it did before Measuring existed.
  if (!operation.measured.empty()) {
    Json measured = Json::array();
    for (const MeasuredClaim& m : operation.measured) {
      measured.push_back(Json{{"claim", m.claim},
                              {"uid", m.uid},
                              {"files", m.usage.files},
                              {"bytes", m.usage.bytes},
                              {"used", m.usage.used}});
    }
    document["measured"] = std::move(measured);
  }
  if (!operation.rebind_unavailable.empty()) {
    document["rebindUnavailable"] = operation.rebind_unavailable;
  }
  // Only a rolling resize: every other state reads as it did before there were strategies.
  if (operation.strategy != Strategy::AllAtOnce)
    document["strategy"] = to_string(operation.strategy);
  if (operation.awaiting) {
    document["awaitingApproval"] = Json{{"from", to_string(operation.awaiting->from)},
                                        {"to", to_string(operation.awaiting->to)},
                                        {"event", to_string(operation.awaiting->event)}};
  }
  if (operation.failed_in) document["failedIn"] = to_string(*operation.failed_in);
  if (!operation.aborted_by.empty()) document["abortedBy"] = operation.aborted_by;
  if (!operation.template_changes.empty()) {
    document["templateUpdate"] =
        Json{{"changes", encode_template_changes(operation.template_changes)},
             {"statefulsetRecreated", operation.statefulset_recreated}};
  }
  return document;
}

std::expected<Operation, std::string> decode_operation(const Json& document,
                                                       const std::string& where) {
  if (!document.is_object()) return std::unexpected(where + ": expected a JSON object");
  auto version = document.find("v");
  if (version == document.end() || !version->is_number_integer()) {
    return std::unexpected(where + ": missing format version \"v\"");
  }
  if (*version != kOperationFormatVersion) {
    return std::unexpected(where + ": unsupported format version " + version->dump() +
                           " (this stsresize reads version " +
                           std::to_string(kOperationFormatVersion) + ")");
  }
  StrictObject in{document, where};
  in.integer("v");
  Operation op;
  op.id = in.string("id");
  op.ns = in.string("namespace");
  op.statefulset = in.string("statefulset");
  op.sts_uid = in.string("stsUid");
  const std::string phase = in.string("phase");
  if (in.ok()) {
    if (auto parsed = parse_phase(phase)) {
      op.phase = *parsed;
    } else {
      in.fail(where + ": unknown phase \"" + phase + "\"");
    }
  }
  const std::string path = in.string("path");
  if (in.ok()) {
    if (auto parsed = parse_path(path)) {
      op.path = *parsed;
    } else {
      in.fail(where + ": unknown path \"" + path + "\"");
    }
  }
  const std::int64_t replicas = in.integer("originalReplicas");
  if (in.ok() && (replicas < 0 || replicas > INT32_MAX)) {
    in.fail(where + ": originalReplicas out of range");
  }
  op.original_replicas = static_cast<std::int32_t>(replicas);
  const Json& claims = in.array("claims");
  if (in.ok()) {
    for (std::size_t i = 0; i < claims.size(); ++i) {
      auto claim = decode_claim_plan(claims[i], where + ".claims[" + std::to_string(i) + "]");
      if (!claim) {
        in.fail(claim.error());
        break;
      }
      op.claims.push_back(std::move(*claim));
    }
  }
  if (in.ok() && document.contains("kind")) {
    const std::string kind = in.string("kind");
    auto parsed = parse_kind(kind);
    if (in.ok() && (!parsed || *parsed == OperationKind::Resize)) {
      in.fail(where + ": unknown kind \"" + kind + "\"");
    } else if (in.ok()) {
      op.kind = *parsed;
    }
  }
  if (in.ok() && document.contains("drains")) {
    const Json& drains = in.array("drains");
    for (std::size_t i = 0; in.ok() && i < drains.size(); ++i) {
      auto drain = decode_ordinal_drain(drains[i], where + ".drains[" + std::to_string(i) + "]");
      if (!drain) {
        in.fail(drain.error());
      } else {
        op.drains.push_back(std::move(*drain));
      }
    }
    if (in.ok() && op.kind != OperationKind::Drain) {
      in.fail(where + ": \"drains\" in an operation of kind " + std::string{to_string(op.kind)});
    }
  }
  if (in.ok() && document.contains("lost")) {
    auto lost = decode_lost_replica(in.object("lost"), where + ".lost");
    if (!lost) {
      in.fail(lost.error());
    } else {
      op.lost = std::move(*lost);
    }
    if (in.ok() && op.kind != OperationKind::Recovery) {
      in.fail(where + ": \"lost\" in an operation of kind " + std::string{to_string(op.kind)});
    }
  }
  if (in.ok() && document.contains("deleteAfterMs")) {
    op.delete_after = Duration{in.integer("deleteAfterMs")};
    if (in.ok() && op.delete_after.count() <= 0) {
      in.fail(where + ": \"deleteAfterMs\" must be positive");
    }
    if (in.ok() && op.kind != OperationKind::Drain) {
      in.fail(where + ": \"deleteAfterMs\" in an operation of kind " +
              std::string{to_string(op.kind)});
    }
  }
  op.failure = in.string("failure");
  op.started = read_time(in, "started");
  op.phase_since = read_time(in, "phaseSince");
  op.last_sequence = in.integer("lastSequence");
  if (in.ok() && document.contains("warning")) {
    op.warning = in.string("warning");
    if (in.ok() && op.warning.empty()) in.fail(where + ": \"warning\" is empty");
  }
  if (in.ok() && document.contains("measured")) {
    const Json& measured = in.array("measured");
    for (std::size_t i = 0; in.ok() && i < measured.size(); ++i) {
      StrictObject m{measured[i], where + ".measured[" + std::to_string(i) + "]"};
      MeasuredClaim claim;
      claim.claim = m.string("claim");
      claim.uid = m.string("uid");
      claim.usage.files = m.integer("files");
      claim.usage.bytes = m.integer("bytes");
      claim.usage.used = m.integer("used");
      if (auto done = m.finish(); !done) {
        in.fail(done.error());
      } else if (claim.claim.empty() || claim.usage.files < 0 || claim.usage.bytes < 0 ||
                 claim.usage.used < 0) {
        in.fail(m.where() + ": a claim name and figures of at least 0");
      } else {
        op.measured.push_back(std::move(claim));
      }
    }
  }
  if (in.ok() && document.contains("strategy")) {
    const std::string strategy = in.string("strategy");
    if (auto parsed = parse_strategy(strategy); in.ok() && parsed) {
      op.strategy = *parsed;
    } else if (in.ok()) {
      in.fail(where + ": unknown strategy \"" + strategy + "\"");
    }
  }
  if (in.ok() && document.contains("rebindUnavailable")) {
    op.rebind_unavailable = in.string("rebindUnavailable");
    if (in.ok() && op.rebind_unavailable.empty()) {
      in.fail(where + ": \"rebindUnavailable\" is empty");
    }
  }
  if (in.ok() && document.contains("awaitingApproval")) {
    StrictObject awaiting{in.object("awaitingApproval"), where + ".awaitingApproval"};
    AwaitedApproval approval;
    auto phase_at = [&](std::string_view key) {
      const std::string text = awaiting.string(key);
      auto parsed = parse_phase(text);
      if (awaiting.ok() && !parsed) {
        awaiting.fail(awaiting.where() + ": unknown phase \"" + text + "\"");
      }
      return parsed.value_or(Phase::Pending);
    };
    approval.from = phase_at("from");
    approval.to = phase_at("to");
    const std::string event = awaiting.string("event");
    auto parsed_event = parse_trigger(event);
    if (awaiting.ok() && !parsed_event) {
      awaiting.fail(awaiting.where() + ": unknown event \"" + event + "\"");
    }
    approval.event = parsed_event.value_or(Trigger::StepDone);
    if (auto done = awaiting.finish(); !done) {
      in.fail(done.error());
    } else if (approval.from != op.phase) {
      in.fail(awaiting.where() + ": awaits a transition from " +
              std::string{to_string(approval.from)} + " in phase " +
              std::string{to_string(op.phase)});
    } else {
      op.awaiting = approval;
    }
  }
  if (in.ok() && document.contains("failedIn")) {
    const std::string text = in.string("failedIn");
    auto parsed = parse_phase(text);
    if (in.ok() && !parsed) {
      in.fail(where + ": unknown phase \"" + text + "\" in \"failedIn\"");
    } else if (in.ok() && op.phase != Phase::Failed) {
      in.fail(where + ": \"failedIn\" in phase " + std::string{to_string(op.phase)} +
              " (only a Failed operation records it)");
    } else if (in.ok()) {
      op.failed_in = *parsed;
    }
  }
  if (in.ok() && document.contains("abortedBy")) {
    op.aborted_by = in.string("abortedBy");
    if (in.ok() && op.aborted_by.empty()) in.fail(where + ": \"abortedBy\" is empty");
  }
  if (in.ok() && document.contains("templateUpdate")) {
    StrictObject update{in.object("templateUpdate"), where + ".templateUpdate"};
    const Json& changes = update.array("changes");
    op.statefulset_recreated = update.boolean("statefulsetRecreated");
    if (auto done = update.finish(); !done) {
      in.fail(done.error());
    } else if (auto decoded = decode_template_changes(changes, update.where() + ".changes");
               !decoded) {
      in.fail(decoded.error());
    } else if (decoded->empty()) {
      in.fail(update.where() + ": no changes");
    } else {
      op.template_changes = std::move(*decoded);
    }
  }
  if (auto done = in.finish(); !done) return std::unexpected(done.error());
  if (op.id.empty() || op.ns.empty() || op.statefulset.empty()) {
    return std::unexpected(where + ": id, namespace and statefulset must not be empty");
  }
  return op;
}

}  // namespace stsresize
