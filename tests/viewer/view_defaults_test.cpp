// The viewer's defaults (issue 32): a snapshot opens at its peak, not after teardown; entries are
// numbered as the CLI numbers them.

#include <gtest/gtest.h>

#include <string>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/viewer/view.hpp"
#include "view_test_support.hpp"

namespace memtrail::viewer {
namespace {

const std::string traces = MEMTRAIL_UNPACKED_TRACES;

// A real job's trace ends after teardown: at its end nothing is allocated, at its peak GiBs are.
TEST(view_defaults, a_snapshot_opens_at_its_first_peak_of_allocated_memory) {
    const auto doc = load(traces + "/fsdp2_gpu__rank0.pickle");
    const analysis::device_model& model = doc->devices.front().model;
    const auto& allocated = model.values(analysis::series::allocated);
    const size_t peak = model.peak_position(analysis::series::allocated);
    ASSERT_GT(allocated[peak], allocated[model.event_count()]) << "the trace ends lower";

    view v(doc);
    EXPECT_EQ(v.moment(), peak);
    for (size_t p = 0; p < peak; ++p) {
        ASSERT_LT(allocated[p], allocated[peak]) << "the first moment at the highest";
    }
    ASSERT_TRUE(v.select_moment("end")) << "--at still wins";
    EXPECT_EQ(v.moment(), model.event_count());
}

}  // namespace
}  // namespace memtrail::viewer
