#pragma once
// Which private pool each allocation of a trace went to (CUDA graphs, torch.cuda.MemPool): the
// trace does not record it, so the replay infers it as it goes (docs/replay.md, "Private pools").

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/snapshot/model.hpp"
#include "trace_plan.hpp"

namespace memtrail::replay::detail {

// The pools of the original's final segments, by segment address.
using final_pool_map = std::map<uint64_t, pool_id>;

inline final_pool_map final_pools_of(const snapshot::snapshot& input, int device) {
    final_pool_map pools;
    for (const auto& s : input.segments) {
        if (s.device == device) {
            pools[s.address] = pool_id{s.pool_id_first, s.pool_id_second};
        }
    }
    return pools;
}

// Which pool each allocation of the original went to. A trace does not say: an allocation that
// lands in an existing segment went to that segment's pool; one that made a new segment went to
// the pool the final snapshot puts that segment in when it lasts, to the private pool a later
// run empties when that run is read so (trace_plan::private_part_start), else to the first pool
// that had no cached block for it, trying the pool this stream last allocated to, the default
// pools, the live private pools, then a new one. A segment that an OOM left cached
// (held_private) was in a private pool: the default pools are no candidate for it, and before
// any private pool is live it goes to the pool of the next lasting private segment made on its
// stream (the pool being captured there).
class pool_tracker {
  public:
    // `readings` holds each step's reading (1 = the second one, see trace_plan.hpp).
    pool_tracker(const trace_plan& plan, const std::vector<snapshot::trace_entry>& entries,
                 const final_pool_map& final_pools, const std::vector<uint8_t>& readings,
                 device_allocator& allocator)
        : plan_(plan),
          entries_(entries),
          final_pools_(final_pools),
          readings_(readings),
          allocator_(allocator),
          creator_pool_(plan.steps.size(), pool_id{}),
          emptying_run_(plan.steps.size(), plan.steps.size()) {
        for (size_t step = 0; step < plan.steps.size(); ++step) {
            const auto& freed = plan.frees_in_run[step];
            for (size_t k = plan.private_part_start[step]; k < freed.size(); ++k) {
                emptying_run_[freed[k]] = step;
            }
        }
    }

    pool_id pool_for(size_t entry, const snapshot::trace_entry& e) {
        const size_t creator = plan_.segment_creator[entry];
        pool_id pool;
        if (creator >= plan_.steps.size()) {
            pool = last_on_stream(e.stream);
        } else if (!plan_.new_segment[entry]) {
            pool = creator_pool_[creator];
        } else {
            pool = choose_for_new_segment(creator, e);
            creator_pool_[creator] = pool;
        }
        last_pool_[e.stream] = pool;
        if (!pool.is_default() &&
            std::find(recent_.begin(), recent_.end(), pool) == recent_.end()) {
            recent_.push_back(pool);
        }
        return pool;
    }

    // Private pools whose segments a release run gives back were released before it.
    void release_pools_freed_at(size_t step) {
        for (size_t creator : plan_.frees_in_run[step]) {
            const pool_id pool = creator_pool_[creator];
            if (!pool.is_default() && !released_.count(pool) &&
                allocator_.pool_use_count(pool) > 0) {
                allocator_.release_pool(pool);
                released_.insert(pool);
                std::erase(recent_, pool);
            }
        }
    }

    // Releases every private pool still held, as deleting its CUDA graph or MemPool does: its
    // cached segments go back at the next empty_cache or OOM.
    void release_held_pools() {
        for (const pool_id& pool : created_) {
            if (!released_.count(pool) && allocator_.pool_use_count(pool) > 0) {
                allocator_.release_pool(pool);
                released_.insert(pool);
                std::erase(recent_, pool);
            }
        }
    }

    // The private pools a release run gives back, when it gives back nothing else.
    std::vector<pool_id> only_pools_freed_at(size_t step) const {
        std::vector<pool_id> pools;
        for (size_t creator : plan_.frees_in_run[step]) {
            const pool_id pool = creator_pool_[creator];
            if (pool.is_default()) {
                return {};
            }
            if (std::find(pools.begin(), pools.end(), pool) == pools.end()) {
                pools.push_back(pool);
            }
        }
        return pools;
    }

