// Printing an IR after a named pipeline stage: `kiln compile --dump-ir STAGE`, KILN_DUMP_IR.
// One class for every stage of the pipeline's table (src/pipeline.cc).
#pragma once

#include <iostream>
#include <ostream>
#include <string>

namespace kiln {

class StageDumper {
 public:
  // `stage`: a stage name, "all", or empty (nothing); `os`: where to print (stderr when null).
  explicit StageDumper(std::string stage = "", std::ostream* os = nullptr) : stage_(std::move(stage)), os_(os ? os : &std::cerr) {}
  bool wants(const std::string& stage) const { return stage_ == "all" || (!stage_.empty() && stage_ == stage); }
  // "// <level> after <stage>" and the text, when the stage is wanted.
  void operator()(const char* level, const std::string& stage, const std::string& text) const {
    if (wants(stage)) *os_ << "// " << level << " after " << stage << "\n" << text;
  }
  const std::string& stage() const { return stage_; }
  std::ostream* stream() const { return os_; }

 private:
  std::string stage_;
  std::ostream* os_;
};

}  // namespace kiln
