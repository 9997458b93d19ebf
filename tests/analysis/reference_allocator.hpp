#pragma once
// A deliberately plain caching allocator for the tests: segments hold explicit block lists,
// allocation is best fit with PyTorch's rounding and splitting rules, frees may wait for other
// streams. It writes a trace into a snapshot and keeps its own state after every entry, so the
// analysis' reconstruction can be checked against states it never computed itself.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis::testing {

using snapshot::action;
using snapshot::block_state;

class reference_allocator {
  public:
    explicit reference_allocator(snapshot::snapshot& out, int device = 0)
        : out_(out), trace_(out.trace_for(device)), device_(device) {
        states_.emplace_back();
    }

    // Returns the block address.
    uint64_t allocate(uint64_t request, uint64_t stream, snapshot::stack_id stack) {
        const uint64_t rounded = request < 512 ? 512 : (request + 511) / 512 * 512;
        const bool is_large = rounded > (1ull << 20);
        size_t best_segment = none;
        size_t best_block = 0;
        uint64_t best_size = UINT64_MAX;
        for (size_t i = 0; i < segments_.size(); ++i) {
            const auto& seg = segments_[i];
            if (seg.is_large != is_large || seg.stream != stream) {
                continue;
            }
            for (size_t b = 0; b < seg.blocks.size(); ++b) {
                const auto& blk = seg.blocks[b];
                if (blk.state == block_state::inactive && blk.size >= rounded &&
                    blk.size < best_size) {
                    best_segment = i;
                    best_block = b;
                    best_size = blk.size;
                }
            }
        }
        if (best_segment == none) {
            const uint64_t size = rounded <= (1ull << 20) ? (2ull << 20)
                                  : rounded < (10ull << 20)
                                      ? (20ull << 20)
                                      : (rounded + (2ull << 20) - 1) / (2ull << 20) * (2ull << 20);
            snapshot::segment seg;
            seg.device = static_cast<int8_t>(device_);
            seg.address = next_address_;
            seg.total_size = size;
            seg.stream = stream;
            seg.is_large = is_large;
            seg.stack = stack;
            seg.blocks.push_back(snapshot::block{seg.address, size, 0, block_state::inactive});
            next_address_ += size + (64ull << 20);
            segments_.push_back(seg);
            sort_segments();
            const uint64_t created = seg.address;
            emit(action::segment_alloc, created, size, stream, stack);
            for (size_t i = 0; i < segments_.size(); ++i) {
                if (segments_[i].address == created) {
                    best_segment = i;
                }
            }
            best_block = 0;
        }
        auto& blocks = segments_[best_segment].blocks;
        const uint64_t remaining = blocks[best_block].size - rounded;
        const bool split = is_large ? remaining > (1ull << 20) : remaining >= 512;
        if (split) {
            blocks[best_block].size = rounded;
            blocks.insert(blocks.begin() + static_cast<ptrdiff_t>(best_block) + 1,
                          snapshot::block{blocks[best_block].address + rounded, remaining, 0,
                                          block_state::inactive});
        }
        auto& blk = blocks[best_block];
        blk.state = block_state::active_allocated;
        blk.requested_size = request;
        blk.stack = stack;
        emit(action::alloc, blk.address, request, stream, stack);
        return blk.address;
    }

    // Frees the block at `address`; with `pending` it waits for complete().
    void free(uint64_t address, bool pending) {
        auto [seg, index] = find(address);
        auto& blk = segments_[seg].blocks[index];
        blk.state = block_state::active_pending_free;
        emit(action::free_requested, address, blk.requested_size, segments_[seg].stream, blk.stack);
        if (!pending) {
            complete(address);
        }
    }

    void complete(uint64_t address) {
        auto [seg, index] = find(address);
        auto& blocks = segments_[seg].blocks;
        const uint64_t request = blocks[index].requested_size;
        const auto stack = blocks[index].stack;
        blocks[index] = snapshot::block{address, blocks[index].size, 0, block_state::inactive};
        if (index + 1 < blocks.size() && blocks[index + 1].state == block_state::inactive) {
            blocks[index].size += blocks[index + 1].size;
            blocks.erase(blocks.begin() + static_cast<ptrdiff_t>(index) + 1);
        }
        if (index > 0 && blocks[index - 1].state == block_state::inactive) {
            blocks[index - 1].size += blocks[index].size;
            blocks.erase(blocks.begin() + static_cast<ptrdiff_t>(index));
        }
        emit(action::free_completed, address, request, segments_[seg].stream, stack);
    }

    // Releases every segment that is one free block.
    void empty_cache() {
        for (size_t i = 0; i < segments_.size();) {
            const auto& seg = segments_[i];
            if (seg.blocks.size() == 1 && seg.blocks[0].state == block_state::inactive) {
                const uint64_t address = seg.address;
                const uint64_t size = seg.total_size;
                const uint64_t stream = seg.stream;
                segments_.erase(segments_.begin() + static_cast<ptrdiff_t>(i));
                emit(action::segment_free, address, size, stream, snapshot::no_id);
            } else {
                ++i;
            }
        }
    }

