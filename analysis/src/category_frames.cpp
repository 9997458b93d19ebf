// The frames that mean something to the categories, by name and file. Python frames are
// matched by file (PyTorch's, Hugging Face's) and function; native frames by their demangled
// names. Each rule here comes from the real traces in tests/data/traces (PyTorch 2.11,
// transformers 5): see tests/analysis/categories_jobs_test.cpp.

#include "detail/category_frames.hpp"

#include <algorithm>
#include <initializer_list>
#include <string_view>

namespace memtrail::analysis {

namespace {

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

bool in_torch(std::string_view file) {
    return contains(file, "/torch/") || file.starts_with("torch/");
}

uint32_t training_flags(std::string_view function, std::string_view file) {
    uint32_t flags = 0;
    if (function == "forward") {
        flags |= forward;
    }
    if (function == "zero_grad") {
        flags |= zero_grad;
    }
    if (contains(file, "torch/nn/modules/")) {
        if (is_one_of(function, {"_apply", "cuda", "to", "to_empty", "__init__", "reset_parameters",
                                 "load_state_dict", "_load_from_state_dict"})) {
            flags |= module_setup;
        } else if (is_one_of(function, {"_call_impl", "_wrapped_call_impl"})) {
            flags |= forward;
        }
    } else if (contains(file, "torch/optim/")) {
        flags |= optimizer;
        if (function == "_init_group") {
            flags |= optimizer_init;
        }
    } else if (contains(file, "torch/autograd/") || contains(file, "torch/_tensor.py")) {
        if (is_one_of(function, {"backward", "_engine_run_backward", "grad"})) {
            flags |= backward;
        }
    }
    return flags;
}

// Weights loaded by Hugging Face's transformers and accelerate straight onto the device;
// transformers 5 loads them on worker threads whose stacks hold only core_model_loading.py.
uint32_t model_loading_flags(std::string_view function, std::string_view file) {
    if (is_one_of(function, {"from_pretrained", "set_module_tensor_to_device",
                             "_load_state_dict_into_meta_model", "load_checkpoint_and_dispatch",
                             "caching_allocator_warmup"}) ||
        contains(file, "transformers/core_model_loading.py")) {
        return module_setup;
    }
    return 0;
}

uint32_t generation_flags(std::string_view function, std::string_view file) {
    if (!contains(file, "transformers/generation/")) {
        return 0;
    }
    uint32_t flags = 0;
    if (function == "generate") {
        flags |= generate_call;
    }
    if (function == "_prefill") {
        flags |= prefill;
    }
    if (function == "prepare_inputs_for_generation") {
        flags |= decode_step;
    }
    return flags;
}

// Frames anywhere in the stack that say which of FSDP's collectives runs (FSDP2's foreach_*,
// FSDP1's unshard and post-backward hook) and that a module is sharded or moved.
uint32_t fsdp_flags(std::string_view function, std::string_view file) {
    if (!contains(file, "torch/distributed/fsdp/")) {
        return 0;
    }
    uint32_t flags = 0;
    if (is_one_of(function, {"foreach_all_gather", "foreach_all_gather_copy_out", "_unshard",
                             "unshard", "wait_for_unshard", "_all_gather_flat_param"})) {
        flags |= fsdp_all_gather;
    }
    if (is_one_of(function,
                  {"foreach_reduce", "_reduce_grad", "_post_backward_hook", "post_backward"})) {
        flags |= fsdp_reduce;
    }
    if (is_one_of(function, {"_apply", "to_empty", "_move_states_to_device", "reset_sharded_param",
                             "fully_shard", "__init__"})) {
        flags |= module_setup;
    }
    return flags;
}

// Who made the memory, from the innermost Python frame: a library's own allocation, rather
// than an operator's that the library only called.
uint32_t innermost_python_flags(std::string_view function, std::string_view file) {
    if (contains(file, "transformers/cache_utils.py")) {
        return innermost_kv_cache;
    }
    if (contains(file, "torch/distributed/fsdp/")) {
        if (is_one_of(function, {"_init_sharded_param", "_get_shard"})) {
            return innermost_fsdp_sharded;
        }
        if (is_one_of(function, {"init_all_gather_outputs", "alloc_storage", "init_unsharded_param",
                                 "_alloc_padded_unsharded_flat_param"})) {
            return innermost_fsdp_unsharded;
        }
        return innermost_distributed;
    }
    if (contains(file, "torch/nn/parallel/distributed.py")) {
        return is_one_of(function, {"_ddp_init_helper", "_pre_forward", "_rebuild_buckets"})
                   ? innermost_ddp_reducer
                   : innermost_distributed;
    }
    if (contains(file, "torch/distributed/")) {
        // FSDP1 makes room for its unsharded flat parameter through a helper of torch.distributed.
        return function == "_alloc_storage" ? innermost_fsdp_unsharded : innermost_distributed;
    }
    return 0;
}

uint32_t python_frame_flags(std::string_view function, std::string_view file) {
    uint32_t flags = has_python | training_flags(function, file) |
                     model_loading_flags(function, file) | generation_flags(function, file) |
                     fsdp_flags(function, file);
    if (in_torch(file)) {
        flags |= torch_frames;
    }
    return flags;
}

uint32_t native_frame_flags(std::string_view function) {
    uint32_t flags = has_native;
    if (contains(function, "AccumulateGrad") || contains(function, "accumulate_grad")) {
        flags |= accumulate_grad | backward;
    }
    if (contains(function, "torch::autograd::Engine") ||
        contains(function, "torch::autograd::python::PythonEngine")) {
        flags |= backward | autograd_engine;
    }
    if (contains(function, "torch::optim::")) {
        flags |= optimizer;
    }
    if (contains(function, "zero_grad")) {
        flags |= zero_grad;
    }
    // cuBLAS's handle pool gives each handle its workspace; cuBLASLt and cuDNN ask for theirs.
    if (contains(function, "getCurrentCUDABlasHandle") ||
        contains(function, "getCUDABlasLtWorkspace") || contains(function, "getNewWorkspace") ||
        (contains(function, "cudnn") && contains(function, "orkspace"))) {
        flags |= workspace_code;
    }
    if (contains(function, "torch::nn::")) {
        if (contains(function, "::forward(")) {
            flags |= forward;
        } else if (contains(function, "Module::to(") || contains(function, "::reset(") ||
                   contains(function, "::reset_parameters(") ||
                   contains(function, "Module::register_parameter")) {
            flags |= module_setup;
        }
    }
    return flags;
}

// Frames every tensor operation may pass through (a storage resized, a decorator entered): the
// code that asked for the memory is the frame below them.
bool is_tensor_plumbing(std::string_view file) {
    return contains(file, "torch/storage.py") || contains(file, "torch/utils/_contextlib.py") ||
           contains(file, "torch/_utils.py");
}

}  // namespace

stack_flags::stack_flags(const snapshot::snapshot& source)
    : source_(source), cache_(source.stacks().size()), computed_(source.stacks().size()) {}

uint32_t stack_flags::of(snapshot::stack_id id) {
    if (id >= cache_.size()) {
        return 0;
    }
    if (computed_[id] == 0) {
        cache_[id] = compute(id);
        computed_[id] = 1;
    }
    return cache_[id];
}

uint32_t stack_flags::compute(snapshot::stack_id id) const {
    uint32_t flags = 0;
    bool innermost_python_seen = false;
    for (const snapshot::frame_id f : source_.stack_at(id)) {
        const snapshot::frame& frame = source_.frame_at(f);
        flags |= has_frames;
        const std::string_view function = source_.string_at(frame.function);
        if (frame.kind != snapshot::frame_kind::python) {
            flags |= native_frame_flags(function);
            continue;
        }
        const std::string_view file = source_.string_at(frame.filename);
        flags |= python_frame_flags(function, file);
        if (!innermost_python_seen && !is_tensor_plumbing(file)) {
            flags |= innermost_python_flags(function, file);
            innermost_python_seen = true;
        }
    }
    return flags;
}

}  // namespace memtrail::analysis
