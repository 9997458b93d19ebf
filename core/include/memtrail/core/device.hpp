#pragma once
// The only way the allocator reaches a device: plain allocations, memory info, events on opaque
// streams, and the virtual-memory calls expandable segments need. Out of memory is a result
// (device_status::out_of_memory), never an exception; any other failure throws device_error.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace memtrail {

using device_address = uint64_t;  // a device virtual address (never dereferenced by the core)
using stream_handle = uint64_t;   // an opaque stream (cudaStream_t's value); 0 = default stream
using event_handle = uint64_t;    // an opaque event
using physical_handle =
    uint64_t;  // an opaque handle to physical pages (CUmemGenericAllocationHandle)

enum class device_status : uint8_t { ok, out_of_memory };

struct memory_info {
    uint64_t free = 0;
    uint64_t total = 0;
};

// Thrown for device failures other than running out of memory (a CUDA error, a misuse).
class device_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class device {
  public:
    virtual ~device() = default;

    virtual int index() const = 0;
    virtual std::string name() const = 0;

    // --- plain allocations (cudaMalloc / cudaFree) ---------------------------------------------
    virtual device_status allocate(uint64_t size, device_address& out) = 0;
    virtual void free(device_address address) = 0;
    virtual memory_info get_memory_info() = 0;

    // --- events and streams ---------------------------------------------------------------------
    virtual event_handle create_event() = 0;
    virtual void destroy_event(event_handle event) = 0;
    virtual void record_event(event_handle event, stream_handle stream) = 0;
    virtual bool query_event(event_handle event) = 0;  // true once the event has completed
    virtual void synchronize_event(event_handle event) = 0;
    virtual void synchronize_stream(stream_handle stream) = 0;
    virtual void synchronize_device() = 0;
    // The id of the stream capture (CUDA graph) `stream` takes part in, 0 when it is not
    // capturing. Cheap: the allocator's callers ask it on every allocation.
    virtual uint64_t stream_capture_id(stream_handle stream) = 0;

    // --- virtual memory (expandable segments) ---------------------------------------------------
    virtual uint64_t allocation_granularity() = 0;
    virtual device_status reserve_address_range(uint64_t size, device_address& out) = 0;
    virtual void release_address_range(device_address address, uint64_t size) = 0;
    virtual device_status create_physical(uint64_t size, physical_handle& out) = 0;
    virtual void release_physical(physical_handle handle) = 0;
    virtual void map(device_address address, uint64_t size, physical_handle handle) = 0;
    virtual void unmap(device_address address, uint64_t size) = 0;
    virtual void set_access(device_address address, uint64_t size) = 0;
};

}  // namespace memtrail
