// PyTorch's own frames and the interpreter's C frames are hidden, the user's stay; stacks that
// differ only in hidden frames become one stack; all_frames and snapshots without such frames
// give the snapshot back untouched.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/frame_filter.hpp"
#include "memtrail/analysis/frame_text.hpp"

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
    EXPECT_EQ(stack_labels(*shown, entries[0].stack),
              (std::vector<std::string>{"forward (/work/model.py:12)",
                                        "torch::autograd::THPVariable_randn (python_torch.cpp)",
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
    // Strings and frames keep their ids.
    EXPECT_EQ(shown->strings(), source->strings());
    EXPECT_EQ(shown->frames(), source->frames());
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

TEST(frame_filter, python_frames_are_never_hidden) {
    auto s = std::make_shared<snapshot::snapshot>();
    const auto f = python(*s, "PyObject_helper", "/work/ceval.c.py", 1);
    EXPECT_FALSE(is_framework_frame(*s, f));
    EXPECT_TRUE(is_framework_frame(*s, native(*s, "PyObject_helper")));
}

}  // namespace
}  // namespace memtrail::analysis
