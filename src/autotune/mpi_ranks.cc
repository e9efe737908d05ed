// The MPI job of a tuning run (see mpi_ranks.h).
#include "mpi_ranks.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "kiln/support/error.h"

#ifdef KILN_HAVE_MPI
#include <mpi.h>
#endif

namespace kiln::autotune::mpi {
namespace {

// The world size mpirun (Open MPI, or a PMI launcher) gave this process; 1 when none.
int launched_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(var)) return std::max(1, std::atoi(v));
  return 1;
}

}  // namespace

#ifdef KILN_HAVE_MPI

Ranks ranks() {
  static const Ranks r = [] {
    Ranks out;
    if (launched_size() <= 1) return out;
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
    // Finalized at exit, as mpirun expects of every rank; measuring children _exit and skip it.
    std::atexit([] { MPI_Finalize(); });
    MPI_Comm_rank(MPI_COMM_WORLD, &out.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &out.size);
    return out;
  }();
  return r;
}

std::string broadcast(const std::string& text) {
  unsigned long long n = text.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  std::string out = text;
  out.resize(n);
  // In chunks: an MPI count is an int, and a long log may pass 2 GiB.
  const unsigned long long chunk = 1ull << 30;
  for (unsigned long long at = 0; at < n; at += chunk)
    MPI_Bcast(out.data() + at, static_cast<int>(std::min(chunk, n - at)), MPI_CHAR, 0, MPI_COMM_WORLD);
  return out;
}

void send(Tag tag, const std::string& data) {
  MPI_Send(data.data(), static_cast<int>(data.size()), MPI_CHAR, 0, tag, MPI_COMM_WORLD);
}

namespace {

Message take(const MPI_Status& st) {
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  Message m;
  m.source = st.MPI_SOURCE;
  m.tag = static_cast<Tag>(st.MPI_TAG);
  m.data.resize(static_cast<size_t>(n));
  MPI_Recv(m.data.data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return m;
}

}  // namespace

std::optional<Message> poll() {
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
  if (!flag) return std::nullopt;
  return take(st);
}

Message receive() {
  MPI_Status st;
  MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
  return take(st);
}

void abort_job(const std::string& what) {
  std::fprintf(stderr, "kiln tune: error: rank %d: %s\n", ranks().rank, what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return
}

#else  // without MPI: one rank (the others are never called), and a clear refusal under mpirun

Ranks ranks() {
  KILN_USER_CHECK(launched_size() <= 1)
      << "this kiln was built without MPI (no MPI found by CMake; install libopenmpi-dev and rebuild), so it cannot "
         "tune as one of the ranks mpirun started";
  return {};
}

std::string broadcast(const std::string& text) { return text; }
void send(Tag, const std::string&) { KILN_CHECK(false) << "MPI send without MPI"; }
std::optional<Message> poll() { return std::nullopt; }
Message receive() {
  KILN_CHECK(false) << "MPI receive without MPI";
  return {};
}
[[noreturn]] void abort_job(const std::string& what) {
  std::fprintf(stderr, "kiln tune: error: %s\n", what.c_str());
  std::abort();
}

#endif

}  // namespace kiln::autotune::mpi
