#pragma once
// Memory by meaning: every allocation of a device's trace sorted into the categories of
// PyTorch's memory profiler (parameter, optimizer state, gradient, activation, temporary, input,
// autograd detail) and three that profiler lacks (a generation's KV cache, libraries'
// workspaces, the buffers of collectives), from what a snapshot holds rather than from a
// profiling window: the frames an allocation was made and freed under, the thread it was made
// on, how long it lived, and the training steps of the trace (from annotations, from the
// optimizer's frames, or from the trace's own periodicity) or the phases of a generation. Each
// assignment names the rule that made it and how sure that rule is; an allocation no rule
// explains stays `unknown`.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memtrail/analysis/device_model.hpp"

namespace memtrail::analysis {

// PyTorch's torch.profiler._memory_profiler.Category, three it has no name for, and `unknown`
// for its "no category".
enum class memory_category : uint8_t {
    parameter,
    optimizer_state,
    gradient,
    activation,
    temporary,
    input,
    autograd_detail,
    kv_cache,    // a generation's key/value cache (Hugging Face's cache classes)
    workspace,   // what a library keeps for its kernels (cuBLAS, cuBLASLt, cuDNN)
    collective,  // FSDP's unsharded parameters, all-gather, reduce-scatter and broadcast buffers
    unknown,
};
inline constexpr size_t memory_category_count = 11;

// "parameter", "optimizer_state", ... as the CLI's JSON and the docs spell them.
std::string_view category_name(memory_category c);
// What the category holds, in a few words ("the model's weights and buffers", ...).
std::string_view category_description(memory_category c);
// Inverse of category_name; false when `name` is none of them.
bool parse_category(std::string_view name, memory_category& out);

// The rule that assigned an allocation its category; each has one confidence and one sentence.
enum class category_rule : uint8_t {
    accumulate_grad,  // allocated by autograd's AccumulateGrad
    backward_freed_by_zero_grad,
    backward_outlives_backward,  // made in backward, alive when the optimizer runs
    backward_freed_in_backward,
    unstacked_outlives_backward,  // no stack in a Python-stack trace (autograd's worker)
    unstacked_freed_in_backward,
    module_setup_long_lived,  // module construction or .to()/.cuda(), alive across steps
    module_setup_freed,
    optimizer_state_init,  // the optimizer's state initialisation, alive across steps
    optimizer_long_lived,
    optimizer_freed_in_step,
    freed_by_zero_grad,
    freed_by_its_own_call,  // freed under the very stack that allocated it: within one op
    forward_kept_for_backward,
    forward_freed_in_forward,
    forward_outlives_step,
    input_before_forward,
    annotated_backward_outlives,  // made in a range named "backward", freed after it
    kept_to_the_end,  // never freed, neither parameter-sized nor otherwise explained: unknown
    fsdp_sharded_parameter,      // FSDP's shard of the parameters (FSDP1's flat shard too)
    fsdp_unsharded_parameter,    // FSDP's all-gathered parameters, freed after their module ran
    fsdp_all_gather_buffer,      // FSDP's all-gather input and output buffers
    fsdp_reduce_scatter_buffer,  // FSDP's reduce-scatter input, freed within backward
    fsdp_sharded_gradient,       // FSDP's reduce-scatter output, kept as the sharded gradient
    ddp_gradient_bucket,         // DDP's flat buckets, gradients copied in for all-reduce
    collective_call,             // made under any other torch.distributed call
    kv_cache_frames,             // made by a Hugging Face cache class
    workspace_frames,            // made by cuBLAS's or cuDNN's workspace code
    workspace_sized,             // a cuBLAS workspace's size, made once and kept to the end
    inference_kept,              // made in inference and kept: outputs, what the program holds
    inference_freed,             // made in inference and freed again
    no_evidence,
};
inline constexpr size_t category_rule_count = static_cast<size_t>(category_rule::no_evidence) + 1;

// How sure `rule` is: 0 (no evidence) to 1.
float rule_confidence(category_rule rule);
// The category the rule assigns.
memory_category rule_category(category_rule rule);
// One sentence naming the evidence, for reports and tooltips.
std::string_view rule_description(category_rule rule);

struct category_assignment {
    memory_category category = memory_category::unknown;
    category_rule rule = category_rule::no_evidence;
    float confidence() const { return rule_confidence(rule); }
};

enum class step_source : uint8_t {
    none,              // a single stretch: no steps found
    annotations,       // Optimizer.step ranges, or a user range repeated each step
    optimizer_frames,  // runs of entries under the optimizer's frames
    periodicity,       // allocation stacks that recur once per step
};
// Whether the trace is a training job, inference, or cannot be told.
enum class job_kind : uint8_t {
    unknown,    // no frame says (no Python frames, or none of PyTorch's)
    training,   // backward or an optimizer ran
    inference,  // PyTorch's frames, and none of backward's or an optimizer's
};
std::string_view job_kind_name(job_kind k);
std::string_view step_source_name(step_source s);

// The trace cut into training steps. A step ends after its optimizer step (or, from
// annotations and periodicity, where the next begins); the last step runs to the end.
struct training_steps {
    step_source source = step_source::none;
    // Positions where a step ends and the next begins, ascending, each in (0, event_count()).
    std::vector<size_t> boundaries;
    // Index of the step that contains `position` (0 .. boundaries.size()).
    size_t step_of(size_t position) const;
};

// The phases of a Hugging Face generate() call, where its frames show them: the prefill (the
// prompt's forward) and one decode step per new token after it. Empty when no generate() ran.
struct generation_phases {
    size_t prefill_begin = 0;  // entries [prefill_begin, prefill_end) run the prefill
    size_t prefill_end = 0;
    std::vector<size_t> decode_starts;  // where each decode step begins, ascending
    bool found() const { return prefill_end > prefill_begin || !decode_starts.empty(); }
};

// Something the categories say that cannot be true of a real job, e.g. optimizer state while
// no parameters were found: a sign that a rule misread the trace, shown beside the numbers.
struct category_contradiction {
    std::string text;
};

// The categories of every allocation of one device model.
class category_map {
  public:
    // Classifies every entry of model.lifetimes().
    static category_map build(const device_model& model);

