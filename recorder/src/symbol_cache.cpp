#include "detail/symbol_cache.hpp"

namespace memtrail::recorder::detail {

const std::vector<native_frame>& symbol_cache::native(uintptr_t return_address) {
    auto [it, inserted] = native_.try_emplace(return_address);
    if (!inserted) {
        return it->second;
    }
    if (!symbolizer_) {
        symbolizer_.emplace();
        modules_read_this_batch_ = true;
    }
    it->second = symbolizer_->symbolize(return_address);
    if (it->second.front().module.empty() && !modules_read_this_batch_) {
        symbolizer_.emplace();
        modules_read_this_batch_ = true;
        it->second = symbolizer_->symbolize(return_address);
    }
    return it->second;
}

const python_frame& symbol_cache::python(uintptr_t code, uintptr_t location) {
    auto [it, inserted] = python_.try_emplace({code, location});
    if (inserted) {
        if (!python_symbolizer_) {
            python_symbolizer_.emplace();
        }
        it->second = python_symbolizer_->symbolize(code, location);
    }
    return it->second;
}

void symbol_cache::end_batch() {
    python_symbolizer_.reset();
    modules_read_this_batch_ = false;
}

}  // namespace memtrail::recorder::detail
