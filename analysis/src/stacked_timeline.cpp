// Stacked timelines: each is one sweep over the allocations' begins and ends in position order,
// stopping at each column's sample position to copy the running totals.

#include "memtrail/analysis/stacked_timeline.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace memtrail::analysis {

using snapshot::action;

namespace {

constexpr size_t never = std::numeric_limits<size_t>::max();

// The position where lifetime `l` stops counting; `never` when it lasts past the trace.
size_t until_of(const device_model& model, const category_map& categories, size_t l,
                bool include_pending) {
    const allocation_lifetime& life = model.lifetimes()[l];
    if (!categories.freed(l)) {
        return never;
    }
    if (!include_pending) {
        return life.end;
    }
    const size_t count = model.event_count();
    // A pending free whose completion is not in the trace lasts to its end.
    if (life.released < count) {
        return life.released;
    }
    const bool completed_last = count != 0 &&
                                model.entry(count - 1).kind == action::free_completed &&
                                model.entry(count - 1).address == life.address;
    return completed_last ? count : never;
}

// Per column, the position in it where `curve` is highest (the first such).
std::vector<size_t> highest_positions(const device_model& model, series curve,
                                      const std::vector<column_span>& columns) {
    const std::vector<uint64_t>& values = model.values(curve);
    std::vector<size_t> out;
    out.reserve(columns.size());
    for (const column_span& c : columns) {
        const size_t first = std::min(c.first, values.size() - 1);
        const size_t last = std::clamp(c.last, first + 1, values.size());
        out.push_back(
            static_cast<size_t>(std::max_element(values.begin() + static_cast<ptrdiff_t>(first),
                                                 values.begin() + static_cast<ptrdiff_t>(last)) -
                                values.begin()));
    }
    return out;
}

struct lifetime_span {
    size_t begin = 0;
    size_t until = 0;
    uint32_t lifetime = 0;
};

// The allocations that count somewhere, with their spans, and the same sorted by their ends.
struct sweep_order {
    std::vector<lifetime_span> by_begin;
    std::vector<lifetime_span> by_until;
};

sweep_order order_lifetimes(const device_model& model, const category_map& categories,
                            bool include_pending) {
    sweep_order order;
    const auto& lifetimes = model.lifetimes();
    for (size_t l = 0; l < lifetimes.size(); ++l) {
        const size_t until = until_of(model, categories, l, include_pending);
        if (lifetimes[l].size != 0 && until > lifetimes[l].begin) {
            order.by_begin.push_back({lifetimes[l].begin, until, static_cast<uint32_t>(l)});
        }
    }
    std::stable_sort(
        order.by_begin.begin(), order.by_begin.end(),
        [](const lifetime_span& a, const lifetime_span& b) { return a.begin < b.begin; });
    order.by_until = order.by_begin;
    std::stable_sort(
        order.by_until.begin(), order.by_until.end(),
        [](const lifetime_span& a, const lifetime_span& b) { return a.until < b.until; });
    return order;
}

}  // namespace

stacked_timeline stack_allocations(const device_model& model, const category_map& categories,
                                   stack_key key, const std::vector<column_span>& columns,
                                   bool include_pending, size_t max_layers) {
    stacked_timeline out;
    const auto& lifetimes = model.lifetimes();
    const auto& assignments = categories.assignments();
    auto key_of = [&](uint32_t l) {
        return key == stack_key::category ? static_cast<uint32_t>(assignments[l].category)
                                          : lifetimes[l].stack;
    };
    const size_t key_space =
        key == stack_key::category ? memory_category_count : model.source().stacks().size();
    const sweep_order order = order_lifetimes(model, categories, include_pending);

    // Layers: every category; or the stacks covering the most area (bytes x positions) of the
    // columns' range.
    constexpr uint32_t rest = std::numeric_limits<uint32_t>::max();
    std::vector<uint32_t> layer_of(key_space, rest);
    if (key == stack_key::category) {
        for (uint32_t c = 0; c < memory_category_count; ++c) {
            out.keys.push_back(c);
            layer_of[c] = c;
        }
    } else if (!columns.empty()) {
        const size_t first = columns.front().first;
        const size_t last = columns.back().last;
        std::vector<double> area(key_space, 0.0);
        for (const lifetime_span& s : order.by_begin) {
            const size_t from = std::max(s.begin, first);
            const size_t to = std::min(s.until, last);
            if (from < to) {
                area[key_of(s.lifetime)] += static_cast<double>(lifetimes[s.lifetime].size) *
                                            static_cast<double>(to - from);
            }
        }
        std::vector<uint32_t> ranked;
        for (uint32_t k = 0; k < key_space; ++k) {
            if (area[k] > 0) {
                ranked.push_back(k);
            }
        }
        std::stable_sort(ranked.begin(), ranked.end(),
                         [&](uint32_t a, uint32_t b) { return area[a] > area[b]; });
        out.has_rest = ranked.size() > max_layers;
        ranked.resize(std::min(ranked.size(), max_layers));
        for (uint32_t k : ranked) {
            layer_of[k] = static_cast<uint32_t>(out.keys.size());
            out.keys.push_back(k);
        }
    }

    out.positions =
        highest_positions(model, include_pending ? series::active : series::allocated, columns);
    const size_t layers = out.layers();
    out.bytes.assign(columns.size() * layers, 0);
    std::vector<int64_t> running(layers, 0);
    auto layer = [&](uint32_t l) {
        const uint32_t k = layer_of[key_of(l)];
        return k == rest ? layers - 1 : static_cast<size_t>(k);
    };
    size_t next_begin = 0;
    size_t next_until = 0;
    for (size_t c = 0; c < columns.size(); ++c) {
        const size_t p = out.positions[c];
        for (; next_begin < order.by_begin.size() && order.by_begin[next_begin].begin <= p;
             ++next_begin) {
            const uint32_t l = order.by_begin[next_begin].lifetime;
            running[layer(l)] += static_cast<int64_t>(lifetimes[l].size);
        }
        for (; next_until < order.by_until.size() && order.by_until[next_until].until <= p;
             ++next_until) {
            const uint32_t l = order.by_until[next_until].lifetime;
            running[layer(l)] -= static_cast<int64_t>(lifetimes[l].size);
        }
        for (size_t k = 0; k < layers; ++k) {
            out.bytes[c * layers + k] = static_cast<uint64_t>(std::max<int64_t>(running[k], 0));
        }
    }
    return out;
}

