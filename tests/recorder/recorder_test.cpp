// The recorder on the simulated device: what each mode records, the stacks of blocks and trace
// entries (symbolized to this file's functions and lines), annotations and metadata.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace {

using namespace memtrail;
using recorder::context_mode;
using recorder::history_options;
using recorder::record_mode;
using snapshot::action;

constexpr uint64_t MiB = 1ull << 20;

class recorder_test : public ::testing::Test {
  protected:
    simulated_device gpu;
    caching_allocator allocator{{&gpu}};
    recorder::recorder history{allocator};

    static history_options mode(record_mode enabled, context_mode context) {
        history_options options;
        options.enabled = enabled;
        options.context = context;
        return options;
    }
};

std::vector<action> kinds(const snapshot::snapshot& s, int device = 0) {
    std::vector<action> result;
    if (const snapshot::device_trace* trace = s.find_trace(device)) {
        for (const auto& entry : trace->entries) {
            result.push_back(entry.kind);
        }
    }
    return result;
}

// The functions of a snapshot stack, innermost first.
std::vector<std::string> functions(const snapshot::snapshot& s, snapshot::stack_id id) {
    std::vector<std::string> names;
    for (const snapshot::frame_id f : s.stack_at(id)) {
        names.emplace_back(s.string_at(s.frame_at(f).function));
    }
    return names;
}

uint32_t allocation_line = 0;

[[gnu::noinline]] device_address allocate_from_a_named_function(recorder::recorder& history,
                                                                uint64_t size) {
    allocation_line = __LINE__ + 1;
    const device_address address = history.allocate(size, 0);
    asm volatile("");
    return address;
}

TEST_F(recorder_test, records_nothing_until_switched_on) {
    const auto p = history.allocate(MiB, 0);
    history.free(p);
    const auto s = history.take_snapshot();
    EXPECT_TRUE(kinds(s).empty());
    ASSERT_EQ(s.segments.size(), 1u);
    EXPECT_EQ(s.segments[0].stack, snapshot::no_id);
}

// Only a trace needs the allocator's events: otherwise its operations take the bare path, where
// the device lock's holder makes waiting threads' operations (combining_lock.hpp).
TEST_F(recorder_test, observes_the_allocator_only_while_it_records_a_trace) {
    EXPECT_EQ(allocator.on(0).observer(), nullptr);
    history.record_memory_history(mode(record_mode::all, context_mode::all));
    EXPECT_EQ(allocator.on(0).observer(), &history);
    history.record_memory_history(mode(record_mode::state, context_mode::state));
    EXPECT_EQ(allocator.on(0).observer(), nullptr);
    history.record_memory_history(mode(record_mode::all, context_mode::none));
    EXPECT_EQ(allocator.on(0).observer(), &history);
    history.record_memory_history(mode(record_mode::off, context_mode::none));
    EXPECT_EQ(allocator.on(0).observer(), nullptr);
}

TEST_F(recorder_test, records_every_allocator_action) {
    history.record_memory_history(mode(record_mode::all, context_mode::all));
    const auto p = history.allocate(MiB, 0);
    history.free(p);
    history.empty_cache();
    const auto s = history.take_snapshot();
    const std::vector<action> expected = {action::segment_alloc,  action::alloc,
                                          action::free_requested, action::free_completed,
                                          action::segment_free,   action::snapshot};
    EXPECT_EQ(kinds(s), expected);
    const auto& entries = s.find_trace(0)->entries;
    EXPECT_EQ(entries[1].address, p);
    EXPECT_EQ(entries[1].size, MiB);
    EXPECT_EQ(entries[1].requested_size, MiB);
    EXPECT_GT(entries[1].thread, 0u);
    EXPECT_TRUE(std::is_sorted(entries.begin(), entries.end(),
                               [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; }));
    for (const auto& entry : entries) {
        EXPECT_EQ(entry.device, 0);
        if (entry.kind != action::snapshot) {
            EXPECT_NE(entry.stack, snapshot::no_id) << snapshot::action_name(entry.kind);
        }
    }
}

