#pragma once
// `mblast kb classify` (cmd_kb_classify.cpp), registered by `mblast kb`.
#include "cli/app.hpp"

namespace mblast::cli {

void add_kb_classify(CLI::App* kb_command, Globals& globals, Action& action);

}  // namespace mblast::cli
