// kiln bench OUT.so [--threads T] [--repeat N]: median latency of a compiled model on seeded
// random inputs. Prints "median X ms".
#include <iostream>

#include "commands.h"
#include "kiln/autotune/measure_process.h"
#include "module_io.h"

namespace kiln::cli {

void add_bench(CLI::App& app, int* status) {
  struct Args {
    std::string module;
    int threads = 0, repeat = 20;
  };
  auto args = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("bench", "time a compiled model (median latency)");
  c->add_option("module", args->module, "the compiled model (.so)")->required();
  c->add_option("--threads", args->threads, "threads (default: KILN_NUM_THREADS, else all cores)");
  c->add_option("--repeat", args->repeat, "timed samples (each at least 0.1 s of runs)");
  c->callback([args, status] {
    *status = guarded("bench", [&] {
      if (args->threads > 0) kiln_set_num_threads(args->threads);
      LoadedModel m(args->module);
      for (int i = 0; i < m.num_inputs(); ++i) m.set_input(i, random_tensor(m.input_info(i), 1234 + i));
      autotune::TimerOptions opts;
      opts.warmup = 3;
      opts.repeat = std::max(1, args->repeat);
      opts.min_duration_s = 0.1;
      auto t = autotune::time_function([&] { m.run(); }, opts);
      std::cout << "threads " << kiln_get_num_threads() << ", " << opts.repeat << " samples\n";
      std::cout << "median " << t.median * 1e3 << " ms\n";
      return kOk;
    });
  });
}

}  // namespace kiln::cli
