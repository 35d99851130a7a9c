#include "engine/reachable.h"

#include <set>
#include <utility>
#include <vector>

namespace stsresize {

bool reachable(const TransitionRules& rules, Phase from, Phase to, std::optional<Phase> failed_in) {
  // A phase alone is not the whole state the rules look at: Failed also carries the phase it
  // failed in, which decides where a Resume may go.
  using State = std::pair<Phase, std::optional<Phase>>;
  const State start{from, from == Phase::Failed ? failed_in : std::nullopt};
  std::vector<State> frontier{start};
  std::set<State> seen{start};
  while (!frontier.empty()) {
    const auto [at, at_failed_in] = frontier.back();
    frontier.pop_back();
    for (Phase next : kAllPhases) {
      for (Trigger event : kAllTriggers) {
        for (bool intact : {true, false}) {
          if (!rules.allowed(at, event, intact, next, at_failed_in)) continue;
          if (next == to) return true;
          const State reached{next,
                              next == Phase::Failed ? std::optional<Phase>{at} : std::nullopt};
          if (seen.insert(reached).second) frontier.push_back(reached);
        }
      }
    }
  }
  return false;
}

}  // namespace stsresize
