// The direct Python frame reader on frames laid out by hand (CPython 3.12's offsets): the read for
// looking stacks up gives read()'s words without touching a code object, keeps the incomplete
// frames read() skips (so their words match no interned stack), skips 3.12's entry frames as
// read() does, and stops on a broken chain.

#include <sys/mman.h>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "detail/python_frame_reader.hpp"

namespace {

using memtrail::recorder::python_frames_source;
using memtrail::recorder::detail::instruction_location;
using memtrail::recorder::detail::python_frame_layout;
using memtrail::recorder::detail::python_frame_reader;

constexpr python_frame_layout layout{
    .thread_cframe = 56,
    .cframe_current = 0,
    .frame_code = 0,
    .frame_previous = 8,
    .frame_instruction = 56,
    .frame_owner = 70,
    .owner_last = 3,
    .code_instructions = 192,
    .code_first_traceable = 176,
};
constexpr unsigned char owned_by_thread = 0;
constexpr unsigned char owned_by_c_stack = 3;

template <typename Value>
void store(void* base, size_t offset, Value value) {
    std::memcpy(static_cast<char*>(base) + offset, &value, sizeof(value));
}

struct alignas(16) fake_code {
    std::array<unsigned char, 512> bytes{};
};
struct alignas(16) fake_frame {
    std::array<unsigned char, 80> bytes{};
};

// A thread's frame chain, innermost first, with code objects at `code_memory`.
class fake_thread {
  public:
    fake_thread(unsigned char* code_memory, uintptr_t code_type)
        : code_memory_(code_memory), code_type_(code_type) {
        store(thread_.data(), layout.thread_cframe, reinterpret_cast<uintptr_t>(cframe_.data()));
    }

    // Makes code object `index` (readable memory only): 100 code units, the first traceable 4th.
    void make_code(size_t index) {
        unsigned char* code = code_memory_ + index * sizeof(fake_code);
        store(code, 8, code_type_);
        store(code, 16, ptrdiff_t{100});
        store(code, layout.code_first_traceable, 4);
    }

    // Adds a frame outside the others, running `code_index`'s code at code unit `unit`.
    void add_frame(size_t code_index, ptrdiff_t unit, unsigned char owner = owned_by_thread) {
        frames_.emplace_back();
        fake_frame& frame = frames_.back();
        const uintptr_t code = code_address(code_index);
        store(frame.bytes.data(), layout.frame_code, code);
        store(frame.bytes.data(), layout.frame_instruction,
              code + layout.code_instructions + static_cast<uintptr_t>(2 * unit));
        store(frame.bytes.data(), layout.frame_owner, owner);
    }

    // Links the frames in order (the last one's `previous` is `outermost_previous`).
    const void* link(uintptr_t outermost_previous = 0) {
        frames_.shrink_to_fit();
        for (size_t i = 0; i < frames_.size(); ++i) {
            const uintptr_t previous = i + 1 < frames_.size()
                                           ? reinterpret_cast<uintptr_t>(&frames_[i + 1])
                                           : outermost_previous;
            store(frames_[i].bytes.data(), layout.frame_previous, previous);
        }
        store(cframe_.data(), layout.cframe_current,
              frames_.empty() ? uintptr_t{0} : reinterpret_cast<uintptr_t>(&frames_[0]));
        return thread_.data();
    }

    uintptr_t code_address(size_t index) const {
        return reinterpret_cast<uintptr_t>(code_memory_ + index * sizeof(fake_code));
    }
    uintptr_t frame_address(size_t index) const {
        return reinterpret_cast<uintptr_t>(&frames_[index]);
    }

