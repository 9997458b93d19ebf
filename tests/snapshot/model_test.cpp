#include "memtrail/snapshot/model.hpp"

#include <gtest/gtest.h>

namespace ms = memtrail::snapshot;

TEST(SnapshotModel, IdZeroIsNone) {
    ms::snapshot s;
    EXPECT_EQ(s.strings().size(), 1u);
    EXPECT_EQ(s.frames().size(), 1u);
    EXPECT_EQ(s.stacks().size(), 1u);
    EXPECT_EQ(s.string_at(ms::no_id), "");
    EXPECT_EQ(s.frame_at(ms::no_id), ms::frame{});
    EXPECT_TRUE(s.stack_at(ms::no_id).empty());
    EXPECT_EQ(s.intern_string(""), ms::no_id);
    EXPECT_EQ(s.intern_frame(ms::frame{}), ms::no_id);
    EXPECT_EQ(s.intern_stack({}), ms::no_id);
}

TEST(SnapshotModel, InterningDeduplicates) {
    ms::snapshot s;
    const auto a = s.intern_string("forward");
    const auto b = s.intern_string("backward");
    EXPECT_NE(a, b);
    EXPECT_EQ(s.intern_string("forward"), a);
    EXPECT_EQ(s.string_at(b), "backward");

    ms::frame f;
    f.function = a;
    f.filename = s.intern_string("model.py");
    f.line = 42;
    f.kind = ms::frame_kind::python;
    const auto fa = s.intern_frame(f);
    EXPECT_EQ(s.intern_frame(f), fa);
    f.line = 43;
    const auto fb = s.intern_frame(f);
    EXPECT_NE(fa, fb);
    EXPECT_EQ(s.frame_at(fb).line, 43u);

    const auto st = s.intern_stack({fa, fb});
    EXPECT_EQ(s.intern_stack({fa, fb}), st);
    EXPECT_NE(s.intern_stack({fb, fa}), st);
    EXPECT_EQ(s.stack_at(st), (std::vector<ms::frame_id>{fa, fb}));
}

TEST(SnapshotModel, ActionNamesRoundTrip) {
    for (int i = 0; i < ms::action_count; ++i) {
        const auto a = static_cast<ms::action>(i);
        ms::action parsed{};
        ASSERT_TRUE(ms::parse_action(ms::action_name(a), parsed)) << i;
        EXPECT_EQ(parsed, a);
    }
    EXPECT_EQ(ms::action_name(ms::action::free_requested), "free_requested");
    EXPECT_EQ(ms::action_name(ms::action::annotation_start), "user_start");
    EXPECT_EQ(ms::action_name(ms::action::annotation_marker), "user_marker");
    ms::action parsed{};
    EXPECT_FALSE(ms::parse_action("malloc", parsed));
}

TEST(SnapshotModel, BlockStateNamesRoundTrip) {
    for (const auto s : {ms::block_state::active_allocated, ms::block_state::active_pending_free,
                         ms::block_state::inactive}) {
        ms::block_state parsed{};
        ASSERT_TRUE(ms::parse_block_state(ms::block_state_name(s), parsed));
        EXPECT_EQ(parsed, s);
    }
    ms::block_state parsed{};
    EXPECT_FALSE(ms::parse_block_state("active", parsed));
}

TEST(SnapshotModel, TraceForCreatesOnce) {
    ms::snapshot s;
    EXPECT_EQ(s.find_trace(1), nullptr);
    auto& t = s.trace_for(1);
    t.entries.emplace_back();
    EXPECT_EQ(&s.trace_for(1), &t);
    ASSERT_NE(s.find_trace(1), nullptr);
    EXPECT_EQ(s.find_trace(1)->entries.size(), 1u);
    EXPECT_EQ(s.find_trace(0), nullptr);
}

TEST(SnapshotModel, EqualityComparesTablesAndData) {
    ms::snapshot a;
    ms::snapshot b;
    EXPECT_EQ(a, b);
    a.intern_string("x");
    EXPECT_FALSE(a == b);
    b.intern_string("x");
    EXPECT_EQ(a, b);
    a.trace_for(0).entries.emplace_back();
    EXPECT_FALSE(a == b);
    b.trace_for(0).entries.emplace_back();
    EXPECT_EQ(a, b);
    ms::snapshot c = a;
    EXPECT_EQ(c, a);
    EXPECT_EQ(c.intern_string("x"), a.intern_string("x"));
}
