#include "detail/stack_converter.hpp"

namespace memtrail::recorder::detail {

stack_converter::stack_converter(const stack_table& stacks, snapshot::snapshot& out)
    : stacks_(stacks), out_(out) {}

const std::vector<snapshot::frame_id>& stack_converter::frames_at(uintptr_t return_address) {
    auto [it, inserted] = addresses_.try_emplace(return_address);
    if (!inserted) {
        return it->second;
    }
    if (!symbolizer_) {
        symbolizer_.emplace();
    }
    for (const native_frame& frame : symbolizer_->symbolize(return_address)) {
        snapshot::frame converted;
        converted.function = out_.intern_string(frame.function);
        converted.filename = out_.intern_string(frame.filename);
        converted.line = frame.line;
        converted.module = out_.intern_string(frame.module);
        converted.module_offset = frame.module_offset;
        converted.build_id = out_.intern_string(frame.build_id);
        converted.kind = snapshot::frame_kind::native;
        it->second.push_back(out_.intern_frame(converted));
    }
    return it->second;
}

snapshot::stack_id stack_converter::convert(stack_id id) {
    if (id == no_stack) {
        return snapshot::no_id;
    }
    auto [it, inserted] = converted_.try_emplace(id, snapshot::no_id);
    if (!inserted) {
        return it->second;
    }
    std::vector<snapshot::frame_id> frames;
    for (const uintptr_t address : stacks_.frames_of(id)) {
        const auto& expanded = frames_at(address);
        frames.insert(frames.end(), expanded.begin(), expanded.end());
    }
    it->second = out_.intern_stack(frames);
    return it->second;
}

}  // namespace memtrail::recorder::detail