  private:
    unsigned char* code_memory_;
    uintptr_t code_type_;
    alignas(16) std::array<unsigned char, 64> thread_{};
    alignas(16) std::array<unsigned char, 16> cframe_{};
    std::vector<fake_frame> frames_;
};

alignas(16) std::array<unsigned char, 64> fake_code_type{};
const auto code_type = reinterpret_cast<uintptr_t>(fake_code_type.data());

std::vector<uintptr_t> words(std::optional<size_t> count, const std::array<uintptr_t, 64>& out) {
    EXPECT_TRUE(count.has_value());
    return {out.begin(), out.begin() + static_cast<ptrdiff_t>(count.value_or(0))};
}

TEST(python_frame_reader, the_lookup_read_gives_the_words_of_read) {
    alignas(16) static std::array<fake_code, 3> codes;
    fake_thread thread(reinterpret_cast<unsigned char*>(codes.data()), code_type);
    for (size_t i = 0; i < codes.size(); ++i) {
        thread.make_code(i);
    }
    thread.add_frame(0, 40);
    thread.add_frame(1, 7);
    thread.add_frame(2, 0, owned_by_c_stack);  // 3.12's entry frame: skipped by both
    thread.add_frame(2, 99);
    const void* state = thread.link();
    const python_frame_reader reader(layout, code_type, python_frames_source::direct);
    std::array<uintptr_t, 64> checked{};
    std::array<uintptr_t, 64> looked_up{};
    const std::vector<uintptr_t> expected{thread.code_address(0), instruction_location(80),
                                          thread.code_address(1), instruction_location(14),
                                          thread.code_address(2), instruction_location(198)};
    EXPECT_EQ(words(reader.read(state, checked), checked), expected);
    EXPECT_EQ(words(reader.read_for_lookup(state, looked_up), looked_up), expected);
}

TEST(python_frame_reader, the_lookup_read_never_touches_a_code_object) {
    // Code objects in memory that cannot be read: a load from one would end the test.
    const size_t bytes = 4 * sizeof(fake_code);
    void* unreadable = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(unreadable, MAP_FAILED);
    {
        fake_thread thread(static_cast<unsigned char*>(unreadable), code_type);
        thread.add_frame(0, 3);
        thread.add_frame(1, 12);
        const void* state = thread.link();
        const python_frame_reader reader(layout, code_type, python_frames_source::direct);
        std::array<uintptr_t, 64> out{};
        const std::vector<uintptr_t> expected{thread.code_address(0), instruction_location(6),
                                              thread.code_address(1), instruction_location(24)};
        EXPECT_EQ(words(reader.read_for_lookup(state, out), out), expected);
    }
    munmap(unreadable, bytes);
}

TEST(python_frame_reader, an_incomplete_frame_that_read_skips_stays_in_the_lookup_words) {
    alignas(16) static std::array<fake_code, 2> codes;
    fake_thread thread(reinterpret_cast<unsigned char*>(codes.data()), code_type);
    thread.make_code(0);
    thread.make_code(1);
    thread.add_frame(0, 2);  // before its first traceable instruction (4): setting itself up
    thread.add_frame(1, 50);
    const void* state = thread.link();
    const python_frame_reader reader(layout, code_type, python_frames_source::direct);
    std::array<uintptr_t, 64> checked{};
    std::array<uintptr_t, 64> looked_up{};
    EXPECT_EQ(words(reader.read(state, checked), checked),
              (std::vector<uintptr_t>{thread.code_address(1), instruction_location(100)}));
    EXPECT_EQ(words(reader.read_for_lookup(state, looked_up), looked_up),
              (std::vector<uintptr_t>{thread.code_address(0), instruction_location(4),
                                      thread.code_address(1), instruction_location(100)}));
}

TEST(python_frame_reader, a_broken_chain_gives_no_lookup_words) {
    alignas(16) static std::array<fake_code, 1> codes;
    fake_thread misaligned(reinterpret_cast<unsigned char*>(codes.data()), code_type);
    misaligned.add_frame(0, 5);
    const python_frame_reader reader(layout, code_type, python_frames_source::direct);
    std::array<uintptr_t, 64> out{};
    EXPECT_FALSE(reader.read_for_lookup(misaligned.link(12345), out).has_value());

    // Entry frames that lead back to themselves: a cycle the read must leave.
    fake_thread cycle(reinterpret_cast<unsigned char*>(codes.data()), code_type);
    cycle.add_frame(0, 0, owned_by_c_stack);
    cycle.add_frame(0, 0, owned_by_c_stack);
    const void* state = cycle.link();
    const void* first = reinterpret_cast<const void*>(cycle.frame_address(0));
    store(const_cast<void*>(reinterpret_cast<const void*>(cycle.frame_address(1))),
          layout.frame_previous, reinterpret_cast<uintptr_t>(first));
    EXPECT_FALSE(reader.read_for_lookup(state, out).has_value());
}

}  // namespace
