#include "mblast/files.hpp"

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> names_in(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

TEST(Files, ReadsWhatWasWrittenAndSaysWhenAFileCannotBeRead) {
  testing::TempDir dir;
  const std::string bytes("one\0two\nthree", 13);
  EXPECT_FALSE(write_file_atomically(dir / "f.bin", bytes));
  EXPECT_EQ(read_file(dir / "f.bin"), bytes);
  EXPECT_FALSE(write_file_atomically(dir / "empty", ""));
  EXPECT_EQ(read_file(dir / "empty"), "");
  EXPECT_EQ(read_file(dir / "missing"), std::nullopt);
  EXPECT_EQ(read_file(dir.path()), std::nullopt);  // a folder is no file
}

TEST(Files, AFailedWriteLeavesTheOldFileAndNoSibling) {
  testing::TempDir dir;
  ASSERT_FALSE(write_file_atomically(dir / "f.txt", "old"));
  fs::create_directories(dir / "taken");
  EXPECT_TRUE(write_file_atomically(dir / "taken", "new"));  // a folder cannot be replaced
  EXPECT_TRUE(write_file_atomically(dir / "no" / "such" / "f.txt", "new"));
  EXPECT_EQ(read_file(dir / "f.txt"), "old");
  auto names = names_in(dir.path());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"f.txt", "taken"}));
}

TEST(Files, ConcurrentWritersOfOnePathLeaveOneWholeVersion) {
  testing::TempDir dir;
  std::vector<std::thread> writers;
  for (int i = 0; i < 8; ++i) {
    writers.emplace_back([&dir, i] {
      const std::string text(100000, static_cast<char>('a' + i));
      for (int round = 0; round < 20; ++round) ASSERT_FALSE(write_file_atomically(dir / "f", text));
    });
  }
  for (auto& writer : writers) writer.join();
  const std::string text = read_file(dir / "f").value_or("");
  ASSERT_EQ(text.size(), 100000u);
  EXPECT_EQ(text.find_first_not_of(text[0]), std::string::npos) << "a torn file";
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"f"});
}

TEST(Files, CopiesCreateTheFoldersAboveAndFailWithoutASource) {
  testing::TempDir dir;
  ASSERT_FALSE(write_file_atomically(dir / "source", "data"));
  EXPECT_FALSE(copy_file_atomically(dir / "source", dir / "a" / "b" / "copy"));
  EXPECT_EQ(read_file(dir / "a" / "b" / "copy"), "data");
  EXPECT_TRUE(copy_file_atomically(dir / "missing", dir / "a" / "other"));
  EXPECT_EQ(names_in(dir / "a" / "b"), std::vector<std::string>{"copy"});
  EXPECT_FALSE(fs::exists(dir / "a" / "other"));
}

TEST(Files, TemporarySiblingsAreDistinctAndBesideThePath) {
  const fs::path one = temporary_sibling("/x/y/f.json");
  const fs::path two = temporary_sibling("/x/y/f.json");
  EXPECT_NE(one, two);
  EXPECT_EQ(one.parent_path(), fs::path("/x/y"));
  EXPECT_EQ(one.filename().string().rfind("f.json.tmp-", 0), 0u);
}

}  // namespace
}  // namespace mblast
