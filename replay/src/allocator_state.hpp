#pragma once
// The allocator's segments and blocks as snapshot-model segments, for the replay's result and
// the synthetic histories.

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::replay::detail {

void append_allocator_segments(snapshot::snapshot& out, const device_allocator& allocator,
                               int device);

}  // namespace memtrail::replay::detail
