#pragma once
#include "engine/ports/clock.h"

namespace stsresize {

class SystemClock final : public Clock {
 public:
  TimePoint now() const override;
};

}  // namespace stsresize
