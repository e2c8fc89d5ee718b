// FuseOps: groups op calls into fused kernels by their pattern kinds, using the post-dominator
// tree of the dataflow graph (computed with Boost.Graph's Lengauer-Tarjan algorithm on the
// reversed graph from a virtual sink).
//
// For each call n (in topological order) with immediate post-dominator p:
//   - an out-elementwise-fusable anchor (conv, matmul, pooling) absorbs every node on every path
//     to p, and p itself, when all of them are elementwise or broadcast (an epilogue);
//   - an elementwise, broadcast or injective node is fused with everything on its paths to p
//     when all of them are injective or simpler, or p is a reduction reached through such nodes;
// Because p post-dominates n, every value produced on those paths is consumed inside the group:
// a group has a single output. A group holds at most one anchor and at most `max_size` calls.
// Besides its anchor, a group holds only elementwise and broadcast calls and the injective ones
// that keep the innermost axis innermost (a reshape, a transpose of the outer axes): a layout
// transform fused after the anchor's epilogue would make the anchor store across its vector
// lanes, which its register-tiled schedule cannot do.
// Members are annotated with `group = <id>`; Legalize lowers each group into one kernel.
// Opaque ops (softmax, layer_norm), tuple-producing ops (split) and values the function
// returns in the middle of a group are never fused.
#include <fmt/format.h>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dominator_tree.hpp>

#include <numeric>

#include "ir/op_registry.h"
#include "passes/graph_utils.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

ir::PatternKind PatternOf(const ir::Node& n) {
  if (n.kind != ir::NodeKind::kCall || !n.type.is_tensor()) return ir::PatternKind::kOpaque;
  return ir::OpRegistry::Global().Get(n.op).pattern;
}

// Whether a non-anchor call may be in the group of an anchor: elementwise and broadcast calls,
// and injective ones under which the innermost axis stays innermost and contiguous.
bool JoinsAnAnchor(const ir::Node& n) {
  ir::PatternKind kind = PatternOf(n);
  if (kind <= ir::PatternKind::kBroadcast) return true;
  if (kind != ir::PatternKind::kInjective) return false;
  if (n.op == "reshape" || n.op == "flatten" || n.op == "squeeze" || n.op == "expand_dims") {
    return true;  // the row-major order of the elements is unchanged
  }
  if (n.op == "transpose") {
    const std::vector<int64_t>& axes = n.attrs.GetInts("axes");
    int64_t rank = n.type.tensor().rank();
    return !axes.empty() && (axes.back() == rank - 1 || axes.back() == -1);
  }
  return false;
}

// Immediate post-dominator of every node (-1: none but the sink).
std::vector<int> PostDominators(const ir::GraphFunction& fn) {
  size_t n = fn.nodes.size();
  Graph reversed(n + 1);  // vertex n is the virtual sink
  for (size_t i = 0; i < n; ++i) {
    for (ir::ValueId in : fn.nodes[i].inputs) boost::add_edge(i, static_cast<size_t>(in), reversed);
  }
  boost::add_edge(n, static_cast<size_t>(fn.output), reversed);
  std::vector<Vertex> dominator(n + 1, boost::graph_traits<Graph>::null_vertex());
  auto index = boost::get(boost::vertex_index, reversed);
  auto dom_map = boost::make_iterator_property_map(dominator.begin(), index);
  boost::lengauer_tarjan_dominator_tree(reversed, static_cast<Vertex>(n), dom_map);
  std::vector<int> ipdom(n, -1);
  for (size_t i = 0; i < n; ++i) {
    Vertex d = dominator[i];
    if (d != boost::graph_traits<Graph>::null_vertex() && d != n) ipdom[i] = static_cast<int>(d);
  }
  return ipdom;
}

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  size_t Find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(size_t a, size_t b) { parent_[Find(a)] = Find(b); }

 private:
  std::vector<size_t> parent_;
};

