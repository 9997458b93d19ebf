// The categories' names and descriptions, and the rules that give an allocation its category:
// each rule's category, confidence and wording, and the choice of one rule from an
// allocation's facts (gathered in categories.cpp).
//
// Index of this file:
// [SECTION] names, descriptions and rules
// [SECTION] choosing a rule
// [SECTION] names and rules, public

#include "detail/category_rules.hpp"

#include <algorithm>
#include <iterator>
#include <string_view>

namespace memtrail::analysis {

namespace {

constexpr size_t none = no_position;

//-------------------------------------------------------------------------------------------------
// [SECTION] names, descriptions and rules
//-------------------------------------------------------------------------------------------------

constexpr std::string_view category_names[memory_category_count] = {
    "parameter",       "optimizer_state", "gradient",  "activation", "temporary", "input",
    "autograd_detail", "kv_cache",        "workspace", "collective", "unknown",
};

constexpr std::string_view category_descriptions[memory_category_count] = {
    "the model's weights (and the buffers moved with them)",
    "what the optimizer keeps per parameter (Adam's moments, momentum)",
    "the parameters' gradients",
    "what forward makes and backward uses",
    "freed within the operation or step that made it",
    "what the training loop feeds the model",
    "autograd's own tensors during backward (gradients of activations)",
    "a generation's key/value cache",
    "what a library keeps for its kernels (cuBLAS, cuBLASLt, cuDNN)",
    "FSDP's unsharded parameters and the buffers of all-gather, reduce-scatter and other "
    "collectives",
    "no frame, thread or lifetime evidence says",
};

struct rule_text {
    memory_category category;
    float confidence;
    std::string_view description;
};

// Indexed by category_rule.
constexpr rule_text rules[] = {
    {memory_category::gradient, 0.95f, "allocated by autograd's AccumulateGrad"},
    {memory_category::gradient, 0.95f, "made in backward and freed by zero_grad"},
    {memory_category::gradient, 0.85f, "made in backward and still alive when the optimizer runs"},
    {memory_category::autograd_detail, 0.75f, "made in backward and freed before it ends"},
    {memory_category::gradient, 0.7f,
     "no stack in a Python-stack trace (autograd's worker thread) during backward, "
     "alive when the optimizer runs"},
    {memory_category::autograd_detail, 0.6f,
     "no stack in a Python-stack trace (autograd's worker thread), freed during backward"},
    {memory_category::parameter, 0.95f,
     "made while the model was built, moved or loaded (module construction, .to()/.cuda(), "
     "from_pretrained) and kept while it ran"},
    {memory_category::temporary, 0.6f,
     "made while the model was built, moved or loaded, and freed again"},
    {memory_category::optimizer_state, 0.95f,
     "the optimizer's state initialisation, alive across training steps"},
    {memory_category::optimizer_state, 0.85f,
     "made in optimizer.step(), alive across training steps"},
    {memory_category::temporary, 0.9f, "made in optimizer.step() and freed within the same step"},
    {memory_category::gradient, 0.7f, "freed by zero_grad"},
    {memory_category::temporary, 0.8f,
     "freed under the stack that allocated it, in the same step (within one operation)"},
    {memory_category::activation, 0.85f, "made in forward and freed during backward"},
    {memory_category::temporary, 0.7f, "made in forward and freed before backward began"},
    {memory_category::activation, 0.5f, "made in forward and alive past its training step"},
    {memory_category::input, 0.6f,
     "made by the loop that feeds the model, before forward, and used by it"},
    {memory_category::gradient, 0.75f, "made inside a range named backward and freed after it"},
    {memory_category::unknown, 0.0f,
     "made in forward or backward and never freed while later steps ran, unlike any parameter "
     "in size: a cache such as a library's workspace"},
    {memory_category::parameter, 0.95f, "FSDP's shard of the parameters, made when sharding"},
    {memory_category::collective, 0.95f,
     "FSDP's unsharded parameters: all-gathered for a module's forward or backward, freed after"},
    {memory_category::collective, 0.9f, "FSDP's all-gather buffers"},
    {memory_category::collective, 0.9f,
     "FSDP's reduce-scatter buffers, freed when the gradients are reduced"},
    {memory_category::gradient, 0.9f,
     "FSDP's reduce-scatter output, kept as the sharded gradient until zero_grad or the "
     "optimizer"},
    {memory_category::gradient, 0.85f,
     "DDP's gradient buckets: flat copies of the gradients for all-reduce (rebuilt once, "
     "after the first step)"},
    {memory_category::collective, 0.7f, "made by torch.distributed (FSDP, DDP, a collective)"},
    {memory_category::kv_cache, 0.95f, "made by a Hugging Face cache class (cache_utils.py)"},
    {memory_category::workspace, 0.95f, "made by cuBLAS's or cuDNN's workspace code"},
    {memory_category::workspace, 0.6f,
     "the size of a cuBLAS workspace, made once and kept to the end"},
    {memory_category::activation, 0.5f,
     "made in inference and still alive: outputs and what the program keeps"},
    {memory_category::temporary, 0.7f, "made in inference and freed again"},
    {memory_category::unknown, 0.0f, "no frame, thread or lifetime evidence"},
};
static_assert(std::size(rules) == category_rule_count);

//-------------------------------------------------------------------------------------------------
// [SECTION] choosing a rule
//-------------------------------------------------------------------------------------------------

category_rule backward_rule(const allocation_facts& x) {
    const bool direct = x.in_backward == backward_evidence::direct;
    if ((x.freed_by & zero_grad) != 0) {
        return category_rule::backward_freed_by_zero_grad;
    }
    if (x.kept_a_step_beyond && !x.parameter_sized) {
        return category_rule::kept_to_the_end;
    }
    if ((x.made & annotated_backward) != 0 && x.free_entry != none &&
        (x.freed_by & annotated_backward) == 0) {
        return category_rule::annotated_backward_outlives;
    }
    if (x.long_lived || x.outlives(x.phases.optimizer)) {
        return direct ? category_rule::backward_outlives_backward
                      : category_rule::unstacked_outlives_backward;
    }
    return direct ? category_rule::backward_freed_in_backward
                  : category_rule::unstacked_freed_in_backward;
}

category_rule forward_rule(const allocation_facts& x) {
    if (x.kind == job_kind::inference) {
        return x.freed ? category_rule::inference_freed : category_rule::inference_kept;
    }
    if (x.kept_a_step_beyond) {
        return category_rule::kept_to_the_end;
    }
    if (x.long_lived) {
        return category_rule::forward_outlives_step;
    }
    return x.outlives(x.phases.backward) ? category_rule::forward_kept_for_backward
                                         : category_rule::forward_freed_in_forward;
}

// What FSDP and DDP made for themselves, from the innermost Python frame and the collective
// it runs in; no_evidence when neither made it.
category_rule distributed_rule(const allocation_facts& x) {
    if ((x.made & innermost_fsdp_sharded) != 0) {
        return x.long_lived ? category_rule::fsdp_sharded_parameter
                            : category_rule::module_setup_freed;
    }
    if ((x.made & innermost_fsdp_unsharded) != 0) {
        return category_rule::fsdp_unsharded_parameter;
    }
    if ((x.made & innermost_ddp_reducer) != 0) {
        // Buckets live until DDP rebuilds them after the first step: never freed by their own call.
        return x.freed_under_its_own_stack ? category_rule::collective_call
                                           : category_rule::ddp_gradient_bucket;
    }
    if ((x.made & innermost_distributed) == 0) {
        return category_rule::no_evidence;
    }
    if ((x.made & fsdp_reduce) != 0) {
        const bool kept = (x.freed_by & zero_grad) != 0 || x.long_lived ||
                          (x.phases.optimizer != none && x.outlives(x.phases.optimizer));
        return kept ? category_rule::fsdp_sharded_gradient
                    : category_rule::fsdp_reduce_scatter_buffer;
    }
    if ((x.made & fsdp_all_gather) != 0) {
        return category_rule::fsdp_all_gather_buffer;
    }
    if ((x.made & module_setup) != 0) {
        return x.long_lived ? category_rule::module_setup_long_lived
                            : category_rule::module_setup_freed;
    }
    return category_rule::collective_call;
}

}  // namespace

category_rule choose_rule(const allocation_facts& x) {
    const bool framed = (x.made & has_frames) != 0;
    const step_phases& p = x.phases;
    const bool in_forward_phase = x.alloc_entry != none && p.forward != none &&
                                  x.alloc_entry > p.forward &&
                                  (p.backward == none || x.alloc_entry < p.backward);
    if ((x.made & accumulate_grad) != 0) {
        return category_rule::accumulate_grad;
    }
    if ((x.made & innermost_kv_cache) != 0) {
        return category_rule::kv_cache_frames;
    }
    if ((x.made & workspace_code) != 0) {
        return category_rule::workspace_frames;
    }
    if (const category_rule rule = distributed_rule(x); rule != category_rule::no_evidence) {
        return rule;
    }
    // cuBLAS makes a handle's workspace at the first matrix product on each thread and keeps it.
    if (x.workspace_sized && !x.freed && x.alloc_entry != none &&
        (x.kept_a_step_beyond || x.kind == job_kind::inference)) {
        return category_rule::workspace_sized;
    }
    if (x.in_backward != backward_evidence::absent) {
        return backward_rule(x);
    }
    if ((x.made & module_setup) != 0) {
        return x.long_lived ? category_rule::module_setup_long_lived
                            : category_rule::module_setup_freed;
    }
    if ((x.made & optimizer) != 0) {
        if (!x.long_lived) {
            return category_rule::optimizer_freed_in_step;
        }
        return (x.made & optimizer_init) != 0 ? category_rule::optimizer_state_init
                                              : category_rule::optimizer_long_lived;
    }
    if ((x.freed_by & zero_grad) != 0) {
        return category_rule::freed_by_zero_grad;
    }
    if (framed && !x.long_lived && x.freed_under_its_own_stack) {
        return category_rule::freed_by_its_own_call;
    }
    if (framed && x.alloc_entry != none && ((x.made & forward) != 0 || in_forward_phase)) {
        return forward_rule(x);
    }
    if (framed && x.alloc_entry != none && p.forward != none && x.alloc_entry < p.forward &&
        (x.long_lived || x.outlives(p.forward))) {
        return category_rule::input_before_forward;
    }
    return category_rule::no_evidence;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] names and rules, public
//-------------------------------------------------------------------------------------------------

std::string_view category_name(memory_category c) {
    return category_names[static_cast<size_t>(c)];
}

std::string_view category_description(memory_category c) {
    return category_descriptions[static_cast<size_t>(c)];
}

bool parse_category(std::string_view name, memory_category& out) {
    for (size_t i = 0; i < memory_category_count; ++i) {
        if (category_names[i] == name) {
            out = static_cast<memory_category>(i);
            return true;
        }
    }
    return false;
}

float rule_confidence(category_rule rule) {
    return rules[static_cast<size_t>(rule)].confidence;
}

memory_category rule_category(category_rule rule) {
    return rules[static_cast<size_t>(rule)].category;
}

std::string_view rule_description(category_rule rule) {
    return rules[static_cast<size_t>(rule)].description;
}

std::string_view job_kind_name(job_kind k) {
    switch (k) {
        case job_kind::unknown:
            return "unknown";
        case job_kind::training:
            return "training";
        case job_kind::inference:
            return "inference";
    }
    return "unknown";
}

std::string_view step_source_name(step_source s) {
    switch (s) {
        case step_source::none:
            return "none";
        case step_source::annotations:
            return "annotations";
        case step_source::optimizer_frames:
            return "optimizer frames";
        case step_source::periodicity:
            return "periodicity";
    }
    return "none";
}

size_t training_steps::step_of(size_t position) const {
    return static_cast<size_t>(std::upper_bound(boundaries.begin(), boundaries.end(), position) -
                               boundaries.begin());
}

}  // namespace memtrail::analysis