TEST_F(recorder_test, stacks_name_the_caller_with_file_and_line) {
    history.record_memory_history(mode(record_mode::all, context_mode::all));
    const auto p = allocate_from_a_named_function(history, 3 * MiB);
    const auto s = history.take_snapshot();

    const auto& entries = s.find_trace(0)->entries;
    const auto alloc = std::find_if(entries.begin(), entries.end(),
                                    [](const auto& e) { return e.kind == action::alloc; });
    ASSERT_NE(alloc, entries.end());
    ASSERT_NE(alloc->stack, snapshot::no_id);
    const auto& top = s.frame_at(s.stack_at(alloc->stack).front());
    EXPECT_EQ(
        s.string_at(top.function),
        "(anonymous namespace)::allocate_from_a_named_function(memtrail::recorder::recorder&, "
        "unsigned long)");
    EXPECT_EQ(std::filesystem::path(s.string_at(top.filename)).filename(), "recorder_test.cpp");
    EXPECT_EQ(top.line, allocation_line);
    EXPECT_EQ(top.kind, snapshot::frame_kind::native);
    EXPECT_FALSE(s.string_at(top.module).empty());
    EXPECT_FALSE(s.string_at(top.build_id).empty());
    const auto names = functions(s, alloc->stack);
    EXPECT_NE(std::find_if(names.begin(), names.end(),
                           [](const std::string& n) {
                               return n.find("stacks_name_the_caller_with_file_and_line") !=
                                      std::string::npos;
                           }),
              names.end());

    // The live block keeps the stack and time of its allocation.
    ASSERT_EQ(s.segments.size(), 1u);
    const snapshot::block& block = s.segments[0].blocks.front();
    EXPECT_EQ(block.address, p);
    EXPECT_EQ(block.state, snapshot::block_state::active_allocated);
    EXPECT_EQ(block.stack, alloc->stack);
    EXPECT_NEAR(static_cast<double>(block.time_ns), static_cast<double>(alloc->time_ns), 1e6);
}

TEST_F(recorder_test, whole_segments_keep_their_creation_stack) {
    // As in PyTorch, a segment's stack lives on its first block, and a split hands that block's
    // place to a new one: only segments that were never split report where they were made.
    history.record_memory_history(mode(record_mode::all, context_mode::all));
    allocate_from_a_named_function(history, 20 * MiB);
    const auto s = history.take_snapshot();
    ASSERT_EQ(s.segments.size(), 1u);
    ASSERT_EQ(s.segments[0].blocks.size(), 1u);
    EXPECT_NE(s.segments[0].stack, snapshot::no_id);
    EXPECT_EQ(s.segments[0].stack, s.segments[0].blocks[0].stack);
    EXPECT_GT(s.segments[0].time_ns, 0);
}

TEST_F(recorder_test, state_mode_keeps_block_stacks_without_a_trace) {
    history.record_memory_history(mode(record_mode::state, context_mode::state));
    history.allocate(MiB, 0);
    const auto s = history.take_snapshot();
    EXPECT_TRUE(kinds(s).empty());
    ASSERT_EQ(s.segments.size(), 1u);
    EXPECT_NE(s.segments[0].blocks.front().stack, snapshot::no_id);
    EXPECT_GT(s.segments[0].blocks.front().time_ns, 0);
}

TEST_F(recorder_test, alloc_context_leaves_frees_without_stacks) {
    history.record_memory_history(mode(record_mode::all, context_mode::alloc));
    history.free(history.allocate(MiB, 0));
    const auto s = history.take_snapshot();
    for (const auto& entry : s.find_trace(0)->entries) {
        const bool allocating = entry.kind == action::alloc || entry.kind == action::segment_alloc;
        EXPECT_EQ(entry.stack != snapshot::no_id, allocating) << snapshot::action_name(entry.kind);
    }
}

TEST_F(recorder_test, state_context_leaves_the_trace_without_stacks) {
    history.record_memory_history(mode(record_mode::all, context_mode::state));
    history.allocate(MiB, 0);
    const auto s = history.take_snapshot();
    for (const auto& entry : s.find_trace(0)->entries) {
        EXPECT_EQ(entry.stack, snapshot::no_id);
    }
    EXPECT_NE(s.segments[0].blocks.front().stack, snapshot::no_id);
}

TEST_F(recorder_test, no_context_records_no_stacks) {
    history.record_memory_history(mode(record_mode::all, context_mode::none));
    history.allocate(MiB, 0);
    const auto s = history.take_snapshot();
    EXPECT_FALSE(kinds(s).empty());
    EXPECT_EQ(s.stacks().size(), 1u);  // only "none"
    EXPECT_GT(s.segments[0].blocks.front().time_ns, 0);
}

