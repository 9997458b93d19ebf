#pragma once
// Recorder stacks (return addresses, then Python frames) into a snapshot's stacks (lists of
// symbolized frames). Each distinct address and Python frame is symbolized once, each distinct
// stack converted once.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memtrail/snapshot/model.hpp"
#include "memtrail/stacks/stack_table.hpp"
#include "memtrail/stacks/symbolizer.hpp"

namespace memtrail::recorder::detail {

class python_symbolizer;  // python_stack.hpp, private to stacks/

class stack_converter {
  public:
    stack_converter(const stack_table& stacks, snapshot::snapshot& out);
    ~stack_converter();
    stack_converter(const stack_converter&) = delete;
    stack_converter& operator=(const stack_converter&) = delete;

    snapshot::stack_id convert(stack_id id);

  private:
    struct symbolized_address {
        std::vector<snapshot::frame_id> frames;
        bool in_interpreter_loop = false;  // the interpreter evaluating Python code
    };

    const symbolized_address& symbolize_address(uintptr_t return_address);
    snapshot::frame_id python_frame_at(uintptr_t code, uintptr_t location);
    std::vector<snapshot::frame_id> python_frames(std::span<const uintptr_t> pairs);

    const stack_table& stacks_;
    snapshot::snapshot& out_;
    std::optional<symbolizer> symbolizer_;  // made on the first stack: it reads every module
    // Made on the first Python frame; holds the GIL until the conversion ends.
    std::unique_ptr<python_symbolizer> python_symbolizer_;
    std::unordered_map<uintptr_t, symbolized_address> addresses_;
    std::map<std::pair<uintptr_t, uintptr_t>, snapshot::frame_id> python_frames_;
    std::unordered_map<stack_id, snapshot::stack_id> converted_;
};

}  // namespace memtrail::recorder::detail
