#include "memtrail/stacks/symbol_cache.hpp"

#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "detail/python_stack.hpp"

namespace memtrail::recorder::detail {

struct symbol_cache::state {
    std::optional<symbolizer> native_symbolizer;
    bool modules_read_this_batch = false;
    std::optional<python_symbolizer> python_names;  // holds the GIL while it lives
    std::unordered_map<uintptr_t, std::vector<native_frame>> native;
    std::map<std::pair<uintptr_t, uintptr_t>, python_frame> python;
};

symbol_cache::symbol_cache() : state_(std::make_unique<state>()) {}

symbol_cache::~symbol_cache() = default;

const std::vector<native_frame>& symbol_cache::native(uintptr_t return_address) {
    auto [it, inserted] = state_->native.try_emplace(return_address);
    if (!inserted) {
        return it->second;
    }
    if (!state_->native_symbolizer) {
        state_->native_symbolizer.emplace();
        state_->modules_read_this_batch = true;
    }
    it->second = state_->native_symbolizer->symbolize(return_address);
    if (it->second.front().module.empty() && !state_->modules_read_this_batch) {
        state_->native_symbolizer.emplace();
        state_->modules_read_this_batch = true;
        it->second = state_->native_symbolizer->symbolize(return_address);
    }
    return it->second;
}

const python_frame& symbol_cache::python(uintptr_t code, uintptr_t location) {
    auto [it, inserted] = state_->python.try_emplace({code, location});
    if (inserted) {
        if (!state_->python_names) {
            state_->python_names.emplace();
        }
        it->second = state_->python_names->symbolize(code, location);
    }
    return it->second;
}

void symbol_cache::end_batch() {
    state_->python_names.reset();
    state_->modules_read_this_batch = false;
}

}  // namespace memtrail::recorder::detail