// Outside Python there are no Python frames: "python" records none, "all" the native ones.
TEST_F(recorder_test, python_stacks_outside_python) {
    history_options options = mode(record_mode::all, context_mode::all);
    options.stacks = recorder::stack_source::python;
    history.record_memory_history(options);
    history.allocate(MiB, 0);
    EXPECT_EQ(history.take_snapshot().stacks().size(), 1u);  // only "none"

    options.stacks = recorder::stack_source::all;
    history.record_memory_history(options);
    history.allocate(2 * MiB, 0);
    const auto s = history.take_snapshot();
    const auto& entries = s.find_trace(0)->entries;
    const auto alloc = std::find_if(entries.begin(), entries.end(), [](const auto& e) {
        return e.kind == action::alloc && e.size == 2 * MiB;
    });
    ASSERT_NE(alloc, entries.end());
    ASSERT_NE(alloc->stack, snapshot::no_id);
    for (const snapshot::frame_id frame : s.stack_at(alloc->stack)) {
        EXPECT_EQ(s.frame_at(frame).kind, snapshot::frame_kind::native);
    }
}

// Two places at one depth, for captures whose innermost frames are the same and whose callers
// differ.
[[gnu::noinline]] device_address allocate_from(recorder::recorder& history, uint64_t size) {
    const device_address p = history.allocate(size, 0);
    asm volatile("");
    return p;
}
[[gnu::noinline]] device_address allocate_at_a(recorder::recorder& history, uint64_t size) {
    const device_address p = allocate_from(history, size);
    asm volatile("");
    return p;
}
[[gnu::noinline]] device_address allocate_at_b(recorder::recorder& history, uint64_t size) {
    const device_address p = allocate_from(history, size);
    asm volatile("");
    return p;
}

// "all" without Python frames records each capture's own native stack, when its walk repeats the
// last one's and when it does not, as "native" does.
TEST_F(recorder_test, all_stacks_without_python_frames_are_each_captures_own) {
    history_options options = mode(record_mode::all, context_mode::all);
    options.stacks = recorder::stack_source::all;
    history.record_memory_history(options);
    static device_address (*volatile const places[])(recorder::recorder&, uint64_t) = {
        allocate_at_a, allocate_at_a, allocate_at_b, allocate_at_b, allocate_at_a, allocate_at_b};
    std::vector<device_address> allocated;
    uint64_t size = MiB;
#pragma GCC unroll 1
    for (auto* place : places) {
        allocated.push_back(place(history, size));
        size += MiB;
    }
    const auto s = history.take_snapshot();
    std::vector<std::string> callers;
    for (const auto& entry : s.find_trace(0)->entries) {
        if (entry.kind != action::alloc) {
            continue;
        }
        const std::vector<std::string> names = functions(s, entry.stack);
        const auto from = std::find_if(names.begin(), names.end(), [](const std::string& name) {
            return name.find("allocate_from") != std::string::npos;
        });
        ASSERT_TRUE(from != names.end() && from + 1 != names.end()) << entry.size;
        callers.push_back(from[1].find("allocate_at_a") != std::string::npos ? "a" : "b");
    }
    EXPECT_EQ(callers, (std::vector<std::string>{"a", "a", "b", "b", "a", "b"}));
}

TEST(history_options, stack_source_names) {
    for (const auto source : {recorder::stack_source::native, recorder::stack_source::python,
                              recorder::stack_source::all}) {
        recorder::stack_source parsed = recorder::stack_source::native;
        ASSERT_TRUE(recorder::parse_stack_source(recorder::stack_source_name(source), parsed));
        EXPECT_EQ(parsed, source);
    }
    recorder::stack_source parsed = recorder::stack_source::native;
    EXPECT_FALSE(recorder::parse_stack_source("cpp", parsed));
}

TEST_F(recorder_test, switching_off_keeps_the_history) {
    history.record_memory_history(mode(record_mode::all, context_mode::all));
    history.allocate(MiB, 0);
    history.record_memory_history(mode(record_mode::off, context_mode::none));
    history.allocate(MiB, 0);
    EXPECT_EQ(kinds(history.take_snapshot()),
              (std::vector<action>{action::segment_alloc, action::alloc}));
}

TEST_F(recorder_test, clear_history_forgets_the_trace) {
    history.record_memory_history(mode(record_mode::all, context_mode::all));
    history.allocate(MiB, 0);
    auto options = mode(record_mode::all, context_mode::all);
    options.clear_history = true;
    history.record_memory_history(options);
    EXPECT_EQ(kinds(history.take_snapshot()), std::vector<action>{action::snapshot});
}

