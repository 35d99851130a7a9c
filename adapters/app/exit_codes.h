#pragma once
// Exit codes of every stsresize subcommand, documented in `stsresize --help`.
namespace stsresize::cli {

inline constexpr int kExitOk = 0;
// replay: the journal contradicts itself or the state machine.
inline constexpr int kExitInconsistent = 1;
// Bad flags or arguments, or an input that cannot be read (missing file, newer schema).
inline constexpr int kExitUsage = 2;
// run: the leader lease was lost; the process ends at once so that no step runs unleased.
inline constexpr int kExitLeadershipLost = 3;
// status, describe: the API server could not be reached, or refused to answer (credentials
// rejected, RBAC, server error): nothing is wrong with the command line.
inline constexpr int kExitClusterUnreachable = 4;
// advance: refused (nothing waits, an approval is already pending, unreadable state); the
// message says why and what to run instead.
inline constexpr int kExitRefused = 5;
// advance --apply-locally: stopped before the operation rested (--timeout, SIGINT/SIGTERM);
// nothing is lost, the annotations say where it is.
inline constexpr int kExitIncomplete = 6;

}  // namespace stsresize::cli
