#pragma once
// The rules that give an allocation its category, from what is known of it (category_rules.cpp).

#include <cstddef>
#include <cstdint>

#include "category_steps.hpp"
#include "memtrail/analysis/categories.hpp"

namespace memtrail::analysis {

// What is known of one allocation, for choose_rule.
struct allocation_facts {
    uint32_t made = 0;      // flags of its allocation (stack and annotated phase)
    uint32_t freed_by = 0;  // flags of its free entry
    backward_evidence in_backward = backward_evidence::absent;
    bool freed = false;
    bool long_lived = false;  // freed in a later step than it was made, or never
    bool kept_a_step_beyond = false;
    bool parameter_sized = false;
    bool freed_under_its_own_stack = false;
    bool workspace_sized = false;  // the size of a cuBLAS workspace
    job_kind kind = job_kind::unknown;
    size_t alloc_entry = no_position;
    size_t free_entry = no_position;
    step_phases phases;  // of its step

    // Freed at or after `phase` began (or never).
    bool outlives(size_t phase) const {
        return free_entry == no_position || (phase != no_position && free_entry >= phase);
    }
};

// The rule for one allocation, first match winning: what a library made for itself first (a KV
// cache, a workspace, FSDP's and DDP's buffers), then in the order PyTorch's memory profiler
// assigns its own categories (gradients and temporaries first, then parameters, optimizer
// state, activations and autograd's own).
category_rule choose_rule(const allocation_facts& x);

}  // namespace memtrail::analysis