TEST_F(recorder_test, annotations_and_thread_metadata) {
    history.record_memory_history(mode(record_mode::all, context_mode::none));
    recorder::recorder::set_thread_metadata("step 7");
    history.range_start("forward");
    const auto p = history.allocate(MiB, 0);
    history.marker("checkpoint");
    history.range_end("forward");
    recorder::recorder::set_thread_metadata("");
    history.free(p);
    const auto s = history.take_snapshot();

    const std::vector<action> expected = {
        action::annotation_start,  action::segment_alloc,  action::alloc,
        action::annotation_marker, action::annotation_end, action::free_requested,
        action::free_completed,    action::snapshot};
    ASSERT_EQ(kinds(s), expected);
    const auto& entries = s.find_trace(0)->entries;
    EXPECT_EQ(s.string_at(entries[0].name), "forward");
    EXPECT_EQ(s.string_at(entries[3].name), "checkpoint");
    EXPECT_EQ(s.string_at(entries[4].name), "forward");
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(s.string_at(entries[i].user_metadata), "step 7") << i;
    }
    EXPECT_EQ(entries[5].user_metadata, snapshot::no_id);

    ASSERT_EQ(s.annotations.size(), 2u);
    EXPECT_TRUE(s.annotations[0].is_start);
    EXPECT_FALSE(s.annotations[1].is_start);
    EXPECT_EQ(s.string_at(s.annotations[0].name), "forward");
}

// Under contention the device lock's holder makes waiting threads' allocations and frees for
// them (combining_lock.hpp): each entry must still name the thread that made the call, not the
// one that held the lock.
TEST_F(recorder_test, each_entry_names_the_thread_that_called) {
    history.record_memory_history(mode(record_mode::all, context_mode::none));
    constexpr int threads = 4;
    constexpr int pairs = 20000;
    std::vector<uint32_t> numbers(threads, 0);
    {
        std::vector<std::jthread> workers;
        for (int t = 0; t < threads; ++t) {
            workers.emplace_back([&, t] {
                recorder::recorder::set_thread_metadata("worker " + std::to_string(t));
                // Each thread's own size, so that an entry's size tells which thread called.
                const uint64_t size = static_cast<uint64_t>(t + 1) * MiB;
                for (int i = 0; i < pairs; ++i) {
                    history.free(history.allocate(size, 0));
                }
            });
        }
    }
    const auto s = history.take_snapshot();
    const auto& entries = s.find_trace(0)->entries;
    size_t checked = 0;
    std::vector<uint32_t> thread_of(threads, 0);
    for (const auto& entry : entries) {
        if (entry.kind != action::alloc && entry.kind != action::free_requested &&
            entry.kind != action::free_completed) {
            continue;
        }
        const auto t = static_cast<size_t>(entry.requested_size / MiB - 1);
        ASSERT_LT(t, static_cast<size_t>(threads));
        ASSERT_EQ(s.string_at(entry.user_metadata), "worker " + std::to_string(t))
            << snapshot::action_name(entry.kind) << " of " << entry.requested_size;
        if (thread_of[t] == 0) {
            thread_of[t] = entry.thread;
        }
        ASSERT_EQ(entry.thread, thread_of[t]);
        ++checked;
    }
    EXPECT_GT(checked, static_cast<size_t>(threads * pairs));
}

TEST_F(recorder_test, snapshot_carries_header_settings_and_statistics) {
    history.record_memory_history(mode(record_mode::all, context_mode::all));
    const auto p = history.allocate(5 * MiB, 0);
    const auto s = history.take_snapshot();
    EXPECT_EQ(s.info.producer.rfind("memtrail ", 0), 0u);
    EXPECT_EQ(s.info.pid, getpid());
    EXPECT_GT(s.info.time_ns, 0);
    ASSERT_EQ(s.info.devices.size(), 1u);
    EXPECT_EQ(s.info.devices[0].name, gpu.name());
    EXPECT_EQ(s.info.devices[0].total_memory, 80ull << 30);
    EXPECT_EQ(s.settings.max_split_size, -1);
    EXPECT_EQ(s.stats.at(0).at("allocation.all.current"), 1);
    EXPECT_EQ(s.stats.at(0).at("allocated_bytes.all.current"), static_cast<int64_t>(5 * MiB));
    ASSERT_EQ(s.segments.size(), 1u);
    EXPECT_EQ(s.segments[0].blocks.front().address, p);
}

TEST_F(recorder_test, out_of_memory_is_recorded_and_rethrown) {
    gpu.set_capacity(64 * MiB);
    history.record_memory_history(mode(record_mode::all, context_mode::all));
    EXPECT_THROW(history.allocate(1ull << 30, 0), out_of_memory_error);
    const auto s = history.take_snapshot();
    const auto k = kinds(s);
    EXPECT_NE(std::find(k.begin(), k.end(), action::oom), k.end());
}

