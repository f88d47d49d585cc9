// Axes, titles and legends on an svg::Canvas.
#include <algorithm>

#include "report/svg.hpp"

namespace mblast::report::svg {

namespace {

constexpr double kTickFont = 11;
constexpr double kLabelFont = 12;

bool inside(const Scale& scale, double value) {
  const double slack = (scale.hi() - scale.lo()) * 1e-9;
  return value >= scale.lo() - slack && value <= scale.hi() + slack;
}

}  // namespace

void draw_axes(Canvas& canvas, const Frame& frame, const Scale& x, const Axis& x_axis,
               const Scale& y, const Axis& y_axis) {
  const Style grid{"none", "#e6e6e6", 1, 1, ""};
  const Style axis{"none", "#444", 1, 1, ""};
  Font tick_font;
  tick_font.size = kTickFont;
  tick_font.fill = "#444";
  tick_font.anchor = "middle";
  for (const auto& tick : x_axis.ticks) {
    if (!inside(x, tick.value)) continue;
    const double at = x(tick.value);
    canvas.line(at, frame.top, at, frame.bottom, grid);
    canvas.line(at, frame.bottom, at, frame.bottom + 5, axis);
    canvas.text(at, frame.bottom + 18, tick.label, tick_font);
  }
  tick_font.anchor = "end";
  tick_font.baseline = "middle";
  double widest = 0;
  for (const auto& tick : y_axis.ticks) {
    if (!inside(y, tick.value)) continue;
    const double at = y(tick.value);
    canvas.line(frame.left, at, frame.right, at, grid);
    canvas.line(frame.left - 5, at, frame.left, at, axis);
    canvas.text(frame.left - 8, at, tick.label, tick_font);
    widest = std::max(widest, text_width(tick.label, kTickFont));
  }
  canvas.line(frame.left, frame.top, frame.left, frame.bottom, axis);
  canvas.line(frame.left, frame.bottom, frame.right, frame.bottom, axis);
  Font label_font;
  label_font.size = kLabelFont;
  label_font.anchor = "middle";
  label_font.fill = "#222";
  canvas.text((frame.left + frame.right) / 2, frame.bottom + 38, x_axis.label, label_font);
  label_font.rotate = -90;
  const double y_label_x = std::max(14.0, frame.left - widest - 20);
  canvas.text(y_label_x, (frame.top + frame.bottom) / 2, y_axis.label, label_font);
}

void draw_title(Canvas& canvas, const std::string& title, const std::string& subtitle) {
  Font font;
  font.size = 16;
  font.bold = true;
  canvas.text(16, 26, title, font);
  if (subtitle.empty()) return;
  std::string shown = subtitle;  // cut to the canvas' width, at a UTF-8 boundary
  while (text_width(shown, 12) > canvas.width() - 32 && shown.size() > 4) {
    shown.pop_back();
    while (!shown.empty() && (static_cast<unsigned char>(shown.back()) & 0xC0) == 0x80) {
      shown.pop_back();
    }
    if (!shown.empty() && (static_cast<unsigned char>(shown.back()) & 0x80)) shown.pop_back();
  }
  if (shown != subtitle) shown += "\u2026";
  font.size = 12;
  font.bold = false;
  font.fill = "#666";
  canvas.text(16, 44, shown, font);
}

void draw_empty(Canvas& canvas, const Frame& frame, const std::string& message) {
  canvas.rect(frame.left, frame.top, frame.width(), frame.height(),
              Style{"#fafafa", "#ddd", 1, 1, "4 3"});
  Font font;
  font.size = 13;
  font.anchor = "middle";
  font.fill = "#777";
  font.baseline = "middle";
  canvas.text((frame.left + frame.right) / 2, (frame.top + frame.bottom) / 2, message, font);
}

void draw_legend(Canvas& canvas, double right, double top, const std::vector<LegendItem>& items) {
  if (items.empty()) return;
  constexpr double kRow = 18, kPad = 8, kSample = 22;
  double widest = 0;
  for (const auto& item : items) widest = std::max(widest, text_width(item.label, kTickFont));
  const double width = kPad * 2 + kSample + 8 + widest;
  const double height = kPad * 2 + kRow * static_cast<double>(items.size()) - 4;
  const double left = right - width;
  canvas.rect(left, top, width, height, Style{"#ffffff", "#cccccc", 1, 0.92, ""});
  Font font;
  font.size = kTickFont;
  font.baseline = "middle";
  for (std::size_t i = 0; i < items.size(); ++i) {
    const double mid = top + kPad + kRow * static_cast<double>(i) + 6;
    const auto& item = items[i];
    if (item.swatch) {
      canvas.rect(left + kPad + 5, mid - 6, 12, 12, item.style);
    } else {
      Style sample = item.style;
      sample.opacity = std::max(sample.opacity, 0.6);
      canvas.line(left + kPad, mid, left + kPad + kSample, mid, sample);
    }
    canvas.text(left + kPad + kSample + 8, mid, item.label, font);
  }
}

}  // namespace mblast::report::svg
