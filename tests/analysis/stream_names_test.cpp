// Streams get short names in order of first use: the default stream is stream 0.

#include <gtest/gtest.h>

#include "memtrail/analysis/stream_names.hpp"

namespace memtrail::analysis {
namespace {

TEST(stream_names, the_default_stream_is_0_and_the_others_follow_first_use) {
    snapshot::snapshot snap;
    for (uint64_t stream : {477141664ull, 0ull, 474931344ull, 477141664ull}) {
        snapshot::trace_entry& e = snap.trace_for(0).entries.emplace_back();
        e.stream = stream;
    }
    snapshot::segment& seg = snap.segments.emplace_back();
    seg.stream = 99;  // only in the segments: after the trace's streams
    stream_names names(snap, 0);
    EXPECT_EQ(names.name(0), "stream 0");
    EXPECT_EQ(names.name(477141664), "stream 1");
    EXPECT_EQ(names.name(474931344), "stream 2");
    EXPECT_EQ(names.number(99), 3u);
    EXPECT_EQ(names.name_with_handle(474931344), "stream 2 (474931344)");
    EXPECT_EQ(names.name(12345), "stream 4");  // unseen: the next number, kept
    EXPECT_EQ(names.name(12345), "stream 4");
}

}  // namespace
}  // namespace memtrail::analysis
