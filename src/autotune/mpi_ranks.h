// The MPI job of `mpirun -np N kiln tune` (tune_model.h), as the tuning driver needs it: rank 0
// broadcasts the log's content, the other ranks send it strings (records, task summaries), and
// rank 0 polls for them between its own measurements. Built with MPI when CMake finds it
// (KILN_HAVE_MPI); MPI is initialized only in a process mpirun started with more than one rank,
// so a plain `kiln tune`, the tests and every other command never touch it. Measuring children
// are forked after MPI_Init: they never call MPI and leave by _exit (isolated_child.cc), which is
// what Open MPI tolerates of a fork.
#pragma once

#include <optional>
#include <string>

namespace kiln::autotune::mpi {

enum Tag : int {
  kRecord = 1,    // a record's JSON line
  kTaskDone = 2,  // a task's summary (JSON: index, progress line, curve)
  kRankDone = 3,  // the sender has tuned all its tasks
};

struct Ranks {
  int rank = 0;
  int size = 1;
};

// This process's rank, initializing MPI on first use when mpirun launched more than one rank
// (OMPI_COMM_WORLD_SIZE, PMI_SIZE); {0, 1} otherwise. Throws kiln::Error when launched so by a
// kiln built without MPI (each rank would tune everything into the same log).
Ranks ranks();

// Rank 0's `text` on every rank.
std::string broadcast(const std::string& text);
// To rank 0.
void send(Tag tag, const std::string& data);

struct Message {
  int source = 0;
  Tag tag = kRecord;
  std::string data;
};
// Rank 0: the next message waiting, if any (never blocks).
std::optional<Message> poll();
// Rank 0: the next message, waiting for it.
Message receive();

// Prints `what` for this rank and ends the whole job (mpirun stops the other ranks): a rank that
// fails must not leave the others waiting on it.
[[noreturn]] void abort_job(const std::string& what);

}  // namespace kiln::autotune::mpi
