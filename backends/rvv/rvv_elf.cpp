#include "rvv_elf.hpp"

#include <cstring>
#include <fstream>
#include <iterator>

#include "mblast/error.hpp"

namespace mblast::rvv {
namespace {

constexpr std::uint32_t kSymtab = 2;
constexpr std::uint8_t kStbGlobal = 1;
constexpr std::uint8_t kSttFunc = 2;

class Bytes {
 public:
  Bytes(std::string data, std::filesystem::path path)
      : data_(std::move(data)), path_(std::move(path)) {}

  template <typename T>
  T at(std::uint64_t offset) const {
    if (offset > data_.size() || data_.size() - offset < sizeof(T)) fail("it ends early");
    T value{};
    std::memcpy(&value, data_.data() + offset, sizeof(T));
    return value;
  }
  std::string string_at(std::uint64_t offset) const {
    if (offset >= data_.size()) fail("a name lies outside the file");
    const char* start = data_.data() + offset;
    return std::string(start, strnlen(start, data_.size() - offset));
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw job_error("cannot read the ELF file " + path_.string() + ": " + what);
  }

 private:
  std::string data_;
  std::filesystem::path path_;
};

struct Section {
  std::uint32_t name = 0;
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;
  std::uint64_t entry_size = 0;
};

std::vector<Section> read_sections(const Bytes& bytes) {
  const auto table = bytes.at<std::uint64_t>(0x28);       // e_shoff
  const auto entry_size = bytes.at<std::uint16_t>(0x3a);  // e_shentsize
  const auto count = bytes.at<std::uint16_t>(0x3c);       // e_shnum
  std::vector<Section> sections;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t base = table + i * entry_size;
    Section s;
    s.name = bytes.at<std::uint32_t>(base);
    s.type = bytes.at<std::uint32_t>(base + 4);
    s.offset = bytes.at<std::uint64_t>(base + 0x18);
    s.size = bytes.at<std::uint64_t>(base + 0x20);
    s.link = bytes.at<std::uint32_t>(base + 0x28);
    s.entry_size = bytes.at<std::uint64_t>(base + 0x38);
    sections.push_back(s);
  }
  return sections;
}

}  // namespace

std::optional<ElfSymbol> ElfFile::global_function(const std::string& name) const {
  std::optional<ElfSymbol> found;
  for (const auto& symbol : symbols) {
    if (symbol.name == name && symbol.bind == kStbGlobal && symbol.type == kSttFunc &&
        symbol.section != 0) {
      if (found) return std::nullopt;
      found = symbol;
    }
  }
  return found;
}

ElfFile read_elf(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw job_error("cannot open " + path.string());
  const Bytes bytes(std::string(std::istreambuf_iterator<char>(in), {}), path);
  if (bytes.at<std::uint32_t>(0) != 0x464c457fu) bytes.fail("no ELF magic");
  if (bytes.at<std::uint8_t>(4) != 2 || bytes.at<std::uint8_t>(5) != 1) {
    bytes.fail("not a little-endian 64-bit ELF file");
  }
  const std::vector<Section> sections = read_sections(bytes);
  const auto names_index = bytes.at<std::uint16_t>(0x3e);  // e_shstrndx
  if (names_index >= sections.size()) bytes.fail("no section name table");
  ElfFile elf;
  for (const Section& s : sections) {
    elf.section_names.push_back(bytes.string_at(sections[names_index].offset + s.name));
  }
  for (const Section& s : sections) {
    if (s.type != kSymtab || s.entry_size < 24 || s.link >= sections.size()) continue;
    const Section& strings = sections[s.link];
    for (std::uint64_t offset = s.offset; offset + 24 <= s.offset + s.size;
         offset += s.entry_size) {
      ElfSymbol symbol;
      symbol.name = bytes.string_at(strings.offset + bytes.at<std::uint32_t>(offset));
      const auto info = bytes.at<std::uint8_t>(offset + 4);
      symbol.bind = static_cast<std::uint8_t>(info >> 4);
      symbol.type = static_cast<std::uint8_t>(info & 0xf);
      symbol.section = bytes.at<std::uint16_t>(offset + 6);
      symbol.value = bytes.at<std::uint64_t>(offset + 8);
      symbol.size = bytes.at<std::uint64_t>(offset + 16);
      elf.symbols.push_back(std::move(symbol));
    }
  }
  return elf;
}

}  // namespace mblast::rvv
