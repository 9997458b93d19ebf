#pragma once
// Two simple allocation policies to put a trace's numbers in perspective (`memtrail whatif`):
// every request its own device allocation (plain cudaMalloc, no cache), and a power-of-two buddy
// allocator. Both see the trace's requests in order; a block is returned when its free
// completes (other streams are done with it).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "memtrail/analysis/device_model.hpp"

namespace memtrail::analysis {

struct policy_outcome {
    std::string name;
    uint64_t peak_reserved = 0;   // device memory held at the worst moment
    uint64_t peak_allocated = 0;  // bytes handed to callers at the worst moment
    uint64_t device_allocations = 0;
    double fragmentation = 0.0;           // at peak allocated: 1 - largest free / free held
    uint64_t failed_allocations = 0;      // requests that found no room within the capacity
    std::optional<size_t> first_failure;  // trace entry of the first
};

// Each request is cudaMalloc'd at its size rounded up to 512 bytes and cudaFree'd when freed;
// the driver's own page rounding is not modelled. `capacity` 0 means unlimited.
policy_outcome simulate_cuda_malloc(const device_model& model, uint64_t capacity);

// A binary buddy allocator: blocks are powers of two from 512 bytes, carved from arenas of
// `arena_size` bytes (larger requests get an arena of their own power-of-two size) that are
// kept once allocated. `capacity` 0 means unlimited.
policy_outcome simulate_buddy(const device_model& model, uint64_t capacity,
                              uint64_t arena_size = 1ull << 30);

}  // namespace memtrail::analysis
