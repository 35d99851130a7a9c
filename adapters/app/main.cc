// The stsresize command line. Subcommands are assembled here; each one's work lives in a
// library function (adapters/app/*_command.h) so that tests call it without a process.
#include <CLI/CLI.hpp>
#include <iostream>

#include "adapters/app/replay_command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "stsresize resizes the PersistentVolumeClaims of StatefulSets safely: it detects a "
      "volumeClaimTemplate that grew, then expands the claims in place when their StorageClass "
      "allows it, or scales the set down, backs every claim up with a verified copy, recreates "
      "it at the new size, restores, and scales back up. Every step is journaled before it is "
      "taken; the state of an operation lives in annotations on its StatefulSet.",
      "stsresize"};
  app.require_subcommand(1);

  stsresize::ReplayOptions replay;
  CLI::App* replay_cmd = app.add_subcommand(
      "replay",
      "Replay a journal through the controller's state machine and print each operation's "
      "timeline (sequence, time, phase after the event, event, details). Exit status: 0 when "
      "every operation is consistent, 1 when a record is one the state machine would refuse "
      "(the message names its sequence and why), 2 on a usage or I/O error.");
  replay_cmd->add_option("--journal", replay.journal_path, "SQLite journal file (opened read-only)")
      ->required();
  replay_cmd->add_option("--operation", replay.operation_id,
                         "Only this operation id (default: every operation)");
  replay_cmd->add_option("-o,--output", replay.output, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? 0 : stsresize::kReplayUsageError;
  }
  if (replay_cmd->parsed()) return stsresize::run_replay_file(replay, std::cout, std::cerr);
  return stsresize::kReplayUsageError;
}
