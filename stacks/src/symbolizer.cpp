#include "memtrail/stacks/symbolizer.hpp"

#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdlib>

#include "detail/dwarf_session.hpp"
#include "detail/module_map.hpp"

namespace memtrail::recorder {

namespace {

std::string demangle(const std::string& name) {
    if (name.empty()) {
        return name;
    }
    int status = 0;
    char* readable = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status != 0 || readable == nullptr) {
        return name;  // a C name, or not a mangled one
    }
    std::string result(readable);
    std::free(readable);
    return result;
}

}  // namespace

symbolizer::symbolizer()
    : modules_(std::make_unique<detail::module_map>()),
      dwarf_(std::make_unique<detail::dwarf_session>()) {}

symbolizer::~symbolizer() = default;

std::vector<native_frame> symbolizer::symbolize(uintptr_t return_address) {
    native_frame base;
    base.module_offset = return_address;
    if (const detail::loaded_module* module = modules_->find(return_address)) {
        base.module = module->path;
        base.module_offset = return_address - module->load_base;
        base.build_id = module->build_id;
    }
    // A return address points after the call; the call instruction itself ends one byte
    // earlier, and its line (and inlining) is the one that made the call.
    const uintptr_t call_address = return_address - 1;

    std::vector<native_frame> frames;
    for (detail::source_location& location : dwarf_->locate(call_address)) {
        native_frame frame = base;
        frame.function = demangle(location.function);
        frame.filename = std::move(location.filename);
        frame.line = location.line;
        frames.push_back(std::move(frame));
    }
    if (frames.empty() || frames.back().function.empty()) {
        Dl_info info{};
        if (dladdr(reinterpret_cast<void*>(call_address), &info) != 0 &&
            info.dli_sname != nullptr) {
            if (frames.empty()) {
                frames.push_back(base);
            }
            frames.back().function = demangle(info.dli_sname);
        }
    }
    if (frames.empty()) {
        frames.push_back(base);
    }
    return frames;
}

}  // namespace memtrail::recorder
