#pragma once
// Short stable names for CUDA streams: the default stream is `stream 0`, the others `stream 1`,
// `stream 2`... in the order the device's trace first uses them (then its segments' streams, for
// a trace that lost its start). The raw handles (such as 477141664) mean nothing to a reader
// and change from run to run.

#include <cstdint>
#include <map>
#include <string>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

class stream_names {
  public:
    stream_names() = default;
    // The streams of `device`'s trace and segments in `source`.
    stream_names(const snapshot::snapshot& source, int device);

    // 0 for the default stream, 1, 2... for the others; a stream never seen gets the next number
    // on first use here, so every handle keeps one number.
    size_t number(uint64_t handle) const;
    // "stream 0", "stream 2".
    std::string name(uint64_t handle) const;
    // "stream 2 (477141664)": the short name with the raw handle.
    std::string name_with_handle(uint64_t handle) const;

  private:
    // Numbered on first use, also through const access (a stream the source did not show).
    mutable std::map<uint64_t, size_t> numbers_;
};

}  // namespace memtrail::analysis
