#include "memtrail/stacks/stack_table.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <new>
#include <type_traits>
#include <vector>

#include "memtrail/stacks/huge_pages.hpp"

namespace memtrail::recorder {

namespace {

uint64_t mix(uint64_t lane, uintptr_t address) {
    lane = (lane ^ address) * 0xbf58476d1ce4e5b9ull;
    return lane ^ (lane >> 31);
}

// Multiply-xorshift mixing in four independent lanes, so that the multiplications of
// neighbouring addresses overlap instead of forming one chain as long as the stack. The lanes
// are plain variables: vectorized, 64-bit multiplies cost more than scalar ones on x86-64.
uint64_t hash_frames(std::span<const uintptr_t> frames) {
    uint64_t a = 0x9e3779b97f4a7c15ull ^ frames.size();
    uint64_t b = 0x94d049bb133111ebull;
    uint64_t c = 0x2545f4914f6cdd1dull;
    uint64_t d = 0xda942042e4dd58b5ull;
    size_t i = 0;
    for (; i + 4 <= frames.size(); i += 4) {
        a = mix(a, frames[i]);
        b = mix(b, frames[i + 1]);
        c = mix(c, frames[i + 2]);
        d = mix(d, frames[i + 3]);
    }
    for (; i < frames.size(); ++i) {
        a = mix(a, frames[i]);
    }
    return mix(mix(mix(a, b), c), d);
}

constexpr size_t initial_slots = 64;

std::atomic<uint64_t> next_table_serial{1};

// A stack this thread interned, in a small cache per thread. Plain data, with no destructor:
// threads keep allocating and freeing after their thread_local objects are destroyed (a tensor
// freed by another library's thread-exit or exit-time cleanup), and a destroyed cache would then
// be written through freed memory.
constexpr size_t recent_stack_words = 192;  // 64 native frames, the marker, 63 Python frames
struct recent_stack {
    uint64_t table;  // stack_table::serial_; 0 = empty
    stack_id id;
    uint32_t length;
    std::array<uintptr_t, recent_stack_words> frames;

