#include "memtrail/analysis/frame_filter.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <vector>

namespace memtrail::analysis {

namespace {

bool contains_any(std::string_view text, std::initializer_list<std::string_view> parts) {
    return std::any_of(parts.begin(), parts.end(), [&](std::string_view part) {
        return text.find(part) != std::string_view::npos;
    });
}

// torch/cuda/_memory_viz.py's _frame_filter: functions and files containing these. Its "_start"
// (the ELF entry point) matches anywhere in a name there; here only the whole name, so that a
// user's `train_start` stays.
bool memory_viz_drops(std::string_view function, std::string_view file) {
    return function == "_start" ||
           contains_any(function, {"unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp",
                                   "__libc_start_main", "PyEval_", "PyObject_", "PyFunction_"}) ||
           contains_any(file, {"core/boxing", "/Register", "/Redispatch", "pythonrun.c",
                               "Modules/main.c", "Objects/call.c", "Objects/methodobject.c",
                               "pycore_ceval.h", "ceval.c", "cpython/abstract.h"});
}

// The dispatcher's generated code that memory_viz drops by its file (core/boxing, Register*.cpp,
// RedispatchFunctions.cpp), by name, for stacks whose frames carry no file (a libtorch without
// line tables, memtrail's own unwinding through CUDAPluggableAllocator).
bool is_dispatcher_plumbing(std::string_view function) {
    return contains_any(
        function,
        {"c10::impl::wrap_kernel_functor_unboxed_", "c10::impl::make_boxed_from_unboxed_functor",
         "c10::impl::BoxedKernelWrapper", "c10::BoxedKernel::", "(anonymous namespace)::wrapper_",
         "::redispatch(", "at::_ops::empty_strided::", "at::_ops::empty_memory_format::"});
}

// The caching allocator and the tensor-creation plumbing between an operator and it, which
// memory_viz leaves in: with them the innermost frame of every stack is the allocator's.
bool is_allocation_plumbing(std::string_view function) {
    return is_dispatcher_plumbing(function) ||
           contains_any(
               function,
               {"c10::cuda::CUDACachingAllocator::", "torch::cuda::CUDAPluggableAllocator::",
                "at::detail::empty_generic", "at::detail::_empty_generic",
                "at::detail::empty_strided_generic", "at::detail::_empty_strided_generic",
                "at::detail::empty_cuda", "at::detail::empty_strided_cuda",
                "at::native::empty_cuda", "at::native::empty_strided_cuda",
                "c10::StorageImpl::StorageImpl", "c10::make_intrusive<c10::StorageImpl"});
}

// The interpreter's own C code: its C API and internals by name (Py..., _Py...), its sources
// (CPython's Objects/, Python/, Modules/, Include/, Parser/ folders), its binary and library.
bool is_interpreter(std::string_view function, std::string_view file, std::string_view module) {
    const bool c_api_name =
        function.starts_with("_Py") ||
        (function.size() > 2 && function.starts_with("Py") &&
         (std::isupper(static_cast<unsigned char>(function[2])) != 0 || function[2] == '_'));
    const bool c_source = file.ends_with(".c") || file.ends_with(".h");
    const bool in_cpython_tree =
        c_source && contains_any(file, {"Objects/", "Python/", "Modules/", "Include/", "Parser/"});
    const std::string_view base = module.substr(module.rfind('/') + 1);
    const bool interpreter_binary = base.starts_with("python3") || base.starts_with("libpython3");
    return c_api_name || in_cpython_tree || interpreter_binary;
}

}  // namespace

bool is_framework_frame(const snapshot::snapshot& source, snapshot::frame_id id) {
    const snapshot::frame& f = source.frame_at(id);
    if (f.kind != snapshot::frame_kind::native || id == snapshot::no_id) {
        return false;
    }
    const std::string_view function = source.string_at(f.function);
    const std::string_view file = source.string_at(f.filename);
    return memory_viz_drops(function, file) || is_allocation_plumbing(function) ||
           is_interpreter(function, file, source.string_at(f.module));
}

std::shared_ptr<const snapshot::snapshot> with_frame_visibility(
    std::shared_ptr<const snapshot::snapshot> source, frame_visibility visibility) {
    if (visibility == frame_visibility::all_frames) {
        return source;
    }
    const auto& frames = source->frames();
    std::vector<bool> hidden(frames.size());
    bool any_hidden = false;
    for (size_t f = 0; f < frames.size(); ++f) {
        hidden[f] = is_framework_frame(*source, static_cast<snapshot::frame_id>(f));
        any_hidden = any_hidden || hidden[f];
    }
    if (!any_hidden) {
        return source;
    }

    auto out = std::make_shared<snapshot::snapshot>();
    // Interned in the same order, strings and frames keep their ids.
    for (const std::string& s : source->strings()) {
        out->intern_string(s);
    }
    for (const snapshot::frame& f : frames) {
        out->intern_frame(f);
    }
    std::vector<snapshot::stack_id> stack_map(source->stacks().size());
    std::vector<snapshot::frame_id> visible;
    for (size_t s = 0; s < stack_map.size(); ++s) {
        const auto& stack = source->stack_at(static_cast<snapshot::stack_id>(s));
        visible.clear();
        std::copy_if(stack.begin(), stack.end(), std::back_inserter(visible),
                     [&](snapshot::frame_id f) { return !hidden[f]; });
        stack_map[s] = out->intern_stack(visible.empty() ? stack : visible);
    }

    out->info = source->info;
    out->settings = source->settings;
    out->stats = source->stats;
    out->annotations = source->annotations;
    out->segments = source->segments;
    for (snapshot::segment& segment : out->segments) {
        segment.stack = stack_map[segment.stack];
        for (snapshot::block& block : segment.blocks) {
            block.stack = stack_map[block.stack];
        }
    }
    out->traces = source->traces;
    for (snapshot::device_trace& trace : out->traces) {
        for (snapshot::trace_entry& entry : trace.entries) {
            entry.stack = stack_map[entry.stack];
        }
    }
    return out;
}

}  // namespace memtrail::analysis
