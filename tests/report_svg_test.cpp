// The report's SVG writer: escaping, scales, ticks, and documents that close what they open.
#include <gtest/gtest.h>

#include <cmath>

#include "report/svg.hpp"

namespace mblast::report::svg {
namespace {

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(ReportSvg, EscapesTextAndAttributes) {
  EXPECT_EQ(escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  Canvas canvas(100, 50, "x < y");
  canvas.text(1, 2, "</svg><script>");
  canvas.rect(0, 0, 10, 10, Style{"red", "none", 1, 1, ""}, "tip & <tip>");
  const std::string out = canvas.str();
  EXPECT_EQ(count(out, "<svg"), 1u);
  EXPECT_EQ(count(out, "</svg>"), 1u);
  EXPECT_EQ(out.find("<script"), std::string::npos);
  EXPECT_NE(out.find("<title>tip &amp; &lt;tip&gt;</title></rect>"), std::string::npos);
}

TEST(ReportSvg, PixelsAreShortAndFinite) {
  EXPECT_EQ(px(12.5), "12.5");
  EXPECT_EQ(px(3.0), "3");
  EXPECT_EQ(px(-0.001), "0");
  EXPECT_EQ(px(1.0 / 3), "0.33");
  EXPECT_EQ(px(std::nan("")), "0");
}

TEST(ReportSvg, ScalesMapEndsToPixels) {
  const auto lin = Scale::linear(0, 10, 100, 200);
  EXPECT_DOUBLE_EQ(lin(0), 100);
  EXPECT_DOUBLE_EQ(lin(5), 150);
  const auto log = Scale::log(0.5, 2, 300, 100);  // y grows upward
  EXPECT_DOUBLE_EQ(log(0.5), 300);
  EXPECT_DOUBLE_EQ(log(1), 200);
  EXPECT_DOUBLE_EQ(log(2), 100);
}

TEST(ReportSvg, TicksAreRound) {
  const auto ticks = linear_ticks(0, 3, 6);
  ASSERT_EQ(ticks.size(), 7u);
  EXPECT_EQ(ticks[1].label, "0.5");
  EXPECT_EQ(ticks.back().label, "3");
  const auto counts = linear_ticks(0, 3, 3);
  ASSERT_EQ(counts.size(), 4u);
  EXPECT_EQ(counts[2].label, "2");
  const auto powers = log2_ticks(0.2, 5);
  ASSERT_EQ(powers.size(), 5u);
  EXPECT_EQ(powers.front().label, "0.25x");
  EXPECT_EQ(powers[2].label, "1x");
  EXPECT_EQ(powers.back().label, "4x");
  EXPECT_LE(log2_ticks(1e-4, 1e4, "x", 8).size(), 8u);
}

TEST(ReportSvg, AxesTitlesAndLegendsDrawText) {
  Canvas canvas(400, 300, "plot");
  const Frame frame{50, 40, 380, 260};
  draw_title(canvas, "A title", "a subtitle");
  draw_axes(canvas, frame, Scale::linear(0, 1, frame.left, frame.right),
            {"x label", linear_ticks(0, 1, 4)}, Scale::linear(0, 1, frame.bottom, frame.top),
            {"y label", linear_ticks(0, 1, 4)});
  draw_legend(canvas, 380, 10, {{"series one", Style{"none", "#000", 2, 1, ""}, false}});
  const std::string out = canvas.str();
  for (const char* word : {"A title", "a subtitle", "x label", "y label", "series one", ">0.5<"}) {
    EXPECT_NE(out.find(word), std::string::npos) << word;
  }
  EXPECT_NE(out.find("rotate(-90"), std::string::npos);  // the y label stands up
}

}  // namespace
}  // namespace mblast::report::svg
