// The allocator state of one device at any position of its trace: the state before the first
// entry (the final segments with every entry undone), checked against the snapshot when replayed
// forward, and checkpoints of the state engine (state_engine.cpp) every so many entries.
//
// Index of this file:
// [SECTION] segment ranges
// [SECTION] the state before the first entry
// [SECTION] checking the replayed end state
// [SECTION] building the model, and states at any position
// [SECTION] queries

#include "memtrail/analysis/device_model.hpp"

#include <algorithm>
#include <iterator>
#include <set>
#include <sstream>

#include "detail/address_hash_map.hpp"
#include "detail/device_model_impl.hpp"

namespace memtrail::analysis {
namespace {

using detail::allocator_rules;
using detail::engine_block;
using detail::engine_checkpoint;
using detail::engine_segment;
using snapshot::action;
using snapshot::block_state;
using segment_ranges = std::map<uint64_t, engine_segment>;

//-------------------------------------------------------------------------------------------------
// [SECTION] segment ranges
//-------------------------------------------------------------------------------------------------

// Removes [first, last) from the segments, cutting the ones it overlaps.
void remove_range(segment_ranges& segments, uint64_t first, uint64_t last) {
    auto it = segments.upper_bound(first);
    if (it != segments.begin()) {
        --it;
    }
    while (it != segments.end() && it->first < last) {
        const uint64_t segment_first = it->first;
        const uint64_t segment_last = it->first + it->second.size;
        if (segment_last <= first) {
            ++it;
            continue;
        }
        const engine_segment original = it->second;
        it = segments.erase(it);
        if (segment_first < first) {
            engine_segment left = original;
            left.size = first - segment_first;
            segments.emplace(segment_first, left);
        }
        if (segment_last > last) {
            engine_segment right = original;
            right.size = segment_last - last;
            it = segments.emplace(last, right).first;
            ++it;
        }
    }
}

// Adds the expandable range [first, last), joining expandable ranges it touches.
void add_expandable_range(segment_ranges& segments, uint64_t first, uint64_t last,
                          engine_segment proto) {
    proto.is_expandable = true;
    proto.size = last - first;
    auto above = segments.find(last);
    if (above != segments.end() && above->second.is_expandable) {
        proto.size += above->second.size;
        proto.is_large = above->second.is_large;
        segments.erase(above);
    }
    auto below = segments.lower_bound(first);
    if (below != segments.begin()) {
        --below;
        if (below->second.is_expandable && below->first + below->second.size == first) {
            below->second.size += proto.size;
            return;
        }
    }
    segments.emplace(first, proto);
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the state before the first entry
//-------------------------------------------------------------------------------------------------

struct initial_block {
    engine_block block;
    bool size_known = true;
};

struct initial_replay {
    engine_checkpoint state;
    size_t allocations = 0;  // alloc entries in the trace, counted on the way
};

// The state before the first entry: the final segments with every entry undone, newest first.
// Only what callers hold and the segments matter; free ranges are the gaps between blocks.
initial_replay initial_state(const snapshot::snapshot& source, int device,
                             const std::vector<snapshot::trace_entry>& entries,
                             const allocator_rules& rules) {
    initial_replay replay;
    segment_ranges segments;
    detail::address_hash_map<initial_block> blocks;
    for (const auto& seg : source.segments) {
        if (seg.device != device) {
            continue;
        }
        segments[seg.address] = engine_segment{seg.total_size, seg.stream,   seg.time_ns,
                                               seg.stack,      seg.is_large, seg.is_expandable};
        for (const auto& blk : seg.blocks) {
            if (blk.state != block_state::inactive) {
                blocks[blk.address] = {engine_block{blk.size, blk.requested_size, blk.time_ns,
                                                    blk.stack, blk.state, seg.is_large},
                                       true};
            }
        }
    }
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
        const snapshot::trace_entry& e = *it;
        const uint64_t request = e.requested_size != 0 ? e.requested_size : e.size;
        switch (e.kind) {
            case action::alloc:
                ++replay.allocations;
                blocks.erase(e.address);
                break;
            case action::free_requested: {
                initial_block* found = blocks.find(e.address);
                if (found != nullptr) {
                    found->block.state = block_state::active_allocated;
                } else {
                    blocks[e.address] = {
                        engine_block{0, request, 0, e.stack, block_state::active_allocated, true},
                        false};
                }
                break;
            }
            case action::free_completed: {
                // Free entries carry the block's allocation stack.
                auto& blk = blocks[e.address];
                blk = {engine_block{0, request, 0, e.stack, block_state::active_pending_free, true},
                       false};
                break;
            }
            case action::segment_alloc:
                segments.erase(e.address);
                break;
            case action::segment_free:
                segments[e.address] = engine_segment{
                    e.size, e.stream, e.time_ns, e.stack, e.size != size_rules::small_buffer,
                    false};
                break;
            case action::segment_map:
                remove_range(segments, e.address, e.address + e.size);
                break;
            case action::segment_unmap:
                add_expandable_range(segments, e.address, e.address + e.size,
                                     engine_segment{e.size, e.stream, e.time_ns, e.stack,
                                                    e.size % size_rules::large_buffer == 0, true});
                break;
            default:
                break;
        }
    }

    engine_checkpoint& initial = replay.state;
    initial.segments.assign(segments.begin(), segments.end());
    std::vector<std::pair<uint64_t, initial_block>> sorted;
    sorted.reserve(blocks.size());
    blocks.for_each([&sorted](uint64_t address, const initial_block& item) {
        sorted.emplace_back(address, item);
    });
    std::sort(sorted.begin(), sorted.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    // Blocks freed during the trace but allocated before it have no recorded size: apply the
    // allocator's rules to the free range they sit at the start of.
    for (size_t i = 0; i < sorted.size(); ++i) {
        auto& [address, item] = sorted[i];
        if (item.size_known) {
            continue;
        }
        const uint64_t rounded = rules.round_size(item.block.requested_size);
        item.block.size = rounded;
        item.block.is_large = !size_rules::is_small_request(rounded);
        auto seg = segments.upper_bound(address);
        if (seg == segments.begin()) {
            continue;
        }
        --seg;
        const uint64_t segment_last = seg->first + seg->second.size;
        if (address >= segment_last) {
            continue;
        }
        item.block.is_large = seg->second.is_large;
        const uint64_t limit = (i + 1 < sorted.size() && sorted[i + 1].first < segment_last)
                                   ? sorted[i + 1].first
                                   : segment_last;
        if (limit <= address) {
            continue;
        }
        item.block.size = std::min(rounded, limit - address);
        if (!rules.should_split(!seg->second.is_large, seg->second.is_expandable, item.block.size,
                                limit - address - item.block.size)) {
            item.block.size = limit - address;
        }
    }
    initial.blocks.reserve(sorted.size());
    for (const auto& [address, item] : sorted) {
        initial.blocks.emplace_back(address, item.block);
    }
    return replay;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] checking the replayed end state
//-------------------------------------------------------------------------------------------------

std::string hex(uint64_t value) {
    std::ostringstream text;
    text << "0x" << std::hex << value;
    return text.str();
}

// The first way the replayed end state differs from the snapshot's segments, "" when none.
std::string first_difference(const snapshot::snapshot& source, int device,
                             const memory_state& replayed) {
    std::vector<const snapshot::segment*> expected;
    for (const auto& seg : source.segments) {
        if (seg.device == device) {
            expected.push_back(&seg);
        }
    }
    if (expected.size() != replayed.segments.size()) {
        return "the trace ends with " + std::to_string(replayed.segments.size()) +
               " segments, the snapshot has " + std::to_string(expected.size());
    }
    for (size_t i = 0; i < expected.size(); ++i) {
        const snapshot::segment& want = *expected[i];
        const snapshot::segment& got = replayed.segments[i];
        if (want.address != got.address || want.total_size != got.total_size) {
            return "segment " + std::to_string(i) + ": the trace gives " + hex(got.address) +
                   " of " + std::to_string(got.total_size) + " bytes, the snapshot " +
                   hex(want.address) + " of " + std::to_string(want.total_size);
        }
        std::vector<const snapshot::block*> want_active;
        std::vector<const snapshot::block*> got_active;
        for (const auto& blk : want.blocks) {
            if (blk.state != block_state::inactive) {
                want_active.push_back(&blk);
            }
        }
        for (const auto& blk : got.blocks) {
            if (blk.state != block_state::inactive) {
                got_active.push_back(&blk);
            }
        }
        for (size_t b = 0; b < std::max(want_active.size(), got_active.size()); ++b) {
            if (b >= want_active.size() || b >= got_active.size()) {
                return "segment " + hex(want.address) + ": the trace leaves " +
                       std::to_string(got_active.size()) + " blocks in use, the snapshot " +
                       std::to_string(want_active.size());
            }
            const snapshot::block& w = *want_active[b];
            const snapshot::block& g = *got_active[b];
            if (w.address != g.address || w.size != g.size || w.state != g.state) {
                return "segment " + hex(want.address) + ": the trace gives block " +
                       hex(g.address) + " of " + std::to_string(g.size) + " bytes (" +
                       std::string(snapshot::block_state_name(g.state)) + "), the snapshot " +
                       hex(w.address) + " of " + std::to_string(w.size) + " bytes (" +
                       std::string(snapshot::block_state_name(w.state)) + ")";
            }
        }
    }
    return {};
}

size_t series_index(series s) {
    return static_cast<size_t>(s);
}

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] building the model, and states at any position
//-------------------------------------------------------------------------------------------------

detail::state_engine device_model::impl::engine_at(size_t position) const {
    auto after = std::upper_bound(
        checkpoints.begin(), checkpoints.end(), position,
        [](size_t p, const engine_checkpoint& checkpoint) { return p < checkpoint.position; });
    const engine_checkpoint& checkpoint = *std::prev(after);
    detail::state_engine engine(rules);
    engine.restore(checkpoint);
    for (size_t i = checkpoint.position; i < position; ++i) {
        engine.apply((*entries)[i]);
    }
    return engine;
}

device_model device_model::build(std::shared_ptr<const snapshot::snapshot> source, int device,
                                 const model_options& options) {
    auto state = std::make_shared<impl>();
    state->source = source;
    state->device = device;
    const snapshot::device_trace* trace = source->find_trace(device);
    state->entries = trace != nullptr ? &trace->entries : &state->empty_entries;
    state->rules = allocator_rules(source->settings);
    const auto& entries = *state->entries;
    const size_t count = entries.size();

    const initial_replay replay = initial_state(*source, device, entries, state->rules);
    const engine_checkpoint& initial = replay.state;
    detail::state_engine engine(state->rules);
    engine.start(initial);
    state->checkpoints.push_back(engine.save(0));

    for (auto& curve : state->curves) {
        curve.reserve(count + 1);
    }
    auto record_curves = [&]() {
        const device_stats& stats = engine.stats();
        state->curves[0].push_back(static_cast<uint64_t>(stats.allocated_bytes[0].current));
        state->curves[1].push_back(static_cast<uint64_t>(stats.active_bytes[0].current));
        state->curves[2].push_back(static_cast<uint64_t>(stats.reserved_bytes[0].current));
    };
    record_curves();

    // Lifetimes are indexed by the engine's block numbers: the blocks live at the start, in
    // address order, then every allocation in trace order.
    auto& lifetimes = state->lifetimes;
    lifetimes.reserve(initial.blocks.size() + replay.allocations);
    for (const auto& [address, blk] : initial.blocks) {
        const bool pending = blk.state == block_state::active_pending_free;
        lifetimes.push_back(allocation_lifetime{address, blk.size, blk.requested_size, blk.stack, 0,
                                                pending ? 0 : count, count, true});
    }

    reconstruction_report& report = state->report;
    size_t last_checkpoint = 0;
    bool times_sorted = true;
    for (size_t i = 0; i < count; ++i) {
        const snapshot::trace_entry& e = entries[i];
        times_sorted = times_sorted && (i == 0 || e.time_ns >= entries[i - 1].time_ns);
        const detail::entry_effect effect = engine.apply(e);
        if (effect.anomaly) {
            if (report.anomalies == 0) {
                report.first_anomaly = i;
            }
            ++report.anomalies;
        }
        // block_size is set when the entry took effect on a block.
        if (effect.block_size != 0) {
            if (e.kind == action::alloc) {
                lifetimes.push_back(allocation_lifetime{e.address, effect.block_size,
                                                        static_cast<uint64_t>(effect.requested),
                                                        effect.stack, i + 1, count, count, false});
            } else if (e.kind == action::free_requested) {
                lifetimes[effect.block_number].end = i + 1;
            } else if (e.kind == action::free_completed) {
                // Stores only (no read of the record): these land far apart in a long trace.
                lifetimes[effect.block_number].released = i + 1;
                if (effect.allocated != 0) {  // its free request was not recorded
                    lifetimes[effect.block_number].end = i + 1;
                }
            }
        }
        record_curves();
        const size_t position = i + 1;
        // Copies cost the live state: space them so they never outweigh the trace itself.
        if (position - last_checkpoint >=
                std::max(options.checkpoint_interval, 4 * engine.live_count()) &&
            position < count) {
            state->checkpoints.push_back(engine.save(position));
            last_checkpoint = position;
        }
    }

    const std::string difference =
        first_difference(*source, device, engine.materialize(device, count, 0));
    report.matches_final_segments = difference.empty();
    report.first_difference = difference;

    for (size_t s = 0; s < 3; ++s) {
        const auto& curve = state->curves[s];
        state->peaks[s] = static_cast<size_t>(
            std::distance(curve.begin(), std::max_element(curve.begin(), curve.end())));
        state->pyramids[s].build(curve);
    }
    if (!times_sorted) {
        state->time_running_max.reserve(count);
        int64_t latest = INT64_MIN;
        for (const auto& e : entries) {
            latest = std::max(latest, e.time_ns);
            state->time_running_max.push_back(latest);
        }
    }
    return device_model(std::move(state));
}

//-------------------------------------------------------------------------------------------------
// [SECTION] queries
//-------------------------------------------------------------------------------------------------

const snapshot::snapshot& device_model::source() const {
    return *impl_->source;
}
int device_model::device() const {
    return impl_->device;
}
size_t device_model::event_count() const {
    return impl_->entries->size();
}
const snapshot::trace_entry& device_model::entry(size_t index) const {
    return (*impl_->entries)[index];
}

memory_state device_model::state_after(size_t position) const {
    position = std::min(position, event_count());
    return impl_->engine_at(position).materialize(impl_->device, position, time_at(position));
}

const std::vector<uint64_t>& device_model::values(series s) const {
    return impl_->curves[series_index(s)];
}

std::pair<uint64_t, uint64_t> device_model::min_max(series s, size_t first, size_t last) const {
    const auto& curve = values(s);
    last = std::min(last, curve.size());
    if (first >= last) {
        return {0, 0};
    }
    return impl_->pyramids[series_index(s)].query(curve, first, last);
}

size_t device_model::peak_position(series s) const {
    return impl_->peaks[series_index(s)];
}

int64_t device_model::time_at(size_t position) const {
    const auto& entries = *impl_->entries;
    if (entries.empty()) {
        return impl_->source->info.time_ns;
    }
    position = std::min(position, entries.size());
    return entries[position == 0 ? 0 : position - 1].time_ns;
}

size_t device_model::position_at_time(int64_t time_ns) const {
    const auto& entries = *impl_->entries;
    if (!impl_->time_running_max.empty()) {
        const auto& times = impl_->time_running_max;
        return static_cast<size_t>(
            std::distance(times.begin(), std::upper_bound(times.begin(), times.end(), time_ns)));
    }
    return static_cast<size_t>(std::distance(
        entries.begin(),
        std::upper_bound(entries.begin(), entries.end(), time_ns,
                         [](int64_t t, const snapshot::trace_entry& e) { return t < e.time_ns; })));
}

const std::vector<allocation_lifetime>& device_model::lifetimes() const {
    return impl_->lifetimes;
}

const reconstruction_report& device_model::report() const {
    return impl_->report;
}

void device_model::for_each_change(size_t first_entry, size_t last_entry,
                                   const std::function<void(const state_change&)>& visit) const {
    last_entry = std::min(last_entry, event_count());
    if (first_entry >= last_entry) {
        return;
    }
    detail::state_engine engine = impl_->engine_at(first_entry);
    for (size_t i = first_entry; i < last_entry; ++i) {
        const detail::entry_effect effect = engine.apply((*impl_->entries)[i]);
        visit(state_change{i, effect.allocated, effect.active, effect.reserved, effect.requested,
                           effect.stack, effect.block_size});
    }
}

std::vector<int> devices_of(const snapshot::snapshot& source) {
    std::set<int> devices;
    for (const auto& trace : source.traces) {
        // A device nobody allocated on still gets the snapshot's own mark in its trace (a rank
        // of a distributed job sees every GPU of its host): that alone does not make it used.
        const bool used =
            std::any_of(trace.entries.begin(), trace.entries.end(),
                        [](const auto& e) { return e.kind != snapshot::action::snapshot; });
        if (used) {
            devices.insert(trace.device);
        }
    }
    for (const auto& seg : source.segments) {
        devices.insert(seg.device);
    }
    return {devices.begin(), devices.end()};
}

}  // namespace memtrail::analysis
