#pragma once
// What the frames of one stack say about the allocation or free recorded under it, for the
// categories: the phase of training (forward, backward, the optimizer), model setup, and who
// asked for the memory when that is a library (FSDP, DDP, a KV cache, a library's workspace).
// Flags of the whole stack are any frame's; the `innermost_*` flags come from the innermost
// Python frame alone, since FSDP1's wrapper sits outside every activation of its module.

#include <cstdint>
#include <vector>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

enum stack_flag : uint32_t {
    has_frames = 1u << 0,
    has_python = 1u << 1,
    module_setup = 1u << 2,
    optimizer = 1u << 3,
    optimizer_init = 1u << 4,
    zero_grad = 1u << 5,
    backward = 1u << 6,
    accumulate_grad = 1u << 7,
    forward = 1u << 8,
    autograd_engine = 1u << 9,  // native frames of autograd's engine (its worker threads)
    has_native = 1u << 10,
    annotated_backward = 1u << 11,        // inside a range named "backward"
    torch_frames = 1u << 12,              // a frame of PyTorch's own Python code
    generate_call = 1u << 13,             // inside Hugging Face's generate()
    prefill = 1u << 14,                   // inside generate()'s prefill (the prompt's forward)
    decode_step = 1u << 15,               // generate() preparing the next token's inputs
    innermost_kv_cache = 1u << 16,        // made by a Hugging Face cache class
    workspace_code = 1u << 17,            // native frames of cuBLAS's or cuDNN's workspace
    innermost_fsdp_sharded = 1u << 18,    // FSDP making its shard of the parameters
    innermost_fsdp_unsharded = 1u << 19,  // FSDP making room for all-gathered parameters
    innermost_distributed = 1u << 20,     // any other torch.distributed code
    fsdp_all_gather = 1u << 21,           // inside FSDP's all-gather
    fsdp_reduce = 1u << 22,               // inside FSDP's reduce-scatter of gradients
    innermost_ddp_reducer = 1u << 23,     // DDP building its reducer and gradient buckets
};

// The flags of every stack of a snapshot, each computed once, when first asked for.
class stack_flags {
  public:
    explicit stack_flags(const snapshot::snapshot& source);
    uint32_t of(snapshot::stack_id id);

  private:
    uint32_t compute(snapshot::stack_id id) const;
    const snapshot::snapshot& source_;
    std::vector<uint32_t> cache_;
    std::vector<uint8_t> computed_;
};

}  // namespace memtrail::analysis