    bool holds(uint64_t serial, std::span<const uintptr_t> wanted) const {
        return table == serial && length == wanted.size() &&
               std::equal(wanted.begin(), wanted.end(), frames.begin());
    }
};
static_assert(std::is_trivially_destructible_v<recent_stack>);

// Two ways a set: a thread's allocations and frees come from different call sites, and a pair
// of stacks that fall in one set keeps both (a direct-mapped cache lost both, turn about, for one
// program in 2^bits).
struct recent_set {
    std::array<recent_stack, 2> ways;
    uint8_t newest;  // the way hit or filled last; a miss replaces the other
};
static_assert(std::is_trivially_destructible_v<recent_set>);

constexpr size_t recent_set_bits = 3;
// Each thread's on huge pages (huge_pages.hpp), as every capture reads it.
using recent_cache = std::array<recent_set, size_t{1} << recent_set_bits>;

// Where a stack is remembered. Cheaper than hash_frames, and good enough to spread the few
// stacks a thread repeats: it mixes the depth, the innermost frame (the call site) and the
// middle one (stacks through one wrapper share their innermost frames).
recent_set& recent_set_of(recent_cache& cache, std::span<const uintptr_t> frames) {
    const uint64_t key = (frames[0] ^ frames.size()) * 0x9e3779b97f4a7c15ull +
                         frames[frames.size() / 2] * 0xbf58476d1ce4e5b9ull;
    return cache[key >> (64 - recent_set_bits)];
}

}  // namespace

void stack_table::node_deleter::operator()(stack_node* node) const {
    ::operator delete(node);
}

stack_table::slot_table::slot_table(size_t count)
    : mask(count - 1), slots(std::make_unique<std::atomic<const stack_node*>[]>(count)) {}

stack_id stack_table::shard::find_in(const slot_table& table, uint64_t hash,
                                     std::span<const uintptr_t> frames) {
    // The low bits picked the shard; the slot comes from the bits above them.
    for (size_t slot = (hash >> 6) & table.mask;; slot = (slot + 1) & table.mask) {
        const stack_node* node = table.slots[slot].load(std::memory_order_acquire);
        if (node == nullptr) {
            return no_stack;
        }
        if (node->hash == hash && node->length == frames.size() &&
            std::equal(frames.begin(), frames.end(), node->frames())) {
            return node->id;
        }
    }
}

void stack_table::shard::grow() {
    const slot_table* current = table.load(std::memory_order_relaxed);
    auto bigger =
        std::make_unique<slot_table>(current == nullptr ? initial_slots : 2 * (current->mask + 1));
    for (const auto& node : stacks) {
        size_t slot = (node->hash >> 6) & bigger->mask;
        while (bigger->slots[slot].load(std::memory_order_relaxed) != nullptr) {
            slot = (slot + 1) & bigger->mask;
        }
        bigger->slots[slot].store(node.get(), std::memory_order_relaxed);
    }
    bigger->previous = std::move(owned);
    owned = std::move(bigger);
    table.store(owned.get(), std::memory_order_release);
}

stack_table::stack_table() : serial_(next_table_serial.fetch_add(1, std::memory_order_relaxed)) {}

stack_id stack_table::intern(std::span<const uintptr_t> frames, bool* added) {
    bool added_here = false;
    if (added == nullptr) {
        added = &added_here;
    }
    *added = false;
    if (frames.empty()) {
        return no_stack;
    }
    return look_up(frames, true, *added);
}

stack_id stack_table::find(std::span<const uintptr_t> frames) {
    bool added = false;
    return frames.empty() ? no_stack : look_up(frames, false, added);
}

stack_id stack_table::look_up(std::span<const uintptr_t> frames, bool add, bool& added) {
    recent_cache* const cache = detail::this_threads_block<recent_cache>();
    if (cache == nullptr) {
        return intern_in_shards(frames, add, added);  // the thread is exiting
    }
    recent_set& recent = recent_set_of(*cache, frames);
    for (uint8_t way = 0; way < recent.ways.size(); ++way) {
        if (recent.ways[way].holds(serial_, frames)) {
            recent.newest = way;
            return recent.ways[way].id;
        }
    }
    const stack_id id = intern_in_shards(frames, add, added);
    if (id != no_stack && frames.size() <= recent_stack_words) {
        recent.newest = recent.newest == 0 ? 1 : 0;
        recent_stack& kept = recent.ways[recent.newest];
        kept.table = serial_;
        kept.id = id;
        kept.length = static_cast<uint32_t>(frames.size());
        std::copy(frames.begin(), frames.end(), kept.frames.begin());
    }
    return id;
}

stack_id stack_table::intern_in_shards(std::span<const uintptr_t> frames, bool add, bool& added) {
    const uint64_t hash = hash_frames(frames);
    const size_t shard_index = hash % shard_count;
    shard& s = shards_[shard_index];
    // Most stacks are there already: found without the lock, whose line the threads that
    // allocate would otherwise pass between them.
    if (const slot_table* table = s.table.load(std::memory_order_acquire)) {
        if (const stack_id id = shard::find_in(*table, hash, frames); id != no_stack) {
            return id;
        }
    }
    if (!add) {
        return no_stack;  // or added since the look: a caller that only finds may miss it
    }
    std::lock_guard lock(s.mutex);
    if (s.table.load(std::memory_order_relaxed) == nullptr) {
        s.grow();
    }
    const slot_table& table = *s.table.load(std::memory_order_relaxed);
    if (const stack_id id = shard::find_in(table, hash, frames); id != no_stack) {
        return id;  // added by another thread meanwhile
    }
    const auto local = static_cast<uint32_t>(s.stacks.size());
    const uint64_t id = uint64_t{local} * shard_count + shard_index + 1;
    if (id > max_id) {
        overflow_.fetch_add(1, std::memory_order_relaxed);
        return no_stack;
    }
    void* memory = ::operator new(sizeof(stack_node) + frames.size() * sizeof(uintptr_t));
    auto* node = new (memory)
        stack_node{hash, static_cast<uint32_t>(frames.size()), static_cast<stack_id>(id)};
    std::copy(frames.begin(), frames.end(), reinterpret_cast<uintptr_t*>(node + 1));
    s.stacks.emplace_back(node);
    size_t slot = (hash >> 6) & table.mask;
    while (table.slots[slot].load(std::memory_order_relaxed) != nullptr) {
        slot = (slot + 1) & table.mask;
    }
    table.slots[slot].store(node, std::memory_order_release);  // published whole
    added = true;
    size_.fetch_add(1, std::memory_order_relaxed);
    if (s.stacks.size() * 2 > table.mask + 1) {
        s.grow();
    }
    return static_cast<stack_id>(id);
}

std::vector<uintptr_t> stack_table::frames_of(stack_id id) const {
    if (id == no_stack) {
        return {};
    }
    const shard& s = shards_[(id - 1) % shard_count];
    const size_t local = (id - 1) / shard_count;
    std::lock_guard lock(s.mutex);
    if (local >= s.stacks.size()) {
        return {};
    }
    const stack_node& node = *s.stacks[local];
    return {node.frames(), node.frames() + node.length};
}

}  // namespace memtrail::recorder
