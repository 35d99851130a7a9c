#include "adapters/app/completion.h"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "adapters/app/credentials.h"
#include "adapters/kube/http_kubernetes.h"
#include "engine/k8s_objects.h"

namespace stsresize::cli {

namespace {

bool takes_value(const CLI::Option* option) {
  return option->get_expected_max() > 0;
}

// The option of `app` that `word` names ("--journal", "--journal=x", "-n"), or nullptr.
const CLI::Option* option_named(const CLI::App& app, std::string_view word) {
  std::string name{word.substr(0, word.find('='))};
  for (const CLI::Option* option : app.get_options()) {
    if (!option->nonpositional()) continue;
    if (name.starts_with("--")) {
      for (const std::string& l : option->get_lnames()) {
        if ("--" + l == name) return option;
      }
    } else {
      for (const std::string& s : option->get_snames()) {
        if ("-" + s == name) return option;
      }
    }
  }
  return nullptr;
}

const CLI::App* subcommand_named(const CLI::App& app, std::string_view word) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == word && !sub->get_group().empty()) return sub;
  }
  return nullptr;
}

// What a value typed `type_name` is completed with.
CompletionAnswer complete_value(const std::string& type_name, const std::string& partial,
                                const CompletionTarget& target,
                                const ListStatefulSets& statefulsets) {
  CompletionAnswer answer;
  if (type_name == "FILE" || type_name == "DB" || type_name == "EXPORT") {
    answer.directive = kCompleteDefault;
    return answer;
  }
  if (type_name == "STS" || type_name == "NS/STS") {
    // NS/NAME is completed within NS once a slash is typed.
    CompletionTarget in = target;
    std::string prefix;
    if (const auto slash = partial.find('/'); type_name == "NS/STS" && slash != std::string::npos) {
      in.ns = partial.substr(0, slash);
      prefix = partial.substr(0, slash + 1);
    }
    for (const std::string& name : statefulsets(in)) {
      if ((prefix + name).starts_with(partial)) answer.candidates.push_back({prefix + name, ""});
    }
  }
  return answer;
}

}  // namespace

CompletionAnswer complete(const CLI::App& app, const std::vector<std::string>& words,
                          const ListStatefulSets& statefulsets) {
  const CLI::App* command = &app;
  const CLI::Option* awaiting = nullptr;  // an option whose value is the next word
  bool positional_only = false;           // after "--"
  int positionals = 0;
  CompletionTarget target;
  const auto remember = [&](const CLI::Option* option, const std::string& value) {
    if (option->check_lname("kubeconfig")) target.kubeconfig = value;
    if (option->check_lname("context")) target.context = value;
    if (option->check_lname("namespace")) target.ns = value;
  };
  const std::string partial = words.empty() ? "" : words.back();
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& word = words[i];
    if (awaiting != nullptr) {
      remember(awaiting, word);
      awaiting = nullptr;
    } else if (!positional_only && word == "--") {
      positional_only = true;
    } else if (!positional_only && word.size() > 1 && word.starts_with('-')) {
      const CLI::Option* option = option_named(*command, word);
      if (option == nullptr || !takes_value(option)) continue;
      if (const auto eq = word.find('='); eq != std::string::npos) {
        remember(option, word.substr(eq + 1));
      } else if (!word.starts_with("--") && word.size() > 2) {
        remember(option, word.substr(2));  // -nshop
      } else {
        awaiting = option;
      }
    } else if (const CLI::App* sub = positionals == 0 ? subcommand_named(*command, word) : nullptr;
               sub != nullptr && !positional_only) {
      command = sub;
    } else {
      ++positionals;
    }
  }

  if (awaiting != nullptr) {
    return complete_value(awaiting->get_type_name(), partial, target, statefulsets);
  }
  CompletionAnswer answer;
  if (!positional_only && partial.starts_with('-')) {
    if (const auto eq = partial.find('='); eq != std::string::npos) {
      const CLI::Option* option = option_named(*command, partial);
      if (option == nullptr || !takes_value(option)) return answer;
      CompletionAnswer value =
          complete_value(option->get_type_name(), partial.substr(eq + 1), target, statefulsets);
      for (auto& [word, description] : value.candidates) {
        word = partial.substr(0, eq + 1) + word;
      }
      return value;
    }
    for (const CLI::Option* option : command->get_options()) {
      if (!option->nonpositional()) continue;
      for (const std::string& l : option->get_lnames()) {
        const std::string flag = "--" + l;
        if (flag.starts_with(partial))
          answer.candidates.push_back({flag, option->get_description()});
      }
      if (partial.size() <= 2) {
        for (const std::string& s : option->get_snames()) {
          const std::string flag = "-" + s;
          if (flag.starts_with(partial)) {
            answer.candidates.push_back({flag, option->get_description()});
          }
        }
      }
    }
    return answer;
  }
  if (positionals == 0 && !positional_only) {
    for (const CLI::App* sub : command->get_subcommands([](const CLI::App*) { return true; })) {
      if (sub->get_group().empty() || !sub->get_name().starts_with(partial)) continue;
      answer.candidates.push_back({sub->get_name(), sub->get_description()});
    }
    if (!answer.candidates.empty()) return answer;
  }
  // The command's positional arguments, in order.
  int index = 0;
  for (const CLI::Option* option : command->get_options()) {
    if (option->nonpositional()) continue;
    if (index++ == positionals) {
      return complete_value(option->get_type_name(), partial, target, statefulsets);
    }
  }
  return answer;
}

