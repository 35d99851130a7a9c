#pragma once
// Shell completion, for `stsresize` and for the kubectl plugin `kubectl stsresize`. One answerer:
// `stsresize __complete WORD... PARTIAL` prints the candidates for PARTIAL, one per line
// ("candidate<TAB>description"), then ":DIRECTIVE", the protocol of cobra's `__complete` that
// kubectl (v1.26 and later) speaks with a plugin's `kubectl_complete-<plugin>` executable. The
// scripts of `stsresize completion bash|zsh` call it too. Candidates come from the command line's
// own definition (subcommands, flags); a value typed FILE, DB or EXPORT is left to the shell's
// file completion, and a StatefulSet (STS, NS/STS) is listed from the cluster.
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace stsresize::cli {

// cobra's ShellCompDirective bits.
inline constexpr int kCompleteDefault = 0;     // the shell may complete file names
inline constexpr int kCompleteNoFileComp = 4;  // no file names

struct CompletionAnswer {
  std::vector<std::pair<std::string, std::string>> candidates;  // (word, description)
  int directive = kCompleteNoFileComp;
};

// Where the StatefulSets are, as the words typed so far say.
struct CompletionTarget {
  std::string kubeconfig;  // --kubeconfig
  std::string context;     // --context
  std::string ns;          // -n/--namespace ("": the kubeconfig context's)
};

// The StatefulSet names of a namespace ("" = the target's default), or none when the cluster
// cannot be read: a completion never prints an error.
using ListStatefulSets = std::function<std::vector<std::string>(const CompletionTarget&)>;

// `words`: what follows the program's name, the last one the word being completed ("" for a new
// word).
CompletionAnswer complete(const CLI::App& app, const std::vector<std::string>& words,
                          const ListStatefulSets& statefulsets);

void print_completion(const CompletionAnswer& answer, std::ostream& out);

// The script that makes `program` (an executable on PATH) complete in `shell` (bash or zsh)
// through its `__complete`; "" for another shell.
std::string completion_script(std::string_view shell, std::string_view program);

// Lists StatefulSets with the same credentials as `status` (HttpKubernetes).
std::vector<std::string> list_statefulsets_from_cluster(const CompletionTarget& target);

}  // namespace stsresize::cli
