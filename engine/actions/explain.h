#pragma once
// Text for people about a person's actions: the one place that turns a Refusal
// (engine/actions/rules.h) into words, and that owns the commands and kubectl hints those words
// give (which command approves, how to watch the StatefulSet, how to list the backups). The
// CLI's refusals, the engine's AdvanceRefused Events and the journal's refused OperatorAction
// all read the same sentence. Pure.
#include <string>
#include <string_view>
#include <vector>

#include "engine/actions/request.h"
#include "engine/actions/rules.h"
#include "engine/operation.h"

namespace stsresize {

// Why `refusal` was given for `op`, and what to do instead.
std::string explain(const Refusal& refusal, const Operation& op);

// "stsresize advance <ns>/<name> --approve" (--abort, --retry, --skip-step).
std::string advance_command_line(Action action, std::string_view ns, std::string_view name);
// "kubectl -n NS get sts NAME -L stsresize.dev/phase -L stsresize.dev/awaiting-approval -w"
std::string watch_hint(std::string_view ns, std::string_view name);
// "kubectl -n NS get pvc -l stsresize.dev/operation=ID,stsresize.dev/purpose=backup"
std::string backups_hint(const Operation& op);
// The rebind path: where the data of each claim whose source was deleted and that is not on its
// verified copy yet is, both volumes kept (Retain): "data-web-0: its own volume pvc-1, its
// verified copy pvc-2". Empty when none.
std::string kept_volumes_hint(const Operation& op);

// The failure an abort leaves in the operation: "aborted by alice in BackingUp".
std::string abort_failure(std::string_view by, Phase phase);
// The new operation's trigger: "retry of web-1a2b3c4d by alice: data 1Gi -> 2Gi (3 claims)".
std::string retry_trigger(std::string_view old_operation, std::string_view by,
                          std::string_view trigger);
// What skipping CleaningUp leaves, for the CLI and the StepSkipped Event: "backup claims A, B
// and Jobs C (label stsresize.dev/operation=ID); delete them once no longer needed ...".
std::string skip_keeps(const Operation& op, const std::vector<std::string>& claims,
                       const std::vector<std::string>& jobs);

}  // namespace stsresize
