#pragma once
// Symbols of return addresses and Python frames, each looked up once and kept: one snapshot's
// conversion keeps them for its stacks; a live subscriber (docs/live.md) keeps them across the
// batches of events it converts, so that a batch pays only for addresses it is the first to see
// (a symbolizer reads every loaded module when made, which a batch of events must not redo).

#include <cstdint>
#include <memory>
#include <vector>

#include "memtrail/stacks/symbolizer.hpp"

namespace memtrail::recorder::detail {

struct python_frame;  // python_stack.hpp, private to stacks/

class symbol_cache {
  public:
    symbol_cache();
    ~symbol_cache();
    symbol_cache(const symbol_cache&) = delete;
    symbol_cache& operator=(const symbol_cache&) = delete;

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
    struct state;
    std::unique_ptr<state> state_;
};

}  // namespace memtrail::recorder::detail
