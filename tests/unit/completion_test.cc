// Shell completion (adapters/app/completion.h) through the whole command line, as a shell or
// kubectl asks it: `stsresize __complete WORD... PARTIAL`, and the plugin's completion program.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/app/cli.h"

namespace stsresize::cli {
namespace {

struct Asked {
  std::vector<CompletionTarget> targets;  // what the StatefulSets were listed for
};

struct Answer {
  int exit = -1;
  std::vector<std::string> words;  // the candidates, without descriptions
  std::string directive;           // the last line
  std::string text;
};

Answer ask(std::vector<std::string> words, Asked* asked = nullptr,
           std::string_view invoked_as = kProgram) {
  std::ostringstream out, err;
  const ListStatefulSets statefulsets = [&](const CompletionTarget& target) {
    if (asked != nullptr) asked->targets.push_back(target);
    if (target.ns == "shop") return std::vector<std::string>{"cart", "web"};
    return std::vector<std::string>{"db", "web"};
  };
  if (invoked_as == kProgram) words.insert(words.begin(), "__complete");
  Answer answer;
  answer.exit = run_cli(words, out, err, invoked_as, statefulsets);
  answer.text = out.str();
  std::istringstream lines(answer.text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(':')) {
      answer.directive = line;
    } else {
      answer.words.push_back(line.substr(0, line.find('\t')));
    }
  }
  EXPECT_EQ(err.str(), "");
  return answer;
}

using Words = std::vector<std::string>;

TEST(Completion, OffersTheCommandsWithTheirSummaryAndNoFileNames) {
  Answer all = ask({""});
  EXPECT_EQ(all.exit, 0);
  EXPECT_EQ(all.words, (Words{"run", "status", "describe", "replay", "version", "journal",
                              "advance", "completion"}));
  EXPECT_EQ(all.directive, ":4");
  EXPECT_NE(all.text.find("status\tShow the resize operations"), std::string::npos) << all.text;
  EXPECT_EQ(ask({"st"}).words, Words{"status"});
  EXPECT_EQ(ask({"journal", "l"}).words, Words{"list"});
  EXPECT_EQ(ask({"nothing-like-it"}).words, Words{});
}

TEST(Completion, OffersTheFlagsOfTheCommandTyped) {
  Answer flags = ask({"status", "--"});
  for (const char* flag :
       {"--kubeconfig", "--context", "--namespace", "--all-namespaces", "--output", "--help"}) {
    EXPECT_NE(std::ranges::find(flags.words, flag), flags.words.end()) << flag;
  }
  EXPECT_EQ(std::ranges::find(flags.words, "--journal"), flags.words.end())
      << "status has no --journal";
  EXPECT_EQ(ask({"describe", "--jo"}).words, Words{"--journal"});
  Answer shorts = ask({"status", "-"});
  EXPECT_NE(std::ranges::find(shorts.words, "-A"), shorts.words.end());
  EXPECT_NE(std::ranges::find(shorts.words, "-n"), shorts.words.end());
}

TEST(Completion, AFileValueIsLeftToTheShell) {
  Answer journal = ask({"describe", "web", "--journal", ""});
  EXPECT_EQ(journal.words, Words{});
  EXPECT_EQ(journal.directive, ":0");
  EXPECT_EQ(ask({"journal", "list", "--journal", "jo"}).directive, ":0");
  EXPECT_EQ(ask({"completion", ""}).directive, ":4") << "a shell is no file";
}

TEST(Completion, StatefulSetsAreListedInTheNamespaceTypedWithTheCredentialsTyped) {
  Asked asked;
  Answer names = ask({"status", "--kubeconfig", "/k", "--context=c", "-n", "shop", "w"}, &asked);
  EXPECT_EQ(names.words, Words{"web"});
  ASSERT_EQ(asked.targets.size(), 1u);
  EXPECT_EQ(asked.targets[0].kubeconfig, "/k");
  EXPECT_EQ(asked.targets[0].context, "c");
  EXPECT_EQ(asked.targets[0].ns, "shop");
  // The values of flags are not positional arguments.
  EXPECT_EQ(ask({"describe", "-n", "shop", ""}).words, (Words{"cart", "web"}));
  EXPECT_EQ(ask({"advance", "--approve", "shop/"}).words, (Words{"shop/cart", "shop/web"}));
  EXPECT_EQ(ask({"describe", "shop/c"}).words, Words{"shop/cart"}) << "NS/NAME: within NS";
  EXPECT_EQ(ask({"describe", ""}).words, (Words{"db", "web"}));
  // One StatefulSet only: nothing after it.
  EXPECT_EQ(ask({"status", "web", ""}).words, Words{});
}

TEST(Completion, KubectlsPluginCompletionIsTheSameAnswer) {
  Answer plugin = ask({"status", "-n", "shop", ""}, nullptr, kPluginCompletionProgram);
  EXPECT_EQ(plugin.exit, 0);
  EXPECT_EQ(plugin.words, (Words{"cart", "web"}));
  EXPECT_EQ(ask({"adv"}, nullptr, kPluginCompletionProgram).words, Words{"advance"});
}

TEST(Completion, ScriptsForBashAndZshCallTheProgramTheyComplete) {
  std::ostringstream out, err;
  ASSERT_EQ(run_cli({"completion", "bash"}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("complete -F _stsresize_complete stsresize"), std::string::npos);
  std::ostringstream plugin, zsh;
  ASSERT_EQ(run_cli({"completion", "zsh"}, plugin, err, kPluginProgram), 0) << err.str();
  EXPECT_NE(plugin.str().find("compdef _kubectl_stsresize_complete kubectl-stsresize"),
            std::string::npos)
      << plugin.str();
  std::ostringstream fish, fish_err;
  EXPECT_EQ(run_cli({"completion", "fish"}, fish, fish_err), 2);
  EXPECT_NE(fish_err.str().find("bash or zsh"), std::string::npos);
  EXPECT_EQ(fish.str(), "");
}

TEST(Completion, ThePluginsHelpNamesItAsKubectlRunsIt) {
  std::ostringstream out, err;
  EXPECT_EQ(run_cli({"--help"}, out, err, kPluginProgram), 0);
  EXPECT_NE(out.str().find("kubectl stsresize"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace stsresize::cli
