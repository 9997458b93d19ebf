#include "memtrail/analysis/frame_filter.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

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
           file.starts_with("Register") || file.starts_with("Redispatch") ||
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
                "c10::StorageImpl::StorageImpl", "c10::make_intrusive<c10::StorageImpl",
                "at::empty_strided(", "at::empty(", "::create_out(", "::create_out_(",
                "at::native::empty_strided_cuda", "at::native::empty_cuda"});
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

// PyTorch's C++ by namespace, also after a return type ("void at::...", "_object* torch::..."),
// not in the parameters: a user's train_step(at::Tensor const&) is the user's.
bool in_pytorch_namespace(std::string_view function) {
    const std::string_view name = function.substr(0, function.find('('));
    for (const std::string_view ns : {"at::", "c10::", "torch::", "caffe2::"}) {
        if (name.starts_with(ns) || name.find(" " + std::string(ns)) != std::string_view::npos) {
            return true;
        }
    }
    return false;
}

// Autograd's and the dispatcher's C++ between an operator and the Python binding or the engine.
bool is_native_call_machinery(std::string_view function) {
    return contains_any(function, {"torch::autograd::VariableType::", "torch::autograd::Engine::",
                                   "torch::autograd::python::PythonEngine", "c10::Dispatcher",
                                   "at::_ops::", "c10::impl::", "torch::ADInplaceOrView::"});
}

// The Python file's path from its package root: after site-packages/ or dist-packages/, else from
// a torch/ folder of a source checkout. Empty when neither.
std::string_view package_path(std::string_view file) {
    for (const std::string_view root : {"site-packages/", "dist-packages/"}) {
        const size_t at = file.rfind(root);
        if (at != std::string_view::npos) {
            return file.substr(at + root.size());
        }
    }
    // A checkout's torch/ is known by its subpackages, so that a user's own torch/ folder is not.
    const size_t torch = file.rfind("/torch/");
    if (torch == std::string_view::npos) {
        return {};
    }
    const std::string_view path = file.substr(torch + 1);
    const size_t folder_end = path.find('/', 6);  // after "torch/"
    const std::string_view head =
        folder_end == std::string_view::npos ? path : path.substr(0, folder_end + 1);
    const bool pytorch_file =
        contains_any(head, {"torch/nn/", "torch/optim/", "torch/autograd/", "torch/utils/",
                            "torch/distributed/", "torch/_dynamo/", "torch/_inductor/",
                            "torch/cuda/", "torch/amp/", "torch/fx/", "torch/_functorch/",
                            "torch/_tensor.py", "torch/_compile.py", "torch/functional.py"});
    return pytorch_file ? path : std::string_view{};
}

// The standard library's files: under lib/python3.X/ (site-packages excepted, above), or frozen.
std::string_view standard_library_path(std::string_view file) {
    if (file.starts_with("<frozen ")) {
        return file.substr(8, file.size() - 9);
    }
    for (const std::string_view root : {"/lib/python3.", "/lib64/python3."}) {
        const size_t at = file.find(root);
        if (at != std::string_view::npos) {
            const size_t folder_end = file.find('/', at + root.size());
            return folder_end == std::string_view::npos ? std::string_view{}
                                                        : file.substr(folder_end + 1);
        }
    }
    return {};
}

bool python_library(std::string_view file) {
    return !package_path(file).empty() || !standard_library_path(file).empty();
}

// PyTorch's Python call machinery: nn.Module's calls and _apply recursion, the optimizer's step
// wrappers, autograd's entry points, the context-manager decorators and compile wrappers.
bool is_python_plumbing(std::string_view function, std::string_view file) {
    const std::string_view path = package_path(file);
    if (!path.starts_with("torch/")) {
        return false;
    }
    if (path == "torch/nn/modules/module.py") {
        return function == "_call_impl" || function == "_wrapped_call_impl" ||
               function == "inner" || function == "_apply";
    }
    if (path == "torch/optim/optimizer.py") {
        return function == "wrapper" || function == "_use_grad" ||
               function == "profile_hook_step" || function == "_use_grad_for_differentiable";
    }
    if (path == "torch/_tensor.py") {
        return function == "backward";
    }
    return path.starts_with("torch/autograd/") || path == "torch/utils/_contextlib.py" ||
           path == "torch/_dynamo/eval_frame.py" || path == "torch/_compile.py" ||
           path == "torch/distributed/_composable/contract.py";
}

// The C and threads runtime (glibc's thread start, clone), which PyTorch's unwinder also names
// for frames it cannot tell (pthread_condattr_setpshared between two Python frames).
bool is_runtime(std::string_view function) {
    return function.starts_with("__") || function.starts_with("pthread_") ||
           function == "start_thread" || function == "clone" || function == "clone3";
}

// A native frame of the user's code: not PyTorch's, not a system or package library, and named.
bool native_user_code(std::string_view function, std::string_view file, std::string_view module) {
    const std::string_view library = module.substr(module.rfind('/') + 1);
    const bool system_library =
        module.find("site-packages/") != std::string_view::npos ||
        module.find("dist-packages/") != std::string_view::npos ||
        contains_any(library, {"libc.so", "libc-", "libstdc++", "libpthread", "ld-linux", "libcuda",
                               "libcublas", "libcudnn", "libnccl", "libtorch", "libc10"});
    const bool unnamed = function.empty() || file == "??";
    return !system_library && !unnamed && !function.starts_with("std::") &&
           !in_pytorch_namespace(function);
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

frame_role role_of(const snapshot::snapshot& source, snapshot::frame_id id) {
    const snapshot::frame& f = source.frame_at(id);
    const std::string_view function = source.string_at(f.function);
    const std::string_view file = source.string_at(f.filename);
    if (f.kind == snapshot::frame_kind::python) {
        if (is_python_plumbing(function, file)) {
            return frame_role::plumbing;
        }
        return python_library(file) ? frame_role::library : frame_role::user;
    }
    if (is_framework_frame(source, id) || is_native_call_machinery(function) ||
        is_runtime(function)) {
        return frame_role::plumbing;
    }
    return native_user_code(function, file, source.string_at(f.module)) ? frame_role::user
                                                                        : frame_role::library;
}

std::string frame_origin(const snapshot::snapshot& source, snapshot::frame_id id) {
    const snapshot::frame& f = source.frame_at(id);
    const std::string_view function = source.string_at(f.function);
    const std::string_view file = source.string_at(f.filename);
    if (f.kind == snapshot::frame_kind::native) {
        if (in_pytorch_namespace(function)) {
            return "PyTorch C++";
        }
        if (is_runtime(function)) {
            return "C runtime";
        }
        return is_interpreter(function, file, source.string_at(f.module)) ? "CPython" : "native";
    }
    // A package by its first folder, PyTorch by its second (torch.nn, torch.optim).
    std::string_view path = package_path(file);
    if (path.empty()) {
        path = standard_library_path(file);
    }
    if (path.empty()) {
        return "user code";
    }
    const size_t first = path.find('/');
    if (first == std::string_view::npos) {
        return std::string(path.substr(0, path.rfind(".py")));
    }
    std::string origin(path.substr(0, first));
    const size_t second = path.find('/', first + 1);
    if (origin == "torch" && second != std::string_view::npos) {
        origin += "." + std::string(path.substr(first + 1, second - first - 1));
    }
    return origin;
}

}  // namespace memtrail::analysis
