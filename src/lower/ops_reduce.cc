// Lowerings of the reductions: sum, mean, prod, max, min over axes; argmax, argmin.
#include "kiln/support/error.h"
#include "kiln/te/ops/reduce.h"
#include "op_table.h"

namespace kiln::lower::detail {

void add_reduce_lowerings() {
  const std::pair<const char*, ReduceKind> kinds[] = {{"sum", ReduceKind::Sum},
                                                      {"mean", ReduceKind::Mean},
                                                      {"prod", ReduceKind::Prod},
                                                      {"max", ReduceKind::Max},
                                                      {"min", ReduceKind::Min}};
  for (auto [name, kind] : kinds) {
    set_lowering(name, [name = std::string(name), kind = kind](const std::vector<Tensor>& in, const relay::Attrs& a,
                                                               const relay::Type&) -> std::vector<Tensor> {
      return {reduce(in[0], kind, a.get_ints("axes"), a.get_int("keepdims") != 0, name)};
    });
  }
  for (const char* name : {"argmax", "argmin"}) {
    bool is_min = std::string(name) == "argmin";
    set_lowering(name, [name = std::string(name), is_min](const std::vector<Tensor>& in, const relay::Attrs& a,
                                                          const relay::Type&) -> std::vector<Tensor> {
      return {arg_reduce(in[0], a.get_int("axis"), a.get_int("keepdims") != 0, is_min,
                         a.get_int("select_last_index", 0) != 0, name)};
    });
  }
}

}  // namespace kiln::lower::detail