ir::GraphFunction Fuse(const ir::GraphFunction& fn, int64_t max_size, bool into_reductions) {
  size_t n = fn.nodes.size();
  std::vector<int> ipdom = PostDominators(fn);
  std::vector<std::vector<size_t>> consumers(n);
  for (size_t i = 0; i < n; ++i) {
    for (ir::ValueId in : fn.nodes[i].inputs) consumers[static_cast<size_t>(in)].push_back(i);
  }
  UnionFind groups(n);
  std::vector<int64_t> size(n, 1), anchors(n, 0);
  // Groups with a member that may not join an anchor's group.
  std::vector<bool> keeps_out_anchors(n, false);
  for (size_t i = 0; i < n; ++i) {
    anchors[i] = PatternOf(fn.nodes[i]) == ir::PatternKind::kOutElementwiseFusable;
    keeps_out_anchors[i] = !anchors[i] && !JoinsAnAnchor(fn.nodes[i]);
  }

  auto fusable_node = [&](size_t i) {
    const ir::Node& node = fn.nodes[i];
    return node.kind == ir::NodeKind::kCall && node.type.is_tensor();
  };
  for (size_t i = 0; i < n; ++i) {
    if (!fusable_node(i) || ipdom[i] < 0) continue;
    ir::PatternKind kind = PatternOf(fn.nodes[i]);
    ir::PatternKind limit;
    if (kind == ir::PatternKind::kOutElementwiseFusable) {
      limit = ir::PatternKind::kBroadcast;
    } else if (kind <= ir::PatternKind::kInjective) {
      limit = ir::PatternKind::kInjective;
    } else {
      continue;
    }
    size_t target = static_cast<size_t>(ipdom[i]);
    // Nodes strictly between i and its post-dominator (forward reachable from i before target).
    std::vector<size_t> between;
    std::vector<bool> seen(n, false);
    std::vector<size_t> stack{i};
    bool ok = fusable_node(target);
    while (!stack.empty() && ok) {
      size_t x = stack.back();
      stack.pop_back();
      for (size_t c : consumers[x]) {
        if (c == target || seen[c]) continue;
        seen[c] = true;
        if (!fusable_node(c) || PatternOf(fn.nodes[c]) > limit ||
            static_cast<ir::ValueId>(c) == fn.output) {
          ok = false;
          break;
        }
        between.push_back(c);
        stack.push_back(c);
      }
    }
    if (!ok) continue;
    ir::PatternKind target_kind = PatternOf(fn.nodes[target]);
    bool target_ok =
        target_kind <= limit || (into_reductions && limit == ir::PatternKind::kInjective &&
                                 target_kind == ir::PatternKind::kReduction);
    if (!target_ok) continue;
    // Size and anchor limits over the union of the groups involved.
    std::vector<size_t> members = between;
    members.push_back(i);
    members.push_back(target);
    std::vector<size_t> roots;
    for (size_t m : members) {
      size_t r = groups.Find(m);
      if (std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
    }
    int64_t total_size = 0, total_anchors = 0;
    bool total_keeps_out = false;
    for (size_t r : roots) {
      total_size += size[r];
      total_anchors += anchors[r];
      total_keeps_out = total_keeps_out || keeps_out_anchors[r];
    }
    if (total_size > max_size || total_anchors > 1) continue;
    if (total_anchors == 1 && total_keeps_out) continue;
    // A group may not contain a value the function returns, except as its last node.
    for (size_t r : roots) groups.Union(r, roots.front());
    size_t root = groups.Find(roots.front());
    size[root] = total_size;
    anchors[root] = total_anchors;
    keeps_out_anchors[root] = total_keeps_out;
  }

  // Number the groups with at least two members, in order of their first node.
  std::map<size_t, int64_t> ids;
  std::vector<int64_t> count(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (fusable_node(i)) ++count[groups.Find(i)];
  }
  ir::GraphFunction out = fn;
  for (size_t i = 0; i < n; ++i) {
    out.nodes[i].annotations.Erase("group");
    if (!fusable_node(i)) continue;
    size_t root = groups.Find(i);
    if (count[root] < 2) continue;
    auto [it, inserted] = ids.try_emplace(root, static_cast<int64_t>(ids.size()));
    out.nodes[i].annotations.Set("group", it->second);
  }
  return out;
}

}  // namespace

void RegisterFuseOps(PassRegistry& registry) {
  struct Options {
    int64_t max_size = 64;
    bool into_reductions = true;
  };
  RegisterFunctionPass<Options>(
      registry,
      {.name = "FuseOps",
       .summary = "Group op calls into fused kernels by pattern kind and post-dominance.",
       .required = {"InferType"},
       .arguments = {{"max_size", &Options::max_size, "largest number of calls in a group"},
                     {"into_reductions", &Options::into_reductions,
                      "1: an injective chain fuses into the reduction that post-dominates it"}}},
      [](const ir::IRModule& module, PassContext&, const Options& options) {
        return MapGraphFunctions(module, [&](const ir::GraphFunction& fn) {
          return Fuse(fn, options.max_size, options.into_reductions);
        });
      });
}

}  // namespace tandem::passes
