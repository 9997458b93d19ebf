#include "memtrail/stacks/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>

namespace memtrail::recorder::detail {

namespace {

size_t whole_huge_pages(size_t bytes) {
    return (bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
}

}  // namespace

void* map_huge_pages(size_t bytes) {
    const size_t length = whole_huge_pages(bytes == 0 ? 1 : bytes);
    // One huge page more than needed, so that an aligned run of `length` lies inside; the
    // unaligned ends are given back.
    const size_t reserved = length + huge_page_bytes;
    void* mapped =
        mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) {
        throw std::bad_alloc();
    }
    const auto start = reinterpret_cast<uintptr_t>(mapped);
    const uintptr_t aligned = (start + huge_page_bytes - 1) & ~(uintptr_t{huge_page_bytes} - 1);
    if (aligned > start) {
        munmap(mapped, aligned - start);
    }
    const uintptr_t end = aligned + length;
    if (start + reserved > end) {
        munmap(reinterpret_cast<void*>(end), start + reserved - end);
    }
    // Advice only: where the kernel has no transparent huge pages it fails, and the memory
    // stays ordinary pages.
    madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
    return reinterpret_cast<void*>(aligned);
}

void unmap_huge_pages(void* memory, size_t bytes) {
    if (memory != nullptr) {
        munmap(memory, whole_huge_pages(bytes == 0 ? 1 : bytes));
    }
}

void* permanent_huge_page_memory(size_t bytes, size_t alignment) {
    static std::mutex mutex;
    static uintptr_t next = 0;  // the free part of the newest mapping
    static uintptr_t end = 0;
    std::lock_guard lock(mutex);
    uintptr_t start = (next + alignment - 1) & ~(uintptr_t{alignment} - 1);
    if (next == 0 || start + bytes > end) {
        // The rest of the older mapping stays unused: what lives here is few and long-lived.
        const size_t length = whole_huge_pages(bytes);
        start = reinterpret_cast<uintptr_t>(map_huge_pages(length));
        end = start + length;
    }
    next = start + bytes;
    return reinterpret_cast<void*>(start);
}

namespace {

std::mutex& thread_block_mutex() {
    static std::mutex& mutex = *new std::mutex;  // never destroyed, as the pools
    return mutex;
}

}  // namespace

void* thread_block_pool::take() {
    {
        std::lock_guard lock(thread_block_mutex());
        if (free_block* block = free_) {
            free_ = block->next;
            std::memset(static_cast<void*>(block), 0, bytes_);
            return block;
        }
    }
    return permanent_huge_page_memory(bytes_, alignment_);
}

void thread_block_pool::give_back(void* block) {
    if (block == nullptr) {
        return;
    }
    std::lock_guard lock(thread_block_mutex());
    free_ = new (block) free_block{free_};
}

}  // namespace memtrail::recorder::detail
