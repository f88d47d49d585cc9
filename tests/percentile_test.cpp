#include <gtest/gtest.h>

#include "mblast/support.hpp"

namespace mblast {
namespace {

TEST(Percentile, TheMedianIsTheMiddleValueOrTheMeanOfTheMiddleTwo) {
  EXPECT_DOUBLE_EQ(percentile({3.0, 1.0, 2.0}, 0.5), 2.0);
  EXPECT_DOUBLE_EQ(percentile({4.0, 1.0, 3.0, 2.0}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile({7.0}, 0.9), 7.0);
}

TEST(Percentile, OtherQuantilesInterpolateBetweenNeighbours) {
  EXPECT_DOUBLE_EQ(percentile({0.0, 10.0}, 0.9), 9.0);
  EXPECT_DOUBLE_EQ(percentile({5.0, 0.0, 10.0}, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(percentile({5.0, 0.0, 10.0}, 1.0), 10.0);
}

}  // namespace
}  // namespace mblast
