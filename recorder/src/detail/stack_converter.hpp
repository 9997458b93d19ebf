#pragma once
// Recorder stacks (lists of return addresses) into a snapshot's stacks (lists of symbolized
// frames). Each distinct address is symbolized once, each distinct stack converted once.

#include <optional>
#include <unordered_map>
#include <vector>

#include "memtrail/recorder/stack_table.hpp"
#include "memtrail/recorder/symbolizer.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::recorder::detail {

class stack_converter {
  public:
    stack_converter(const stack_table& stacks, snapshot::snapshot& out);

    snapshot::stack_id convert(stack_id id);

  private:
    const std::vector<snapshot::frame_id>& frames_at(uintptr_t return_address);

    const stack_table& stacks_;
    snapshot::snapshot& out_;
    std::optional<symbolizer> symbolizer_;  // made on the first stack: it reads every module
    std::unordered_map<uintptr_t, std::vector<snapshot::frame_id>> addresses_;
    std::unordered_map<stack_id, snapshot::stack_id> converted_;
};

}  // namespace memtrail::recorder::detail
