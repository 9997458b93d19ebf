// Categories of allocations: synthetic training loops whose every allocation's meaning is known
// (Python stacks as PyTorch records them, native stacks with autograd's worker thread, no
// evidence at all), the training steps found from the optimizer's frames, annotations and
// periodicity, and the real PyTorch traces checked against their models' own parameter and
// optimizer-state bytes.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "memtrail/analysis/categories.hpp"
#include "memtrail/snapshot/load.hpp"
#include "reference_allocator.hpp"

namespace memtrail::analysis {
namespace {

using snapshot::frame_kind;
using snapshot::stack_id;

constexpr uint64_t MiB = 1ull << 20;

struct frame_spec {
    const char* function;
    const char* file;
    frame_kind kind = frame_kind::python;
};

// Innermost frame first, as the snapshot keeps stacks.
stack_id make_stack(snapshot::snapshot& s, std::vector<frame_spec> frames) {
    std::vector<snapshot::frame_id> ids;
    uint32_t line = 1;
    for (const auto& spec : frames) {
        snapshot::frame f;
        f.function = s.intern_string(spec.function);
        f.filename = s.intern_string(spec.file);
        f.line = line++;
        f.kind = spec.kind;
        ids.push_back(s.intern_frame(f));
    }
    return s.intern_stack(ids);
}

// A training loop on the reference allocator that remembers what each allocation is.
class training_loop {
  public:
    explicit training_loop(std::shared_ptr<snapshot::snapshot> snap)
        : snap_(std::move(snap)), allocator_(*snap_) {}

    uint64_t alloc(uint64_t bytes, stack_id stack, memory_category expected, uint32_t thread = 0) {
        const uint64_t address = allocator_.allocate(bytes, 0, stack);
        trace().entries.back().thread = thread;
        expected_.push_back(expected);
        return address;
    }

    // Frees with the stack of the code that frees (PyTorch records it), on `thread`.
    void free(uint64_t address, stack_id stack, uint32_t thread = 0) {
        allocator_.free(address, false);
        auto& entries = trace().entries;
        for (size_t i = entries.size() - 2; i < entries.size(); ++i) {
            entries[i].stack = stack;
            entries[i].thread = thread;
        }
    }

    void annotate(const char* name, bool is_start) {
        snapshot::annotation a;
        a.is_start = is_start;
        a.name = snap_->intern_string(name);
        a.time_ns = trace().entries.back().time_ns;
        snap_->annotations.push_back(a);
    }

    // A range as memtrail's recorder keeps it: a trace entry, and the same in the list.
    void range(const char* name, bool is_start) {
        snapshot::trace_entry e;
        e.kind = is_start ? snapshot::action::annotation_start : snapshot::action::annotation_end;
        e.name = snap_->intern_string(name);
        e.time_ns = trace().entries.empty() ? 0 : trace().entries.back().time_ns;
        trace().entries.push_back(e);
        snap_->annotations.push_back({is_start, e.name, 0, e.time_ns});
    }

    device_model finish() {
        allocator_.finish();
        return device_model::build(snap_, 0);
    }

    const std::vector<memory_category>& expected() const { return expected_; }
    snapshot::snapshot& source() { return *snap_; }

  private:
    snapshot::device_trace& trace() { return snap_->trace_for(0); }