    // Writes the final segments into the snapshot.
    void finish() {
        out_.segments = segments_;
        for (auto& seg : out_.segments) {
            for (const auto& blk : seg.blocks) {
                if (blk.state == block_state::active_allocated) {
                    seg.allocated_size += blk.size;
                }
                if (blk.state != block_state::inactive) {
                    seg.active_size += blk.size;
                    seg.requested_size += blk.requested_size;
                }
            }
        }
    }

    // states()[i]: the segments after the first i entries.
    const std::vector<std::vector<snapshot::segment>>& states() const { return states_; }

    std::vector<uint64_t> live(block_state state) const {
        std::vector<uint64_t> out;
        for (const auto& seg : segments_) {
            for (const auto& blk : seg.blocks) {
                if (blk.state == state) {
                    out.push_back(blk.address);
                }
            }
        }
        return out;
    }

  private:
    // (segment index, block index) of the block at `address`, which must exist.
    std::pair<size_t, size_t> find(uint64_t address) const {
        for (size_t i = 0; i < segments_.size(); ++i) {
            for (size_t b = 0; b < segments_[i].blocks.size(); ++b) {
                if (segments_[i].blocks[b].address == address) {
                    return {i, b};
                }
            }
        }
        throw std::logic_error("reference_allocator: no block at that address");
    }

    static constexpr size_t none = SIZE_MAX;

    void sort_segments() {
        std::sort(segments_.begin(), segments_.end(),
                  [](const auto& a, const auto& b) { return a.address < b.address; });
    }

    void emit(action kind, uint64_t address, uint64_t size, uint64_t stream,
              snapshot::stack_id stack) {
        snapshot::trace_entry e;
        e.kind = kind;
        e.device = static_cast<int8_t>(device_);
        e.address = address;
        e.size = size;
        e.stream = stream;
        e.stack = stack;
        e.time_ns = 1'000'000 + static_cast<int64_t>(trace_.entries.size()) * 1000;
        trace_.entries.push_back(e);
        states_.push_back(segments_);
    }

    snapshot::snapshot& out_;
    snapshot::device_trace& trace_;
    int device_;
    uint64_t next_address_ = 0x7f0000000000ull;
    std::vector<snapshot::segment> segments_;
    std::vector<std::vector<snapshot::segment>> states_;
};

// A few interned stacks to allocate from.
inline std::vector<snapshot::stack_id> make_stacks(snapshot::snapshot& s, int count) {
    std::vector<snapshot::stack_id> stacks;
    for (int i = 0; i < count; ++i) {
        std::vector<snapshot::frame_id> frames;
        for (int depth = 0; depth <= i % 3; ++depth) {
            snapshot::frame f;
            f.function =
                s.intern_string("layer_" + std::to_string(i) + "_" + std::to_string(depth));
            f.filename = s.intern_string("model.py");
            f.line = static_cast<uint32_t>(10 * i + depth);
            f.kind = snapshot::frame_kind::python;
            frames.push_back(s.intern_frame(f));
        }
        snapshot::frame main_frame;
        main_frame.function = s.intern_string("main");
        main_frame.filename = s.intern_string("train.py");
        main_frame.line = 1;
        main_frame.kind = snapshot::frame_kind::python;
        frames.push_back(s.intern_frame(main_frame));
        stacks.push_back(s.intern_stack(frames));
    }
    stacks.push_back(snapshot::no_id);
    return stacks;
}

// A random workload of `operations` steps on two streams.
inline void run_random_workload(reference_allocator& allocator,
                                std::vector<snapshot::stack_id> stacks, uint32_t seed,
                                int operations) {
    std::mt19937_64 random(seed);
    auto pick = [&](uint64_t n) {
        return std::uniform_int_distribution<uint64_t>(0, n - 1)(random);
    };
    for (int op = 0; op < operations; ++op) {
        const uint64_t roll = pick(100);
        const auto allocated = allocator.live(block_state::active_allocated);
        const auto pending = allocator.live(block_state::active_pending_free);
        if (roll < 50 || allocated.empty()) {
            // Log-uniform sizes from 1 byte to 64 MiB, mostly small.
            const double exponent = std::uniform_real_distribution<double>(0.0, 26.0)(random);
            const auto request = static_cast<uint64_t>(std::pow(2.0, exponent));
            allocator.allocate(std::max<uint64_t>(request, 1), pick(2) == 0 ? 7 : 9,
                               stacks[pick(stacks.size())]);
        } else if (roll < 90) {
            allocator.free(allocated[pick(allocated.size())], pick(5) == 0);
        } else if (roll < 98) {
            if (!pending.empty()) {
                allocator.complete(pending[pick(pending.size())]);
            }
        } else {
            allocator.empty_cache();
        }
    }
}

}  // namespace memtrail::analysis::testing
