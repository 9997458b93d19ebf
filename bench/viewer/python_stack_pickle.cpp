#include "python_stack_pickle.hpp"

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "memtrail/replay/synthetic_trace.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace memtrail::bench {

namespace {

using snapshot::frame_id;
using snapshot::stack_id;

// The phase of a training step a stack comes from: its outer frames, outermost first.
struct phase {
    std::vector<std::pair<const char*, const char*>> frames;  // (function, file)
};

const std::vector<phase>& training_phases() {
    static const char* module_py =
        "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py";
    static const char* adam_py = "/opt/venv/lib/python3.11/site-packages/torch/optim/adam.py";
    static const char* optimizer_py =
        "/opt/venv/lib/python3.11/site-packages/torch/optim/optimizer.py";
    static const char* autograd_py =
        "/opt/venv/lib/python3.11/site-packages/torch/autograd/__init__.py";
    static const std::vector<phase> phases = {
        {{{"<module>", "train.py"},
          {"main", "train.py"},
          {"build_model", "train.py"},
          {"to", module_py},
          {"_apply", module_py}}},
        {{{"<module>", "train.py"},
          {"main", "train.py"},
          {"train_step", "train.py"},
          {"_wrapped_call_impl", module_py},
          {"_call_impl", module_py},
          {"forward", "model.py"}}},
        {{{"<module>", "train.py"},
          {"main", "train.py"},
          {"train_step", "train.py"},
          {"backward", "/opt/venv/lib/python3.11/site-packages/torch/_tensor.py"},
          {"backward", autograd_py}}},
        {{{"<module>", "train.py"},
          {"main", "train.py"},
          {"train_step", "train.py"},
          {"wrapper", optimizer_py},
          {"step", adam_py},
          {"_init_group", adam_py}}},
        {{{"<module>", "train.py"},
          {"main", "train.py"},
          {"train_step", "train.py"},
          {"wrapper", optimizer_py},
          {"step", adam_py},
          {"adam", adam_py},
          {"_multi_tensor_adam", adam_py}}},
        {{{"<module>", "train.py"},
          {"main", "train.py"},
          {"train_step", "train.py"},
          {"zero_grad", optimizer_py}}},
    };
    return phases;
}

class stack_maker {
  public:
    stack_maker(snapshot::snapshot& s, const python_stack_trace_shape& shape)
        : s_(s), random_(shape.seed) {
        // A vocabulary of library and model frames: ~150 files, ~800 function names.
        for (size_t i = 0; i < shape.distinct_frames; ++i) {
            snapshot::frame f;
            f.kind = snapshot::frame_kind::python;
            f.filename = s_.intern_string("/opt/venv/lib/python3.11/site-packages/library_" +
                                          std::to_string(i % 150) + "/module_" +
                                          std::to_string(i % 37) + ".py");
            f.function = s_.intern_string("function_" + std::to_string((i * 7919) % 800));
            f.line = static_cast<uint32_t>(1 + (i * 104729) % 3000);
            vocabulary_.push_back(s_.intern_frame(f));
        }
    }

    // A stack of 20 to 40 frames, innermost first: a phase's outer frames, then library frames.
    stack_id make() {
        const auto& phases = training_phases();
        const phase& p = phases[random_() % phases.size()];
        const size_t depth = 20 + random_() % 21;
        std::vector<frame_id> outermost_first;
        for (const auto& [function, file] : p.frames) {
            outermost_first.push_back(frame(function, file, 10 + outermost_first.size()));
        }
        while (outermost_first.size() < depth) {
            outermost_first.push_back(vocabulary_[random_() % vocabulary_.size()]);
        }
        return s_.intern_stack({outermost_first.rbegin(), outermost_first.rend()});
    }

  private:
    frame_id frame(const char* function, const char* file, size_t line) {
        snapshot::frame f;
        f.kind = snapshot::frame_kind::python;
        f.function = s_.intern_string(function);
        f.filename = s_.intern_string(file);
        f.line = static_cast<uint32_t>(line);
        return s_.intern_frame(f);
    }

    snapshot::snapshot& s_;
    std::mt19937_64 random_;
    std::vector<frame_id> vocabulary_;
};

}  // namespace

void write_python_stack_pickle(const std::filesystem::path& path,
                               const python_stack_trace_shape& shape) {
    snapshot::snapshot s = replay::make_stacked_history(shape.entries, shape.seed);
    s.info.producer = "torch pickle import";
    stack_maker maker(s, shape);
    std::vector<stack_id> stacks;
    for (size_t i = 0; i < shape.distinct_stacks; ++i) {
        stacks.push_back(maker.make());
    }
    // Every entry has a stack: with context="all" PyTorch records where frees happen too.
    std::mt19937_64 random(shape.seed + 1);
    for (snapshot::device_trace& trace : s.traces) {
        for (snapshot::trace_entry& e : trace.entries) {
            e.stack = stacks[random() % stacks.size()];
        }
    }
    for (snapshot::segment& segment : s.segments) {
        segment.stack = stacks[random() % stacks.size()];
        for (snapshot::block& block : segment.blocks) {
            if (block.state != snapshot::block_state::inactive) {
                block.stack = stacks[random() % stacks.size()];
            }
        }
    }
    snapshot::write_torch_pickle(s, path, snapshot::frames_lists::one_per_entry);
}

}  // namespace memtrail::bench