    device_address allocate(pool_id pool, uint64_t size, stream_handle stream) {
        if (pool.is_default()) {
            return allocator_.allocate(size, stream);
        }
        if (!created_.count(pool) || released_.count(pool)) {
            if (allocator_.pool_use_count(pool) == 0) {
                released_.erase(pool);
                allocator_.create_pool(pool);  // as a MemPool or a graph holds it
            }
            created_.insert(pool);
        }
        // As use_mem_pool does: begin, allocate, end, release the scope's use.
        allocator_.begin_allocate_to_pool(pool, [](stream_handle) { return true; });
        struct scope_end {
            device_allocator& a;
            pool_id p;
            ~scope_end() {
                a.end_allocate_to_pool(p);
                a.release_pool(p);
            }
        } end{allocator_, pool};
        return allocator_.allocate(size, stream);
    }

  private:
    pool_id last_on_stream(stream_handle stream) const {
        auto it = last_pool_.find(stream);
        return it == last_pool_.end() ? pool_id{} : it->second;
    }

    pool_id choose_for_new_segment(size_t creator, const snapshot::trace_entry& e) {
        const device_address base = plan_.lasting_segment[creator];
        if (base) {
            // A segment lasts at its address; an expandable reservation anywhere in its span.
            auto it = final_pools_.lower_bound(base);
            const device_address reservation_end = plan_.reservation_end[creator];
            const device_address end = reservation_end ? reservation_end : base + 1;
            if (it != final_pools_.end() && it->first < end) {
                return it->second;
            }
        }
        const size_t run = emptying_run_[creator];
        if (run < plan_.steps.size() && readings_[run]) {
            // The segments that run gives back from its first small one on were one pool's.
            auto [pool, added] = run_pool_.try_emplace(run);
            if (added) {
                pool->second = invented_pool();
            }
            return pool->second;
        }
        const bool private_only = plan_.held_private[creator] != 0;
        std::vector<pool_id> candidates;
        const pool_id last = last_on_stream(e.stream);
        if (!last.is_default() && !released_.count(last)) {
            candidates.push_back(last);
        }
        if (!private_only) {
            candidates.push_back(pool_id{});
        }
        for (auto p = recent_.rbegin(); p != recent_.rend(); ++p) {
            if (std::find(candidates.begin(), candidates.end(), *p) == candidates.end()) {
                candidates.push_back(*p);
            }
        }
        for (const pool_id& p : candidates) {
            if (!allocator_.has_cached_block(e.size, e.stream, p)) {
                return p;
            }
        }
        if (private_only) {
            if (const auto upcoming = next_private_pool_on(creator, e.stream)) {
                return *upcoming;
            }
        }
        return invented_pool();
    }

    // A pool of its own, named apart from PyTorch's ids (its segments never last).
    pool_id invented_pool() { return pool_id{0, first_invented_pool + invented_++}; }

    // The final pool of the first private segment made on `stream` after `creator` that lasts.
    std::optional<pool_id> next_private_pool_on(size_t creator, stream_handle stream) const {
        for (size_t i = creator + 1; i < entries_.size(); ++i) {
            if (entries_[i].stream != stream || !plan_.lasting_segment[i]) {
                continue;
            }
            const auto it = final_pools_.find(plan_.lasting_segment[i]);
            if (it != final_pools_.end() && !it->second.is_default()) {
                return it->second;
            }
        }
        return std::nullopt;
    }

    static constexpr uint64_t first_invented_pool = 1ull << 48;
    const trace_plan& plan_;
    const std::vector<snapshot::trace_entry>& entries_;
    const final_pool_map& final_pools_;
    const std::vector<uint8_t>& readings_;
    device_allocator& allocator_;
    std::vector<pool_id> creator_pool_;
    // Creator -> the step of the run that empties its segment's private pool, if one does.
    std::vector<size_t> emptying_run_;
    std::map<size_t, pool_id> run_pool_;  // that run -> the pool
    std::unordered_map<stream_handle, pool_id> last_pool_;
    std::vector<pool_id> recent_;  // live private pools, by first use
    std::set<pool_id> created_, released_;
    uint64_t invented_ = 0;
};

}  // namespace memtrail::replay::detail
