#pragma once
// Host memory behind the simulated device's allocations, so that a program's cudaMemcpy and
// cudaMemset on them work with no GPU. Only what the program holds is backed: the cache memtrail
// keeps around it is not (the simulated device never touches memory).

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace memtrail::interpose {

class simulated_memory {
  public:
    // Backs [address, address + size) with zeroed host memory; false when there is no room.
    bool back(uint64_t address, size_t size);
    // Host memory itself as the device's, for observe mode: the device address is `host`.
    void adopt(void* host, size_t size);
    // Releases what back() or adopt() made; false when `address` starts no backed range.
    bool release(uint64_t address);
    // The host bytes behind [address, address + length), all in one backed range; else nullptr.
    void* host_address(uint64_t address, size_t length) const;
    // Bytes backed now.
    size_t used() const;

    static simulated_memory& get();

  private:
    static void lock_for_fork();
    static void unlock_after_fork();

    struct range {
        size_t size = 0;
        void* host = nullptr;
        bool owned = false;  // made by back(): freed with release()
    };
    mutable std::mutex mutex_;
    std::map<uint64_t, range> ranges_;
    size_t used_ = 0;
};

}  // namespace memtrail::interpose
