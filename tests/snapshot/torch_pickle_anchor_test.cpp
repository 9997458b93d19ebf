// Reads PyTorch 2.11's own snapshot pickles. The expected numbers come from loading the same files
// with Python's pickle; the segment totals are recomputed here from the block lists.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "memtrail/snapshot/torch_pickle.hpp"
#include "test_paths.hpp"

namespace ms = memtrail::snapshot;
using ms::test::anchor;

namespace {

std::map<ms::action, int> count_actions(const ms::device_trace& trace) {
    std::map<ms::action, int> counts;
    for (const auto& e : trace.entries) {
        ++counts[e.kind];
    }
    return counts;
}

// What PyTorch reports per segment must follow from the segment's blocks.
void expect_segment_totals_match_blocks(const ms::snapshot& s) {
    for (const auto& seg : s.segments) {
        uint64_t total = 0;
        uint64_t allocated = 0;
        uint64_t active = 0;
        uint64_t requested = 0;
        uint64_t next_address = seg.address;
        for (const auto& b : seg.blocks) {
            EXPECT_EQ(b.address, next_address) << "blocks must tile segment " << seg.address;
            next_address = b.address + b.size;
            total += b.size;
            if (b.state == ms::block_state::active_allocated) {
                allocated += b.size;
            }
            if (b.state != ms::block_state::inactive) {
                active += b.size;
                requested += b.requested_size;
            }
        }
        EXPECT_EQ(seg.total_size, total) << seg.address;
        EXPECT_EQ(seg.allocated_size, allocated) << seg.address;
        EXPECT_EQ(seg.active_size, active) << seg.address;
        EXPECT_EQ(seg.requested_size, requested) << seg.address;
    }
}

uint64_t sum_total_size(const ms::snapshot& s) {
    uint64_t sum = 0;
    for (const auto& seg : s.segments) {
        sum += seg.total_size;
    }
    return sum;
}

size_t count_blocks(const ms::snapshot& s) {
    size_t n = 0;
    for (const auto& seg : s.segments) {
        n += seg.blocks.size();
    }
    return n;
}

}  // namespace

TEST(TorchPickleAnchor, StreamsDefault) {
    const auto s = ms::read_torch_pickle(anchor("streams__default.pickle"));
    ASSERT_EQ(s.traces.size(), 1u);
    const auto* trace = s.find_trace(0);
    ASSERT_NE(trace, nullptr);
    EXPECT_EQ(trace->entries.size(), 646u);
    EXPECT_EQ(s.segments.size(), 38u);
    EXPECT_EQ(count_blocks(s), 40u);
    EXPECT_EQ(sum_total_size(s), 1759510528u);

    const auto counts = count_actions(*trace);
    EXPECT_EQ(counts.size(), 4u);
    EXPECT_EQ(counts.at(ms::action::alloc), 212);
    EXPECT_EQ(counts.at(ms::action::free_requested), 211);
    EXPECT_EQ(counts.at(ms::action::free_completed), 185);
    EXPECT_EQ(counts.at(ms::action::segment_alloc), 38);
    expect_segment_totals_match_blocks(s);

    // The first entry, as pickle.load shows it.
    const auto& first = trace->entries.front();
    EXPECT_EQ(first.kind, ms::action::segment_alloc);
    EXPECT_EQ(first.address, 140331379064832u);
    EXPECT_EQ(first.size, 67108864u);
    EXPECT_EQ(first.stream, 0u);
    EXPECT_EQ(first.time_ns, 1795211106018632000);
    EXPECT_EQ(s.string_at(first.compile_context), "N/A");
    EXPECT_EQ(first.user_metadata, ms::no_id);
    const auto& stack = s.stack_at(first.stack);
    ASSERT_EQ(stack.size(), 2u);
    const auto& inner = s.frame_at(stack[0]);
    EXPECT_EQ(inner.kind, ms::frame_kind::python);
    EXPECT_EQ(s.string_at(inner.function), "streams");
    EXPECT_EQ(s.string_at(inner.filename), "bench/torch_parity_traces.py");
    EXPECT_EQ(inner.line, 58u);
    EXPECT_EQ(s.string_at(s.frame_at(stack[1]).function), "<module>");

    // alloc/free entries carry the request as requested_size too.
    for (const auto& e : trace->entries) {
        if (e.kind == ms::action::alloc) {
            EXPECT_EQ(e.requested_size, e.size);
        }
    }

    const auto& seg = s.segments.front();
    EXPECT_EQ(seg.address, 140328996700160u);
    EXPECT_EQ(seg.total_size, 50331648u);
    EXPECT_EQ(seg.stream, 644875040u);
    EXPECT_TRUE(seg.is_large);
    EXPECT_FALSE(seg.is_expandable);
    ASSERT_EQ(seg.blocks.size(), 1u);
    EXPECT_EQ(seg.blocks[0].state, ms::block_state::active_pending_free);

    EXPECT_EQ(s.settings.conf, "");
    EXPECT_EQ(s.settings.max_split_size, -1);
    EXPECT_EQ(s.settings.garbage_collection_threshold, 0.0);
    EXPECT_FALSE(s.settings.expandable_segments);
    EXPECT_EQ(s.settings.roundup_power2_divisions, std::vector<uint64_t>(16, 0));
    EXPECT_EQ(s.settings.other.at("pinned_num_register_threads"), "1");
    EXPECT_EQ(s.settings.other.at("release_lock_on_cudamalloc"), "False");
    EXPECT_TRUE(s.annotations.empty());
    EXPECT_EQ(s.info.producer, "torch pickle import");
}

