#include "memtrail/snapshot/recorder_frames.hpp"

#include <algorithm>
#include <initializer_list>

namespace memtrail::snapshot {

namespace {

bool starts_with_any(std::string_view text, std::initializer_list<std::string_view> prefixes) {
    return std::any_of(prefixes.begin(), prefixes.end(),
                       [&](std::string_view prefix) { return text.starts_with(prefix); });
}

bool contains_any(std::string_view text, std::initializer_list<std::string_view> parts) {
    return std::any_of(parts.begin(), parts.end(), [&](std::string_view part) {
        return text.find(part) != std::string_view::npos;
    });
}

std::string_view base_name(std::string_view path) {
    return path.substr(path.rfind('/') + 1);
}

// The folder that holds `path`'s file, and the one above it.
std::string_view parent_folder(std::string_view path, int levels) {
    for (int i = 0; i < levels; ++i) {
        const size_t slash = path.rfind('/');
        if (slash == std::string_view::npos) {
            return {};
        }
        path = path.substr(0, slash);
    }
    return base_name(path);
}

// memtrail_malloc and the other C API functions, memtrail:: code (also after a return type,
// "void memtrail::..."), librecorder and memtrail's other libraries (the interposer, the bridge to
// PyTorch's pluggable allocator), ctypes' and libffi's calls.
bool is_native_machinery(std::string_view function, std::string_view file,
                         std::string_view module) {
    // The name and return type, before the parameters (which may name memtrail's types).
    const std::string_view name = function.substr(0, function.find('('));
    const bool memtrail_code = name.starts_with("memtrail_") || name.starts_with("memtrail::") ||
                               name.find(" memtrail::") != std::string_view::npos;
    const bool call_machinery = starts_with_any(
        function,
        {"ffi_call", "ffi_prep_", "_ctypes_callproc", "PyCFuncPtr_call", "_call_function_pointer"});
    // PyTorch's pickle has no module: an unnamed frame's file is its library ("libffi.so.8").
    const auto machinery_library = [](std::string_view path) {
        return starts_with_any(base_name(path),
                               {"librecorder.so", "libmemtrail", "libffi.so", "_ctypes."});
    };
    // The interposer's hooks are named as the CUDA functions they stand in for (cudaMalloc).
    // librecorder/src/ holds them since the recorder split; recorder/src/librecorder/ is where
    // snapshots recorded before it name the C API (interpose/ and torch_bridge/ are matched in
    // both by the same words).
    const bool machinery_source =
        contains_any(file, {"recorder/src/interpose/", "recorder/src/librecorder/",
                            "recorder/src/torch_bridge/", "librecorder/src/"});
    return memtrail_code || call_machinery || machinery_library(module) ||
           machinery_library(file) || machinery_source;
}

// A file of the memtrail package (site-packages/memtrail/memory.py, python/src/memtrail/...), or
// of the standard library's ctypes package.
bool is_python_machinery(std::string_view file) {
    if (!file.ends_with(".py")) {
        return false;
    }
    const std::string_view package = parent_folder(file, 1);
    const std::string_view above = parent_folder(file, 2);
    const bool memtrail_package =
        package == "memtrail" &&
        (above == "site-packages" || above == "dist-packages" || above == "src");
    const bool ctypes_package = package == "ctypes" && above.starts_with("python3");
    return memtrail_package || ctypes_package;
}

}  // namespace

bool is_recording_machinery(frame_kind kind, std::string_view function, std::string_view file,
                            std::string_view module) {
    return kind == frame_kind::python ? is_python_machinery(file)
                                      : is_native_machinery(function, file, module);
}

bool is_recording_machinery(const snapshot& source, frame_id id) {
    const frame& f = source.frame_at(id);
    return is_recording_machinery(f.kind, source.string_at(f.function),
                                  source.string_at(f.filename), source.string_at(f.module));
}

}  // namespace memtrail::snapshot
