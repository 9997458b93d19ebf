#include "memtrail/recorder/stack_table.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <type_traits>
#include <vector>

#include "detail/huge_pages.hpp"

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

bool stack_table::shard::matches(const stack_entry& entry, uint64_t hash,
                                 std::span<const uintptr_t> frames) const {
    return entry.hash == hash && entry.length == frames.size() &&
           std::equal(frames.begin(), frames.end(),
                      addresses.begin() + static_cast<ptrdiff_t>(entry.offset));
}

// Doubles the slot array, keeping the load at or under one half.
void stack_table::shard::grow() {
    std::vector<uint32_t> bigger(std::max(initial_slots, slots.size() * 2), 0);
    const size_t mask = bigger.size() - 1;
    for (uint32_t local = 0; local < stacks.size(); ++local) {
        size_t slot = (stacks[local].hash >> 6) & mask;
        while (bigger[slot] != 0) {
            slot = (slot + 1) & mask;
        }
        bigger[slot] = local + 1;
    }
    slots.swap(bigger);
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

stack_id stack_table::intern_in_shards(std::span<const uintptr_t> frames, bool add,
                                       bool& added) {
    const uint64_t hash = hash_frames(frames);
    const size_t shard_index = hash % shard_count;
    shard& s = shards_[shard_index];
    std::lock_guard lock(s.mutex);
    if (s.slots.empty()) {
        s.grow();
    }
    // The low bits picked the shard; the slot comes from the bits above them.
    const size_t mask = s.slots.size() - 1;
    size_t slot = (hash >> 6) & mask;
    while (s.slots[slot] != 0) {
        const uint32_t local = s.slots[slot] - 1;
        if (s.matches(s.stacks[local], hash, frames)) {
            return static_cast<stack_id>(local * shard_count + shard_index + 1);
        }
        slot = (slot + 1) & mask;
    }
    if (!add) {
        return no_stack;
    }
    const auto local = static_cast<uint32_t>(s.stacks.size());
    const uint64_t id = uint64_t{local} * shard_count + shard_index + 1;
    if (id > max_id) {
        overflow_.fetch_add(1, std::memory_order_relaxed);
        return no_stack;
    }
    added = true;
    size_.fetch_add(1, std::memory_order_relaxed);
    s.stacks.push_back({hash, s.addresses.size(), static_cast<uint32_t>(frames.size())});
    s.addresses.insert(s.addresses.end(), frames.begin(), frames.end());
    s.slots[slot] = local + 1;
    if (s.stacks.size() * 2 > s.slots.size()) {
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
    const stack_entry& entry = s.stacks[local];
    const auto first = s.addresses.begin() + static_cast<ptrdiff_t>(entry.offset);
    return {first, first + entry.length};
}

}  // namespace memtrail::recorder