    const training_steps& steps() const { return steps_; }
    job_kind kind() const { return kind_; }
    const generation_phases& generation() const { return generation_; }
    // Parallel to model.lifetimes().
    const std::vector<category_assignment>& assignments() const { return assignments_; }
    // Whether lifetime `index` is allocated at `position` (begin <= position, not yet freed).
    bool live_at(size_t index, size_t position) const;
    // The lifetimes live_at `position`, ascending. Costs the number live there plus a few
    // thousand, not the trace's length (the viewer asks at every moment it shows).
    std::vector<uint32_t> live_allocations(size_t position) const;
    // Whether lifetime `index`'s free request is in the trace (else it is allocated to the end).
    bool freed(size_t index) const { return freed_[index] != 0; }
    // Whether the trace holds any evidence at all: false when every assignment is unknown.
    bool any_known() const { return any_known_; }

    // Bytes (block sizes) per category at each of `positions` (ascending); one sweep over the
    // allocations' changes, so sampling a timeline costs one pass whatever the count.
    std::vector<std::array<uint64_t, memory_category_count>> bytes_at(
        const std::vector<size_t>& positions) const;

  private:
    explicit category_map(device_model model) : model_(std::move(model)) {}
    // The lifetimes live at a checkpoint's position that began at or before it are kept, so a
    // moment's live set is a checkpoint's, filtered, plus the lifetimes begun since.
    struct live_checkpoint {
        size_t position = 0;
        uint32_t first_after = 0;  // the first lifetime that begins after `position`
        size_t live_begin = 0;     // its live lifetimes: live_[live_begin, the next's live_begin)
    };
    void index_live_allocations();
    void collect_live(size_t checkpoint, size_t position, std::vector<uint32_t>& out) const;
    struct change {
        size_t position = 0;
        int64_t bytes = 0;
        memory_category category = memory_category::unknown;
    };
    training_steps steps_;
    job_kind kind_ = job_kind::unknown;
    generation_phases generation_;
    std::vector<category_assignment> assignments_;
    std::vector<uint8_t> freed_;   // parallel to the lifetimes: its free is in the trace
    device_model model_;           // shared, keeps the lifetimes alive
    std::vector<change> changes_;  // sorted by position
    std::vector<live_checkpoint> live_checkpoints_;  // ascending positions, the first at 0
    std::vector<uint32_t> live_;
    bool any_known_ = false;
};

// Totals of one category at a moment. `confidence` is the byte-weighted mean confidence of its
// blocks (0 when it has none).
struct category_total {
    uint64_t bytes = 0;  // block sizes
    uint64_t requested = 0;
    size_t blocks = 0;
    double confidence = 0.0;
};

// Bytes and blocks one rule accounts for at a moment.
struct rule_total {
    uint64_t bytes = 0;
    size_t blocks = 0;
};

// What is allocated at one position, by category and by the rule that decided it.
struct category_breakdown {
    size_t position = 0;
    std::array<category_total, memory_category_count> totals;
    std::array<rule_total, category_rule_count> rules;
    uint64_t total_bytes() const;
};

// The categories of the blocks allocated at `position` (pending-free blocks are not counted,
// as in PyTorch's allocated_bytes). This is what an OOM report calls with the OOM's position.
category_breakdown categories_at(const device_model& model, const category_map& map,
                                 size_t position);

// "activation 40.0 GiB, parameter 7.0 GiB, ..." largest first, categories without bytes left out;
// "nothing allocated" when empty.
std::string categories_line(const category_breakdown& breakdown);

// What cannot be true of the categories at one moment of a job of `kind` (optimizer state or
// gradients without parameters, optimizer state far beyond what any optimizer keeps per
// parameter, training categories in inference); empty when nothing contradicts.
std::vector<category_contradiction> find_contradictions(const category_breakdown& breakdown,
                                                        job_kind kind);

}  // namespace memtrail::analysis
