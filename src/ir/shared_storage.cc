// plan_shared_storage (src/ir/shared_storage.h): live ranges from one walk in program order,
// then first-fit placement.
#include "ir/shared_storage.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "kiln/ir/functor.h"

namespace kiln::ir {
namespace {

constexpr int64_t kAlign = 16;

struct LiveRange {
  int64_t first = std::numeric_limits<int64_t>::max(), last = -1;
  bool touched() const { return last >= 0; }
  bool meets(const LiveRange& o) const { return first <= o.last && o.first <= last; }
};

// Live ranges of the shared buffers, by data var; the clock ticks at every statement.
class LiveRanges : public StmtVisitor {
 public:
  std::vector<Buffer> shared;  // declaration order
  std::map<const VarNode*, LiveRange> ranges;

  void visit_stmt(const Stmt& s) override {
    ++clock_;
    StmtVisitor::visit_stmt(s);
  }
  void visit_allocate(const AllocateNode* op) override {
    if (op->buffer->scope == "shared") {
      shared.push_back(op->buffer);
      ranges[op->buffer->data.get()];
    }
    StmtVisitor::visit_allocate(op);
  }
  void visit_for(const ForNode* op) override {
    const bool outermost = op->for_kind != ForKind::ThreadBinding && loop_start_ < 0;
    if (outermost) loop_start_ = clock_;
    StmtVisitor::visit_for(op);
    if (!outermost) return;
    for (const VarNode* v : in_loop_) ranges[v].last = std::max(ranges[v].last, clock_);
    in_loop_.clear();
    loop_start_ = -1;
  }
  void visit_buffer_load(const BufferLoadNode* op) override {
    touch(op->buffer->data.get());
    StmtVisitor::visit_buffer_load(op);
  }
  void visit_buffer_store(const BufferStoreNode* op) override {
    touch(op->buffer->data.get());
    StmtVisitor::visit_buffer_store(op);
  }
  // The data var itself (an address taken, an intrinsic's argument).
  void visit_var(const VarNode* op) override { touch(op); }

 private:
  void touch(const VarNode* v) {
    auto it = ranges.find(v);
    if (it == ranges.end()) return;
    it->second.first = std::min(it->second.first, loop_start_ >= 0 ? loop_start_ : clock_);
    it->second.last = std::max(it->second.last, clock_);
    if (loop_start_ >= 0) in_loop_.insert(v);
  }

  int64_t clock_ = 0;
  int64_t loop_start_ = -1;  // the clock at the outermost serial loop's start; -1 outside one
  std::set<const VarNode*> in_loop_;
};

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

int64_t size_of(const Buffer& b) { return round_up(b.num_elements() * b->dtype.bytes(), kAlign); }

// Whether two placed buffers (buffer, byte offset) share bytes.
bool bytes_meet(const std::pair<Buffer, int64_t>& a, const std::pair<Buffer, int64_t>& b) {
  return a.second < b.second + size_of(b.first) && b.second < a.second + size_of(a.first);
}

}  // namespace

int64_t alignment_of(const Buffer& b) { return b->layout == TileLayout::kSwizzle128B ? 1024 : kAlign; }

bool SharedStorage::overlap(const VarNode* a, const VarNode* b) const {
  if (!aliased || a == b) return false;
  const std::pair<Buffer, int64_t>*pa = nullptr, *pb = nullptr;
  for (const auto& e : buffers) {
    if (e.first->data.get() == a) pa = &e;
    if (e.first->data.get() == b) pb = &e;
  }
  return pa && pb && bytes_meet(*pa, *pb);
}

SharedStorage plan_shared_storage(const Stmt& kernel_body) {
  LiveRanges live;
  live.visit_stmt(kernel_body);
  SharedStorage out;
  std::vector<LiveRange> placed_ranges;
  for (const Buffer& b : live.shared) {
    LiveRange r = live.ranges.at(b->data.get());
    // A buffer nothing accesses is taken as live throughout: it aliases nothing.
    if (!r.touched()) r = {0, std::numeric_limits<int64_t>::max()};
    // The byte ranges of the buffers placed so far that are live alongside this one.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t i = 0; i < out.buffers.size(); ++i)
      if (placed_ranges[i].meets(r))
        busy.emplace_back(out.buffers[i].second, out.buffers[i].second + size_of(out.buffers[i].first));
    std::sort(busy.begin(), busy.end());
    const int64_t align = alignment_of(b);
    int64_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + size_of(b) <= lo) break;
      offset = round_up(std::max(offset, hi), align);
    }
    out.buffers.emplace_back(b, offset);
    out.alignment = std::max(out.alignment, align);
    placed_ranges.push_back(r);
    out.bytes = std::max(out.bytes, offset + size_of(b));
  }
  // Whether any two buffers ended up sharing bytes.
  for (size_t i = 0; i < out.buffers.size(); ++i)
    for (size_t j = 0; j < i; ++j) out.aliased = out.aliased || bytes_meet(out.buffers[i], out.buffers[j]);
  return out;
}

}  // namespace kiln::ir
