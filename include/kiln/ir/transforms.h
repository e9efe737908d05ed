// Passes over the loop-level IR, one per file in src/ir/transforms/ (docs/architecture.md,
// "Conventions"). Each is a pure function PrimFunc -> PrimFunc (or Stmt -> Stmt). The pipeline's
// table (src/pipeline.cc) runs them, the loop stages in this order after the loop nest:
//   flatten_storage -> simplify -> vectorize_loops -> unroll_loops -> simplify
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/device_program.h"
#include "kiln/ir/stmt.h"

namespace kiln::ir {

// Rewrites every multi-dimensional BufferLoad/BufferStore into a one-dimensional access on a
// flattened buffer (row-major), and every Allocate to allocate the flat extent. The flattened
// buffer shares the original's data var. PrimFunc params keep their logical shapes: they are the
// kernel's signature.
PrimFunc flatten_storage(const PrimFunc& f);

// Simplifies every expression with the loop ranges and let bindings in scope; drops loops
// of extent 0, replaces loops of extent 1 by their body, folds ifs with a provable condition.
Stmt simplify(const Stmt& s);
PrimFunc simplify(const PrimFunc& f);

// Turns each ForKind::Vectorized loop of constant extent into vector IR: the loop var becomes a
// Ramp, loads/stores of contiguous or strided indices become vector accesses, scalars are
// broadcast. A loop it cannot vectorize (a nested loop inside, a condition on the lane) is
// turned into a serial loop, and the pass says so in `notes` if given.
Stmt vectorize_loops(const Stmt& s, std::vector<std::string>* notes = nullptr);
PrimFunc vectorize_loops(const PrimFunc& f, std::vector<std::string>* notes = nullptr);

// Replaces each ForKind::Unrolled loop of constant extent by copies of its body.
Stmt unroll_loops(const Stmt& s);
PrimFunc unroll_loops(const PrimFunc& f);

}  // namespace kiln::ir

// ---- GPU passes (after the loops above; the pipeline's table orders them) -------------------

