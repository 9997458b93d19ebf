#pragma once
// Which private pool (CUDA graph, torch.cuda.MemPool) each segment belongs to. Trace entries do
// not carry pools, so a segment of a reconstructed state gets its pool from the snapshot's own
// segments: the one at the same address with the same size, when the snapshot still holds it.
// Segments given back before the snapshot was taken have no known pool.

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

struct segment_pool {
    uint64_t first = 0;
    uint64_t second = 0;
    bool is_default() const { return first == 0 && second == 0; }
    auto operator<=>(const segment_pool&) const = default;
};

// "(0, 1)"; "default" for (0, 0).
std::string pool_name(segment_pool pool);
// "CUDA graph" for (n, 0), "MemPool" for (0, n), "default": for narrow columns.
std::string pool_kind(segment_pool pool);
// Who makes a pool of that id in PyTorch, for people: (n, 0) is a CUDA graph's own pool (captured
// without a pool given), (0, n) one a user made (torch.cuda.MemPool, or graph_pool_handle()
// shared by graphs, as torch.compile's CUDA graph trees do); "default" for (0, 0).
std::string pool_owner(segment_pool pool);

// A segment's pool, and whether it is inferred (from the segment's stream) rather than named by
// the snapshot.
struct resolved_pool {
    segment_pool pool;
    bool inferred = false;
};

class segment_pools {
  public:
    segment_pools() = default;
    // The pools of `device`'s segments in `source`.
    segment_pools(const snapshot::snapshot& source, int device);

    // The pool of a segment at `address` of `total_size` bytes; nullopt when the snapshot does
    // not hold that segment.
    std::optional<segment_pool> pool_of(uint64_t address, uint64_t total_size) const;
    // The pool of the snapshot's segment that holds `address`, nullopt when none does.
    std::optional<segment_pool> pool_holding(uint64_t address) const;
    // The pool of a segment the snapshot no longer holds, inferred from its stream: every
    // segment the snapshot holds on that stream is in that one pool (a capture stream's private
    // pool, or the default pools). nullopt when the stream's segments are in several pools or
    // the snapshot holds none on it.
    std::optional<segment_pool> pool_of_stream(uint64_t stream) const;
    // The pool of `seg` of a reconstructed state: the snapshot's own when it still holds the
    // segment, else its stream's (pool_of_stream); nullopt when neither says.
    std::optional<resolved_pool> resolve(const snapshot::segment& seg) const;
    // Who holds `pool`, for people: pool_owner's words, or torch.compile's CUDA graph trees when
    // the allocations in its segments came through them.
    std::string owner(segment_pool pool) const;
    // The private pools holding segments, in order (the default pools left out).
    const std::vector<segment_pool>& private_pools() const { return private_pools_; }

  private:
    struct known_segment {
        uint64_t total_size = 0;
        segment_pool pool;
    };
    std::map<uint64_t, known_segment> by_address_;
    std::map<uint64_t, std::optional<segment_pool>> by_stream_;  // nullopt: mixed or default
    std::vector<segment_pool> private_pools_;
    std::vector<segment_pool> compiled_graph_pools_;  // torch.compile's (cudagraph_trees.py)
};

// A choice of pools to show: all of them, the default pools only, or one private pool.
struct pool_filter {
    enum class kind : uint8_t { all, default_pools, one_private };
    kind shown = kind::all;
    segment_pool pool;  // for one_private
    // Whether a segment in `candidate` (nullopt: unknown) passes. Unknown pools pass only `all`.
    bool accepts(std::optional<segment_pool> candidate) const;
};

}  // namespace memtrail::analysis
