// python_capture's questions to the interpreter, on a fake one (CPython 3.12's frame layout, so
// that the direct reader reads it): reading directly, a capture asks for the thread's own state
// and never whether it holds the GIL (before 3.12 PyGILState_Check reads the GIL holder's word,
// which every switch of the GIL writes); from 3.12 a thread holding the GIL is told by its
// thread-local state alone; and while the interpreter shuts down, a thread holding the GIL still
// reads its frames, one without keeps none.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>

#include "detail/python_stack.hpp"

namespace {

using memtrail::recorder::detail::python_capture;
using memtrail::recorder::detail::python_interpreter;

struct calls {
    int is_initialized = 0;
    int is_finalizing = 0;
    int gil_check = 0;
    int this_thread_state = 0;
    int current_thread_state = 0;
    int gil_ensure = 0;
};
calls counted;
bool finalizing = false;
bool holding_gil = false;
bool has_thread_state = true;

// A thread state whose frame chain is empty: cframe (at 56) -> current_frame (at 0) = 0.
alignas(16) std::array<unsigned char, 64> thread_state{};
alignas(16) std::array<unsigned char, 16> cframe{};
// PyCode_Type's head as a 3.12 release build has it: tp_basicsize 192, tp_itemsize 2.
alignas(16) std::array<unsigned char, 64> code_type{};
const unsigned long version_3_12 = 0x030c03f0;

void* fake_thread_state() {
    return has_thread_state ? thread_state.data() : nullptr;
}

python_interpreter fake_interpreter(bool state_is_thread_local) {
    const auto cframe_address = reinterpret_cast<uintptr_t>(cframe.data());
    std::memcpy(thread_state.data() + 56, &cframe_address, sizeof cframe_address);
    const ptrdiff_t basic_size = 192;
    const ptrdiff_t item_size = 2;
    std::memcpy(code_type.data() + 32, &basic_size, sizeof basic_size);
    std::memcpy(code_type.data() + 40, &item_size, sizeof item_size);
    python_interpreter python{};
    python.is_initialized = [] { return ++counted.is_initialized, 1; };
    python.is_finalizing = [] { return ++counted.is_finalizing, finalizing ? 1 : 0; };
    python.gil_check = [] { return ++counted.gil_check, holding_gil ? 1 : 0; };
    python.this_thread_state = [] { return ++counted.this_thread_state, fake_thread_state(); };
    python.current_thread_state = []() -> void* {
        return ++counted.current_thread_state, holding_gil ? fake_thread_state() : nullptr;
    };
    python.gil_ensure = [] { return ++counted.gil_ensure, 0; };
    python.gil_release = [](int) {};
    python.frame_last_instruction = [](void*) { return 0; };
    python.current_state_is_the_callers = state_is_thread_local;
    python.version = &version_3_12;
    python.code_type = code_type.data();
    return python;
}

// The capture's own thread state was found, and its (empty) frames read directly.
void expect_read_directly(python_capture& capture) {
    std::array<uintptr_t, 8> out{};
    EXPECT_EQ(capture.frames_unchecked(out), std::optional<size_t>(0));
}

class python_capture_questions : public testing::Test {
  protected:
    void SetUp() override {
        counted = {};
        finalizing = holding_gil = false;
        has_thread_state = true;
    }
};

TEST_F(python_capture_questions, reading_directly_a_capture_never_asks_who_holds_the_gil) {
    for (const bool holding : {false, true}) {
        counted = {};
        holding_gil = holding;
        const python_interpreter python = fake_interpreter(false);  // before 3.12
        python_capture capture(python, {});
        expect_read_directly(capture);
        EXPECT_EQ(counted.gil_check, 0) << holding;
        EXPECT_EQ(counted.current_thread_state, 0) << holding;
        EXPECT_EQ(counted.is_initialized, 1) << holding;
        EXPECT_EQ(counted.this_thread_state, 1) << holding;
        EXPECT_EQ(counted.gil_ensure, 0) << holding;
    }
}

TEST_F(python_capture_questions, from_3_12_the_thread_local_state_tells_a_thread_holding_the_gil) {
    holding_gil = true;
    const python_interpreter python = fake_interpreter(true);
    python_capture capture(python, {});
    expect_read_directly(capture);
    EXPECT_EQ(counted.current_thread_state, 1);
    EXPECT_EQ(counted.this_thread_state, 0);
    EXPECT_EQ(counted.gil_check, 0);
    EXPECT_EQ(counted.is_initialized, 1);
}

TEST_F(python_capture_questions, a_thread_without_a_state_reads_no_frames) {
    has_thread_state = false;
    const python_interpreter python = fake_interpreter(true);
    python_capture capture(python, {});
    std::array<uintptr_t, 8> out{};
    EXPECT_EQ(capture.frames_unchecked(out), std::nullopt);
    EXPECT_EQ(capture.frames(out), 0u);
    EXPECT_EQ(counted.gil_ensure, 0);
}

TEST_F(python_capture_questions, while_python_shuts_down_only_a_thread_holding_the_gil_reads) {
    finalizing = true;
    holding_gil = true;
    const python_interpreter holding = fake_interpreter(false);
    python_capture held(holding, {});
    expect_read_directly(held);

    holding_gil = false;
    const python_interpreter released = fake_interpreter(false);
    python_capture without(released, {});
    std::array<uintptr_t, 8> out{};
    EXPECT_EQ(without.frames_unchecked(out), std::nullopt);
    EXPECT_EQ(counted.gil_ensure, 0);  // a shutting-down interpreter never hands the GIL out
}

}  // namespace