namespace {

// Every segment's life from the state before the first entry and the segment entries. An
// expandable segment is one band however it grows: mapping next to a live range ends that range's
// life and starts one of the joined range; unmapping part of one leaves lives for what remains.
std::vector<segment_life> segment_lives(const device_model& model) {
    std::vector<segment_life> lives;
    std::map<uint64_t, size_t> live;  // address -> index into lives
    const size_t count = model.event_count();
    auto open = [&](uint64_t address, uint64_t size, uint64_t stream, bool is_large, size_t begin) {
        live[address] = lives.size();
        lives.push_back({address, size, stream, is_large, begin, count + 1});
    };
    auto close = [&](std::map<uint64_t, size_t>::iterator it, size_t position) {
        lives[it->second].end = position;
        return live.erase(it);
    };
    for (const snapshot::segment& seg : model.state_after(0).segments) {
        open(seg.address, seg.total_size, seg.stream, seg.is_large, 0);
    }
    // PyTorch's small pool allocates 2 MiB segments; large segments are 2 MiB multiples of at
    // least 20 MiB, or of at least 10 MiB for large requests.
    constexpr uint64_t small_segment = 2ull << 20;
    for (size_t i = 0; i < count; ++i) {
        const snapshot::trace_entry& e = model.entry(i);
        const size_t position = i + 1;
        if (e.kind == action::segment_alloc) {
            open(e.address, e.size, e.stream, e.size != small_segment, position);
        } else if (e.kind == action::segment_free) {
            if (auto it = live.find(e.address); it != live.end()) {
                close(it, position);
            }
        } else if (e.kind == action::segment_map) {
            uint64_t first = e.address;
            uint64_t last = e.address + e.size;
            bool is_large = e.size != small_segment;
            if (auto right = live.find(last); right != live.end()) {
                last += lives[right->second].size;
                close(right, position);
            }
            if (auto left = live.lower_bound(first); left != live.begin()) {
                --left;
                const segment_life& l = lives[left->second];
                if (l.address + l.size == first) {
                    first = l.address;
                    is_large = l.is_large;
                    close(left, position);
                }
            }
            open(first, last - first, e.stream, is_large, position);
        } else if (e.kind == action::segment_unmap) {
            const uint64_t first = e.address;
            const uint64_t last = e.address + e.size;
            auto it = live.upper_bound(first);
            if (it != live.begin()) {
                --it;
            }
            std::vector<segment_life> remains;
            while (it != live.end() && it->first < last) {
                const segment_life l = lives[it->second];
                if (l.address + l.size <= first) {
                    ++it;
                    continue;
                }
                if (l.address < first) {
                    remains.push_back({l.address, first - l.address, l.stream, l.is_large});
                }
                if (l.address + l.size > last) {
                    remains.push_back({last, l.address + l.size - last, l.stream, l.is_large});
                }
                it = close(it, position);
            }
            for (const segment_life& r : remains) {
                open(r.address, r.size, r.stream, r.is_large, position);
            }
        }
    }
    // Segments alive at the end take their pool from the snapshot itself.
    for (const auto& [address, index] : live) {
        for (const snapshot::segment& seg : model.source().segments) {
            if (seg.device == model.device() && seg.address <= address &&
                address < seg.address + seg.total_size) {
                lives[index].is_large = seg.is_large;
            }
        }
    }
    return lives;
}

}  // namespace

