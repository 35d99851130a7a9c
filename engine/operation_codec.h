#pragma once
// The versioned JSON form of an Operation: {"v":1, ...}. An operation started by an explicit
// request adds "templateUpdate": {"changes": [...], "statefulsetRecreated": bool}, a warning
// given in the current phase adds "warning": "<text>", a Failed operation adds "failedIn":
// "<phase it failed in>" (what `advance --retry` resumes); each is omitted otherwise, so
// documents without them read as before (a Failed one without "failedIn" then cannot be
// resumed in place). Used for the
// authoritative annotation (engine/annotations.h) and for the snapshot carried by a Resumed journal
// event, so both say exactly the same thing. Decoding is strict (engine/strict_json.h).
#include <expected>
#include <string>
#include <vector>

#include "engine/json.h"
#include "engine/operation.h"

namespace stsresize {

inline constexpr int kOperationFormatVersion = 1;

Json encode_operation(const Operation& operation);
// `where` names the source in error messages.
std::expected<Operation, std::string> decode_operation(const Json& document,
                                                       const std::string& where);

Json encode_claim_plan(const ClaimPlan& claim);
std::expected<ClaimPlan, std::string> decode_claim_plan(const Json& document,
                                                        const std::string& where);

// {"template": name, "storage": "20Gi" or "", "storageClassName": name or ""}.
Json encode_ordinal_drain(const OrdinalDrain& drain);
std::expected<OrdinalDrain, std::string> decode_ordinal_drain(const Json& document,
                                                              const std::string& where);

Json encode_lost_replica(const LostReplica& lost);
std::expected<LostReplica, std::string> decode_lost_replica(const Json& document,
                                                            const std::string& where);

Json encode_template_change(const TemplateChange& change);
std::expected<TemplateChange, std::string> decode_template_change(const Json& document,
                                                                  const std::string& where);
Json encode_template_changes(const std::vector<TemplateChange>& changes);
std::expected<std::vector<TemplateChange>, std::string> decode_template_changes(
    const Json& array, const std::string& where);

Json encode_tree_summary(const TreeSummary& summary);
std::expected<TreeSummary, std::string> decode_tree_summary(const Json& document,
                                                            const std::string& where);

}  // namespace stsresize
