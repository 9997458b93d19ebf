// Categories of allocations. The evidence is gathered in three passes: the frames of every stack
// an allocation or free was recorded under (cached per stack), the training steps and their
// phases (forward, backward, optimizer), then one rule per allocation, first match winning in
// the order PyTorch's memory profiler assigns its own categories (gradients and temporaries
// first, then parameters, optimizer state, activations and autograd's own tensors).

#include "memtrail/analysis/categories.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "memtrail/analysis/size_text.hpp"

namespace memtrail::analysis {

using snapshot::action;

namespace {

constexpr size_t none = std::numeric_limits<size_t>::max();

constexpr std::string_view category_names[memory_category_count] = {
    "parameter", "optimizer_state", "gradient",        "activation",
    "temporary", "input",           "autograd_detail", "unknown",
};

constexpr std::string_view category_descriptions[memory_category_count] = {
    "the model's weights (and the buffers moved with them)",
    "what the optimizer keeps per parameter (Adam's moments, momentum)",
    "the parameters' gradients",
    "what forward makes and backward uses",
    "freed within the operation or step that made it",
    "what the training loop feeds the model",
    "autograd's own tensors during backward (gradients of activations)",
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
     "module construction or .to()/.cuda(), alive across training steps"},
    {memory_category::temporary, 0.6f, "module construction or .to()/.cuda(), freed again"},
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
    {memory_category::input, 0.6f, "made by the training loop before forward and used by it"},
    {memory_category::gradient, 0.75f, "made inside a range named backward and freed after it"},
    {memory_category::unknown, 0.0f,
     "made in forward or backward and never freed while later steps ran, unlike any parameter "
     "in size: a cache such as a library's workspace"},
    {memory_category::unknown, 0.0f, "no frame, thread or lifetime evidence"},
};
static_assert(std::size(rules) == category_rule_count);

// What one stack says about the allocation or free recorded under it.
enum stack_flag : uint16_t {
    has_frames = 1 << 0,
    has_python = 1 << 1,
    module_setup = 1 << 2,
    optimizer = 1 << 3,
    optimizer_init = 1 << 4,
    zero_grad = 1 << 5,
    backward = 1 << 6,
    accumulate_grad = 1 << 7,
    forward = 1 << 8,
    autograd_engine = 1 << 9,  // native frames of autograd's engine (its worker threads)
    has_native = 1 << 10,
    annotated_backward = 1 << 11,  // inside a range named "backward"
};

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

uint16_t python_frame_flags(std::string_view function, std::string_view file) {
    uint16_t flags = has_python;
    if (function == "forward") {
        flags |= forward;
    }
    if (function == "zero_grad") {
        flags |= zero_grad;
    }
    // Weights loaded by Hugging Face's transformers and accelerate straight onto the device.
    if (is_one_of(function, {"from_pretrained", "set_module_tensor_to_device",
                             "_load_state_dict_into_meta_model", "load_checkpoint_and_dispatch"})) {
        flags |= module_setup;
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

uint16_t native_frame_flags(std::string_view function) {
    uint16_t flags = has_native;
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

class stack_flags {
  public:
    explicit stack_flags(const snapshot::snapshot& source)
        : source_(source), cache_(source.stacks().size(), unknown) {}

    uint16_t of(snapshot::stack_id id) {
        if (id >= cache_.size()) {
            return 0;
        }
        if (cache_[id] == unknown) {
            cache_[id] = compute(id);
        }
        return cache_[id];
    }

  private:
    static constexpr uint32_t unknown = std::numeric_limits<uint32_t>::max();

    uint16_t compute(snapshot::stack_id id) const {
        uint16_t flags = 0;
        for (const snapshot::frame_id f : source_.stack_at(id)) {
            const snapshot::frame& frame = source_.frame_at(f);
            flags |= has_frames;
            const std::string_view function = source_.string_at(frame.function);
            flags |= frame.kind == snapshot::frame_kind::python
                         ? python_frame_flags(function, source_.string_at(frame.filename))
                         : native_frame_flags(function);
        }
        return flags;
    }

    const snapshot::snapshot& source_;
    std::vector<uint32_t> cache_;
};

// Drops a trailing "#<digits>" or " <digits>" so that "ProfilerStep#3" and "ProfilerStep#4", or
// "step 3" and "step 4", are one range.
std::string_view range_family(std::string_view name) {
    const size_t hash = name.find_last_of("# ");
    if (hash == std::string_view::npos || hash + 1 == name.size()) {
        return name;
    }
    for (size_t i = hash + 1; i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9') {
            return name;
        }
    }
    return name.substr(0, hash);
}

std::vector<size_t> clean_boundaries(std::vector<size_t> boundaries, size_t count) {
    std::sort(boundaries.begin(), boundaries.end());
    boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());
    std::erase_if(boundaries, [&](size_t b) { return b == 0 || b >= count; });
    return boundaries;
}

// The trace's annotated ranges by family, in positions, and where each Optimizer.step ends.
struct annotated_ranges {
    std::map<std::string, std::vector<std::pair<size_t, size_t>>> by_family;
    std::vector<size_t> optimizer_ends;
};

annotated_ranges ranges_of(const device_model& model) {
    struct range_mark {
        std::string name;
        bool is_start = false;
        size_t position = 0;
    };
    std::vector<range_mark> marks;
    const auto& source = model.source();
    // memtrail keeps its ranges both as trace entries and in the list; PyTorch only in the list.
    for (size_t i = 0; i < model.event_count(); ++i) {
        const auto& e = model.entry(i);
        if (e.kind == action::annotation_start || e.kind == action::annotation_end) {
            marks.push_back({std::string(range_family(source.string_at(e.name))),
                             e.kind == action::annotation_start, i});
        }
    }
    const bool in_trace = !marks.empty();
    for (const auto& a : source.annotations) {
        if (a.device == model.device() && !in_trace) {
            marks.push_back({std::string(range_family(source.string_at(a.name))), a.is_start,
                             model.position_at_time(a.time_ns)});
        }
    }
    std::stable_sort(marks.begin(), marks.end(), [](const range_mark& a, const range_mark& b) {
        return a.position < b.position;
    });
    annotated_ranges out;
    std::map<std::string, size_t> open;
    for (const auto& m : marks) {
        if (m.name.starts_with("Optimizer.step") && !m.is_start) {
            out.optimizer_ends.push_back(m.position);
        }
        if (m.is_start) {
            open[m.name] = m.position;
        } else if (const auto it = open.find(m.name); it != open.end()) {
            out.by_family[m.name].emplace_back(it->second, m.position);
            open.erase(it);
        }
    }
    return out;
}

std::string lowercase(std::string_view text) {
    std::string out(text);
    for (char& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

// Entries inside ranges a user named after the phase they run ("forward", "backward") carry
// that phase, as frames of it would.
void mark_annotated_phases(const annotated_ranges& ranges, std::vector<uint16_t>& entry_flags) {
    for (const auto& [name, list] : ranges.by_family) {
        const std::string lower = lowercase(name);
        const uint16_t flags = contains(lower, "backward")  ? backward | annotated_backward
                               : contains(lower, "forward") ? forward
                                                            : 0;
        for (const auto& [first, last] : list) {
            for (size_t i = first; flags != 0 && i < std::min(last, entry_flags.size()); ++i) {
                entry_flags[i] |= flags;
            }
        }
    }
}

// Steps from record_function ranges: the end of each Optimizer.step, else the start of each
// range of the family that repeats and covers the most of the trace.
std::vector<size_t> steps_from_annotations(const annotated_ranges& ranges) {
    if (!ranges.optimizer_ends.empty()) {
        return ranges.optimizer_ends;
    }
    const std::vector<std::pair<size_t, size_t>>* best = nullptr;
    size_t best_cover = 0;
    for (const auto& [name, list] : ranges.by_family) {
        size_t cover = 0;
        for (const auto& [first, last] : list) {
            cover += last - first;
        }
        if (list.size() >= 2 && cover > best_cover) {
            best = &list;
            best_cover = cover;
        }
    }
    std::vector<size_t> starts;
    if (best != nullptr) {
        for (const auto& [first, last] : *best) {
            starts.push_back(first);
        }
    }
    return starts;
}

// Steps from the optimizer's frames: a step ends after each run of entries under them, where
// the next allocation outside the optimizer follows.
std::vector<size_t> steps_from_optimizer(const device_model& model,
                                         const std::vector<uint16_t>& entry_flags) {
    std::vector<size_t> ends;
    size_t last_optimizer = none;
    for (size_t i = 0; i < model.event_count(); ++i) {
        if ((entry_flags[i] & (optimizer | zero_grad)) != 0) {
            last_optimizer = i;
        } else if (last_optimizer != none && model.entry(i).kind == action::alloc) {
            ends.push_back(last_optimizer + 1);
            last_optimizer = none;
        }
    }
    if (last_optimizer != none) {
        ends.push_back(last_optimizer + 1);
    }
    return ends;
}

// Steps from periodicity: the smallest K >= 2 such that at least three allocation stacks recur
// exactly K times, their i-th occurrences all coming before any of their (i+1)-th. Each such
// group of i-th occurrences is one step (a finer period, a model's layers, recurs more often).
std::vector<size_t> steps_from_periodicity(const device_model& model) {
    std::unordered_map<snapshot::stack_id, std::vector<size_t>> occurrences;
    for (size_t i = 0; i < model.event_count(); ++i) {
        const auto& e = model.entry(i);
        if (e.kind == action::alloc && e.stack != snapshot::no_id) {
            occurrences[e.stack].push_back(i);
        }
    }
    std::map<size_t, std::vector<const std::vector<size_t>*>> by_count;
    for (const auto& [stack, list] : occurrences) {
        if (list.size() >= 2) {
            by_count[list.size()].push_back(&list);
        }
    }
    for (const auto& [k, group] : by_count) {
        if (group.size() < 3) {
            continue;
        }
        std::vector<size_t> starts(k, none);
        std::vector<size_t> finishes(k, 0);
        for (const auto* list : group) {
            for (size_t i = 0; i < k; ++i) {
                starts[i] = std::min(starts[i], (*list)[i]);
                finishes[i] = std::max(finishes[i], (*list)[i]);
            }
        }
        bool interleaved = true;
        for (size_t i = 0; i + 1 < k && interleaved; ++i) {
            interleaved = finishes[i] < starts[i + 1];
        }
        if (interleaved) {
            return std::vector<size_t>(starts.begin() + 1, starts.end());
        }
    }
    return {};
}

// Where each step's phases begin (entry indices; `none` where a step has no such phase).
struct step_phases {
    size_t forward = none;
    size_t backward = none;
    size_t optimizer = none;
};

// What the whole trace says before any one allocation is looked at.
struct trace_evidence {
    std::vector<uint16_t> entry_flags;  // each entry's stack flags and annotated phase
    std::map<uint32_t, uint16_t> thread_flags;
    // Only Python frames: autograd's worker, which runs no Python, records no stack at all.
    bool python_trace = false;

    // Only a thread that runs the engine and never a forward is autograd's worker: unstacked
    // allocations there are backward's.
    bool on_worker(uint32_t thread) const {
        const auto it = thread_flags.find(thread);
        return it != thread_flags.end() && (it->second & autograd_engine) != 0 &&
               (it->second & forward) == 0;
    }
};

trace_evidence gather_evidence(const device_model& model, stack_flags& flags_of,
                               const annotated_ranges& ranges) {
    trace_evidence out;
    const size_t count = model.event_count();
    out.entry_flags.resize(count);
    uint16_t trace_flags = 0;
    for (size_t i = 0; i < count; ++i) {
        out.entry_flags[i] = flags_of.of(model.entry(i).stack);
        trace_flags |= out.entry_flags[i];
    }
    out.python_trace = (trace_flags & has_python) != 0 && (trace_flags & has_native) == 0;
    mark_annotated_phases(ranges, out.entry_flags);
    for (size_t i = 0; i < count; ++i) {
        out.thread_flags[model.entry(i).thread] |= out.entry_flags[i];
    }
    return out;
}

training_steps find_steps(const device_model& model, const trace_evidence& evidence,
                          const annotated_ranges& ranges) {
    const size_t count = model.event_count();
    if (auto b = clean_boundaries(steps_from_annotations(ranges), count); !b.empty()) {
        return {step_source::annotations, std::move(b)};
    }
    if (auto b = clean_boundaries(steps_from_optimizer(model, evidence.entry_flags), count);
        !b.empty()) {
        return {step_source::optimizer_frames, std::move(b)};
    }
    if (auto b = clean_boundaries(steps_from_periodicity(model), count); !b.empty()) {
        return {step_source::periodicity, std::move(b)};
    }
    return {};
}

// How sure it is that an allocation entry belongs to backward.
enum class backward_evidence : uint8_t {
    absent,
    unstacked,  // no stack, in a Python-stack trace, between its step's forward and optimizer
    direct,     // frames, autograd's worker thread, or a range named backward
};

struct phases_found {
    std::vector<step_phases> steps;
    std::vector<backward_evidence> backward;  // per entry
};

phases_found find_phases(const device_model& model, const trace_evidence& evidence,
                         const training_steps& steps) {
    phases_found out;
    out.steps.resize(steps.boundaries.size() + 1);
    out.backward.resize(model.event_count());
    for (size_t i = 0; i < model.event_count(); ++i) {
        const auto& e = model.entry(i);
        step_phases& p = out.steps[steps.step_of(i)];
        const uint16_t f = evidence.entry_flags[i];
        // zero_grad may run before the next forward, outside the optimizer's step.
        const bool in_step = (f & optimizer) != 0 && (f & zero_grad) == 0;
        if (in_step && p.optimizer == none) {
            p.optimizer = i;
        }
        if (e.kind != action::alloc) {
            continue;
        }
        if ((f & backward) != 0 || ((f & has_frames) == 0 && evidence.on_worker(e.thread))) {
            out.backward[i] = backward_evidence::direct;
        } else if (evidence.python_trace && (f & has_frames) == 0 && p.forward != none &&
                   p.optimizer == none) {
            out.backward[i] = backward_evidence::unstacked;
        }
        if ((f & forward) != 0 && p.forward == none) {
            p.forward = i;
        }
        if (out.backward[i] != backward_evidence::absent && p.backward == none) {
            p.backward = i;
        }
    }
    return out;
}

// What is known of one allocation, for choose_rule.
struct allocation_facts {
    uint16_t made = 0;      // flags of its allocation (stack and annotated phase)
    uint16_t freed_by = 0;  // flags of its free entry
    backward_evidence in_backward = backward_evidence::absent;
    bool freed = false;
    bool long_lived = false;  // freed in a later step than it was made, or never
    bool kept_a_step_beyond = false;
    bool parameter_sized = false;
    bool freed_under_its_own_stack = false;
    size_t alloc_entry = none;
    size_t free_entry = none;
    step_phases phases;  // of its step

    // Freed at or after `phase` began (or never).
    bool outlives(size_t phase) const {
        return free_entry == none || (phase != none && free_entry >= phase);
    }
};

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
    if (x.kept_a_step_beyond) {
        return category_rule::kept_to_the_end;
    }
    if (x.long_lived) {
        return category_rule::forward_outlives_step;
    }
    return x.outlives(x.phases.backward) ? category_rule::forward_kept_for_backward
                                         : category_rule::forward_freed_in_forward;
}

// The first rule that fits, in the order PyTorch's profiler assigns its categories.
category_rule choose_rule(const allocation_facts& x) {
    const bool framed = (x.made & has_frames) != 0;
    const step_phases& p = x.phases;
    const bool in_forward_phase = x.alloc_entry != none && p.forward != none &&
                                  x.alloc_entry > p.forward &&
                                  (p.backward == none || x.alloc_entry < p.backward);
    if ((x.made & accumulate_grad) != 0) {
        return category_rule::accumulate_grad;
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

// A free by the very last entry also ends at event_count(): tells it from never freed.
bool freed_in_trace(const device_model& model, const allocation_lifetime& life) {
    const size_t count = model.event_count();
    if (life.end < count) {
        return true;
    }
    if (life.end != count || count == 0 || life.begin >= count) {
        return false;
    }
    const auto& last = model.entry(count - 1);
    return (last.kind == action::free_requested || last.kind == action::free_completed) &&
           last.address == life.address;
}

}  // namespace

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

category_map category_map::build(const device_model& model) {
    category_map map(model);
    const auto& lifetimes = model.lifetimes();
    stack_flags flags_of(model.source());
    const annotated_ranges ranges = ranges_of(model);
    const trace_evidence evidence = gather_evidence(model, flags_of, ranges);
    map.steps_ = find_steps(model, evidence, ranges);
    const training_steps& steps = map.steps_;
    const phases_found phases = find_phases(model, evidence, steps);

    // A gradient has its parameter's size: what tells a gradient kept across steps
    // (zero_grad(set_to_none=False)) from a cache the backward pass made once.
    std::unordered_set<uint64_t> parameter_sizes;
    for (const auto& life : lifetimes) {
        if ((flags_of.of(life.stack) & module_setup) != 0) {
            parameter_sizes.insert(life.requested_size);
        }
    }

    map.assignments_.resize(lifetimes.size());
    map.freed_.resize(lifetimes.size());
    for (size_t l = 0; l < lifetimes.size(); ++l) {
        const allocation_lifetime& life = lifetimes[l];
        allocation_facts x;
        x.freed = freed_in_trace(model, life);
        x.alloc_entry = life.from_before_trace ? none : life.begin - 1;
        x.free_entry = x.freed && life.end != 0 ? life.end - 1 : none;
        constexpr uint16_t phase_flags = forward | backward | annotated_backward;
        x.made = flags_of.of(life.stack) |
                 (x.alloc_entry == none ? 0 : evidence.entry_flags[x.alloc_entry] & phase_flags);
        x.freed_by = x.free_entry == none ? 0 : evidence.entry_flags[x.free_entry];
        x.in_backward =
            x.alloc_entry == none ? backward_evidence::absent : phases.backward[x.alloc_entry];
        const size_t step = x.alloc_entry == none ? 0 : steps.step_of(x.alloc_entry);
        x.phases = phases.steps[step];
        x.long_lived = !x.freed || (x.free_entry != none && steps.step_of(x.free_entry) > step);
        // Never freed though a whole step went by after its own: kept for the run, as caches
        // are (the last step's results also stay to the end, and are not).
        x.kept_a_step_beyond = !x.freed && step + 2 <= steps.boundaries.size();
        x.parameter_sized = parameter_sizes.contains(life.requested_size);
        x.freed_under_its_own_stack =
            x.free_entry != none && model.entry(x.free_entry).stack == life.stack;

        const category_rule rule = choose_rule(x);
        const memory_category category = rule_category(rule);
        map.assignments_[l] = {category, rule};
        map.freed_[l] = x.freed ? 1 : 0;
        map.any_known_ = map.any_known_ || category != memory_category::unknown;
        if (life.size != 0 && (life.end > life.begin || !x.freed)) {
            map.changes_.push_back({life.begin, static_cast<int64_t>(life.size), category});
            if (x.freed) {
                map.changes_.push_back({life.end, -static_cast<int64_t>(life.size), category});
            }
        }
    }
    std::stable_sort(map.changes_.begin(), map.changes_.end(),
                     [](const change& x, const change& y) { return x.position < y.position; });
    map.index_live_allocations();
    return map;
}

bool category_map::live_at(size_t index, size_t position) const {
    const allocation_lifetime& life = model_.lifetimes()[index];
    return life.begin <= position && (position < life.end || freed_[index] == 0);
}

namespace {

// The first lifetime that begins after `position`: device_model keeps them in order of begin.
uint32_t first_begun_after(const std::vector<allocation_lifetime>& lifetimes, size_t position) {
    const auto it =
        std::partition_point(lifetimes.begin(), lifetimes.end(),
                             [&](const allocation_lifetime& l) { return l.begin <= position; });
    return static_cast<uint32_t>(it - lifetimes.begin());
}

}  // namespace

void category_map::collect_live(size_t checkpoint, size_t position,
                                std::vector<uint32_t>& out) const {
    const live_checkpoint& from = live_checkpoints_[checkpoint];
    const size_t live_end = checkpoint + 1 < live_checkpoints_.size()
                                ? live_checkpoints_[checkpoint + 1].live_begin
                                : live_.size();
    for (size_t i = from.live_begin; i < live_end; ++i) {
        if (live_at(live_[i], position)) {
            out.push_back(live_[i]);
        }
    }
    const uint32_t last = first_begun_after(model_.lifetimes(), position);
    for (uint32_t l = from.first_after; l < last; ++l) {
        if (live_at(l, position)) {
            out.push_back(l);
        }
    }
}

// A checkpoint after every few thousand lifetimes begun, and after at least four times as many
// as were live at the one before, so the copies of live sets take at most a quarter of an index
// per lifetime.
void category_map::index_live_allocations() {
    constexpr size_t min_interval = 4096;
    const auto& lifetimes = model_.lifetimes();
    live_checkpoints_.push_back({0, 0, 0});
    std::vector<uint32_t> live;
    while (live_checkpoints_.back().first_after < lifetimes.size()) {
        const live_checkpoint last = live_checkpoints_.back();
        const size_t last_live = live_.size() - last.live_begin;
        const size_t next_first =
            std::min(lifetimes.size(), last.first_after + std::max(min_interval, 4 * last_live));
        const size_t position = lifetimes[next_first - 1].begin;
        live.clear();
        collect_live(live_checkpoints_.size() - 1, position, live);
        live_checkpoints_.push_back(
            {position, first_begun_after(lifetimes, position), live_.size()});
        live_.insert(live_.end(), live.begin(), live.end());
    }
}

std::vector<uint32_t> category_map::live_allocations(size_t position) const {
    const auto after =
        std::upper_bound(live_checkpoints_.begin(), live_checkpoints_.end(), position,
                         [](size_t p, const live_checkpoint& c) { return p < c.position; });
    std::vector<uint32_t> out;
    collect_live(static_cast<size_t>(after - live_checkpoints_.begin()) - 1, position, out);
    return out;
}

std::vector<std::array<uint64_t, memory_category_count>> category_map::bytes_at(
    const std::vector<size_t>& positions) const {
    std::vector<std::array<uint64_t, memory_category_count>> out(positions.size());
    std::array<int64_t, memory_category_count> running{};
    size_t next = 0;
    for (size_t i = 0; i < positions.size(); ++i) {
        while (next < changes_.size() && changes_[next].position <= positions[i]) {
            running[static_cast<size_t>(changes_[next].category)] += changes_[next].bytes;
            ++next;
        }
        for (size_t c = 0; c < memory_category_count; ++c) {
            out[i][c] = static_cast<uint64_t>(std::max<int64_t>(running[c], 0));
        }
    }
    return out;
}

uint64_t category_breakdown::total_bytes() const {
    uint64_t sum = 0;
    for (const auto& t : totals) {
        sum += t.bytes;
    }
    return sum;
}

category_breakdown categories_at(const device_model& model, const category_map& map,
                                 size_t position) {
    category_breakdown out;
    out.position = std::min(position, model.event_count());
    const auto& lifetimes = model.lifetimes();
    const auto& assignments = map.assignments();
    std::array<double, memory_category_count> weighted{};
    for (const uint32_t l : map.live_allocations(out.position)) {
        const size_t c = static_cast<size_t>(assignments[l].category);
        category_total& t = out.totals[c];
        t.bytes += lifetimes[l].size;
        t.requested += lifetimes[l].requested_size;
        ++t.blocks;
        rule_total& r = out.rules[static_cast<size_t>(assignments[l].rule)];
        r.bytes += lifetimes[l].size;
        ++r.blocks;
        weighted[c] += static_cast<double>(lifetimes[l].size) * assignments[l].confidence();
    }
    for (size_t c = 0; c < memory_category_count; ++c) {
        const category_total& t = out.totals[c];
        out.totals[c].confidence = t.bytes == 0 ? 0.0 : weighted[c] / static_cast<double>(t.bytes);
    }
    return out;
}

std::string categories_line(const category_breakdown& breakdown) {
    std::vector<size_t> order;
    for (size_t c = 0; c < memory_category_count; ++c) {
        if (breakdown.totals[c].bytes != 0) {
            order.push_back(c);
        }
    }
    if (order.empty()) {
        return "nothing allocated";
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
        return breakdown.totals[x].bytes > breakdown.totals[y].bytes;
    });
    std::string line;
    for (const size_t c : order) {
        line += (line.empty() ? "" : ", ") +
                std::string(category_name(static_cast<memory_category>(c))) + " " +
                format_bytes(breakdown.totals[c].bytes);
    }
    return line;
}

}  // namespace memtrail::analysis