    std::shared_ptr<snapshot::snapshot> snap_;
    testing::reference_allocator allocator_;
    std::vector<memory_category> expected_;
};

// The Python training loop of tests/gpu's transformer, as PyTorch records it: backward runs on
// autograd's worker, which has no Python frames, so its allocations carry no stack.
void record_python_training(training_loop& loop, int steps, bool annotate) {
    auto& s = loop.source();
    const char* module_py = "/site-packages/torch/nn/modules/module.py";
    const stack_id setup = make_stack(s, {{"<lambda>", module_py},
                                          {"_apply", module_py},
                                          {"cuda", module_py},
                                          {"main", "train.py"}});
    const stack_id input = make_stack(s, {{"main", "train.py"}});
    const stack_id forward =
        make_stack(s, {{"linear", "/site-packages/torch/nn/functional.py"},
                       {"forward", "/site-packages/torch/nn/modules/linear.py"},
                       {"_call_impl", module_py},
                       {"main", "train.py"}});
    const stack_id forward_later = make_stack(
        s, {{"forward", "/site-packages/torch/nn/modules/linear.py"}, {"main", "train.py"}});
    const stack_id init = make_stack(s, {{"_init_group", "/site-packages/torch/optim/adam.py"},
                                         {"step", "/site-packages/torch/optim/adam.py"},
                                         {"main", "train.py"}});
    const stack_id update =
        make_stack(s, {{"_multi_tensor_adam", "/site-packages/torch/optim/adam.py"},
                       {"step", "/site-packages/torch/optim/adam.py"},
                       {"main", "train.py"}});
    const stack_id zero_grad = make_stack(
        s, {{"zero_grad", "/site-packages/torch/optim/optimizer.py"}, {"main", "train.py"}});
    const stack_id backward = snapshot::no_id;

    const uint64_t w1 = loop.alloc(4 * MiB, setup, memory_category::parameter);
    const uint64_t w2 = loop.alloc(6 * MiB, setup, memory_category::parameter);
    (void)w1;
    (void)w2;
    uint64_t batch = 0;
    for (int step = 0; step < steps; ++step) {
        const uint64_t next = loop.alloc(MiB, input, memory_category::input);
        if (batch != 0) {
            loop.free(batch, input);
        }
        batch = next;
        const uint64_t kept = loop.alloc(3 * MiB, forward, memory_category::activation);
        const uint64_t scratch = loop.alloc(2 * MiB, forward, memory_category::temporary);
        loop.free(scratch, forward_later);
        const uint64_t own = loop.alloc(MiB / 2, forward, memory_category::temporary);
        loop.free(own, forward);
        const uint64_t detail = loop.alloc(MiB / 4, backward, memory_category::autograd_detail);
        const uint64_t g1 = loop.alloc(4 * MiB, backward, memory_category::gradient);
        const uint64_t g2 = loop.alloc(6 * MiB, backward, memory_category::gradient);
        loop.free(kept, backward);
        loop.free(detail, backward);
        if (annotate) {
            loop.annotate("Optimizer.step#Adam.step", true);
        }
        if (step == 0) {
            for (const uint64_t size : {4 * MiB, 4 * MiB, 6 * MiB, 6 * MiB}) {
                loop.alloc(size, init, memory_category::optimizer_state);
            }
        }
        const uint64_t temporary = loop.alloc(3 * MiB / 2, update, memory_category::temporary);
        loop.free(temporary, update);
        if (annotate) {
            loop.annotate("Optimizer.step#Adam.step", false);
        }
        loop.free(g1, zero_grad);
        loop.free(g2, zero_grad);
    }
}

void expect_assignments(const category_map& map, const device_model& model,
                        const std::vector<memory_category>& expected) {
    ASSERT_EQ(map.assignments().size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(category_name(map.assignments()[i].category), category_name(expected[i]))
            << "allocation " << i << " of " << model.lifetimes()[i].size
            << " bytes: " << rule_description(map.assignments()[i].rule);
    }
}

TEST(categories, names_round_trip) {
    for (size_t i = 0; i < memory_category_count; ++i) {
        memory_category parsed = memory_category::unknown;
        ASSERT_TRUE(parse_category(category_name(static_cast<memory_category>(i)), parsed));
        EXPECT_EQ(static_cast<size_t>(parsed), i);
    }
    memory_category parsed = memory_category::parameter;
    EXPECT_FALSE(parse_category("weights", parsed));
}

TEST(categories, python_training_loop_from_the_optimizer_frames) {
    training_loop loop(std::make_shared<snapshot::snapshot>());
    record_python_training(loop, 3, false);
    const device_model model = loop.finish();
    const category_map map = category_map::build(model);
    EXPECT_EQ(map.steps().source, step_source::optimizer_frames);
    // The last step's optimizer run ends with the trace: two boundaries, three steps.
    EXPECT_EQ(map.steps().boundaries.size(), 2u);
    expect_assignments(map, model, loop.expected());
    EXPECT_TRUE(map.any_known());

    // At the end of the first step: weights, Adam's two moments, the next step's input is not
    // there yet but this step's is; gradients were freed by zero_grad.
    const auto at = categories_at(model, map, map.steps().boundaries[0]);
    EXPECT_EQ(at.totals[static_cast<size_t>(memory_category::parameter)].requested, 10 * MiB);
    EXPECT_EQ(at.totals[static_cast<size_t>(memory_category::optimizer_state)].requested, 20 * MiB);
    EXPECT_EQ(at.totals[static_cast<size_t>(memory_category::input)].requested, MiB);
    EXPECT_EQ(at.totals[static_cast<size_t>(memory_category::gradient)].bytes, 0u);
    EXPECT_EQ(at.totals[static_cast<size_t>(memory_category::parameter)].blocks, 2u);
    EXPECT_NEAR(at.totals[static_cast<size_t>(memory_category::parameter)].confidence, 0.95, 1e-6);
    EXPECT_EQ(categories_line(at), "optimizer_state 20MiB, parameter 10MiB, input 1MiB");
}

TEST(categories, annotations_give_the_steps_and_the_same_answer) {
    training_loop loop(std::make_shared<snapshot::snapshot>());
    record_python_training(loop, 3, true);
    const device_model model = loop.finish();
    const category_map map = category_map::build(model);
    EXPECT_EQ(map.steps().source, step_source::annotations);
    EXPECT_EQ(map.steps().boundaries.size(), 3u);
    expect_assignments(map, model, loop.expected());
}

TEST(categories, native_stacks_and_autograds_worker_thread) {
    training_loop loop(std::make_shared<snapshot::snapshot>());
    auto& s = loop.source();
    const auto native = frame_kind::native;
    const stack_id setup = make_stack(s, {{"at::empty_strided", "", native},
                                          {"torch::nn::Module::to(c10::Device, bool)", "", native},
                                          {"main", "train.cpp", native}});
    const stack_id forward =
        make_stack(s, {{"at::empty", "", native},
                       {"torch::nn::LinearImpl::forward(at::Tensor const&)", "", native},
                       {"main", "train.cpp", native}});
    const stack_id engine = make_stack(
        s, {{"at::empty", "", native},
            {"torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> "
             "const&)",
             "", native}});
    const stack_id accumulate = make_stack(
        s, {{"torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)", "", native},
            {"torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> "
             "const&)",
             "", native}});
    const stack_id optimizer =
        make_stack(s, {{"at::zeros_like", "", native},
                       {"torch::optim::Adam::step(std::function<at::Tensor ()>)", "", native},
                       {"main", "train.cpp", native}});
    const stack_id user = make_stack(s, {{"main", "train.cpp", native}});
    constexpr uint32_t main_thread = 1;
    constexpr uint32_t worker = 2;

    loop.alloc(8 * MiB, setup, memory_category::parameter, main_thread);
    std::vector<uint64_t> gradients;
    for (int step = 0; step < 2; ++step) {
        const uint64_t activation =
            loop.alloc(2 * MiB, forward, memory_category::activation, main_thread);
        const uint64_t unstacked =
            loop.alloc(MiB, snapshot::no_id, memory_category::autograd_detail, worker);
        const uint64_t detail = loop.alloc(MiB, engine, memory_category::autograd_detail, worker);
        if (step == 0) {
            gradients.push_back(loop.alloc(8 * MiB, accumulate, memory_category::gradient, worker));
        }
        loop.free(activation, engine, worker);
        loop.free(unstacked, engine, worker);
        loop.free(detail, engine, worker);
        if (step == 0) {
            loop.alloc(8 * MiB, optimizer, memory_category::optimizer_state, main_thread);
        }
        const uint64_t temporary =
            loop.alloc(MiB, optimizer, memory_category::temporary, main_thread);
        loop.free(temporary, optimizer, main_thread);
    }
    // Never freed and made by no rule's code: no category is invented for it.
    loop.alloc(MiB, user, memory_category::unknown, main_thread);
    const device_model model = loop.finish();
    const category_map map = category_map::build(model);
    EXPECT_EQ(map.steps().source, step_source::optimizer_frames);
    expect_assignments(map, model, loop.expected());
    EXPECT_EQ(map.assignments()[4].rule, category_rule::accumulate_grad);
    EXPECT_EQ(map.assignments()[2].rule, category_rule::backward_freed_in_backward);
}

// Ranges named after the phases (memtrail's recorder, native frames without torch's names)
// give the steps and the phases the frames do not.
TEST(categories, ranges_named_forward_and_backward) {
    training_loop loop(std::make_shared<snapshot::snapshot>());
    const stack_id user = make_stack(loop.source(), {{"layer", "model.cpp", frame_kind::native},
                                                     {"main", "train.cpp", frame_kind::native}});
    const stack_id other = make_stack(loop.source(), {{"reduce", "train.cpp", frame_kind::native},
                                                      {"main", "train.cpp", frame_kind::native}});
    loop.alloc(8 * MiB, user, memory_category::unknown);  // weights, but nothing says so
    for (int step = 0; step < 3; ++step) {
        const std::string name = "step " + std::to_string(step);
        loop.range(name.c_str(), true);
        loop.range("forward", true);
        const uint64_t kept = loop.alloc(2 * MiB, user, memory_category::activation);
        const uint64_t scratch = loop.alloc(MiB, user, memory_category::temporary);
        loop.free(scratch, other);
        loop.range("forward", false);
        loop.range("backward", true);
        const uint64_t gradient = loop.alloc(MiB, user, memory_category::gradient);
        const uint64_t detail = loop.alloc(MiB / 2, user, memory_category::autograd_detail);
        loop.free(kept, other);
        loop.free(detail, other);
        loop.range("backward", false);
        loop.free(gradient, other);
        loop.range(name.c_str(), false);
    }
    const device_model model = loop.finish();
    const category_map map = category_map::build(model);
    EXPECT_EQ(map.steps().source, step_source::annotations);
    // Each "step N" starts a step; what comes before the first is a stretch of its own.
    EXPECT_EQ(map.steps().boundaries.size(), 3u);
    expect_assignments(map, model, loop.expected());
    EXPECT_EQ(map.assignments()[3].rule, category_rule::annotated_backward_outlives);
}

// Weights a Hugging Face model loads straight onto the device are parameters too.
TEST(categories, weights_loaded_by_from_pretrained) {
    training_loop loop(std::make_shared<snapshot::snapshot>());
    const stack_id load = make_stack(
        loop.source(),
        {{"set_module_tensor_to_device", "/site-packages/accelerate/utils/modeling.py"},
         {"_load_state_dict_into_meta_model", "/site-packages/transformers/modeling_utils.py"},
         {"from_pretrained", "/site-packages/transformers/modeling_utils.py"},
         {"main", "finetune.py"}});
    loop.alloc(4 * MiB, load, memory_category::parameter);
    loop.alloc(2 * MiB, load, memory_category::parameter);
    const device_model model = loop.finish();
    const category_map map = category_map::build(model);
    expect_assignments(map, model, loop.expected());
}

TEST(categories, no_evidence_means_unknown) {
    auto snap = std::make_shared<snapshot::snapshot>();
    testing::reference_allocator allocator(*snap);
    testing::run_random_workload(allocator, testing::make_stacks(*snap, 6), 21, 3000);
    allocator.finish();
    // The reference allocator records frees under the allocation's stack; a recorder without
    // free stacks records none, which leaves only frames without meaning.
    for (auto& e : snap->trace_for(0).entries) {
        if (e.kind != snapshot::action::alloc) {
            e.stack = snapshot::no_id;
        }
    }
    const device_model model = device_model::build(snap, 0);
    const category_map map = category_map::build(model);
    ASSERT_FALSE(model.lifetimes().empty());
    EXPECT_FALSE(map.any_known());
    for (const auto& a : map.assignments()) {
        EXPECT_EQ(a.category, memory_category::unknown);
        EXPECT_EQ(a.confidence(), 0.0f);
    }
}

TEST(categories, steps_from_periodicity) {
    training_loop loop(std::make_shared<snapshot::snapshot>());
    auto& s = loop.source();
    const stack_id load = make_stack(s, {{"load", "loop.py"}, {"main", "loop.py"}});
    const stack_id compute = make_stack(s, {{"compute", "loop.py"}, {"main", "loop.py"}});
    const stack_id reduce = make_stack(s, {{"reduce", "loop.py"}, {"main", "loop.py"}});
    const stack_id layer = make_stack(s, {{"layer", "loop.py"}, {"main", "loop.py"}});
    const stack_id cleanup = make_stack(s, {{"cleanup", "loop.py"}, {"main", "loop.py"}});
    std::vector<size_t> step_starts;
    for (int step = 0; step < 4; ++step) {
        step_starts.push_back(s.trace_for(0).entries.size());
        const uint64_t a = loop.alloc(MiB, load, memory_category::unknown);
        // A finer period inside each step (a model's layers) must not be taken for the steps.
        for (int i = 0; i < 3; ++i) {
            loop.free(loop.alloc(MiB, layer, memory_category::temporary), layer);
        }
        const uint64_t b = loop.alloc(MiB, compute, memory_category::unknown);
        const uint64_t c = loop.alloc(MiB, reduce, memory_category::unknown);
        loop.free(a, cleanup);
        loop.free(b, cleanup);
        loop.free(c, cleanup);
    }
    const device_model model = loop.finish();
    const category_map map = category_map::build(model);
    EXPECT_EQ(map.steps().source, step_source::periodicity);
    // The reference allocator opens a segment before the first allocation of step 0 only.
    EXPECT_EQ(map.steps().boundaries,
              (std::vector<size_t>{step_starts[1], step_starts[2], step_starts[3]}));
    EXPECT_EQ(map.steps().step_of(0), 0u);
    EXPECT_EQ(map.steps().step_of(step_starts[2]), 2u);
    expect_assignments(map, model, loop.expected());
}

TEST(categories, a_free_by_the_last_entry_is_not_never_freed) {
    training_loop loop(std::make_shared<snapshot::snapshot>());
    const stack_id user = make_stack(loop.source(), {{"main", "train.py"}});
    const uint64_t kept = loop.alloc(MiB, user, memory_category::unknown);
    const uint64_t freed = loop.alloc(2 * MiB, user, memory_category::unknown);
    loop.free(freed, user);
    (void)kept;
    const device_model model = loop.finish();
    const category_map map = category_map::build(model);
    const size_t end = model.event_count();
    EXPECT_TRUE(map.live_at(0, end));
    EXPECT_FALSE(map.live_at(1, end));
    EXPECT_EQ(categories_at(model, map, end)
                  .totals[static_cast<size_t>(memory_category::unknown)]
                  .requested,
              MiB);
}

// bytes_at's one sweep agrees with categories_at's count of live blocks everywhere.
void expect_sweep_agrees(const device_model& model, const category_map& map, size_t samples) {
    std::vector<size_t> positions;
    for (size_t i = 0; i < samples; ++i) {
        positions.push_back(model.event_count() * i / (samples - 1));
    }
    const auto swept = map.bytes_at(positions);
    for (size_t i = 0; i < positions.size(); ++i) {
        const auto at = categories_at(model, map, positions[i]);
        for (size_t c = 0; c < memory_category_count; ++c) {
            ASSERT_EQ(swept[i][c], at.totals[c].bytes)
                << "position " << positions[i] << " " << category_name(memory_category(c));
        }
        uint64_t total = 0;
        for (const uint64_t b : swept[i]) {
            total += b;
        }
        EXPECT_EQ(total, model.values(series::allocated)[positions[i]]) << positions[i];
    }
}

// live_allocations (checkpointed) against live_at over every lifetime, at every position.
void expect_live_allocations_agree(const device_model& model, const category_map& map,
                                   size_t stride) {
    const size_t lifetimes = model.lifetimes().size();
    size_t checked = 0;
    for (size_t position = 0; position <= model.event_count(); position += stride) {
        std::vector<uint32_t> expected;
        for (size_t l = 0; l < lifetimes; ++l) {
            if (map.live_at(l, position)) {
                expected.push_back(static_cast<uint32_t>(l));
            }
        }
        ASSERT_EQ(map.live_allocations(position), expected) << "at " << position;
        checked += expected.size();
    }
    EXPECT_GT(checked, 0u);
}

TEST(categories, live_allocations_at_every_moment) {
    training_loop loop(std::make_shared<snapshot::snapshot>());
    record_python_training(loop, 40, false);
    const device_model model = loop.finish();
    expect_live_allocations_agree(model, category_map::build(model), 1);
}

TEST(categories, timeline_sweep_matches_the_live_blocks) {
    training_loop loop(std::make_shared<snapshot::snapshot>());
    record_python_training(loop, 4, false);
    const device_model model = loop.finish();
    expect_sweep_agrees(model, category_map::build(model), 97);
}

// --- real PyTorch traces ---------------------------------------------------------------------

namespace fs = std::filesystem;

// nn.Sequential(Embedding(32000, 1024), TransformerEncoder(TransformerEncoderLayer(d_model=1024,
// nhead=16, dim_feedforward=4096), num_layers=8), Linear(1024, 32000)) of
// shared/tools/torch_parity_traces.py, counted from its layers' shapes.
uint64_t transformer_parameter_bytes() {
    const uint64_t d = 1024;
    const uint64_t ff = 4096;
    const uint64_t vocabulary = 32000;
    const uint64_t attention = (3 * d * d + 3 * d) + (d * d + d);
    const uint64_t feed_forward = (ff * d + ff) + (d * ff + d);
    const uint64_t norms = 2 * (2 * d);
    const uint64_t layer = attention + feed_forward + norms;
    const uint64_t parameters = vocabulary * d + 8 * layer + (d * vocabulary + vocabulary);
    return 4 * parameters;  // fp32
}

// torchvision's resnet50(): 25,557,032 parameters, and .cuda() moves its batch-norm buffers too
// (running mean and variance, 26,560 values each, and 53 int64 num_batches_tracked).
constexpr uint64_t resnet50_parameter_bytes = 4ull * 25'557'032;
constexpr uint64_t resnet50_buffer_bytes = 4ull * 2 * 26'560 + 8 * 53;

struct ground_truth {
    uint64_t parameters = 0;       // bytes .cuda() moves (parameters and buffers)
    uint64_t optimizer_state = 0;  // bytes the optimizer keeps
    uint64_t gradients = 0;        // bytes of the parameters' gradients
};

// Requested bytes must agree within 0.1%. Block bytes are printed beside them: they exceed the
// requests by the allocator's rounding (512 bytes) and the blocks it chose not to split.
constexpr double requested_tolerance = 0.001;

double relative(uint64_t measured, uint64_t truth) {
    return std::abs(static_cast<double>(measured) - static_cast<double>(truth)) /
           static_cast<double>(truth);
}

void check_against_model(const fs::path& path, const ground_truth& truth) {
    // The traces unpacked from tests/data are always built; only ../shared may be absent.
    const bool from_shared = path.string().starts_with(MEMTRAIL_SHARED_DIR);
    if (!fs::exists(path)) {
        ASSERT_TRUE(from_shared) << path << " is missing: tests/data's traces unpack at configure";
        GTEST_SKIP() << path << " is not there";
    }
    const auto loaded = snapshot::load_snapshot(path);
    const device_model model = device_model::build(loaded.snapshot, 0);
    const category_map map = category_map::build(model);
    ASSERT_EQ(map.steps().source, step_source::annotations) << path;
    ASSERT_FALSE(map.steps().boundaries.empty());
    const std::pair<memory_category, uint64_t> checks[] = {
        {memory_category::parameter, truth.parameters},
        {memory_category::optimizer_state, truth.optimizer_state},
        {memory_category::gradient, truth.gradients},
    };
    // Each boundary is the end of an optimizer step, before zero_grad frees the gradients.
    for (const size_t end_of_step : map.steps().boundaries) {
        const auto at = categories_at(model, map, end_of_step);
        for (const auto& [category, expected] : checks) {
            const category_total& t = at.totals[static_cast<size_t>(category)];
            std::cout << path.filename().string() << " end of step at " << end_of_step << ": "
                      << category_name(category) << " requested " << t.requested << " blocks "
                      << t.bytes << " truth " << expected << " (requested off by "
                      << relative(t.requested, expected) * 100 << "%, blocks by "
                      << relative(t.bytes, expected) * 100 << "%), confidence " << t.confidence
                      << "\n";
            EXPECT_LE(relative(t.requested, expected), requested_tolerance)
                << category_name(category) << " at " << end_of_step;
        }
    }
    // At the peak the activations dominate, as they do in any training step at this size.
    const auto peak = categories_at(model, map, model.peak_position(series::allocated));
    std::cout << path.filename().string() << " at the peak: " << categories_line(peak) << "\n";
    size_t largest = 0;
    for (size_t c = 0; c < memory_category_count; ++c) {
        if (peak.totals[c].bytes > peak.totals[largest].bytes) {
            largest = c;
        }
    }
    EXPECT_EQ(category_name(memory_category(largest)), "activation");
    EXPECT_EQ(peak.total_bytes(), model.values(series::allocated)[peak.position]);
}

TEST(categories_real_traces, transformer_adamw_matches_the_model) {
    const uint64_t parameters = transformer_parameter_bytes();
    EXPECT_EQ(parameters, 665'351'168u);
    check_against_model(
        fs::path(MEMTRAIL_SHARED_DIR) / "anchors/pytorch/transformer__default.pickle",
        {parameters, 2 * parameters, parameters});
}

TEST(categories_real_traces, unpacked_transformer_traces_match_the_model) {
    const uint64_t parameters = transformer_parameter_bytes();
    for (const char* name : {"transformer__expandable_segments-True.pickle",
                             "dynamic__default.pickle", "dynamic__max_split_size_mb-64.pickle"}) {
        check_against_model(fs::path(MEMTRAIL_UNPACKED_TRACES) / name,
                            {parameters, 2 * parameters, parameters});
    }
}

TEST(categories_real_traces, resnet_sgd_momentum_matches_the_model) {
    // SGD with momentum keeps one buffer per parameter.
    check_against_model(fs::path(MEMTRAIL_UNPACKED_TRACES) / "resnet__default.pickle",
                        {resnet50_parameter_bytes + resnet50_buffer_bytes, resnet50_parameter_bytes,
                         resnet50_parameter_bytes});
}

TEST(categories_real_traces, sweep_matches_on_the_transformer) {
    const fs::path path =
        fs::path(MEMTRAIL_SHARED_DIR) / "anchors/pytorch/transformer__default.pickle";
    if (!fs::exists(path)) {
        GTEST_SKIP() << path << " is not there";
    }
    const device_model model = device_model::build(snapshot::load_snapshot(path).snapshot, 0);
    expect_sweep_agrees(model, category_map::build(model), 301);
}

// Across the live sets' checkpoints (one per 4096 allocations at least): the dynamic trace has
// more than twice as many, and the synthetic loop of 1600 steps (8 allocations each) three
// times as many.
TEST(categories_real_traces, live_allocations_across_checkpoints) {
    const fs::path path = fs::path(MEMTRAIL_UNPACKED_TRACES) / "dynamic__default.pickle";
    ASSERT_TRUE(fs::exists(path)) << path << " is missing: tests/data's traces unpack at configure";
    const device_model model = device_model::build(snapshot::load_snapshot(path).snapshot, 0);
    ASSERT_GT(model.lifetimes().size(), 2u * 4096);
    expect_live_allocations_agree(model, category_map::build(model), 7);

    training_loop loop(std::make_shared<snapshot::snapshot>());
    record_python_training(loop, 1600, false);
    const device_model long_loop = loop.finish();
    ASSERT_GT(long_loop.lifetimes().size(), 3u * 4096);
    expect_live_allocations_agree(long_loop, category_map::build(long_loop), 13);
}

TEST(categories, contradictions_are_flagged_and_a_real_job_has_none) {
    const auto with = [](std::initializer_list<std::pair<memory_category, uint64_t>> bytes) {
        category_breakdown b;
        for (const auto& [category, n] : bytes) {
            b.totals[static_cast<size_t>(category)].bytes = n;
        }
        return b;
    };
    // Adam's two moments beside their parameters, gradients of the same size: nothing wrong.
    EXPECT_TRUE(find_contradictions(with({{memory_category::parameter, 100 * MiB},
                                          {memory_category::optimizer_state, 200 * MiB},
                                          {memory_category::gradient, 100 * MiB}}),
                                    job_kind::training)
                    .empty());
    // The parameters were made before recording began: optimizer state and gradients alone.
    const auto orphaned = find_contradictions(with({{memory_category::optimizer_state, 200 * MiB},
                                                    {memory_category::gradient, 100 * MiB}}),
                                              job_kind::training);
    ASSERT_EQ(orphaned.size(), 1u);
    EXPECT_NE(orphaned[0].text.find("but no parameters"), std::string::npos);
    const auto too_much = find_contradictions(with({{memory_category::parameter, 10 * MiB},
                                                    {memory_category::optimizer_state, 80 * MiB}}),
                                              job_kind::training);
    ASSERT_EQ(too_much.size(), 1u);
    EXPECT_NE(too_much[0].text.find("8 times the parameters"), std::string::npos);
    EXPECT_EQ(find_contradictions(with({{memory_category::parameter, 10 * MiB},
                                        {memory_category::gradient, 10 * MiB}}),
                                  job_kind::inference)
                  .size(),
              1u);
}

}  // namespace
}  // namespace memtrail::analysis
