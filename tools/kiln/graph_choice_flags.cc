// The graph-choice flags (see graph_choice_flags.h).
#include "graph_choice_flags.h"

#include "kiln/support/error.h"

namespace kiln::cli {

void GraphChoiceFlags::add(CLI::App* c, const std::string& winograd_help) {
  winograd_opt_ = c->add_flag("--no-winograd", no_winograd_, winograd_help);
  layout_opt_ = c->add_option("--layout", layout_,
                              "conv data layout: auto (blocked NCHW[x]c where its transforms pay), nchw or blocked");
  combine_opt_ = c->add_option("--combine-branches", combine_branches_,
                               "combine parallel convs/dense layers reading one input into one wider op when at least "
                               "N "
                               "share it: 0 (never), 2 or 3 (default " +
                                   std::to_string(combine_branches_) + ")");
}

void GraphChoiceFlags::apply(CompileOptions* o) const {
  o->winograd = !no_winograd_;
  o->layout = parse_layout(layout_);
  KILN_USER_CHECK(combine_branches_ == 0 || combine_branches_ == 2 || combine_branches_ == 3)
      << "--combine-branches " << combine_branches_ << ": expected 0, 2 or 3";
  o->combine_branches = combine_branches_;
}

std::vector<std::string> GraphChoiceFlags::given() const {
  std::vector<std::string> out;
  if (winograd_opt_ && winograd_opt_->count()) out.push_back("winograd");
  if (layout_opt_ && layout_opt_->count()) out.push_back("layout");
  if (combine_opt_ && combine_opt_->count()) out.push_back("combine_branches");
  return out;
}

}  // namespace kiln::cli
