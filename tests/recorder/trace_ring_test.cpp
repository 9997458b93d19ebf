// The trace ring without a recorder: what a copy returns while a writer keeps pushing, and the
// sequence numbers kept across resizing and clearing. A mutex stands for the device's lock, which
// every access to the ring holds in the recorder.

#include "detail/trace_ring.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>

namespace {

using memtrail::recorder::detail::trace_record;
using memtrail::recorder::detail::trace_ring;

std::mutex writers;  // the device's lock, in the recorder

trace_ring::contents copied(const trace_ring& ring,
                            uint64_t cut = std::numeric_limits<uint64_t>::max(),
                            uint64_t from = 0) {
    return ring.copy(
        cut,
        [](const std::function<void()>& batch) {
            std::lock_guard lock(writers);
            batch();
        },
        from);
}

// An entry whose fields all derive from its sequence number.
trace_record entry(uint64_t sequence) {
    trace_record record;
    record.address = sequence;
    record.size = sequence * 3;
    record.stream = ~sequence;
    record.time_ns = static_cast<int64_t>(sequence);
    record.stack = static_cast<uint32_t>(sequence * 7);
    return record;
}

// Whole entries, one run of sequence numbers ending just before `cut`, after `dropped` lost ones.
void expect_one_run(const trace_ring::contents& held, uint64_t cut) {
    for (size_t i = 0; i < held.records.size(); ++i) {
        const trace_record& r = held.records[i];
        ASSERT_EQ(r.address, held.dropped + i);
        ASSERT_EQ(r.size, r.address * 3);
        ASSERT_EQ(r.stream, ~r.address);
        ASSERT_EQ(r.stack, static_cast<uint32_t>(r.address * 7));
    }
    EXPECT_EQ(held.dropped + held.records.size(), cut);
}

// A writer that laps the ring while copies are taken: a copy it overtakes must keep the newest
// entries up to its cut, with no hole where the writer passed between two batches.
TEST(trace_ring, a_copy_racing_a_writer_is_one_run_up_to_its_cut) {
    trace_ring ring;
    ring.set_capacity(5'000);  // two batches: the writer laps copies between them
    std::atomic<uint64_t> pushed{0};
    std::jthread writer([&](std::stop_token stop) {
        for (uint64_t sequence = 0; !stop.stop_requested(); ++sequence) {
            {
                std::lock_guard lock(writers);
                ring.push(entry(sequence));
            }
            pushed.store(sequence + 1, std::memory_order_release);
        }
    });
    const auto wait_for_pushes = [&](uint64_t count) {
        while (pushed.load(std::memory_order_acquire) < count) {
            std::this_thread::yield();
        }
    };
    wait_for_pushes(1'000);
    for (int i = 0; i < 300; ++i) {
        uint64_t cut = 0;
        {
            std::lock_guard lock(writers);
            cut = ring.end();
        }
        expect_one_run(copied(ring, cut), cut);
        // Without a cut: up to the end when the copy began.
        const trace_ring::contents everything = copied(ring);
        expect_one_run(everything, everything.dropped + everything.records.size());
    }
    wait_for_pushes(20'000);  // lapped the ring several times
    writer.request_stop();
    writer.join();
    const trace_ring::contents last = copied(ring);
    ASSERT_EQ(last.records.size(), 5'000u);  // nothing racing: the whole capacity
    expect_one_run(last, pushed.load());
}

// A live subscriber copies from its last end: it gets the entries from there on, and learns of
// those the ring overwrote before it came back, but not of older ones it had read already.
TEST(trace_ring, a_copy_from_a_sequence_number_counts_only_what_it_missed) {
    trace_ring ring;
    ring.set_capacity(100);
    for (uint64_t s = 0; s < 80; ++s) {
        ring.push(entry(s));
    }
    const trace_ring::contents since = copied(ring, 70, 50);
    ASSERT_EQ(since.records.size(), 20u);
    EXPECT_EQ(since.records.front().address, 50u);
    EXPECT_EQ(since.dropped, 0u);
    for (uint64_t s = 80; s < 250; ++s) {
        ring.push(entry(s));
    }
    // The ring holds 150..249: from 70, entries 70..149 are gone.
    const trace_ring::contents behind = copied(ring, 260, 70);
    EXPECT_EQ(behind.dropped, 80u);
    ASSERT_EQ(behind.records.size(), 100u);
    EXPECT_EQ(behind.records.front().address, 150u);
    EXPECT_TRUE(copied(ring, 260, 250).records.empty());
}

TEST(trace_ring, resizing_keeps_the_newest_entries_and_their_numbers) {
    trace_ring ring;
    ring.set_capacity(100);
    for (uint64_t s = 0; s < 250; ++s) {
        ring.push(entry(s));
    }
    expect_one_run(copied(ring), 250);
    EXPECT_EQ(copied(ring).records.size(), 100u);
    ring.set_capacity(40);
    expect_one_run(copied(ring), 250);
    EXPECT_EQ(copied(ring).records.size(), 40u);
    // Growing keeps them too, and fills past a chunk.
    constexpr uint64_t pushed = trace_ring::chunk_entries + 20'000;
    ring.set_capacity(pushed + 10'000);
    for (uint64_t s = 250; s < pushed; ++s) {
        ring.push(entry(s));
    }
    const trace_ring::contents grown = copied(ring);
    EXPECT_EQ(grown.records.size(), pushed - 250 + 40);
    expect_one_run(grown, pushed);
    // A cut before what is held keeps nothing; one inside keeps up to it.
    EXPECT_TRUE(copied(ring, 100).records.empty());
    expect_one_run(copied(ring, 5'000), 5'000);
}

TEST(trace_ring, clearing_forgets_and_counts_nothing_dropped_since) {
    trace_ring ring;
    ring.set_capacity(10);
    for (uint64_t s = 0; s < 25; ++s) {
        ring.push(entry(s));
    }
    const uint64_t before_clear = ring.end();
    ring.clear();
    EXPECT_TRUE(copied(ring).records.empty());
    EXPECT_EQ(copied(ring).dropped, 0u);
    EXPECT_TRUE(copied(ring, before_clear).records.empty());  // a cut from before it
    EXPECT_EQ(copied(ring, before_clear).dropped, 0u);
    for (uint64_t s = 25; s < 30; ++s) {
        ring.push(entry(s));
    }
    const trace_ring::contents after = copied(ring);
    ASSERT_EQ(after.records.size(), 5u);
    EXPECT_EQ(after.records.front().address, 25u);
    EXPECT_EQ(after.dropped, 0u);
}

TEST(trace_ring, a_ring_of_no_capacity_keeps_nothing_and_counts_on) {
    trace_ring ring;
    for (uint64_t s = 0; s < 5; ++s) {
        EXPECT_EQ(ring.push(entry(s)), s + 1);
    }
    EXPECT_TRUE(copied(ring).records.empty());
    EXPECT_EQ(copied(ring).dropped, 5u);
}

TEST(trace_ring, times_never_go_backwards) {
    trace_ring ring;
    ring.set_capacity(10);
    trace_record late = entry(0);
    late.time_ns = 500;
    ring.push(late);
    trace_record early = entry(1);
    early.time_ns = 100;  // taken before waiting for the lock, pushed after
    ring.push(early);
    const trace_ring::contents held = copied(ring);
    ASSERT_EQ(held.records.size(), 2u);
    EXPECT_EQ(held.records[1].time_ns, 500);
}

}  // namespace
