// Where a GPU kernel's shared buffers live in its block's shared memory.
//
// Buffers whose live ranges are disjoint share bytes: a tensor-core GEMM's float32 staging tile,
// written after the K loop, takes the bytes of the operand tiles the K loop read, so the block
// needs the larger of the two rather than their sum and more blocks fit on a multiprocessor
// (TVM's MergeSharedMemoryAllocations does the same). A buffer's live range is the span of
// statements, in program order, from its first access to its last; an access inside a serial
// loop (any loop but a thread binding's) stands for the whole outermost such loop, whose next
// iteration would meet it again. Threads reach a statement at different times: the live ranges
// say only that no thread needs both buffers at once, and insert_thread_sync, told of the shared
// bytes (overlap), puts a barrier between one buffer's last access and the other's first.
//
// The plan is a function of the kernel body alone, so the passes after insert_thread_sync
// (which move no shared access past another) and the printer find the same one.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kiln/ir/stmt.h"

namespace kiln::ir {

struct SharedStorage {
  std::vector<std::pair<Buffer, int64_t>> buffers;  // declaration order, byte offset (alignment_of)
  int64_t bytes = 0;                                // the block's shared memory
  bool aliased = false;                             // some buffers share bytes
  int64_t alignment = 16;                           // the largest of the buffers' alignment_of

  // Whether the distinct buffers with data vars `a` and `b` share bytes.
  bool overlap(const VarNode* a, const VarNode* b) const;
};

// The byte alignment a shared buffer's offset needs: 16 (a cp.async of 16 bytes), 1024 for a
// tile in TileLayout::kSwizzle128B (wgmma's swizzle reads address bits 7-9 as the row).
int64_t alignment_of(const Buffer& b);

// Every Allocate of scope "shared" in `kernel_body`, placed first-fit in declaration order at the
// lowest offset aligned to alignment_of free of the buffers live at the same time.
SharedStorage plan_shared_storage(const Stmt& kernel_body);

}  // namespace kiln::ir
