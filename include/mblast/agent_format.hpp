#pragma once
// How agents are told to write candidates for a backend: the prompt rules and the files of the
// answer. Each backend's registry row gives its own (mblast/backend.hpp); the agents only read it.
#include <string>
#include <vector>

namespace mblast {

// The file an agent writes, as the prompts describe it.
struct AnswerFile {
  std::string file;      // "model_new.py", "kernels.cl", "launch.json", "kernel.c"
  std::string language;  // code fence language: python, opencl, json, c
};

struct AgentFormat {
  std::string rules_prompt;         // prompts/<rules_prompt>.md
  std::string title;                // "custom CUDA kernels", "plain PyTorch", ...
  std::vector<AnswerFile> outputs;  // main file first
  bool custom_kernels = true;       // false: the candidate is plain PyTorch
  bool python_candidate = true;     // a Python file defining ModelNew
};

}  // namespace mblast
