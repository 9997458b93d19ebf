#include "memtrail/analysis/flame.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/analysis/range_changes.hpp"

namespace memtrail::analysis {
namespace {

bool counts(snapshot::block_state state, live_measure measure) {
    switch (state) {
        case snapshot::block_state::active_allocated:
            return true;
        case snapshot::block_state::active_pending_free:
            return measure == live_measure::active;
        case snapshot::block_state::inactive:
            return false;
    }
    return false;
}

series series_of(live_measure measure) {
    return measure == live_measure::active ? series::active : series::allocated;
}

template <typename Node>
void sort_children(std::vector<Node>& nodes, auto weight) {
    for (auto& node : nodes) {
        std::stable_sort(node.children.begin(), node.children.end(), [&](uint32_t a, uint32_t b) {
            return weight(nodes[a]) > weight(nodes[b]);
        });
    }
}

std::string folded_name(std::string name) {
    std::replace(name.begin(), name.end(), ';', ',');
    std::replace(name.begin(), name.end(), '\n', ' ');
    return name;
}

}  // namespace

std::vector<stack_bytes> bytes_by_stack(const memory_state& state, live_measure measure) {
    std::unordered_map<snapshot::stack_id, stack_bytes> by_stack;
    for (const auto& seg : state.segments) {
        for (const auto& blk : seg.blocks) {
            if (!counts(blk.state, measure)) {
                continue;
            }
            stack_bytes& entry = by_stack[blk.stack];
            entry.stack = blk.stack;
            entry.bytes += blk.size;
            ++entry.blocks;
            entry.largest_block = std::max(entry.largest_block, blk.size);
        }
    }
    std::vector<stack_bytes> out;
    out.reserve(by_stack.size());
    for (const auto& [stack, entry] : by_stack) {
        out.push_back(entry);
    }
    std::sort(out.begin(), out.end(), [](const stack_bytes& a, const stack_bytes& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
    });
    return out;
}

flame_graph build_flame(const snapshot::snapshot& source, const std::vector<stack_bytes>& stacks) {
    flame_graph graph;
    graph.nodes.push_back(flame_node{"all", 0, 0, 0, 0, 0, {}});
    std::map<std::pair<uint32_t, std::string>, uint32_t> child_of;
    auto child = [&](uint32_t parent, const std::string& name) {
        const auto [it, inserted] =
            child_of.try_emplace({parent, name}, static_cast<uint32_t>(graph.nodes.size()));
        if (inserted) {
            graph.nodes.push_back(
                flame_node{name, 0, 0, 0, parent, graph.nodes[parent].depth + 1, {}});
            graph.nodes[parent].children.push_back(it->second);
        }
        return it->second;
    };
    for (const stack_bytes& entry : stacks) {
        if (entry.bytes == 0) {
            continue;
        }
        std::vector<std::string> labels = stack_labels(source, entry.stack);
        if (labels.empty()) {
            labels.emplace_back(unknown_stack_label);
        }
        uint32_t node = 0;
        graph.nodes[0].bytes += entry.bytes;
        graph.nodes[0].blocks += entry.blocks;
        for (const std::string& label : labels) {
            node = child(node, label);
            graph.nodes[node].bytes += entry.bytes;
            graph.nodes[node].blocks += entry.blocks;
        }
        graph.nodes[node].self_bytes += entry.bytes;
    }
    sort_children(graph.nodes, [](const flame_node& n) { return n.bytes; });
    return graph;
}

flame_graph flame_at(const device_model& model, size_t position, live_measure measure) {
    return build_flame(model.source(), bytes_by_stack(model.state_after(position), measure));
}

flame_graph flame_at_peak(const device_model& model, live_measure measure) {
    return flame_at(model, model.peak_position(series_of(measure)), measure);
}

flame_graph flame_over_range(const device_model& model, size_t first, size_t last,
                             live_measure measure) {
    last = std::min(last, model.event_count());
    first = std::min(first, last);
    struct running {
        int64_t bytes = 0;
        int64_t blocks = 0;
        stack_bytes highest;
    };
    std::unordered_map<snapshot::stack_id, running> by_stack;
    for (const stack_bytes& entry : bytes_by_stack(model.state_after(first), measure)) {
        by_stack[entry.stack] =
            running{static_cast<int64_t>(entry.bytes), static_cast<int64_t>(entry.blocks), entry};
    }
    model.for_each_change(first, last, [&](const state_change& change) {
        const int64_t delta = measure == live_measure::active ? change.active : change.allocated;
        if (delta == 0) {
            return;
        }
        running& r = by_stack[change.stack];
        r.bytes += delta;
        r.blocks += delta > 0 ? 1 : -1;
        if (r.bytes > static_cast<int64_t>(r.highest.bytes)) {
            r.highest.stack = change.stack;
            r.highest.bytes = static_cast<uint64_t>(r.bytes);
            r.highest.blocks = static_cast<uint64_t>(std::max<int64_t>(r.blocks, 0));
            r.highest.largest_block = std::max(r.highest.largest_block, change.block_size);
        }
    });
    std::vector<stack_bytes> stacks;
    stacks.reserve(by_stack.size());
    for (const auto& [stack, r] : by_stack) {
        if (r.highest.bytes != 0) {
            stacks.push_back(r.highest);
        }
    }
    std::sort(stacks.begin(), stacks.end(),
              [](const stack_bytes& a, const stack_bytes& b) { return a.stack < b.stack; });
    return build_flame(model.source(), stacks);
}

flame_graph flame_allocated_in_range(const device_model& model, size_t first, size_t last,
                                     live_measure measure) {
    range_changes changes = changes_over(model, first, last);
    for (snapshot::segment& seg : changes.at_end.segments) {
        std::erase_if(seg.blocks,
                      [&](const snapshot::block& b) { return !changes.is_new_block(b.address); });
    }
    return build_flame(model.source(), bytes_by_stack(changes.at_end, measure));
}

std::string to_folded(const flame_graph& graph) {
    std::string out;
    std::vector<std::string> path;
    std::function<void(uint32_t)> visit = [&](uint32_t index) {
        const flame_node& node = graph.nodes[index];
        if (index != 0) {
            path.push_back(folded_name(node.name));
        }
        if (node.self_bytes != 0 && !path.empty()) {
            for (size_t i = 0; i < path.size(); ++i) {
                out += i == 0 ? "" : ";";
                out += path[i];
            }
            out += " " + std::to_string(node.self_bytes) + "\n";
        }
        for (const uint32_t c : node.children) {
            visit(c);
        }
        if (index != 0) {
            path.pop_back();
        }
    };
    if (!graph.nodes.empty()) {
        visit(0);
    }
    return out;
}

flame_diff diff_flames(const flame_graph& before, const flame_graph& after) {
    flame_diff diff;
    diff.nodes.push_back(flame_diff_node{"all", before.total(), after.total(), 0, 0, {}});
    // Merges the children of before-node `b` and after-node `a` (either may be absent) under
    // diff node `into`.
    std::function<void(const flame_node*, const flame_node*, uint32_t)> merge =
        [&](const flame_node* b, const flame_node* a, uint32_t into) {
            std::map<std::string, std::pair<const flame_node*, const flame_node*>> children;
            if (b != nullptr) {
                for (const uint32_t c : b->children) {
                    children[before.nodes[c].name].first = &before.nodes[c];
                }
            }
            if (a != nullptr) {
                for (const uint32_t c : a->children) {
                    children[after.nodes[c].name].second = &after.nodes[c];
                }
            }
            for (const auto& [name, pair] : children) {
                const auto index = static_cast<uint32_t>(diff.nodes.size());
                diff.nodes.push_back(flame_diff_node{name,
                                                     pair.first ? pair.first->bytes : 0,
                                                     pair.second ? pair.second->bytes : 0,
                                                     into,
                                                     diff.nodes[into].depth + 1,
                                                     {}});
                diff.nodes[into].children.push_back(index);
                merge(pair.first, pair.second, index);
            }
        };
    merge(before.nodes.empty() ? nullptr : &before.nodes[0],
          after.nodes.empty() ? nullptr : &after.nodes[0], 0);
    sort_children(diff.nodes, [](const flame_diff_node& n) {
        const int64_t d = n.delta();
        return d < 0 ? -d : d;
    });
    return diff;
}

}  // namespace memtrail::analysis
