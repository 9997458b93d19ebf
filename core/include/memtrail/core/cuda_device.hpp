#pragma once
// The real device: cudart for plain allocations, events and streams, the driver's virtual
// memory management API (cuMemAddressReserve / cuMemCreate / cuMemMap) for expandable segments.
// Built only when the CUDA toolkit is found (target memtrail::cuda_device).

#include "memtrail/core/device.hpp"

namespace memtrail {

class cuda_device final : public device {
  public:
    // Binds to CUDA device `index`; throws device_error if it does not exist.
    explicit cuda_device(int index);

    int index() const override { return index_; }
    std::string name() const override;

    device_status allocate(uint64_t size, device_address& out) override;
    void free(device_address address) override;
    memory_info get_memory_info() override;

    event_handle create_event() override;
    void destroy_event(event_handle event) override;
    void record_event(event_handle event, stream_handle stream) override;
    bool query_event(event_handle event) override;
    void synchronize_event(event_handle event) override;
    void synchronize_stream(stream_handle stream) override;
    void synchronize_device() override;
    uint64_t stream_capture_id(stream_handle stream) override;  // cudaStreamGetCaptureInfo

    uint64_t allocation_granularity() override;
    device_status reserve_address_range(uint64_t size, device_address& out) override;
    void release_address_range(device_address address, uint64_t size) override;
    device_status create_physical(uint64_t size, physical_handle& out) override;
    void release_physical(physical_handle handle) override;
    void map(device_address address, uint64_t size, physical_handle handle) override;
    void unmap(device_address address, uint64_t size) override;
    void set_access(device_address address, uint64_t size) override;

    // Number of CUDA devices visible (0 when there is no driver or GPU).
    static int count();

  private:
    int index_;
};

}  // namespace memtrail