TEST(TorchPickleAnchor, TransformerDefault) {
    const auto s = ms::read_torch_pickle(anchor("transformer__default.pickle"));
    const auto* trace = s.find_trace(0);
    ASSERT_NE(trace, nullptr);
    EXPECT_EQ(trace->entries.size(), 10983u);
    EXPECT_EQ(s.segments.size(), 105u);
    EXPECT_EQ(count_blocks(s), 109u);
    EXPECT_EQ(sum_total_size(s), 6129975296u);

    const auto counts = count_actions(*trace);
    EXPECT_EQ(counts.at(ms::action::alloc), 3628);
    EXPECT_EQ(counts.at(ms::action::free_requested), 3625);
    EXPECT_EQ(counts.at(ms::action::free_completed), 3625);
    EXPECT_EQ(counts.at(ms::action::segment_alloc), 105);
    expect_segment_totals_match_blocks(s);

    ASSERT_EQ(s.annotations.size(), 16u);
    EXPECT_TRUE(s.annotations[0].is_start);
    EXPECT_EQ(s.string_at(s.annotations[0].name), "Optimizer.step#AdamW.step");
    EXPECT_EQ(s.annotations[0].time_ns, 1795211083461444000);
    EXPECT_FALSE(s.annotations[1].is_start);

    // Segments come out sorted by (device, address).
    for (size_t i = 1; i < s.segments.size(); ++i) {
        EXPECT_LT(s.segments[i - 1].address, s.segments[i].address);
    }
    // Shared frame lists intern to few stacks: the trace has 37 distinct ones.
    std::set<ms::stack_id> stacks;
    for (const auto& e : trace->entries) {
        stacks.insert(e.stack);
    }
    EXPECT_EQ(stacks.size(), 37u);
}

TEST(TorchPickleAnchor, RoundTripIsExact) {
    for (const char* name : {"streams__default.pickle", "transformer__default.pickle"}) {
        const auto first = ms::read_torch_pickle(anchor(name));
        const auto bytes = ms::write_torch_pickle(first);
        const auto second = ms::read_torch_pickle(std::span<const uint8_t>(bytes));
        EXPECT_TRUE(second == first) << name;
        // Writing again gives the same bytes: the writer depends only on the model.
        EXPECT_EQ(ms::write_torch_pickle(second), bytes) << name;
    }
}
