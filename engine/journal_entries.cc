#include "engine/journal_entries.h"

#include <array>
#include <cstdio>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/duration.h"
#include "engine/operation_codec.h"
#include "engine/strict_json.h"

namespace stsresize {

namespace {

using namespace entries;

// ---- The JSON of one field value -----------------------------------------------------------
// Codec<V> writes a value of type V and reads it strictly from the payload (engine/
// strict_json.h: a missing or mistyped field fails `in`, and every read after the first
// failure returns a default). A field of a new value type needs a Codec here; an enum needs
// only the one line that names its parser, like Phase below.
template <class V>
struct Codec;

template <>
struct Codec<std::string> {
  static Json encode(const std::string& value) { return value; }
  static std::string decode(StrictObject& in, std::string_view key) { return in.string(key); }
};

template <>
struct Codec<bool> {
  static Json encode(bool value) { return value; }
  static bool decode(StrictObject& in, std::string_view key) { return in.boolean(key); }
};

template <>
struct Codec<std::int64_t> {
  static Json encode(std::int64_t value) { return value; }
  static std::int64_t decode(StrictObject& in, std::string_view key) { return in.integer(key); }
};

// The one 32-bit field is a replica count: negative is refused as much as too large.
template <>
struct Codec<std::int32_t> {
  static Json encode(std::int32_t value) { return value; }
  static std::int32_t decode(StrictObject& in, std::string_view key) {
    const std::int64_t value = in.integer(key);
    if (in.ok() && (value < 0 || value > INT32_MAX)) {
      in.fail(in.where() + ": " + std::string{key} + " out of range");
    }
    return static_cast<std::int32_t>(value);
  }
};

// An enum travels as its to_string() name; a name this version does not know is an error.
template <class Enum, std::optional<Enum> (*parse)(std::string_view)>
struct EnumCodec {
  static Json encode(Enum value) { return to_string(value); }
  static Enum decode(StrictObject& in, std::string_view key) {
    const std::string text = in.string(key);
    if (!in.ok()) return Enum{};
    if (auto value = parse(text)) return *value;
    in.fail(in.where() + ": unknown value \"" + text + "\" for \"" + std::string{key} + "\"");
    return Enum{};
  }
};
template <>
struct Codec<Phase> : EnumCodec<Phase, &parse_phase> {};
template <>
struct Codec<Trigger> : EnumCodec<Trigger, &parse_trigger> {};
template <>
struct Codec<Path> : EnumCodec<Path, &parse_path> {};
template <>
struct Codec<Strategy> : EnumCodec<Strategy, &parse_strategy> {};
template <>
struct Codec<OperationKind> : EnumCodec<OperationKind, &parse_kind> {};
template <>
struct Codec<VolumeRole> : EnumCodec<VolumeRole, &parse_volume_role> {};

// A duration travels as whole milliseconds.
template <>
struct Codec<Duration> {
  static Json encode(Duration value) { return static_cast<std::int64_t>(value.count()); }
  static Duration decode(StrictObject& in, std::string_view key) {
    return Duration{in.integer(key)};
  }
};

// A nested document read by its own strict codec (engine/operation_codec.h), which names
// the place ("event Planned.claims[1]") in its messages.
template <class V>
V nested(StrictObject& in, std::string_view key, const Json& document,
         std::expected<V, std::string> (*decode)(const Json&, const std::string&)) {
  if (!in.ok()) return V{};
  auto value = decode(document, in.where() + "." + std::string{key});
  if (!value) {
    in.fail(value.error());
    return V{};
  }
  return std::move(*value);
}

template <>
struct Codec<TreeSummary> {
  static Json encode(const TreeSummary& value) { return encode_tree_summary(value); }
  static TreeSummary decode(StrictObject& in, std::string_view key) {
    return nested(in, key, in.object(key), &decode_tree_summary);
  }
};

template <>
struct Codec<Operation> {
  static Json encode(const Operation& value) { return encode_operation(value); }
  static Operation decode(StrictObject& in, std::string_view key) {
    return nested(in, key, in.object(key), &decode_operation);
  }
};

template <>
struct Codec<std::vector<TemplateChange>> {
  static Json encode(const std::vector<TemplateChange>& value) {
    return encode_template_changes(value);
  }
  static std::vector<TemplateChange> decode(StrictObject& in, std::string_view key) {
    return nested(in, key, in.array(key), &decode_template_changes);
  }
};

template <>
struct Codec<std::vector<ClaimPlan>> {
  static Json encode(const std::vector<ClaimPlan>& value) {
    Json claims = Json::array();
    for (const ClaimPlan& claim : value) claims.push_back(encode_claim_plan(claim));
    return claims;
  }
  static std::vector<ClaimPlan> decode(StrictObject& in, std::string_view key) {
    const Json& array = in.array(key);
    std::vector<ClaimPlan> claims;
    for (std::size_t i = 0; in.ok() && i < array.size(); ++i) {
      claims.push_back(nested(in, std::string{key} + "[" + std::to_string(i) + "]", array[i],
                              &decode_claim_plan));
    }
    return claims;
  }
};

template <>
struct Codec<std::vector<OrdinalDrain>> {
  static Json encode(const std::vector<OrdinalDrain>& value) {
    Json drains = Json::array();
    for (const OrdinalDrain& drain : value) drains.push_back(encode_ordinal_drain(drain));
    return drains;
  }
  static std::vector<OrdinalDrain> decode(StrictObject& in, std::string_view key) {
    const Json& array = in.array(key);
    std::vector<OrdinalDrain> drains;
    for (std::size_t i = 0; in.ok() && i < array.size(); ++i) {
      drains.push_back(nested(in, std::string{key} + "[" + std::to_string(i) + "]", array[i],
                              &decode_ordinal_drain));
    }
    return drains;
  }
};

template <>
struct Codec<LostReplica> {
  static Json encode(const LostReplica& value) { return encode_lost_replica(value); }
  static LostReplica decode(StrictObject& in, std::string_view key) {
    return nested(in, key, in.object(key), &decode_lost_replica);
  }
};

// A Kubernetes object kept whole (DefinitionSaved): any JSON object.
template <>
struct Codec<Json> {
  static Json encode(const Json& value) { return value; }
  static Json decode(StrictObject& in, std::string_view key) { return in.object(key); }
};

// ---- Fields ----------------------------------------------------------------------------------
// One field of an entry's payload: its JSON key and the member it is read into and written
// from. A field that a later version added is `optional`: records written before it have no
// such key and read as the member's default (Value{}), so the default is not written either
// (such a record stays byte-identical to what the older version wrote). Present, it must hold
// something else, so that each value has one spelling; a count must be positive.
template <class T, class Value>
struct Field {
  std::string_view key;
  Value T::*member;
  bool optional = false;
};

template <class T, class Value>
constexpr Field<T, Value> field(std::string_view key, Value T::*member) {
  return {key, member};
}

template <class T, class Value>
constexpr Field<T, Value> added_field(std::string_view key, Value T::*member) {
  return {key, member, true};
}

template <class Value>
constexpr bool kIsCount =
    (std::is_integral_v<Value> && !std::is_same_v<Value, bool>) || std::is_same_v<Value, Duration>;

template <class T, class Value>
void write_field(Json& data, const T& entry, const Field<T, Value>& field) {
  const Value& value = entry.*field.member;
  if (field.optional && value == Value{}) return;
  data[std::string{field.key}] = Codec<Value>::encode(value);
}

template <class T, class Value>
void read_field(StrictObject& in, T& entry, const Field<T, Value>& field) {
  if (field.optional && (!in.ok() || !in.has(field.key))) return;
  Value& value = entry.*field.member;
  value = Codec<Value>::decode(in, field.key);
  if (!field.optional || !in.ok()) return;
  if constexpr (kIsCount<Value>) {
    if (value <= Value{}) {
      in.fail(in.where() + ": " + std::string{field.key} + " must be positive");
    }
  } else if (value == Value{}) {
    in.fail(in.where() + ": " + std::string{field.key} + " is written only when it is not " +
            Codec<Value>::encode(value).dump());
  }
}

// ---- Text ------------------------------------------------------------------------------------

// Planned entries of large StatefulSets would otherwise fill a screen line several times.
constexpr std::size_t kClaimsShownInPlan = 3;
constexpr std::size_t kDigestCharsShown = 8;

std::string with_thousands(std::int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string human_bytes(std::int64_t bytes) {
  static constexpr std::array<const char*, 6> kUnits = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  value /= 1024;
  while (value >= 1024 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.1f %s", value, kUnits[unit]);
  return text.data();
}

std::string tree(const TreeSummary& summary) {
  std::string digest = summary.digest.substr(0, kDigestCharsShown);
  if (summary.digest.size() > kDigestCharsShown) digest += "…";
  return with_thousands(summary.files) + " files, " + human_bytes(summary.bytes) + ", sha256 " +
         digest;
}

std::string claim_change(const ClaimPlan& claim) {
  std::string from = claim.from_size.to_string();
  std::string to = claim.to_size.to_string();
  if (claim.from_class != claim.to_class) {
    from += " " + (claim.from_class.empty() ? std::string{"(no class)"} : claim.from_class);
    to += " " + (claim.to_class.empty() ? std::string{"(no class)"} : claim.to_class);
  }
  return claim.claim + " " + from + " → " + to;
}

std::string transition(Phase from, Phase to, std::string_view arrow) {
  return std::string{to_string(from)} + std::string{arrow} + std::string{to_string(to)};
}

// ---- The entry table -------------------------------------------------------------------------
// One row per entry type: the name it is journaled under (JournalRecord::type), its payload's
// fields in the order they are read (the first problem found is the one reported), and its
// one line of text for people. What a type does to the operation is its fold rule
// (engine/fold.cc), the only other place a type is spelled out.
//
// Why rows of a traits template rather than members of the structs or nlohmann's
// NLOHMANN_DEFINE_TYPE_* macros: the structs stay plain aggregates that the steps and tests
// build, the journal's whole wire vocabulary and wording can be read (and reviewed for a
// format change) on these few screens, the text keeps its helpers private to this file, and
// the macros are neither strict (they ignore unknown keys, throw on missing ones) nor able to
// leave a field out. A type in the Event variant without a row does not compile.
template <class T>
struct EntryType;

template <>
struct EntryType<OperationStarted> {
  static constexpr std::string_view name = "OperationStarted";
  static constexpr auto fields = std::tuple{
      field("trigger", &OperationStarted::trigger),
      field("stsUid", &OperationStarted::sts_uid),
      field("originalReplicas", &OperationStarted::original_replicas),
      added_field("kind", &OperationStarted::kind),
  };
  static std::string text(const OperationStarted& e) {
    std::string replicas =
        std::to_string(e.original_replicas) + (e.original_replicas == 1 ? " replica" : " replicas");
    if (e.kind != OperationKind::Resize) {
      replicas = std::string{to_string(e.kind)} + ", " + replicas;
    }
    return e.trigger.empty() ? replicas : e.trigger + " (" + replicas + ")";
  }
};

template <>
struct EntryType<TemplateUpdateRequested> {
  static constexpr std::string_view name = "TemplateUpdateRequested";
  static constexpr auto fields = std::tuple{
      field("changes", &TemplateUpdateRequested::changes),
  };
  static std::string text(const TemplateUpdateRequested& e) {
    std::string out;
    for (const TemplateChange& c : e.changes) {
      if (!out.empty()) out += ", ";
      out += c.template_name + ":";
      if (c.storage) out += " storage " + c.storage->to_string();
      if (!c.storage_class.empty()) out += " class " + c.storage_class;
    }
    return out;
  }
};

template <>
struct EntryType<DefinitionSaved> {
  static constexpr std::string_view name = "DefinitionSaved";
  static constexpr auto fields = std::tuple{
      field("configMap", &DefinitionSaved::config_map),
      field("definition", &DefinitionSaved::definition),
  };
  static std::string text(const DefinitionSaved& e) {
    return "StatefulSet definition kept in ConfigMap " + e.config_map;
  }
};

template <>
struct EntryType<StatefulSetRecreated> {
  static constexpr std::string_view name = "StatefulSetRecreated";
  static constexpr auto fields = std::tuple{
      field("uid", &StatefulSetRecreated::uid),
  };
  static std::string text(const StatefulSetRecreated& e) { return "new uid " + e.uid; }
};

template <>
struct EntryType<Planned> {
  static constexpr std::string_view name = "Planned";
  static constexpr auto fields = std::tuple{
      field("path", &Planned::path),
      field("claims", &Planned::claims),
      added_field("rebindUnavailable", &Planned::rebind_unavailable),
      added_field("strategy", &Planned::strategy),
  };
  static std::string text(const Planned& e) {
    const std::size_t count = e.claims.size();
    std::string out = std::string{to_string(e.path)} + " path, " + std::to_string(count) +
                      (count == 1 ? " claim" : " claims");
    for (std::size_t i = 0; i < count && i < kClaimsShownInPlan; ++i) {
      out += (i == 0 ? ": " : ", ") + claim_change(e.claims[i]);
    }
    if (count > kClaimsShownInPlan) {
      out += ", … and " + std::to_string(count - kClaimsShownInPlan) + " more";
    }
    if (!e.rebind_unavailable.empty()) out += " (not rebind: " + e.rebind_unavailable + ")";
    if (e.strategy != Strategy::AllAtOnce) {
      out += ", " + std::string{to_string(e.strategy)} + ": one ordinal at a time";
    }
    return out;
  }
};

template <>
struct EntryType<PhaseChanged> {
  static constexpr std::string_view name = "PhaseChanged";
  static constexpr auto fields = std::tuple{
      field("from", &PhaseChanged::from),
      field("to", &PhaseChanged::to),
      field("event", &PhaseChanged::event),
  };
  static std::string text(const PhaseChanged& e) {
    return transition(e.from, e.to, " → ") + " (" + std::string{to_string(e.event)} + ")";
  }
};

template <>
struct EntryType<ActionIntended> {
  static constexpr std::string_view name = "ActionIntended";
  static constexpr auto fields = std::tuple{
      field("phase", &ActionIntended::phase),
      field("action", &ActionIntended::action),
      field("target", &ActionIntended::target),
      field("detail", &ActionIntended::detail),
  };
  static std::string text(const ActionIntended& e) {
    return e.action + " " + e.target + (e.detail.empty() ? "" : " (" + e.detail + ")");
  }
};

template <>
struct EntryType<PreCopied> {
  static constexpr std::string_view name = "PreCopied";
  static constexpr auto fields = std::tuple{
      field("claim", &PreCopied::claim),
      field("passes", &PreCopied::passes),
      field("bytes", &PreCopied::bytes),
      field("skipped", &PreCopied::skipped),
  };
  static std::string text(const PreCopied& e) {
    if (!e.skipped.empty()) return e.claim + ": not pre-copied (" + e.skipped + ")";
    return e.claim + ": " + std::to_string(e.passes) + (e.passes == 1 ? " pass, " : " passes, ") +
           std::to_string(e.bytes) + " bytes copied while its replica ran";
  }
};

template <>
struct EntryType<BackupVerified> {
  static constexpr std::string_view name = "BackupVerified";
  static constexpr auto fields = std::tuple{
      field("claim", &BackupVerified::claim),
      field("summary", &BackupVerified::summary),
      added_field("generation", &BackupVerified::generation),
  };
  static std::string text(const BackupVerified& e) { return e.claim + ": " + tree(e.summary); }
};

template <>
struct EntryType<SourceDeleted> {
  static constexpr std::string_view name = "SourceDeleted";
  static constexpr auto fields = std::tuple{
      field("claim", &SourceDeleted::claim),
  };
  static std::string text(const SourceDeleted& e) { return e.claim; }
};

template <>
struct EntryType<ClaimRecreated> {
  static constexpr std::string_view name = "ClaimRecreated";
  static constexpr auto fields = std::tuple{
      field("claim", &ClaimRecreated::claim),
      field("uid", &ClaimRecreated::uid),
  };
  static std::string text(const ClaimRecreated& e) { return e.claim + ", uid " + e.uid; }
};

template <>
struct EntryType<VolumeRetained> {
  static constexpr std::string_view name = "VolumeRetained";
  static constexpr auto fields = std::tuple{
      field("claim", &VolumeRetained::claim),
      field("role", &VolumeRetained::role),
      field("volume", &VolumeRetained::volume),
      field("policy", &VolumeRetained::policy),
  };
  static std::string text(const VolumeRetained& e) {
    return e.claim + ": " + (e.role == VolumeRole::Source ? "its volume " : "its copy's volume ") +
           e.volume + " kept (Retain; its own policy " + e.policy + ")";
  }
};

template <>
struct EntryType<ReclaimPolicyRestored> {
  static constexpr std::string_view name = "ReclaimPolicyRestored";
  static constexpr auto fields = std::tuple{
      field("claim", &ReclaimPolicyRestored::claim),
      field("role", &ReclaimPolicyRestored::role),
  };
  static std::string text(const ReclaimPolicyRestored& e) {
    return e.claim + ": " + (e.role == VolumeRole::Source ? "its old volume's" : "its copy's") +
           " reclaim policy put back";
  }
};

template <>
struct EntryType<SourceRebound> {
  static constexpr std::string_view name = "SourceRebound";
  static constexpr auto fields = std::tuple{
      field("claim", &SourceRebound::claim),
      field("uid", &SourceRebound::uid),
  };
  static std::string text(const SourceRebound& e) {
    return e.claim + " on its own volume again, uid " + e.uid;
  }
};

template <>
struct EntryType<ClaimDiscarded> {
  static constexpr std::string_view name = "ClaimDiscarded";
  static constexpr auto fields = std::tuple{
      field("claim", &ClaimDiscarded::claim),
      field("uid", &ClaimDiscarded::uid),
      field("reason", &ClaimDiscarded::reason),
  };
  static std::string text(const ClaimDiscarded& e) {
    return e.claim + ", uid " + e.uid + ": " + e.reason;
  }
};

template <>
struct EntryType<RestoreVerified> {
  static constexpr std::string_view name = "RestoreVerified";
  static constexpr auto fields = std::tuple{
      field("claim", &RestoreVerified::claim),
      field("summary", &RestoreVerified::summary),
  };
  static std::string text(const RestoreVerified& e) { return e.claim + ": " + tree(e.summary); }
};

template <>
struct EntryType<ClaimMeasured> {
  static constexpr std::string_view name = "ClaimMeasured";
  static constexpr auto fields = std::tuple{
      field("claim", &ClaimMeasured::claim), field("uid", &ClaimMeasured::uid),
      field("files", &ClaimMeasured::files), field("bytes", &ClaimMeasured::bytes),
      field("used", &ClaimMeasured::used),
  };
  static std::string text(const ClaimMeasured& e) {
    return e.claim + ": " + std::to_string(e.files) + " files, " + std::to_string(e.bytes) +
           " bytes, " + std::to_string(e.used) + " bytes on disk";
  }
};

template <>
struct EntryType<ClaimExpanded> {
  static constexpr std::string_view name = "ClaimExpanded";
  static constexpr auto fields = std::tuple{
      field("claim", &ClaimExpanded::claim),
  };
  static std::string text(const ClaimExpanded& e) { return e.claim; }
};

template <>
struct EntryType<StepFailed> {
  static constexpr std::string_view name = "StepFailed";
  static constexpr auto fields = std::tuple{
      field("phase", &StepFailed::phase),
      field("reason", &StepFailed::reason),
      field("critical", &StepFailed::critical),
  };
  static std::string text(const StepFailed& e) {
    return std::string{e.critical ? "critical: " : "transient: "} + e.reason;
  }
};

template <>
struct EntryType<Resumed> {
  static constexpr std::string_view name = "Resumed";
  static constexpr auto fields = std::tuple{
      field("snapshot", &Resumed::snapshot),
  };
  static std::string text(const Resumed& e) {
    return "from the annotation, at phase " + std::string{to_string(e.snapshot.phase)};
  }
};

template <>
struct EntryType<OperationFinished> {
  static constexpr std::string_view name = "OperationFinished";
  static constexpr auto fields = std::tuple{
      field("outcome", &OperationFinished::outcome),
  };
  static std::string text(const OperationFinished& e) { return std::string{to_string(e.outcome)}; }
};

template <>
struct EntryType<ApprovalAwaited> {
  static constexpr std::string_view name = "ApprovalAwaited";
  static constexpr auto fields = std::tuple{
      field("from", &ApprovalAwaited::from),
      field("to", &ApprovalAwaited::to),
      field("event", &ApprovalAwaited::event),
      field("mode", &ApprovalAwaited::mode),
  };
  // "->", not PhaseChanged's "→": the wording replay has always shown here, and the one
  // `stsresize status` uses for the same wait.
  static std::string text(const ApprovalAwaited& e) {
    return "awaiting approval of " + transition(e.from, e.to, " -> ") + " (mode " + e.mode + ")";
  }
};

template <>
struct EntryType<OperatorAction> {
  static constexpr std::string_view name = "OperatorAction";
  static constexpr auto fields = std::tuple{
      field("action", &OperatorAction::action), field("phase", &OperatorAction::phase),
      field("by", &OperatorAction::by),         field("at", &OperatorAction::at),
      field("nonce", &OperatorAction::nonce),   field("refused", &OperatorAction::refused),
  };
  static std::string text(const OperatorAction& e) {
    std::string out =
        e.action + " in " + std::string{to_string(e.phase)} + " by " + e.by + " at " + e.at;
    if (!e.refused.empty()) out += ": refused: " + e.refused;
    return out;
  }
};

template <>
struct EntryType<DrainPlanned> {
  static constexpr std::string_view name = "DrainPlanned";
  static constexpr auto fields = std::tuple{
      field("ordinals", &DrainPlanned::ordinals),
      added_field("deleteAfterMs", &DrainPlanned::delete_after),
  };
  static std::string text(const DrainPlanned& e) {
    std::string out;
    if (e.delete_after.count() > 0) {
      out = "claims deleted after " + format_duration(e.delete_after) + "; ";
    }
    for (const OrdinalDrain& d : e.ordinals) {
      out += (out.empty() ? "ordinal " : "; ordinal ") + std::to_string(d.ordinal) + ":";
      for (std::size_t i = 0; i < d.claims.size(); ++i) {
        out += (i == 0 ? " " : ", ") + d.claims[i].claim;
      }
    }
    return out;
  }
};

template <>
struct EntryType<CleanupPodCreated> {
  static constexpr std::string_view name = "CleanupPodCreated";
  static constexpr auto fields = std::tuple{
      field("ordinal", &CleanupPodCreated::ordinal),
      field("uid", &CleanupPodCreated::uid),
  };
  static std::string text(const CleanupPodCreated& e) {
    return "ordinal " + std::to_string(e.ordinal) + ": cleanup pod uid " + e.uid;
  }
};

template <>
struct EntryType<CleanupSucceeded> {
  static constexpr std::string_view name = "CleanupSucceeded";
  static constexpr auto fields = std::tuple{
      field("ordinal", &CleanupSucceeded::ordinal),
  };
  static std::string text(const CleanupSucceeded& e) {
    return "ordinal " + std::to_string(e.ordinal) + ": cleanup pod Succeeded";
  }
};

template <>
struct EntryType<DrainCancelled> {
  static constexpr std::string_view name = "DrainCancelled";
  static constexpr auto fields = std::tuple{
      field("ordinal", &DrainCancelled::ordinal),
      field("reason", &DrainCancelled::reason),
  };
  static std::string text(const DrainCancelled& e) {
    return "ordinal " + std::to_string(e.ordinal) + " cancelled, claims kept: " + e.reason;
  }
};

template <>
struct EntryType<DrainedClaimDeleted> {
  static constexpr std::string_view name = "DrainedClaimDeleted";
  static constexpr auto fields = std::tuple{
      field("claim", &DrainedClaimDeleted::claim),
  };
  static std::string text(const DrainedClaimDeleted& e) { return e.claim; }
};

template <>
struct EntryType<ReplicaLost> {
  static constexpr std::string_view name = "ReplicaLost";
  static constexpr auto fields = std::tuple{
      field("lost", &ReplicaLost::lost),
  };
  static std::string text(const ReplicaLost& e) {
    std::string out = "ordinal " + std::to_string(e.lost.ordinal) + ": node " + e.lost.node + " " +
                      e.lost.gone + "; lost:";
    for (std::size_t i = 0; i < e.lost.claims.size(); ++i) {
      out += (i == 0 ? " " : ", ") + e.lost.claims[i].claim + " (" + e.lost.claims[i].volume + ")";
    }
    return out + "; grace " + format_duration(e.lost.grace);
  }
};

template <>
struct EntryType<RecoveryCancelled> {
  static constexpr std::string_view name = "RecoveryCancelled";
  static constexpr auto fields = std::tuple{
      field("reason", &RecoveryCancelled::reason),
  };
  static std::string text(const RecoveryCancelled& e) { return e.reason; }
};

template <>
struct EntryType<LostClaimDeleted> {
  static constexpr std::string_view name = "LostClaimDeleted";
  static constexpr auto fields = std::tuple{
      field("claim", &LostClaimDeleted::claim),
  };
  static std::string text(const LostClaimDeleted& e) { return e.claim; }
};

template <>
struct EntryType<LostPodDeleted> {
  static constexpr std::string_view name = "LostPodDeleted";
  static constexpr auto fields = std::tuple{
      field("uid", &LostPodDeleted::uid),
  };
  static std::string text(const LostPodDeleted& e) {
    return e.uid.empty() ? std::string{"the pod was gone"} : "pod uid " + e.uid;
  }
};

template <>
struct EntryType<MarkedRecovered> {
  static constexpr std::string_view name = "MarkedRecovered";
  static constexpr auto fields = std::tuple{
      field("name", &MarkedRecovered::name),
      field("uid", &MarkedRecovered::uid),
  };
  static std::string text(const MarkedRecovered& e) { return e.name + ", uid " + e.uid; }
};

template <>
struct EntryType<ReseedHeld> {
  static constexpr std::string_view name = "ReseedHeld";
  static constexpr auto fields = std::tuple{};
  static std::string text(const ReseedHeld&) {
    return "the StatefulSet paused for a re-seed before the first delete";
  }
};

template <>
struct EntryType<ReseedPodCreated> {
  static constexpr std::string_view name = "ReseedPodCreated";
  static constexpr auto fields = std::tuple{
      field("pod", &ReseedPodCreated::pod),
      field("uid", &ReseedPodCreated::uid),
  };
  static std::string text(const ReseedPodCreated& e) { return e.pod + ", uid " + e.uid; }
};

template <>
struct EntryType<ReseedEnded> {
  static constexpr std::string_view name = "ReseedEnded";
  static constexpr auto fields = std::tuple{
      field("failure", &ReseedEnded::failure),
  };
  static std::string text(const ReseedEnded& e) {
    return e.failure.empty() ? std::string{"succeeded"} : "failed: " + e.failure;
  }
};

// ---- From the rows -----------------------------------------------------------------------------

template <class E>
using RowOf = EntryType<std::remove_cvref_t<E>>;

template <class T>
Json encode_fields(const T& entry) {
  Json data = Json::object();
  std::apply([&](const auto&... field) { (write_field(data, entry, field), ...); },
             EntryType<T>::fields);
  return data;
}

template <class T>
Entry decode_fields(StrictObject& in) {
  T entry;
  std::apply([&](const auto&... field) { (read_field(in, entry, field), ...); },
             EntryType<T>::fields);
  return entry;
}

// Each row's name and decoder, in the order of the Event variant: what decoding looks a
// JournalRecord's type up in.
struct Decoder {
  std::string_view name;
  Entry (*decode)(StrictObject& in);
};

template <class... Entries>
constexpr auto decoders_of(std::type_identity<std::variant<Entries...>>) {
  return std::array<Decoder, sizeof...(Entries)>{
      Decoder{EntryType<Entries>::name, &decode_fields<Entries>}...};
}

constexpr auto kDecoders = decoders_of(std::type_identity<Entry>{});

constexpr bool names_are_unique() {
  for (std::size_t i = 0; i < kDecoders.size(); ++i) {
    for (std::size_t j = i + 1; j < kDecoders.size(); ++j) {
      if (kDecoders[i].name == kDecoders[j].name) return false;
    }
  }
  return true;
}
static_assert(names_are_unique(), "two entry types share a journal name");

}  // namespace

std::string_view entry_type(const Entry& event) {
  return std::visit([](const auto& entry) { return RowOf<decltype(entry)>::name; }, event);
}

Json encode_entry_data(const Entry& event) {
  return std::visit([](const auto& entry) { return encode_fields(entry); }, event);
}

std::expected<Entry, std::string> decode_entry(std::string_view type, const Json& data) {
  for (const Decoder& decoder : kDecoders) {
    if (decoder.name != type) continue;
    StrictObject in{data, "event " + std::string{type}};
    Entry event = decoder.decode(in);
    if (auto done = in.finish(); !done) return std::unexpected(done.error());
    return event;
  }
  return std::unexpected("unknown event type \"" + std::string{type} + "\"");
}

std::expected<Entry, std::string> decode_entry(const JournalRecord& record) {
  return decode_entry(record.type, record.data);
}

JournalRecord make_record(const Operation& operation, std::int64_t sequence, TimePoint time,
                          const Entry& event) {
  JournalRecord record;
  record.operation_id = operation.id;
  record.sequence = sequence;
  record.time = time;
  record.ns = operation.ns;
  record.statefulset = operation.statefulset;
  record.type = std::string{entry_type(event)};
  record.data = encode_entry_data(event);
  return record;
}

std::string describe(const Entry& event) {
  return std::visit([](const auto& entry) { return RowOf<decltype(entry)>::text(entry); }, event);
}

}  // namespace stsresize
