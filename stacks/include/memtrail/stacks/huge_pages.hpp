#pragma once
// Memory on transparent huge pages for the structures every recorded event reads: the trace
// ring, the eh_frame rules, the kept Python code objects and each thread's walk memory.
//
// Why: on the GPU hosts (virtual machines) a TLB miss costs a two-level page walk, and the 20 us
// of PyTorch's work between two events evicts the recorder's TLB entries along with its cache
// lines. Inside training, glibc's malloc on huge pages took a quarter off the eh_frame walk
// (docs/performance.md, "fifth round"). Huge pages are asked for with MADV_HUGEPAGE, which the
// kernel honours when transparent huge pages are "always" or "madvise"; where they are "never"
// (or unsupported) this is ordinary memory, and nothing else changes.

#include <cstddef>
#include <new>
#include <type_traits>

namespace memtrail::recorder::detail {

inline constexpr size_t huge_page_bytes = size_t{2} << 20;

// A mapping of its own, `bytes` rounded up to whole huge pages, aligned to one and advised to
// the kernel as huge-page memory, zero-filled. Throws std::bad_alloc when the mapping fails.
void* map_huge_pages(size_t bytes);
// Gives back a mapping of map_huge_pages; `bytes` as it was asked for.
void unmap_huge_pages(void* memory, size_t bytes);

// Process-wide memory that is never given back, zero-filled, carved from huge-page mappings:
// for tables that live as long as the process (readers may probe old ones at any time) and for
// blocks their users recycle themselves. Thread-safe; throws std::bad_alloc when out of memory.
void* permanent_huge_page_memory(size_t bytes, size_t alignment);

// Blocks of one size, one per thread, recycled: a block its thread gave back at exit, or new
// permanent memory. Thread-safe; never destroyed (threads exit while the process does).
class thread_block_pool {
  public:
    thread_block_pool(size_t bytes, size_t alignment) : bytes_(bytes), alignment_(alignment) {}
    // A block of zero bytes.
    void* take();
    void give_back(void* block);

  private:
    struct free_block {
        free_block* next;
    };
    const size_t bytes_;
    const size_t alignment_;
    free_block* free_ = nullptr;
};

// The calling thread's T, on huge pages, value-initialised on the thread's first use. When the
// thread exits its T is given back for another thread; uses after that (from other thread-exit
// cleanup, such as a tensor freed by a library's thread_local) get nullptr and must do without.
// T is trivially destructible: nothing runs when it is recycled.
template <class T>
T* this_threads_block() {
    static_assert(std::is_trivially_destructible_v<T> && std::is_trivially_copyable_v<T>);
    thread_local T* block = nullptr;
    thread_local bool gone = false;
    if (block != nullptr) [[likely]] {
        return block;
    }
    if (gone) {
        return nullptr;
    }
    // Not static storage with a destructor: a detached thread may exit after it would be gone.
    static thread_block_pool& pool = *new thread_block_pool(sizeof(T), alignof(T));
    struct returner {
        ~returner() {
            pool.give_back(block);
            block = nullptr;
            gone = true;
        }
    };
    thread_local returner on_exit;
    (void)on_exit;  // constructed here, so that it is destroyed when the thread exits
    block = new (pool.take()) T{};
    return block;
}

}  // namespace memtrail::recorder::detail
