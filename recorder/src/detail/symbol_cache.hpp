#pragma once
// Symbols of return addresses and Python frames, each looked up once and kept: one snapshot's
// conversion keeps them for its stacks; a live subscriber (docs/live.md) keeps them across the
// batches of events it converts, so that a batch pays only for addresses it is the first to see
// (a symbolizer reads every loaded module when made, which a batch of events must not redo).

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "detail/python_stack.hpp"
#include "memtrail/recorder/symbolizer.hpp"

namespace memtrail::recorder::detail {

class symbol_cache {
  public:
    // The frames at `return_address`, as symbolizer::symbolize gives them. An address outside
    // every module known makes the module view be read again, once a batch (a module loaded
    // since the view was read).
    const std::vector<native_frame>& native(uintptr_t return_address);
    // The Python frame of a code object at `location`. The first one a batch looks up takes the
    // GIL, which end_batch() lets go.
    const python_frame& python(uintptr_t code, uintptr_t location);
    // Ends a batch: the GIL is let go, and the module view may be read again.
    void end_batch();

  private:
    std::optional<symbolizer> symbolizer_;
    bool modules_read_this_batch_ = false;
    std::optional<python_symbolizer> python_symbolizer_;  // holds the GIL while it lives
    std::unordered_map<uintptr_t, std::vector<native_frame>> native_;
    std::map<std::pair<uintptr_t, uintptr_t>, python_frame> python_;
};

}  // namespace memtrail::recorder::detail
