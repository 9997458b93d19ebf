#pragma once
// A synthetic PyTorch snapshot pickle with Python stacks, laid out as
// torch.cuda.memory._snapshot() after _record_memory_history(context="all", stacks="python")
// and pickle protocol 4 lay it out: every trace entry and block has a frames list of its own, of
// 20 to 40 {filename, line, name} dicts that are shared (memoized) across the file, drawn from a
// few thousand distinct stacks of a training loop (module setup, forward through nested
// modules, backward, the optimizer step). The trace is replay::make_stacked_history's, so the
// model reconstructs it without an anomaly.

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace memtrail::bench {

struct python_stack_trace_shape {
    size_t entries = 1'000'000;
    size_t distinct_stacks = 3000;
    size_t distinct_frames = 4000;  // besides the training loop's own
    uint64_t seed = 11;
};

// Writes the pickle to `path`.
void write_python_stack_pickle(const std::filesystem::path& path,
                               const python_stack_trace_shape& shape = {});

}  // namespace memtrail::bench