void print_completion(const CompletionAnswer& answer, std::ostream& out) {
  for (const auto& [word, description] : answer.candidates) {
    out << word;
    // The first line of the description only: a tab or newline in it would break the protocol.
    std::string first = description.substr(0, description.find('\n'));
    std::ranges::replace(first, '\t', ' ');
    if (!first.empty()) out << '\t' << first;
    out << '\n';
  }
  out << ':' << answer.directive << '\n';
}

std::string completion_script(std::string_view shell, std::string_view program) {
  // The function is named after the program, '-' made '_' (kubectl-stsresize is a program too).
  std::string function = "_" + std::string{program} + "_complete";
  std::ranges::replace(function, '-', '_');
  const std::string p{program};
  if (shell == "bash") {
    return "# bash completion for " + p + ": source <(" + p + " completion bash)\n" + function +
           "() {\n"
           "  local out line directive\n"
           "  out=$(\"${COMP_WORDS[0]}\" __complete \"${COMP_WORDS[@]:1:COMP_CWORD}\" "
           "2>/dev/null) || return\n"
           "  directive=${out##*:}\n"
           "  COMPREPLY=()\n"
           "  while IFS= read -r line; do\n"
           "    [[ $line == :* || -z $line ]] && continue\n"
           "    COMPREPLY+=(\"${line%%$'\\t'*}\")\n"
           "  done <<<\"$out\"\n"
           "  if ((${#COMPREPLY[@]} == 0 && (directive & 4) == 0)); then\n"
           "    compopt -o default 2>/dev/null\n"
           "  fi\n"
           "}\n"
           "complete -F " +
           function + " " + p + "\n";
  }
  if (shell == "zsh") {
    return "#compdef " + p + "\n# zsh completion for " + p + ": source <(" + p +
           " completion zsh)\n" + function +
           "() {\n"
           "  local out directive line\n"
           "  local -a lines candidates\n"
           "  out=$(\"${words[1]}\" __complete \"${(@)words[2,CURRENT]}\" 2>/dev/null) || "
           "return 1\n"
           "  lines=(\"${(@f)out}\")\n"
           "  directive=${lines[-1]#:}\n"
           "  for line in \"${(@)lines[1,-2]}\"; do\n"
           "    if [[ $line == *$'\\t'* ]]; then\n"
           "      candidates+=(\"${line%%$'\\t'*}:${line#*$'\\t'}\")\n"
           "    else\n"
           "      candidates+=(\"$line\")\n"
           "    fi\n"
           "  done\n"
           "  if ((${#candidates})); then\n"
           "    _describe -t values '" +
           p +
           "' candidates\n"
           "  elif (((directive & 4) == 0)); then\n"
           "    _files\n"
           "  fi\n"
           "}\n"
           "compdef " +
           function + " " + p + "\n";
  }
  return "";
}

std::vector<std::string> list_statefulsets_from_cluster(const CompletionTarget& target) {
  auto config = load_credentials(target.kubeconfig, target.context);
  if (!config) return {};
  const std::string ns = !target.ns.empty()   ? target.ns
                         : config->ns.empty() ? "default"
                                              : config->ns;
  // A TAB must not hang on a cluster that does not answer: no names after 2 s.
  HttpKubernetesOptions options;
  options.connect_timeout = std::chrono::seconds{2};
  options.read_timeout = std::chrono::seconds{2};
  auto kube = HttpKubernetes::create(*config, options);
  if (!kube) return {};
  ListOptions first_page;
  first_page.limit = 500;
  auto list = (*kube)->list(Kind::StatefulSet, ns, first_page);
  if (!list) return {};
  std::vector<std::string> names;
  for (const Json& sts : list->items) {
    if (auto name = k8s::name(sts)) names.push_back(*name);
  }
  std::ranges::sort(names);
  return names;
}

}  // namespace stsresize::cli
