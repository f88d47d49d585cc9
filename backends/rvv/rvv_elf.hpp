#pragma once
// Just enough of ELF64 (little-endian) for the RVV backend: the section names of a candidate's
// object file and the symbols of the linked executable.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mblast::rvv {

struct ElfSymbol {
  std::string name;
  std::uint64_t value = 0;
  std::uint64_t size = 0;
  std::uint8_t bind = 0;  // STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2
  std::uint8_t type = 0;  // STT_FUNC 2, STT_GNU_IFUNC 10
  std::uint16_t section = 0;
};

struct ElfFile {
  std::vector<std::string> section_names;
  std::vector<ElfSymbol> symbols;

  // The one defined global function called `name`; nullopt when absent or not unique.
  std::optional<ElfSymbol> global_function(const std::string& name) const;
};

// Throws job_error for a file that is not a little-endian ELF64 file.
ElfFile read_elf(const std::filesystem::path& path);

}  // namespace mblast::rvv
