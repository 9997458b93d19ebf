#include "detail/oom_verdict.hpp"

#include <algorithm>

#include "memtrail/analysis/outside_accounting.hpp"
#include "memtrail/analysis/size_text.hpp"

namespace memtrail::analysis::detail {
namespace {

// Data-centre GPUs have 16 GiB and more. When the device's total is unknown and what the
// allocator held plus what the device had free is at most half that, the device cannot have
// been full of this process's memory: others held the rest.
constexpr uint64_t far_below_any_gpu = 8ull << 30;

void set_device_total(oom_report& r, const verdict_inputs& in) {
    if (in.given_device_total) {
        r.device_total = in.given_device_total;
        r.total_source = device_total_source::option;
    } else if (r.device_total) {
        r.total_source = device_total_source::snapshot;
    } else {
        r.total_source = device_total_source::at_least;
    }
    r.assumed_device_total = r.device_total ? r.device_total : r.totals.reserved + r.device_free;
    if (r.accounting) {
        // Measured at the OOM: every byte outside the allocator, and who held it.
        r.outside = r.accounting->outside() + r.accounting->context + r.accounting->other_processes;
        r.outside_known = true;
    } else if (r.device_total) {
        const uint64_t accounted = r.device_free + r.totals.reserved;
        r.outside = r.device_total > accounted ? r.device_total - accounted : 0;
        r.outside_known = true;
    } else {
        r.unknowns.push_back(
            "the device's total memory (a PyTorch snapshot does not record it): assumed at "
            "least " +
            format_bytes(r.assumed_device_total) +
            ", what the allocator held plus what the device reported free; give "
            "--device-memory to measure what was held outside this allocator");
    }
}

// The cap: recorded (a fraction and the total), or inferred when the device had room for the
// segment and the allocator still refused it.
void set_cap(oom_report& r, const verdict_inputs& in, bool pending) {
    const uint64_t reserved = r.totals.reserved;
    oom_cap& cap = r.cap;
    if (in.fraction > 0.0 && r.device_total) {
        cap.recorded = true;
        cap.fraction = in.fraction;
        cap.lower = static_cast<uint64_t>(in.fraction * static_cast<double>(r.device_total));
        cap.upper = cap.lower + 1;
        cap.binding = reserved + r.segment_size > cap.lower;
        return;
    }
    if (in.fraction > 0.0) {
        r.unknowns.push_back(
            "the memory fraction needs the device's total to be a cap in "
            "bytes: give --device-memory");
    }
    if (pending || r.device_free < r.segment_size) {
        return;
    }
    cap.binding = true;
    cap.upper = reserved + r.segment_size;
    cap.lower = in.peak_reserved < cap.upper ? std::max(in.peak_reserved, reserved) : reserved;
    r.unknowns.push_back(
        "the memory cap (a PyTorch snapshot does not record set_per_process_memory_fraction): "
        "inferred from the trace as at least " +
        format_bytes(cap.lower) + " (the most it reserved) and below " + format_bytes(cap.upper) +
        " (what this request needed); give --memory-fraction with --device-memory to use the "
        "exact one");
}

std::string cap_text(const oom_cap& cap) {
    if (cap.recorded) {
        return "capped at " + format_bytes(cap.lower) + " (a memory fraction of " +
               std::to_string(cap.fraction) + ")";
    }
    return "capped by a limit of its own between " + format_bytes(cap.lower) + " and " +
           format_bytes(cap.upper) +
           " (most likely torch.cuda.set_per_process_memory_fraction; the snapshot does not "
           "record it)";
}

std::string pools_text(const oom_report& r) {
    std::string text;
    for (const auto& p : r.private_pools) {
        if (!p.releasable) {
            continue;
        }
        text += text.empty() ? "" : "; ";
        text += p.pool ? pool_name(*p.pool) + ", " + p.owner
                       : std::string("a private pool the snapshot does not name");
        text += ": " + format_bytes(p.releasable);
    }
    return text;
}

// Whether giving back the private pools' wholly free segments makes room for the segment.
bool pools_make_room(const oom_report& r) {
    if (!r.private_pool_releasable) {
        return false;
    }
    if (r.cap.binding) {
        return r.totals.reserved - r.private_pool_releasable + r.segment_size <= r.cap.lower;
    }
    return r.device_free + r.private_pool_releasable >= r.segment_size;
}

// Who held the memory outside this allocator: measured at the OOM where memtrail run recorded
// it, else the usual suspects.
std::string outside_holders(const oom_report& r) {
    return r.accounting ? outside_split_text(*r.accounting)
                        : "other processes, NCCL, cuBLAS workspaces, the CUDA context";
}

std::string device_full_text(oom_report& r) {
    const uint64_t reserved = r.totals.reserved;
    if (r.outside_known && r.outside + r.device_free >= r.segment_size && r.outside >= reserved) {
        r.verdict = oom_verdict::outside_allocator;
        return format_bytes(r.outside) + " of the device's " + format_bytes(r.device_total) +
               " were held outside this allocator (" + outside_holders(r) + ") against " +
               format_bytes(reserved) + " reserved by it; the device had " +
               format_bytes(r.device_free) + " free for a " + format_bytes(r.segment_size) +
               " segment. Find who holds that memory (nvidia-smi), or run with less beside it.";
    }
    if (!r.outside_known && r.assumed_device_total <= far_below_any_gpu) {
        r.verdict = oom_verdict::outside_allocator;
        return "This allocator held " + format_bytes(reserved) + " and the device reported " +
               format_bytes(r.device_free) + " free, " + format_bytes(r.assumed_device_total) +
               " in all: far below the memory of any data-centre GPU (16 GiB and more), so "
               "the rest of the device was held outside this allocator (other processes, NCCL, "
               "cuBLAS workspaces, the CUDA context). Give --device-memory to measure it.";
    }
    r.verdict = oom_verdict::capacity;
    return "Live allocations of this process hold " + format_bytes(r.totals.allocated) + " of " +
           format_bytes(reserved) + " reserved; the device had " + format_bytes(r.device_free) +
           " free and the cache " + format_bytes(r.totals.free) +
           (r.outside_known ? ", and " + format_bytes(r.outside) +
                                  " was held outside this allocator (" + outside_holders(r) + ")"
                            : " (the device's total is unknown: had it more than " +
                                  format_bytes(r.assumed_device_total) +
                                  ", others held the rest; --device-memory settles it)") +
           ": the memory is really in use. Reduce what is live at this point (batch size, "
           "activations, cached tensors).";
}

}  // namespace

// The causes, checked in the order that explains the most: a free that only waits on other
// streams, memory cached where the request could not use it (private pools, or in pieces),
// the allocator's own cap, memory other users hold, and last this process's own live memory.
// A cap that refused the request as well is the secondary cause.
void decide_verdict(oom_report& r, const verdict_inputs& in) {
    set_device_total(r, in);
    const std::string asked = format_bytes(r.requested);
    const bool pending =
        std::any_of(r.blockers.begin(), r.blockers.end(),
                    [](const oom_blocker& b) { return b.only_pending_frees(); }) ||
        (r.device_free < r.requested && r.device_free + in.releasable_after_sync >= r.requested);
    set_cap(r, in, pending);
    const std::string under_cap =
        r.cap.binding ? " The allocator could not grow past its cap: it was " + cap_text(r.cap) +
                            " and held " + format_bytes(r.totals.reserved) + "."
                      : "";
    if (r.cap.binding) {
        r.secondary = oom_verdict::memory_cap;
    }
    if (pending) {
        r.verdict = oom_verdict::pending_cross_stream_frees;
        r.explanation = "The " + asked +
                        " request would have fit if blocks already freed had not still been in "
                        "use by other streams (" +
                        format_bytes(r.totals.pending_free) +
                        " pending). Synchronize the streams that use them, or call record_stream "
                        "less." +
                        under_cap;
    } else if (pools_make_room(r)) {
        r.verdict = oom_verdict::private_pools;
        r.explanation = format_bytes(r.private_pool_releasable) +
                        " sat cached in wholly free segments of private pools [" + pools_text(r) +
                        "], which serve only allocations made to them and are given back only "
                        "once their owner releases them; given back, they would have made room "
                        "for the " +
                        format_bytes(r.segment_size) + " segment this request needed." + under_cap +
                        " Delete the graph or MemPool once it is no longer needed, or share one "
                        "pool between graphs.";
    } else if (r.usable_free >= r.requested) {
        r.verdict = oom_verdict::fragmentation;
        r.explanation =
            format_bytes(r.usable_free) + " was cached free in this pool and stream, enough for " +
            asked + " had it been in one piece, but it was cut into " +
            std::to_string(r.totals.free_blocks) + " free blocks, the largest " +
            format_bytes(r.totals.largest_free) + ", inside segments still in use." + under_cap;
    } else if (r.cap.binding) {
        r.verdict = oom_verdict::memory_cap;
        r.secondary.reset();
        r.explanation = "The device still had " + format_bytes(r.device_free) +
                        " free, enough for the " + format_bytes(r.segment_size) +
                        " segment this request needed, but the allocator was " + cap_text(r.cap) +
                        " and held " + format_bytes(r.totals.reserved) +
                        ". Raise or remove the cap, or reduce what is live.";
    } else {
        r.explanation = device_full_text(r);
    }
}

}  // namespace memtrail::analysis::detail
