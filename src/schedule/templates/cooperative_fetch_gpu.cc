#include "kiln/schedule/templates/cooperative_fetch_gpu.h"

namespace kiln::schedule {

void cooperative_fetch(Stage st, int64_t ty, int64_t tx) {
  std::vector<ir::IterVar> ax = st.op_axis();
  ir::IterVar f = ax[0];
  for (size_t i = 1; i < ax.size(); ++i) f = st.fuse(f, ax[i]);
  auto [rest, x] = st.split(f, tx);
  auto [serial, y] = st.split(rest, ty);
  st.bind(y, "threadIdx.y");
  st.bind(x, "threadIdx.x");
  (void)serial;
}

}  // namespace kiln::schedule
