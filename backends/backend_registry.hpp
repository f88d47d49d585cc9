#pragma once
// Every backend mblast is built with, one row each (backends/registry.cpp). Only the CLI and the
// tests include this: the core gets the rows handed in (mblast/backend.hpp's BackendRows), so
// that it links no backend.
#include <string_view>

#include "mblast/backend.hpp"

namespace mblast {

// Every backend, in the order --help lists them.
const BackendRows& backend_registry();
// find_backend over the registry.
const BackendRow& backend_row(std::string_view name);

}  // namespace mblast
