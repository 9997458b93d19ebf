// Stacks fold to the innermost frame of interest and the user's own frame: PyTorch's own frames
// and the interpreter's C frames inside or outside them are left out, the frames between them one
// line that says what it holds; stacks that fold alike become one stack; the recording machinery
// (memtrail, ctypes, libffi) is dropped with every frame shown too; all_frames and snapshots
// without such frames give the snapshot back untouched.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/frame_filter.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/analysis/stack_comparison.hpp"
#include "memtrail/snapshot/recorder_frames.hpp"

namespace memtrail::analysis {
namespace {

using snapshot::frame_kind;

snapshot::frame_id native(snapshot::snapshot& s, const char* function, const char* file = "",
                          const char* module = "") {
    snapshot::frame f;
    f.function = s.intern_string(function);
    f.filename = s.intern_string(file);
    f.module = s.intern_string(module);
    f.kind = frame_kind::native;
    return s.intern_frame(f);
}

snapshot::frame_id python(snapshot::snapshot& s, const char* function, const char* file,
                          uint32_t line) {
    snapshot::frame f;
    f.function = s.intern_string(function);
    f.filename = s.intern_string(file);
    f.line = line;
    f.kind = frame_kind::python;
    return s.intern_frame(f);
}

// Two allocations from one line of user code, through the stacks PyTorch records with C++
// frames: the same user frames, different unwinder and interpreter frames (innermost first).
std::shared_ptr<const snapshot::snapshot> torch_like_snapshot() {
    auto s = std::make_shared<snapshot::snapshot>();
    const auto unwind = native(*s, "torch::unwind::unwind()", "unwind.cpp");
    const auto gather = native(*s, "torch::CapturedTraceback::gather(bool, bool, bool)");
    const auto cache_malloc =
        native(*s, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(...)");
    const auto empty = native(*s, "at::detail::empty_generic(...)", "EmptyTensor.cpp");
    const auto boxing =
        native(*s, "c10::impl::wrap_kernel_functor_unboxed_<...>::call", "core/boxing/impl.h");
    const auto op = native(*s, "at::native::randn(...)", "TensorFactories.cpp");
    const auto binding = native(*s, "torch::autograd::THPVariable_randn", "python_torch.cpp");
    const auto cfunction = native(*s, "cfunction_call", "Objects/methodobject.c");
    const auto eval = native(*s, "_PyEval_EvalFrameDefault", "Python/ceval.c");
    const auto vectorcall = native(*s, "PyObject_Vectorcall", "");
    const auto in_binary = native(*s, "", "", "/usr/bin/python3.11");
    const auto main = native(*s, "__libc_start_main");
    const auto start = native(*s, "_start");
    const auto user = python(*s, "forward", "/work/model.py", 12);
    const auto user_start = native(*s, "train_start", "train.cpp");
    // The dispatcher's generated code, named but without a file (no line tables).
    const auto boxing_nofile = native(*s, "c10::impl::wrap_kernel_functor_unboxed_<...>::call");
    const auto wrapper =
        native(*s, "at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA__empty_strided");
    const auto redispatch = native(*s, "at::_ops::empty_strided::redispatch(c10::DispatchKeySet)");
    const auto empty_op = native(*s, "at::_ops::empty_strided::call(c10::ArrayRef<c10::SymInt>)");

    const auto stack_a =
        s->intern_stack({unwind, gather, cache_malloc, empty, boxing, op, binding, cfunction, eval,
                         user, vectorcall, in_binary, main, start});
    const auto stack_b = s->intern_stack({unwind, cache_malloc, wrapper, boxing_nofile, redispatch,
                                          empty_op, op, binding, eval, user, main});
    const auto only_torch = s->intern_stack({unwind, cache_malloc});
    const auto user_native = s->intern_stack({user_start});

    auto& trace = s->trace_for(0);
    uint64_t address = 0x1000;
    for (const auto stack : {stack_a, stack_b, only_torch, user_native}) {
        snapshot::trace_entry e;
        e.kind = snapshot::action::alloc;
        e.address = address;
        e.size = 512;
        e.requested_size = 512;
        e.stack = stack;
        trace.entries.push_back(e);
        address += 512;
    }
    snapshot::segment seg;
    seg.address = 0x1000;
    seg.total_size = 2048;
    seg.allocated_size = 2048;
    seg.active_size = 2048;
    seg.requested_size = 2048;
    seg.is_large = false;
    seg.stack = stack_a;
    for (const auto& e : trace.entries) {
        seg.blocks.push_back(
            {e.address, 512, 512, snapshot::block_state::active_allocated, e.stack, 0});
    }
    s->segments.push_back(seg);
    return s;
}

TEST(frame_filter, hides_pytorchs_and_the_interpreters_frames) {
    const auto source = torch_like_snapshot();
    const auto shown = with_frame_visibility(source, frame_visibility::user_frames);
    const auto& entries = shown->find_trace(0)->entries;
    // Between the operator and the user's frame: the binding and the interpreter's frames, two
    // of them in one stack and three in the other.
    EXPECT_EQ(stack_labels(*shown, entries[0].stack),
              (std::vector<std::string>{"forward (/work/model.py:12)",
                                        "... 2 to 3 frames of PyTorch C++, CPython",
                                        "at::native::randn(...) (TensorFactories.cpp)"}));
    // The same user frames under other hidden frames (the dispatcher's, without files): one stack.
    EXPECT_EQ(entries[1].stack, entries[0].stack);
    // Only PyTorch's frames: kept whole rather than shown as no stack.
    EXPECT_EQ(shown->stack_at(entries[2].stack).size(), 2u);
    // A user's native function whose name ends in _start stays.
    EXPECT_EQ(stack_labels(*shown, entries[3].stack),
              (std::vector<std::string>{"train_start (train.cpp)"}));
    // Segments and blocks get the same stacks.
    EXPECT_EQ(shown->segments[0].stack, entries[0].stack);
    EXPECT_EQ(shown->segments[0].blocks[1].stack, entries[0].stack);
    // Strings and frames keep their ids; the folded lines are added after them.
    ASSERT_GT(shown->frames().size(), source->frames().size());
    EXPECT_TRUE(
        std::equal(source->strings().begin(), source->strings().end(), shown->strings().begin()));
    EXPECT_TRUE(
        std::equal(source->frames().begin(), source->frames().end(), shown->frames().begin()));
}

TEST(frame_filter, bytes_by_stack_groups_by_the_visible_stack) {
    const auto shown = with_frame_visibility(torch_like_snapshot(), frame_visibility::user_frames);
    const auto model = device_model::build(shown, 0);
    const auto stacks =
        bytes_by_stack(model.state_after(model.event_count()), live_measure::allocated);
    ASSERT_EQ(stacks.size(), 3u);
    EXPECT_EQ(stacks[0].bytes, 1024u);  // the two allocations from model.py:12
}

TEST(frame_filter, all_frames_and_clean_snapshots_are_given_back_as_they_are) {
    const auto source = torch_like_snapshot();
    EXPECT_EQ(with_frame_visibility(source, frame_visibility::all_frames), source);

    auto clean = std::make_shared<snapshot::snapshot>();
    clean->intern_stack({python(*clean, "step", "/work/train.py", 3)});
    const std::shared_ptr<const snapshot::snapshot> clean_source = clean;
    EXPECT_EQ(with_frame_visibility(clean_source, frame_visibility::user_frames), clean_source);
}

// A model's weights made by .cuda(): nn.Module.cuda, then _apply once per level of nesting, then
// the lambda that copies each tensor. Innermost first.
std::vector<snapshot::frame_id> cuda_stack(snapshot::snapshot& s, size_t nesting) {
    constexpr const char* module_py =
        "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py";
    std::vector<snapshot::frame_id> stack = {python(s, "<lambda>", module_py, 1097)};
    for (size_t i = 0; i < nesting; ++i) {
        stack.push_back(python(s, "_apply", module_py, 930));
    }
    stack.push_back(python(s, "cuda", module_py, 1097));
    stack.push_back(python(s, "main", "/work/train.py", 27));
    stack.push_back(python(s, "<module>", "/work/train.py", 40));
    return stack;
}

std::shared_ptr<const snapshot::snapshot> with_allocations(
    std::shared_ptr<snapshot::snapshot> s, const std::vector<snapshot::stack_id>& stacks) {
    auto& trace = s->trace_for(0);
    uint64_t address = 0x1000;
    for (const auto stack : stacks) {
        snapshot::trace_entry e;
        e.kind = snapshot::action::alloc;
        e.address = address;
        e.size = 512;
        e.requested_size = 512;
        e.stack = stack;
        trace.entries.push_back(e);
        address += 512;
    }
    snapshot::segment seg;
    seg.address = 0x1000;
    seg.total_size = 512 * stacks.size();
    seg.allocated_size = seg.active_size = seg.requested_size = seg.total_size;
    seg.is_large = false;
    for (const auto& e : trace.entries) {
        seg.blocks.push_back(
            {e.address, 512, 512, snapshot::block_state::active_allocated, e.stack, 0});
    }
    s->segments.push_back(seg);
    return s;
}

TEST(frame_filter, one_models_weights_are_one_stack_whatever_the_apply_recursion_depth) {
    auto s = std::make_shared<snapshot::snapshot>();
    std::vector<snapshot::stack_id> stacks;
    for (const size_t nesting : {1, 2, 3, 5}) {
        stacks.push_back(s->intern_stack(cuda_stack(*s, nesting)));
    }
    const auto shown =
        with_frame_visibility(with_allocations(s, stacks), frame_visibility::user_frames);
    const auto& entries = shown->find_trace(0)->entries;
    for (const auto& e : entries) {
        EXPECT_EQ(e.stack, entries[0].stack);
    }
    EXPECT_EQ(
        stack_labels(*shown, entries[0].stack),
        (std::vector<std::string>{
            "<module> (/work/train.py:40)", "main (/work/train.py:27)",
            "... 2 to 6 frames of torch.nn",
            "<lambda> (/venv/lib/python3.12/site-packages/torch/nn/modules/module.py:1097)"}));
    const auto model = device_model::build(shown, 0);
    const auto by_stack =
        bytes_by_stack(model.state_after(model.event_count()), live_measure::allocated);
    ASSERT_EQ(by_stack.size(), 1u);
    EXPECT_EQ(by_stack[0].bytes, 2048u);
}

// Two files (ranks, or a diff's base and other) whose weights were made at different _apply
// depths fold to lines of different lengths: their stacks still match.
TEST(frame_filter, two_files_stacks_match_whatever_their_folded_lengths) {
    std::vector<std::shared_ptr<const snapshot::snapshot>> shown;
    std::vector<device_model> models;
    std::vector<stacks_in_snapshot> stacks;
    for (const size_t nesting : {2, 4}) {
        auto s = std::make_shared<snapshot::snapshot>();
        const auto stack = s->intern_stack(cuda_stack(*s, nesting));
        shown.push_back(
            with_frame_visibility(with_allocations(s, {stack}), frame_visibility::user_frames));
        models.push_back(device_model::build(shown.back(), 0));
        stacks.push_back({shown.back().get(),
                          bytes_by_stack(models.back().state_after(models.back().event_count()),
                                         live_measure::allocated)});
    }
    EXPECT_NE(stack_labels(*shown[0], stacks[0].stacks[0].stack),
              stack_labels(*shown[1], stacks[1].stacks[0].stack));
    const auto matched = match_stacks(stacks);
    ASSERT_EQ(matched.size(), 1u);
    EXPECT_EQ(matched[0].bytes, (std::vector<uint64_t>{512, 512}));

    EXPECT_EQ(without_run_length("... 3 to 7 frames of torch.nn"), "... frames of torch.nn");
    EXPECT_EQ(without_run_length("... 1 frame of CPython plumbing"),
              "... frames of CPython plumbing");
    EXPECT_EQ(without_run_length("... 3 more"), "... 3 more");
    EXPECT_EQ(without_run_length("forward (/work/model.py:12)"), "forward (/work/model.py:12)");
}

// nn.Module's call machinery between the user's modules is folded, named as plumbing; the
// library code between the innermost frame and the user's is folded with it.
TEST(frame_filter, plumbing_between_user_frames_is_one_line) {
    constexpr const char* torch_nn = "/usr/lib/python3/dist-packages/torch/nn/";
    const std::string module_py = std::string(torch_nn) + "modules/module.py";
    const std::string linear_py = std::string(torch_nn) + "modules/linear.py";
    auto s = std::make_shared<snapshot::snapshot>();
    const auto stack = s->intern_stack({
        python(*s, "forward", linear_py.c_str(), 134),
        python(*s, "_call_impl", module_py.c_str(), 1790),
        python(*s, "_wrapped_call_impl", module_py.c_str(), 1779),
        python(*s, "forward", "/work/model.py", 20),
        python(*s, "_call_impl", module_py.c_str(), 1790),
        python(*s, "_wrapped_call_impl", module_py.c_str(), 1779),
        python(*s, "train", "/work/train.py", 8),
        python(*s, "run", "/usr/lib/python3.12/threading.py", 1010),
    });
    const auto shown =
        with_frame_visibility(with_allocations(s, {stack}), frame_visibility::user_frames);
    EXPECT_EQ(stack_labels(*shown, shown->find_trace(0)->entries[0].stack),
              (std::vector<std::string>{
                  "run (/usr/lib/python3.12/threading.py:1010)", "train (/work/train.py:8)",
                  "... 2 frames of torch.nn plumbing", "forward (/work/model.py:20)",
                  "... 2 frames of torch.nn plumbing",
                  "forward (/usr/lib/python3/dist-packages/torch/nn/modules/linear.py:134)"}));
}

TEST(frame_filter, the_recording_machinery_is_dropped_with_every_frame_shown) {
    auto s = std::make_shared<snapshot::snapshot>();
    const auto stack = s->intern_stack({
        native(*s, "", "", "/lib/x86_64-linux-gnu/libffi.so.8"),
        // As PyTorch's pickle has it: no module, an unnamed frame's file is its library.
        native(*s, "/lib/x86_64-linux-gnu/libffi.so.8+0x640e", "/lib/x86_64-linux-gnu/libffi.so.8"),
        native(*s, "ffi_call", "", "/lib/x86_64-linux-gnu/libffi.so.8"),
        native(*s, "_ctypes_callproc", "Modules/_ctypes/callproc.c"),
        native(*s, "memtrail_malloc", "c_api.cpp", "/opt/memtrail/lib/librecorder.so.0"),
        python(*s, "caching_allocator_alloc",
               "/venv/lib/python3.12/site-packages/memtrail/memory.py", 130),
        python(*s, "step", "/work/memtrail/train.py", 3),  // a user's folder named memtrail
    });
    for (const auto visibility : {frame_visibility::all_frames, frame_visibility::user_frames}) {
        const auto shown = with_frame_visibility(with_allocations(s, {stack}), visibility);
        EXPECT_EQ(stack_labels(*shown, shown->find_trace(0)->entries[0].stack),
                  (std::vector<std::string>{"step (/work/memtrail/train.py:3)"}));
    }
}

TEST(frame_filter, roles_and_origins) {
    snapshot::snapshot s;
    const auto optimizer =
        python(s, "wrapper", "/venv/lib/python3.12/site-packages/torch/optim/optimizer.py", 533);
    EXPECT_EQ(role_of(s, optimizer), frame_role::plumbing);
    EXPECT_EQ(frame_origin(s, optimizer), "torch.optim");
    const auto generate = python(
        s, "generate", "/venv/lib/python3.12/site-packages/transformers/generation/utils.py", 2802);
    EXPECT_EQ(role_of(s, generate), frame_role::library);
    EXPECT_EQ(frame_origin(s, generate), "transformers");
    EXPECT_EQ(
        role_of(s, python(s, "_worker", "/usr/lib/python3.12/concurrent/futures/thread.py", 92)),
        frame_role::library);
    // A PyTorch checkout is known by its subpackages and files; a user's torch/ folder is not.
    EXPECT_EQ(role_of(s, python(s, "main", "/home/me/torch/train.py", 5)), frame_role::user);
    EXPECT_EQ(role_of(s, python(s, "backward", "/src/pytorch/torch/_tensor.py", 625)),
              frame_role::plumbing);
    EXPECT_EQ(frame_origin(s, python(s, "linear", "/src/pytorch/torch/nn/functional.py", 9)),
              "torch.nn");
    EXPECT_EQ(role_of(s, native(s, "at::_ops::bmm::call(at::Tensor const&)")),
              frame_role::plumbing);
    const auto workspace = native(s, "at::cuda::setWorkspaceForHandle(cublasContext*)");
    EXPECT_EQ(role_of(s, workspace), frame_role::library);
    EXPECT_EQ(frame_origin(s, workspace), "PyTorch C++");
    EXPECT_EQ(role_of(s, native(s, "pthread_condattr_setpshared", "??")), frame_role::plumbing);
    EXPECT_EQ(role_of(s, native(s, "c10::SmallVector<long>::grow()", "??")), frame_role::library);
    EXPECT_EQ(role_of(s, native(s, "run_model(int)", "main.cpp", "/work/app")), frame_role::user);
    // PyTorch's or memtrail's types among the parameters do not make a frame theirs.
    const auto train_step =
        native(s, "train_step(int, at::Tensor const&)", "main.cpp", "/work/app");
    EXPECT_EQ(role_of(s, train_step), frame_role::user);
    EXPECT_EQ(frame_origin(s, train_step), "native");
    EXPECT_FALSE(snapshot::is_recording_machinery(
        s, native(s, "load(int, memtrail::recorder::recorder&)", "main.cpp", "/work/app")));
    EXPECT_TRUE(snapshot::is_recording_machinery(
        s, native(s, "void memtrail::recorder::recorder::record(int)", "recorder.cpp")));
    EXPECT_EQ(role_of(s, native(s, "void at::native::gemm<float>(char, at::Tensor)")),
              frame_role::library);
}

TEST(frame_filter, python_frames_are_never_hidden) {
    auto s = std::make_shared<snapshot::snapshot>();
    const auto f = python(*s, "PyObject_helper", "/work/ceval.c.py", 1);
    EXPECT_FALSE(is_framework_frame(*s, f));
    EXPECT_TRUE(is_framework_frame(*s, native(*s, "PyObject_helper")));
}

}  // namespace
}  // namespace memtrail::analysis
