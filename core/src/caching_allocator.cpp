#include "memtrail/core/caching_allocator.hpp"

#include <sstream>

namespace memtrail {

caching_allocator::caching_allocator(std::vector<device*> devices, allocator_config config) {
    for (size_t i = 0; i < devices.size(); ++i) {
        if (devices[i]->index() != static_cast<int>(i)) {
            throw usage_error("memtrail: device " + std::to_string(i) + " reports index " +
                              std::to_string(devices[i]->index()) +
                              "; devices must be given in index order");
        }
        devices_.push_back(std::make_unique<device_allocator>(*devices[i], config));
    }
}

caching_allocator::~caching_allocator() = default;

device_allocator& caching_allocator::checked(int device) const {
    if (device < 0 || device >= static_cast<int>(devices_.size())) {
        throw usage_error("memtrail: device " + std::to_string(device) + " does not exist; " +
                          std::to_string(devices_.size()) + " device(s) are managed (0 to " +
                          std::to_string(static_cast<int>(devices_.size()) - 1) + ")");
    }
    return *devices_[static_cast<size_t>(device)];
}

device_address caching_allocator::allocate(uint64_t size, int device, stream_handle stream,
                                           context_handle context) {
    return checked(device).allocate(size, stream, context);
}

int caching_allocator::device_of(device_address address) const {
    for (size_t i = 0; i < devices_.size(); ++i) {
        if (devices_[i]->owns(address)) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

int caching_allocator::device_for(device_address address) const {
    // One device: its free reports an address it never handed out as device_of's -1 would be.
    if (devices_.size() == 1) {
        return 0;
    }
    int candidate = -1;
    for (size_t i = 0; i < devices_.size(); ++i) {
        if (devices_[i]->may_own(address)) {
            if (candidate >= 0) {
                return device_of(address);  // the devices' segments interleave here
            }
            candidate = static_cast<int>(i);
        }
    }
    return candidate;
}

void caching_allocator::free(device_address address, int expected_device, context_handle context) {
    if (expected_device == unknown_device) {
        const int owner = device_for(address);
        checked(owner < 0 ? 0 : owner).free(address, context);
        return;
    }
    try {
        on(expected_device).free(address, context);
    } catch (const usage_error&) {
        // Only on the error path: is it another device's block?
        const int actual = device_of(address);
        if (actual >= 0 && actual != expected_device) {
            std::ostringstream message;
            message << "memtrail: free of 0x" << std::hex << address << std::dec << " on device "
                    << expected_device << ", but it was allocated on device " << actual
                    << "; free it on the device that allocated it";
            throw usage_error(message.str());
        }
        throw;
    }
}

void caching_allocator::record_stream(device_address address, stream_handle stream) {
    const int owner = device_for(address);
    checked(owner < 0 ? 0 : owner).record_stream(address, stream);
}

void caching_allocator::empty_cache() {
    for (auto& d : devices_) {
        d->empty_cache();
    }
}

}  // namespace memtrail