TEST_F(recorder_test, rejects_bad_arguments) {
    auto options = mode(record_mode::all, context_mode::all);
    options.max_stack_depth = recorder::max_stack_depth + 1;
    EXPECT_THROW(history.record_memory_history(options), std::invalid_argument);
    EXPECT_THROW(history.record_memory_history({}, 3), std::invalid_argument);
}

[[gnu::noinline]] device_address allocate_from_one_place(recorder::recorder& history,
                                                         size_t wrapper_frames = 0) {
    const device_address address = history.allocate(MiB, 0, 0, wrapper_frames);
    asm volatile("");
    return address;
}

// The innermost function of every allocation's stack in `history`'s trace, and the longest stack.
std::vector<std::string> innermost_of_allocations(recorder::recorder& history, size_t& longest) {
    const auto s = history.take_snapshot();
    std::vector<std::string> names;
    for (const auto& entry : s.find_trace(0)->entries) {
        if (entry.kind == action::alloc) {
            const auto stack = functions(s, entry.stack);
            names.push_back(stack.empty() ? "" : stack.front());
            longest = std::max(longest, stack.size());
        }
    }
    return names;
}

bool all_in(const std::vector<std::string>& names, std::string_view function) {
    return !names.empty() && std::all_of(names.begin(), names.end(), [&](const std::string& n) {
        return n.find(function) != std::string::npos;
    });
}

// Each loop below allocates through one call instruction, so that every capture after the first
// finds the thread's kept walk unchanged: the id remembered with that walk is taken only for the
// same stack table, depth and frames left out.
TEST_F(recorder_test, repeated_eh_frame_stacks_follow_table_depth_and_skip) {
    simulated_device other_gpu;
    caching_allocator other_allocator{{&other_gpu}};
    recorder::recorder other{other_allocator};
    auto options = mode(record_mode::all, context_mode::all);
    options.stack_unwinder = recorder::unwinder::eh_frame;
    options.clear_history = true;
    other.record_memory_history(options);
    // Other stacks first, so that an id of `history`'s table names another stack in `other`'s.
    std::vector<device_address> live;
    for (int i = 0; i < 8; ++i) {
        live.push_back(allocate_from_a_named_function(other, MiB << i));
    }
    other.record_memory_history(options);
    history.record_memory_history(options);
    std::vector<std::pair<recorder::recorder*, device_address>> blocks;
    for (recorder::recorder* target : {&history, &other, &history, &other}) {
        blocks.emplace_back(target, allocate_from_one_place(*target));
    }
    for (recorder::recorder* target : {&history, &other}) {
        size_t longest = 0;
        const auto names = innermost_of_allocations(*target, longest);
        EXPECT_TRUE(all_in(names, "allocate_from_one_place")) << ::testing::PrintToString(names);
    }

    history.record_memory_history(options);
    for (const size_t wrapper_frames : {0, 1, 0, 1}) {
        blocks.emplace_back(&history, allocate_from_one_place(history, wrapper_frames));
    }
    size_t longest = 0;
    const auto names = innermost_of_allocations(history, longest);
    ASSERT_EQ(names.size(), 4u);
    EXPECT_TRUE(all_in({names[0], names[2]}, "allocate_from_one_place"));
    EXPECT_TRUE(all_in({names[1], names[3]}, "repeated_eh_frame_stacks_follow"))
        << ::testing::PrintToString(names);

    // The last capture before each change of depth is an allocation's, so the free's kept walk is
    // the one the new setting's warm-up capture replaces.
    for (const size_t depth : {64, 3, 64, 3}) {
        options.max_stack_depth = depth;
        history.record_memory_history(options);
        blocks.emplace_back(&history, allocate_from_one_place(history));
        longest = 0;
        EXPECT_TRUE(all_in(innermost_of_allocations(history, longest), "allocate_from_one_place"));
        EXPECT_LE(longest, depth);
    }
    for (const auto& [target, address] : blocks) {
        target->free(address);
    }
    for (const device_address address : live) {
        other.free(address);
    }
}

TEST_F(recorder_test, frame_pointer_unwinder_finds_the_caller) {
    auto options = mode(record_mode::all, context_mode::all);
    options.stack_unwinder = recorder::unwinder::frame_pointer;
    history.record_memory_history(options);
    allocate_from_a_named_function(history, MiB);
    const auto s = history.take_snapshot();
    const auto& block = s.segments[0].blocks.front();
    ASSERT_NE(block.stack, snapshot::no_id);
    const auto names = functions(s, block.stack);
    EXPECT_EQ(names.front().rfind("(anonymous namespace)::allocate_from_a_named_function", 0), 0u)
        << names.front();
}

}  // namespace