segment_timeline segments_over_time(const device_model& model, const category_map& categories,
                                    const std::vector<column_span>& columns, bool include_pending) {
    segment_timeline out;
    std::vector<segment_life> lives = segment_lives(model);
    std::vector<uint32_t> order(lives.size());
    for (uint32_t i = 0; i < order.size(); ++i) {
        order[i] = i;
    }
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return std::tuple(!lives[a].is_large, lives[a].stream, lives[a].begin) <
               std::tuple(!lives[b].is_large, lives[b].stream, lives[b].begin);
    });
    out.segments.reserve(lives.size());
    for (const uint32_t i : order) {
        out.segments.push_back(lives[i]);
    }

    // One event list in position order. At one position a segment closes before the one that
    // replaces it opens (an expandable segment growing or shrinking), and both before the
    // allocations of that position.
    enum kind : uint8_t { segment_close, segment_open, allocation_end, allocation_begin };
    struct event {
        size_t position;
        kind what;
        uint32_t index;  // into out.segments or the lifetimes
    };
    std::vector<event> events;
    for (uint32_t s = 0; s < out.segments.size(); ++s) {
        events.push_back({out.segments[s].begin, segment_open, s});
        events.push_back({out.segments[s].end, segment_close, s});
    }
    const sweep_order lives_order = order_lifetimes(model, categories, include_pending);
    for (const lifetime_span& span : lives_order.by_begin) {
        events.push_back({span.begin, allocation_begin, span.lifetime});
        if (span.until != never) {
            events.push_back({span.until, allocation_end, span.lifetime});
        }
    }
    std::stable_sort(events.begin(), events.end(), [](const event& a, const event& b) {
        return std::tie(a.position, a.what) < std::tie(b.position, b.what);
    });

    const auto& lifetimes = model.lifetimes();
    std::map<uint64_t, uint32_t> by_address;  // live segments
    std::map<uint64_t, uint32_t> blocks;      // live allocations: address -> lifetime
    std::set<uint32_t> live;                  // in stacking order
    std::vector<int64_t> allocated(out.segments.size(), 0);
    constexpr uint32_t no_segment = std::numeric_limits<uint32_t>::max();
    std::vector<uint32_t> owner(lifetimes.size(), no_segment);
    out.positions = highest_positions(model, series::reserved, columns);
    out.columns.resize(columns.size());
    size_t next = 0;
    for (size_t c = 0; c < columns.size(); ++c) {
        for (; next < events.size() && events[next].position <= out.positions[c]; ++next) {
            const event& e = events[next];
            switch (e.what) {
                case segment_open: {
                    const segment_life& seg = out.segments[e.index];
                    by_address[seg.address] = e.index;
                    live.insert(e.index);
                    // The allocations of the range it replaces are now its.
                    for (auto it = blocks.lower_bound(seg.address);
                         it != blocks.end() && it->first < seg.address + seg.size; ++it) {
                        const uint32_t l = it->second;
                        const auto size = static_cast<int64_t>(lifetimes[l].size);
                        if (owner[l] != no_segment) {
                            allocated[owner[l]] -= size;
                        }
                        owner[l] = e.index;
                        allocated[e.index] += size;
                    }
                    break;
                }
                case segment_close:
                    by_address.erase(out.segments[e.index].address);
                    live.erase(e.index);
                    break;
                case allocation_begin: {
                    const uint64_t address = lifetimes[e.index].address;
                    blocks[address] = e.index;
                    auto it = by_address.upper_bound(address);
                    if (it != by_address.begin()) {
                        --it;
                        const segment_life& seg = out.segments[it->second];
                        if (address < seg.address + seg.size) {
                            owner[e.index] = it->second;
                            allocated[it->second] += static_cast<int64_t>(lifetimes[e.index].size);
                        }
                    }
                    break;
                }
                case allocation_end:
                    if (auto it = blocks.find(lifetimes[e.index].address);
                        it != blocks.end() && it->second == e.index) {
                        blocks.erase(it);
                    }
                    if (owner[e.index] != no_segment) {
                        allocated[owner[e.index]] -= static_cast<int64_t>(lifetimes[e.index].size);
                    }
                    break;
            }
        }
        auto& cells = out.columns[c];
        cells.reserve(live.size());
        for (const uint32_t s : live) {
            cells.push_back({s, static_cast<uint64_t>(std::max<int64_t>(allocated[s], 0))});
        }
    }
    return out;
}

}  // namespace memtrail::analysis
