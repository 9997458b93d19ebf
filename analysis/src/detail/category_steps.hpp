#pragma once
// The shape of a trace in time, for the categories: what kind of job it is, its training steps
// and their phases (forward, backward, optimizer), or a generation's prefill and decode steps.
// Found from the frames of every entry (category_frames.hpp) and the trace's annotations.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "category_frames.hpp"
#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/device_model.hpp"

namespace memtrail::analysis {

inline constexpr size_t no_position = std::numeric_limits<size_t>::max();

// The trace's annotated ranges by family, in positions, and where each Optimizer.step ends.
struct annotated_ranges {
    std::map<std::string, std::vector<std::pair<size_t, size_t>>> by_family;
    std::vector<size_t> optimizer_ends;
};
annotated_ranges ranges_of(const device_model& model);

// What the whole trace says before any one allocation is looked at.
struct trace_evidence {
    std::vector<uint32_t> entry_flags;  // each entry's stack flags and annotated phase
    std::map<uint32_t, uint32_t> thread_flags;
    uint32_t trace_flags = 0;  // every entry's flags together
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
                               const annotated_ranges& ranges);

// Training when backward or an optimizer left a frame or a range; inference when PyTorch's
// own frames are there and none of those; otherwise nothing says.
job_kind find_job_kind(const trace_evidence& evidence, const annotated_ranges& ranges);

// Inference has no training steps: periodicity there would find decode steps or batches.
training_steps find_steps(const device_model& model, const trace_evidence& evidence,
                          const annotated_ranges& ranges, job_kind kind);

generation_phases find_generation(const device_model& model, const trace_evidence& evidence);

// Where each step's phases begin (entry indices; `no_position` where a step has none).
struct step_phases {
    size_t forward = no_position;
    size_t backward = no_position;
    size_t optimizer = no_position;
};

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
                         const training_steps& steps, job_kind kind);

}  // namespace memtrail::analysis
