#include "kiln/autotune/task.h"

#include "kiln/support/error.h"

namespace kiln::autotune {

ConfigSpace Task::space() const {
  KILN_USER_CHECK(static_cast<bool>(make)) << "task '" << workload_key << "' has no schedule template";
  ConfigSpace space;
  Config recorder(&space);
  make(recorder);
  return space;
}

Program Task::instantiate(const ConfigSpace& space, const Point& p) const {
  KILN_USER_CHECK(static_cast<bool>(make)) << "task '" << workload_key << "' has no schedule template";
  Config cfg = point_to_config(space, p);
  return make(cfg);
}

}  // namespace kiln::autotune
