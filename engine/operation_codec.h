#pragma once
// The versioned JSON form of an Operation: {"v":1, ...}. Used for the authoritative
// annotation (engine/annotations.h) and for the snapshot carried by a Resumed journal event,
// so both say exactly the same thing. Decoding is strict (engine/strict_json.h).
#include <expected>
#include <string>

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

Json encode_tree_summary(const TreeSummary& summary);
std::expected<TreeSummary, std::string> decode_tree_summary(const Json& document,
                                                            const std::string& where);

}  // namespace stsresize