namespace kiln::ir {

// Checks thread binding in a lowered GPU function: every statement that computes is inside a
// block and thread binding (a kernel of no bound loop would run once per launch, on one
// thread: not what any schedule means), block axes outside thread axes, constant extents, one
// launch extent per thread tag within a kernel (a smaller one is guarded), and the limits
// (threads per block, grid, static shared memory). Throws kiln::Error naming the function,
// the loop and the limit.
void verify_gpu(const PrimFunc& f, const GpuLimits& limits);

// Splits a verified GPU function into kernels: each top-level statement under the function's
// global allocations becomes a kernel with its launch record (extents of its thread-bound
// loops), and each such allocation a workspace buffer. Kernel parameters are the buffers a
// kernel uses, the function's parameters first, in the function's order.
DeviceProgram split_host_device(const PrimFunc& f);

// The attribute Stage::double_buffer puts around a stage's producer: AttrStmt with this key, the
// stage's buffer data var as node, the number of buffers as value.
inline constexpr const char* kDoubleBufferScope = "double_buffer_scope";
// The buffers a kDoubleBufferScope marker asks for: its value, 2 for a value below (1: the
// marker of two halves).
int64_t double_buffers(const AttrStmtNode& marker);

// What inject_double_buffer puts around the next iteration's producer (node: the loop var): its
// shared writes go to the half nobody reads in this iteration, ordered by the pass's own
// barriers, so insert_thread_sync leaves them out of its conflicts.
inline constexpr const char* kDoubleBufferWrite = "double_buffer_write";

// What inject_double_buffer(async_copy) puts around a global -> shared copy it makes
// asynchronous: node, the shared buffer's data var; value, the bytes one copy moves (4, 8 or 16);
// body, one BufferStore `S[i] = X[j]` or `S[i] = select(c, X[j], 0)` (X global, of S's type),
// the second copying X[j] where c holds and zero-filling where not. With lanes, i and j are ramps
// of stride 1 whose first elements are proved multiples of the lanes, and c is a broadcast. The
// CUDA dialect prints it as cp.async (sm_80 and newer), every other dialect as the plain store.
inline constexpr const char* kAsyncCopy = "async_copy";
// Evaluated intrinsics around async copies: kAsyncCommit() closes this thread's group of copies
// issued since its last commit; kAsyncWait(n) waits until at most n of its groups are still in
// flight. No-ops where copies are plain (they completed when stored).
inline constexpr const char* kAsyncCommit = "kiln_async_commit";
inline constexpr const char* kAsyncWait = "kiln_async_wait";

// Double-buffers each shared buffer whose producer is marked kDoubleBufferScope at the top of a
// serial loop `for (k, 0, K)` body (through Seqs and Allocates): the buffer gets two halves
// (flat index + (k % 2) * size), allocated outside the loop; a prologue produces iteration 0
// into half 0, then each iteration computes on half k % 2, produces iteration k + 1 into half
// (k + 1) % 2 under `if (k + 1 < K)` (marked kDoubleBufferWrite), and ends with a barrier; a
// barrier follows the prologue.
// With `async_copy` (the target has cp.async: CUDA sm_80+), the producers' plain copies from
// global memory become kAsyncCopy stores where cp.async can do them; when any does, each
// iteration issues the next tile's copies first and commits them, computes, then waits for them
// (kAsyncWait(0)) before its barrier, so the copy of tile k + 1 runs during the compute of
// tile k; the prologue commits and waits before its barrier likewise.
// Marked producers move after the rest of the body (before it, asynchronous), so they must not
// read what the loop writes.
// A marker's value S > 2 (Stage::double_buffer(S); below, 2) gives S buffers: the prologue produces
// iterations 0..S-2 and iteration k produces k + S - 1 into buffer (k + S - 1) % S; with async
// copies every iteration commits a group and waits for all but S - 2 (the pass's comment).
// A no-op when nothing is marked. kiln::Error naming the buffer for a marker not at the top of a
// serial loop, or a loop under a branch not every thread of the block takes. Run before
// hoist_device_allocations.
PrimFunc inject_double_buffer(const PrimFunc& kernel, bool async_copy = false);

// What a tensor intrinsic puts around its per-lane code that reads or writes a buffer of scope
// "warp" (a warp's accumulators, schedule/mma_intrin.h): node, that buffer's data var; value,
// the lanes (32). Inside, the buffer's flat index is the lane's own: it runs over the lane's
// elements, [0, elements / 32).
inline constexpr const char* kWarpFragment = "warp_fragment";
// What the mma intrinsic (schedule/mma_intrin.h) puts around a warp's product of one 16 x 8 x 16
// tile, per lane: node, the accumulators' data var; value, the call kMmaSyncCall(d0, d1, d2, d3,
// a0, ..., a7, b0, ..., b3) of the lane's accumulators (read and written) and its elements of A
// and B (float16 or bfloat16 loads) in mma.m16n8k16's fragment layout; body, the same sums as
// plain loops. The CUDA dialect prints the call as mma.sync (sm_80+), every other the body.
inline constexpr const char* kMmaSync = "mma_sync";
inline constexpr const char* kMmaSyncCall = "kiln_mma_m16n8k16";
// What the wgmma intrinsic (schedule/mma_intrin.h) puts around a warp's share of its
// warpgroup's product of a 64 x N x 16 tile, per lane: node, the accumulators' data var; value,
// the call kWgmmaCall(d0, ..., d(N/2 - 1), a, b, a_lbo, a_sbo, b_lbo, b_sbo, b_mn_major,
// in_flight) of the lane's accumulators (read and written, the m16n8 tiles' layout tile by
// tile), loads of the first elements of the warpgroup's A tile and of B in shared memory (core
// matrices), the byte strides the descriptors name, whether B is N-major, and whether a run's
// group stays in flight while the next iteration of the loop around it begins (1: the run waits
// for the group before it, not its own; inject_double_buffer then fills a buffer one iteration
// later, and after the loop kWgmmaDrain() waits for the last); body, the warp's sums as plain
// loops. The CUDA dialect prints a run of them as wgmma.mma_async (sm_90a), every other the
// bodies.
inline constexpr const char* kWgmma = "wgmma";
inline constexpr const char* kWgmmaCall = "kiln_wgmma_m64nNk16";
// kWgmmaCall's arguments after the accumulators: a, b, the four offsets, b_mn_major, in_flight.
inline constexpr size_t kWgmmaOperands = 8;
// Evaluated after a loop whose wgmma runs stay in flight: waits for all of the thread's wgmma
// groups, so the accumulators are whole for what follows.
inline constexpr const char* kWgmmaDrain = "kiln_wgmma_drain";

// Gives each lane its part of every buffer of scope "warp" (Stage::set_scope): the allocation
// of N elements becomes a local one of N / 32, which the per-lane indices inside kWarpFragment
// address. kiln::Error naming the buffer for an access outside kWarpFragment (a stage of scope
// warp read or written other than by the tensor intrinsics that know its layout), for N not a
// multiple of 32, and for a kernel binding more than 32 threads to threadIdx.x (a warp's
// lanes are threadIdx.x 0..31). Run before verify_gpu.
PrimFunc lower_warp_buffers(const PrimFunc& f);

// Moves every shared allocation of a kernel to its top, outside all loops (OpenCL requires
// __local declarations at a kernel's outermost scope; one allocation per block either way).
PrimFunc hoist_device_allocations(const PrimFunc& kernel);

// The pragma a schedule puts on the serial loop that combines a cross-thread reduction's
// partials (Schedule::rfactor's stage reading the shared partial[j], run by every thread):
// lowered, AttrStmt "pragma_cross_thread_reduction" around that loop.
inline constexpr const char* kCrossThreadReductionPragma = "cross_thread_reduction";

// Replaces each loop marked kCrossThreadReductionPragma, `for (j, 0, T) acc = F(acc, partial[j])`,
// by a tree in shared memory: ceil(log2 T) steps `if (tx < n - s) partial[tx] = F(partial[tx],
// partial[tx + s])` (s = ceil(n / 2)), each followed by a barrier, then acc = F(acc, partial[0]).
// With `warp_size` 32 (CUDA) the steps from 64 live partials on run in registers of the first
// warp with warp shuffles (intrinsic kiln_shuffle_down(value, delta)) and one barrier. Every combiner
// of a te reduction works (sum, max, min, product, multi-valued argmax): F is read from the
// loop body. Needs the block's threads along threadIdx.x alone; run before insert_thread_sync,
// which adds the barrier between the partials' writes and the tree.
PrimFunc lower_cross_thread_reduction(const PrimFunc& kernel, const KernelLaunch& launch, int warp_size);

// Inserts block-wide barriers (evaluate(kiln_barrier())) where threads of a block exchange data
// through shared buffers: between a write and a later read of the same shared buffer, and a
// read and a later write, including across iterations of a loop. Conservative: every access of
// a shared buffer may be another thread's (two writes need no barrier: a te stage writes each
// element one value). kiln::Error naming the kernel and buffer when a
// barrier would be needed inside a branch not all threads of the block take (a condition on a
// thread index, or a thread loop narrower than `launch`'s block).
PrimFunc insert_thread_sync(const PrimFunc& kernel, const KernelLaunch& launch);

// Moves the conjuncts of a serial or unrolled loop's guard (its whole body an `if` without else)
// that neither read the loop variable nor load or call outside the loop, innermost loops first:
// for (i) { if (a(i) && b) S } -> if (b) { for (i) { if (a(i)) S } }; repeated conjuncts once.
// The GPU pipeline runs it last (a K tail's test in every register-tile nest hung PoCL's
// compiler, docs/gpu.md, "Pipeline").
PrimFunc hoist_invariant_guards(const PrimFunc& f);

}  // namespace kiln::ir
