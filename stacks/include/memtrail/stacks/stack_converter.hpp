#pragma once
// Recorder stacks (return addresses, then Python frames) into a snapshot's stacks (lists of
// symbolized frames). Each distinct address and Python frame is symbolized once (in a
// symbol_cache, the converter's own or one a live subscriber keeps across batches), each
// distinct stack converted once.

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
#include "memtrail/stacks/symbol_cache.hpp"
#include "memtrail/stacks/symbolizer.hpp"

namespace memtrail::recorder::detail {

class stack_converter {
  public:
    // `symbols`: a cache that outlives the converter; nullptr for one of its own. The GIL, taken
    // for the first Python frame, is let go when the converter ends.
    stack_converter(const stack_table& stacks, snapshot::snapshot& out,
                    symbol_cache* symbols = nullptr);
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
    std::optional<symbol_cache> own_symbols_;
    symbol_cache& symbols_;
    std::unordered_map<uintptr_t, symbolized_address> addresses_;
    std::map<std::pair<uintptr_t, uintptr_t>, snapshot::frame_id> python_frames_;
    std::unordered_map<stack_id, snapshot::stack_id> converted_;
};

}  // namespace memtrail::recorder::detail
