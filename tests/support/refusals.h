#pragma once
// The text of a person's action refused, or empty when it is allowed: the rules
// (engine/actions/rules.h) decided against the state machine's own table, put into words by
// engine/actions/explain.h, as the CLI and the engine do. Tests compare words.
#include <expected>
#include <string>
#include <vector>

#include "engine/actions/cluster_view.h"
#include "engine/actions/explain.h"
#include "engine/actions/request.h"
#include "engine/actions/rules.h"
#include "states/machine.h"

namespace stsresize::testing {

inline std::string why_not(const Verdict& verdict, const Operation& op) {
  return verdict ? std::string{} : explain(verdict.error(), op);
}
inline std::string approval_mismatch(const AdvanceRequest& request, const Operation& op) {
  return why_not(check_approve(request, op), op);
}
inline std::string abort_refusal(const Operation& op, const std::vector<std::string>& going = {}) {
  return why_not(check_abort(op, PhaseMachine::rules(op.kind), going), op);
}
inline std::string abort_mismatch(const AdvanceRequest& request, const Operation& op,
                                  const std::vector<std::string>& going = {}) {
  return why_not(check_abort(request, op, PhaseMachine::rules(op.kind), going), op);
}
inline std::string skip_refusal(const Operation& op) {
  return why_not(check_skip(op, PhaseMachine::rules(op.kind)), op);
}
inline std::string skip_mismatch(const AdvanceRequest& request, const Operation& op) {
  return why_not(check_skip(request, op, PhaseMachine::rules(op.kind)), op);
}
inline std::string retry_refusal(const Operation& op, const std::vector<Json>& claims,
                                 const std::vector<Json>& jobs,
                                 const std::expected<std::string, std::string>& wanted) {
  return why_not(check_retry(op, PhaseMachine::rules(op.kind), claims, jobs, wanted), op);
}
inline std::string resume_refusal(const Operation& op, const std::vector<Json>& claims,
                                  const std::vector<Json>& jobs) {
  return why_not(check_resume(op, PhaseMachine::rules(op.kind), claims, jobs), op);
}
inline std::string resume_mismatch(const AdvanceRequest& request, const Operation& op,
                                   const std::vector<Json>& claims, const std::vector<Json>& jobs) {
  return why_not(check_resume(request, op, PhaseMachine::rules(op.kind), claims, jobs), op);
}

}  // namespace stsresize::testing
