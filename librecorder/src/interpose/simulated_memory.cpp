#include "detail/simulated_memory.hpp"

#include "detail/interpose_settings.hpp"

#include <pthread.h>

#include <cstdlib>
#include <iterator>

namespace memtrail::interpose {

bool simulated_memory::back(uint64_t address, size_t size) {
    void* host = std::calloc(1, size != 0 ? size : 1);
    if (host == nullptr) {
        return false;
    }
    std::lock_guard lock(mutex_);
    ranges_[address] = {size, host, true};
    used_ += size;
    return true;
}

void simulated_memory::adopt(void* host, size_t size) {
    std::lock_guard lock(mutex_);
    ranges_[reinterpret_cast<uint64_t>(host)] = {size, host, false};
    used_ += size;
}

bool simulated_memory::release(uint64_t address) {
    range released;
    {
        std::lock_guard lock(mutex_);
        const auto it = ranges_.find(address);
        if (it == ranges_.end()) {
            return false;
        }
        released = it->second;
        used_ -= released.size;
        ranges_.erase(it);
    }
    if (released.owned) {
        std::free(released.host);
    }
    return true;
}

void* simulated_memory::host_address(uint64_t address, size_t length) const {
    std::lock_guard lock(mutex_);
    auto it = ranges_.upper_bound(address);
    if (it == ranges_.begin()) {
        return nullptr;
    }
    it = std::prev(it);
    const uint64_t offset = address - it->first;
    if (offset > it->second.size || length > it->second.size - offset) {
        return nullptr;
    }
    return static_cast<char*>(it->second.host) + offset;
}

size_t simulated_memory::used() const {
    std::lock_guard lock(mutex_);
    return used_;
}

namespace {

simulated_memory* the_instance = nullptr;

}  // namespace

void simulated_memory::lock_for_fork() {
    the_instance->mutex_.lock();
}

void simulated_memory::unlock_after_fork() {
    the_instance->mutex_.unlock();
}

simulated_memory& simulated_memory::get() {
    // Never destroyed: the program may free device memory from its own static destructors.
    static simulated_memory* instance = [] {
        the_instance = new simulated_memory();
        // A fork while another thread holds the lock would leave it held in the child forever:
        // fork takes it first, and both sides go on with it free.
        ::pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
        return the_instance;
    }();
    return *instance;
}

}  // namespace memtrail::interpose

// librecorder's C API asks for host memory behind its own allocations through these (weak
// references in c_api.cpp, resolved when the interposer is loaded), so that a program that
// allocates with memtrail_malloc and copies with cudaMemcpyAsync runs on the simulated device.
extern "C" [[gnu::visibility("default")]] int memtrail_interpose_back_simulated(void* pointer,
                                                                                size_t size) {
    using memtrail::interpose::simulated_memory;
    if (!memtrail::interpose::settings().simulated || size == 0) {
        return 0;
    }
    return simulated_memory::get().back(reinterpret_cast<uint64_t>(pointer), size) ? 0 : -1;
}

extern "C" [[gnu::visibility("default")]] void memtrail_interpose_release_simulated(void* pointer) {
    if (memtrail::interpose::settings().simulated) {
        memtrail::interpose::simulated_memory::get().release(reinterpret_cast<uint64_t>(pointer));
    }
}
